//! @file control.hpp  algorithm::tuned<A...>'s state on one communicator — its table, the selection
//! compiled from it for this layout, which candidate is forced — and the control tools steer it by.
//!
//! tuned's prepare makes one when the communicator is made; every collective finds it in the
//! communicator's algorithm state (keyed by this type) and asks choose(); tutti-tune and
//! fusion::autotuned reach it as comm.algorithm_control() to force a candidate on every rank.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/overrides.hpp"
#include "tutti/tuner/selection.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::algorithm {

template <class... A>
class tuned_control {
 public:
  static constexpr std::size_t count = sizeof...(A);
  //! The candidates' names, in tuned<A...>'s order (a candidate's index is its place here).
  static constexpr std::array<std::string_view, count> names{std::string_view(A::name)...};
  //! What last_run() says before any collective ran.
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

  //! Compiles `t` for layout `here` (tuner::compile: every row checked, with its line; `cores`,
  //! 0 when unknown, feeds the cost model). A table the user gave is refused with its error; the
  //! built-in one (`built_in`), measured for tuned<...>s with other candidates perhaps, is set aside
  //! instead — every call then runs the fallback — and the info line says why.
  tuned_control(std::shared_ptr<const tuner::table> t, std::uint64_t hash, tuner::layout here,
                const std::array<tuner::candidate_info, count>& candidates, std::uint32_t fallback, unsigned cores,
                bool built_in)
      : table_(std::move(t)), hash_(hash), layout_(here), candidates_(candidates) {
    try {
      selection_ = tuner::compile(*table_, here, candidates_, fallback, static_cast<double>(cores));
    } catch (const invalid_argument& e) {
      if (!built_in) throw;
      std::string_view why = e.what();
      if (why.starts_with(table_->source + ": ")) why.remove_prefix(table_->source.size() + 2);
      auto aside = std::make_shared<tuner::table>();
      aside->source = table_->source + ", set aside: " + std::string(why);
      table_ = std::move(aside);
      selection_ = tuner::compile(*table_, here, candidates_, fallback, static_cast<double>(cores));
    }
  }
  tuned_control(const tuned_control&) = delete;
  tuned_control& operator=(const tuned_control&) = delete;

  //! The candidates, with the collectives each has over this communicator's transport.
  [[nodiscard]] std::span<const tuner::candidate_info> candidates() const noexcept { return candidates_; }

  //! Every later collective runs `candidate` (with `tuning`, or its defaults; the caller keeps
  //! `tuning` alive) until release(). Every rank must force the same at the same point of its
  //! sequence of collectives, and not while a collective runs (tutti-tune and fusion::autotuned
  //! do it between collectives). A candidate lacking a collective runs the first one that has it.
  void force(std::uint32_t candidate, const tuner::overrides* tuning = nullptr) {
    if (candidate >= count)
      throw invalid_argument("algorithm::tuned: force(" + std::to_string(candidate) + "): there are only " +
                             std::to_string(count) + " candidates (0.." + std::to_string(count - 1) + ")");
    forced_ = {candidate, tuning, nullptr};
    forcing_ = true;
  }
  //! Back to the table's choices.
  void release() noexcept { forcing_ = false; }
  [[nodiscard]] bool forced() const noexcept { return forcing_; }

  [[nodiscard]] const tuner::selection& selection() const noexcept { return selection_; }
  [[nodiscard]] const tuner::table& table() const noexcept { return *table_; }
  //! The hash every rank agreed on when the communicator was made.
  [[nodiscard]] std::uint64_t table_hash() const noexcept { return hash_; }
  [[nodiscard]] tuner::layout layout() const noexcept { return layout_; }

  //! What a call of `c` on `bytes` bytes of `d` elements runs: the forced candidate, else the
  //! table's (a binary search; no allocation).
  [[nodiscard]] const tuner::choice& choose(collective c, tuner::dtype_class d, std::uint64_t bytes) const noexcept {
    return forcing_ ? forced_ : selection_.find(c, d, bytes);
  }
  //! The candidate the last collective ran (after any fallback to one that has the collective), or `none`.
  [[nodiscard]] std::uint32_t last_run() const noexcept { return last_; }
  void ran(std::uint32_t candidate) noexcept { last_ = candidate; }

 private:
  std::shared_ptr<const tuner::table> table_;  //!< the selection's choices point into its rows
  std::uint64_t hash_;
  tuner::layout layout_;
  std::array<tuner::candidate_info, count> candidates_;
  tuner::selection selection_;
  tuner::choice forced_;
  bool forcing_ = false;
  std::uint32_t last_ = none;
};

}  // namespace tutti::algorithm
