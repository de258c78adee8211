//! @file state.hpp  An optimiser's per-parameter state, bound to its parameter list, saved and loaded bit for bit.
//!
//! The stream is native byte order (checkpoints move between like machines): a magic, a format
//! version, the owner's name (so another optimiser's state is refused by name), the buffers per
//! parameter, the step count, then each parameter's name, length and buffers.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/trainer/model.hpp"
#include "tutti/trainer/optimizer/arguments.hpp"

namespace tutti::trainer::detail {

//! Per-parameter state: each parameter's name and length, `buffers` float vectors of that length,
//! and the number of steps taken. Bound to a parameter list at the first step; every later step
//! (and a load into a bound state) must present the same names and lengths in the same order.
class optimizer_state {
 public:
  optimizer_state(std::string_view owner, std::size_t buffers) : owner_(owner), buffers_(buffers) {}

  //! Makes the state for `params` if there is none yet, else checks they are the same list.
  void bind(std::span<const parameter> params) {
    if (!bound_) {
      names_.clear();
      sizes_.clear();
      data_.clear();
      for (const auto& p : params) {
        names_.push_back(p.name);
        sizes_.push_back(p.value.size());
        data_.emplace_back(buffers_ * p.value.size(), 0.0f);
      }
      bound_ = true;
      return;
    }
    const auto where = optimizer_where(owner_, "step");
    if (params.size() != names_.size())
      throw invalid_argument(where + "got " + std::to_string(params.size()) + " parameters; its state (from an " +
                             "earlier step or a load) has " + std::to_string(names_.size()));
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i].name != names_[i] || params[i].value.size() != sizes_[i])
        throw invalid_argument(where + "parameter " + std::to_string(i) + " is '" + params[i].name + "' with " +
                               std::to_string(params[i].value.size()) + " values; its state (from an earlier step " +
                               "or a load) has '" + names_[i] + "' with " + std::to_string(sizes_[i]));
  }

  //! Buffer k of parameter i (bind first).
  [[nodiscard]] float* buffer(std::size_t i, std::size_t k) noexcept { return data_[i].data() + k * sizes_[i]; }

  std::uint64_t steps = 0;  //!< steps taken (torch's state['step'], the same for every parameter here)

  void save(std::ostream& out) const {
    out.write(magic, sizeof magic);
    put(out, version);
    put_string(out, owner_);
    put(out, static_cast<std::uint64_t>(buffers_));
    put(out, steps);
    put(out, static_cast<std::uint64_t>(bound_ ? names_.size() : 0));
    put(out, static_cast<std::uint8_t>(bound_));
    for (std::size_t i = 0; bound_ && i < names_.size(); ++i) {
      put_string(out, names_[i]);
      put(out, static_cast<std::uint64_t>(sizes_[i]));
      out.write(reinterpret_cast<const char*>(data_[i].data()),
                static_cast<std::streamsize>(data_[i].size() * sizeof(float)));
    }
    if (!out) throw error(optimizer_where(owner_, "save") + "the stream refused the state");
  }

  //! Reads a whole state, checks it, then replaces this one (on a refusal this one is unchanged).
  void load(std::istream& in) {
    const auto where = optimizer_where(owner_, "load");
    char m[sizeof magic] = {};
    in.read(m, sizeof m);
    if (!in || !std::equal(m, m + sizeof m, magic))
      throw invalid_argument(where + "the stream does not hold a tutti optimiser state");
    if (const auto v = get<std::uint32_t>(in, where); v != version)
      throw invalid_argument(where + "the stream holds state format " + std::to_string(v) + "; this build reads " +
                             std::to_string(version));
    const auto name = get_string(in, where);
    if (name != owner_)
      throw invalid_argument(where + "the stream holds the state of '" + name + "', not of '" +
                             std::string(owner_) + "'");
    const auto buffers = get<std::uint64_t>(in, where);
    if (buffers != buffers_)
      throw invalid_argument(where + "the stream's " + name + " keeps " + std::to_string(buffers) +
                             " buffers per parameter, this one " + std::to_string(buffers_) +
                             " (momentum set in one and not in the other?)");
    const auto steps_in = get<std::uint64_t>(in, where);
    const auto count = get<std::uint64_t>(in, where);
    const bool bound_in = get<std::uint8_t>(in, where) != 0;
    if (bound_ && bound_in && count != names_.size())
      throw invalid_argument(where + "the stream holds the state of " + std::to_string(count) +
                             " parameters, this optimiser of " + std::to_string(names_.size()));
    std::vector<std::string> names;
    std::vector<std::size_t> sizes;
    std::vector<std::vector<float>> data;
    for (std::uint64_t i = 0; i < count; ++i) {
      names.push_back(get_string(in, where));
      const auto size = get<std::uint64_t>(in, where);
      if (bound_ && bound_in && (names.back() != names_[i] || size != sizes_[i]))
        throw invalid_argument(where + "parameter " + std::to_string(i) + " is '" + names.back() + "' with " +
                               std::to_string(size) + " values in the stream, '" + names_[i] + "' with " +
                               std::to_string(sizes_[i]) + " here");
      if (size > (std::uint64_t{1} << 40))
        throw invalid_argument(where + "parameter '" + names.back() + "' claims " + std::to_string(size) + " values");
      sizes.push_back(static_cast<std::size_t>(size));
      data.emplace_back(static_cast<std::size_t>(buffers * size));
      in.read(reinterpret_cast<char*>(data.back().data()),
              static_cast<std::streamsize>(data.back().size() * sizeof(float)));
      if (!in) throw invalid_argument(where + "the stream ends inside the state of '" + names.back() + "'");
    }
    names_ = std::move(names);
    sizes_ = std::move(sizes);
    data_ = std::move(data);
    bound_ = bound_in;
    steps = steps_in;
  }

 private:
  static constexpr char magic[8] = {'t', 'u', 't', 't', 'i', 'o', 'p', 't'};
  static constexpr std::uint32_t version = 1;

  template <class T> static void put(std::ostream& out, T v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }
  static void put_string(std::ostream& out, std::string_view s) {
    put(out, static_cast<std::uint64_t>(s.size()));
    out.write(s.data(), static_cast<std::streamsize>(s.size()));
  }
  template <class T> static T get(std::istream& in, const std::string& where) {
    T v{};
    in.read(reinterpret_cast<char*>(&v), sizeof v);
    if (!in) throw invalid_argument(where + "the stream ends early");
    return v;
  }
  static std::string get_string(std::istream& in, const std::string& where) {
    const auto n = get<std::uint64_t>(in, where);
    if (n > 4096) throw invalid_argument(where + "the stream holds a name of " + std::to_string(n) + " bytes");
    std::string s(static_cast<std::size_t>(n), '\0');
    in.read(s.data(), static_cast<std::streamsize>(n));
    if (!in) throw invalid_argument(where + "the stream ends early");
    return s;
  }

  std::string_view owner_;
  std::size_t buffers_;
  bool bound_ = false;
  std::vector<std::string> names_;
  std::vector<std::size_t> sizes_;
  std::vector<std::vector<float>> data_;  //!< per parameter, buffers_ vectors of its length back to back
};

//! What sgd and adam show the trainer, alike for both: the two steps, each checked before
//! Derived::update(params, lrs, lr) touches a value (lrs empty: `lr` for all), and save and load of
//! the state. Derived has a static `name` and makes this base friend to reach its private update.
template <class Derived>
class stateful_optimizer {
 public:
  void step(std::span<const parameter> params, std::span<const double> lr_per_param) {
    check_step(Derived::name, params, lr_per_param, true);
    static_cast<Derived&>(*this).update(params, lr_per_param, 0);
  }
  void step(std::span<const parameter> params, double lr) {
    check_step(Derived::name, params, std::span<const double>(&lr, 1), false);
    static_cast<Derived&>(*this).update(params, {}, lr);
  }

  void save(std::ostream& out) const { state_.save(out); }
  void load(std::istream& in) { state_.load(in); }

 protected:
  explicit stateful_optimizer(std::size_t buffers) : state_(Derived::name, buffers) {}

  optimizer_state state_;
};

}  // namespace tutti::trainer::detail
