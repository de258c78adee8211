//! @file optimizer.hpp  sgd, adam (and AdamW) with PyTorch's update rules, and lars<Inner> (LARS /
//! LARC) with NVIDIA apex's, on the float spans of trainer::parameter.
//!
//! Every optimiser steps a list of parameters with one learning rate each (or one for all), keeps
//! its state per parameter — made at the first step from the parameters' names and lengths, which
//! later steps and loads must then match — and saves and loads all of it in a binary stream that
//! round-trips bit for bit (native byte order: checkpoints move between like machines).
//!
//! Element loops are plain non-template functions over float pointers (a parameter's value,
//! gradient and state never overlap: __restrict), branch-free inside, so the compiler vectorises
//! them; coefficients are computed once per parameter in double and rounded to float, as PyTorch
//! rounds a Python scalar to the tensor's type. Norms accumulate in double.
#pragma once
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/trainer/model.hpp"

namespace tutti::trainer {

//! torch.optim.SGD's options (lr is given to each step).
struct sgd_options {
  double momentum = 0;
  bool nesterov = false;     //!< needs momentum > 0 and dampening 0
  double weight_decay = 0;   //!< L2: added to the gradient as weight_decay · w
  double dampening = 0;
};

//! torch.optim.Adam's options; decoupled = true is torch.optim.AdamW (w ← w·(1 − lr·weight_decay)).
struct adam_options {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;
};

//! LARS (You et al., arXiv:1708.03888) and its clipped variant LARC, as in NVIDIA apex's LARC.
struct lars_options {
  double eta = 0.001;      //!< trust coefficient
  double epsilon = 1e-9;   //!< added to the trust ratio's denominator
  double weight_decay = 0; //!< folded into the gradient before scaling (the inner optimiser's must be 0)
  bool clip = false;       //!< LARC: the parameter's rate is min(local_lr, lr) instead of lr · local_lr
  bool exclude_1d = true;  //!< leave 1-D parameters (biases, norm weights) to the inner optimiser alone
};

/// An Optimizer steps parameters with one learning rate per parameter or one for all, saves and
/// loads its whole state, and has a name (which its saved state carries).
template <class O>
concept optimizer = requires(O& o, const O& c, std::span<const parameter> params, std::span<const double> lrs,
                             double lr, std::ostream& out, std::istream& in) {
  o.step(params, lrs);
  o.step(params, lr);
  c.save(out);
  o.load(in);
  { O::name } -> std::convertible_to<std::string_view>;
};

namespace detail {

[[nodiscard]] inline std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[nodiscard]] inline std::string optimizer_where(std::string_view owner, std::string_view call) {
  return "tutti::trainer::" + std::string(owner) + "::" + std::string(call) + ": ";
}

// ---- element loops -------------------------------------------------------------------------------

//! Σ x², in double. Four independent partial sums let the compiler use vector lanes without
//! reassociating (which it may not do for floating point unless told -ffast-math).
[[nodiscard]] inline double squared_norm(const float* x, std::size_t n) noexcept {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const double a = x[i], b = x[i + 1], c = x[i + 2], d = x[i + 3];
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
  }
  for (; i < n; ++i) s0 += static_cast<double>(x[i]) * x[i];
  return (s0 + s1) + (s2 + s3);
}

//! Plain SGD (no momentum): w ← w − lr·(g + wd·w).
inline void sgd_plain_loop(float* __restrict w, const float* __restrict g, std::size_t n, float lr, float wd) noexcept {
  for (std::size_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + wd * w[i]);
}

//! SGD with momentum, both of torch's variants in one branch-free loop:
//!   d = g + wd·w;  b = keep_old·b + keep_new·d;  w ← w − lr·(take_d·d + take_b·b)
//! torch: keep_old = momentum, keep_new = 1 − dampening, except on the first step, where b = d
//! (keep_old = 0 on a zeroed buffer, keep_new = 1: 0·0 + 1·d is d exactly); nesterov takes
//! d + momentum·b (take_d = 1, take_b = momentum), plain momentum b (take_d = 0, take_b = 1: exact).
inline void sgd_momentum_loop(float* __restrict w, const float* __restrict g, float* __restrict b, std::size_t n,
                              float lr, float wd, float keep_old, float keep_new, float take_d, float take_b) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * w[i];
    const float m = keep_old * b[i] + keep_new * d;
    b[i] = m;
    w[i] -= lr * (take_d * d + take_b * m);
  }
}

//! Adam's update with torch's bias correction folded into step_size = lr / (1 − β1ᵗ) and
//! sqrt_c2 = √(1 − β2ᵗ):
//!   w ← w·decay;  g' = g + l2·w;  m = β1·m + (1−β1)·g';  v = β2·v + (1−β2)·g'²;
//!   w ← w − step_size · m / (√v / sqrt_c2 + eps)
//! Adam: decay = 1, l2 = weight_decay (exact no-ops when unused); AdamW: decay = 1 − lr·wd, l2 = 0.
//! In blocks of three loops: std::sqrt may set errno, a branch no compiler vectorises unless told
//! -fno-math-errno (-ffast-math), so the square roots get a loop of their own and the rest vectorises.
inline void adam_loop(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v,
                      std::size_t n, float step_size, float beta1, float one_minus_beta1, float beta2,
                      float one_minus_beta2, float sqrt_c2, float eps, float l2, float decay) noexcept {
  constexpr std::size_t block = 512;
  float root[block];
  for (std::size_t start = 0; start < n; start += block) {
    const std::size_t count = std::min(block, n - start);
    float* __restrict wb = w + start;
    const float* __restrict gb = g + start;
    float* __restrict mb = m + start;
    float* __restrict vb = v + start;
    for (std::size_t i = 0; i < count; ++i) {
      const float wi = wb[i] * decay;
      const float gi = gb[i] + l2 * wi;
      mb[i] = beta1 * mb[i] + one_minus_beta1 * gi;
      vb[i] = beta2 * vb[i] + one_minus_beta2 * gi * gi;
      wb[i] = wi;
    }
    for (std::size_t i = 0; i < count; ++i) root[i] = std::sqrt(vb[i]);
    for (std::size_t i = 0; i < count; ++i) wb[i] -= step_size * mb[i] / (root[i] / sqrt_c2 + eps);
  }
}

//! apex LARC's gradient rewrite: g ← (g + wd·w) · scale.
inline void lars_scale_loop(float* __restrict g, const float* __restrict w, std::size_t n, float wd,
                            float scale) noexcept {
  for (std::size_t i = 0; i < n; ++i) g[i] = (g[i] + wd * w[i]) * scale;
}

// ---- arguments -----------------------------------------------------------------------------------

//! The checks every step makes before touching a value: lengths agree, one finite lr ≥ 0 each.
inline void check_step(std::string_view owner, std::span<const parameter> params, std::span<const double> lrs,
                       bool per_parameter) {
  const auto where = optimizer_where(owner, "step");
  if (per_parameter && lrs.size() != params.size())
    throw invalid_argument(where + "got " + std::to_string(lrs.size()) + " learning rates for " +
                           std::to_string(params.size()) + " parameters");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (p.value.size() != p.grad.size())
      throw invalid_argument(where + "parameter '" + p.name + "' has " + std::to_string(p.value.size()) +
                             " values but " + std::to_string(p.grad.size()) + " gradients");
  }
  for (std::size_t i = 0; i < lrs.size(); ++i)
    if (!(lrs[i] >= 0) || !std::isfinite(lrs[i]))
      throw invalid_argument(where + "learning rate " + number(lrs[i]) +
                             (per_parameter ? " of parameter '" + params[i].name + "'" : std::string()) +
                             " is not a finite number >= 0");
}

// ---- state ---------------------------------------------------------------------------------------

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

}  // namespace detail

//! torch.optim.SGD: d = g + wd·w; with momentum b = momentum·b + (1 − dampening)·d (b = d on the
//! first step) and d = d + momentum·b (nesterov) or d = b; then w ← w − lr·d.
class sgd {
 public:
  static constexpr std::string_view name = "sgd";

  explicit sgd(sgd_options options = {}) : options_(options), state_(name, options.momentum != 0 ? 1 : 0) {
    const std::string where = "tutti::trainer::sgd(sgd_options): ";
    auto bad = [&](const char* what, double v, const char* rule) {
      throw invalid_argument(where + what + " " + detail::number(v) + " " + rule);
    };
    if (!(options.momentum >= 0) || !std::isfinite(options.momentum)) bad("momentum", options.momentum, "is not >= 0");
    if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay))
      bad("weight_decay", options.weight_decay, "is not >= 0");
    if (!(options.dampening >= 0 && options.dampening <= 1)) bad("dampening", options.dampening, "is not in [0, 1]");
    if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
      throw invalid_argument(where + "nesterov needs momentum > 0 and dampening 0; got momentum " +
                             detail::number(options.momentum) + ", dampening " + detail::number(options.dampening));
  }

  void step(std::span<const parameter> params, std::span<const double> lr_per_param) {
    detail::check_step(name, params, lr_per_param, true);
    update(params, lr_per_param, 0);
  }
  void step(std::span<const parameter> params, double lr) {
    detail::check_step(name, params, std::span<const double>(&lr, 1), false);
    update(params, {}, lr);
  }

  void save(std::ostream& out) const { state_.save(out); }
  void load(std::istream& in) { state_.load(in); }

  [[nodiscard]] const sgd_options& options() const noexcept { return options_; }

 private:
  void update(std::span<const parameter> params, std::span<const double> lrs, double lr) {
    state_.bind(params);
    const auto wd = static_cast<float>(options_.weight_decay);
    const bool first = state_.steps == 0;
    const auto momentum = static_cast<float>(options_.momentum);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& p = params[i];
      const auto rate = static_cast<float>(lrs.empty() ? lr : lrs[i]);
      if (options_.momentum == 0) {
        detail::sgd_plain_loop(p.value.data(), p.grad.data(), p.value.size(), rate, wd);
        continue;
      }
      detail::sgd_momentum_loop(p.value.data(), p.grad.data(), state_.buffer(i, 0), p.value.size(), rate, wd,
                                first ? 0.0f : momentum, first ? 1.0f : static_cast<float>(1 - options_.dampening),
                                options_.nesterov ? 1.0f : 0.0f, options_.nesterov ? momentum : 1.0f);
    }
    ++state_.steps;
  }

  sgd_options options_;
  detail::optimizer_state state_;
};

//! torch.optim.Adam (decoupled = false) and torch.optim.AdamW (decoupled = true), amsgrad off.
class adam {
 public:
  static constexpr std::string_view name = "adam";

  explicit adam(adam_options options = {}) : options_(options), state_(name, 2) {
    const std::string where = "tutti::trainer::adam(adam_options): ";
    auto bad = [&](const char* what, double v, const char* rule) {
      throw invalid_argument(where + what + " " + detail::number(v) + " " + rule);
    };
    if (!(options.beta1 >= 0 && options.beta1 < 1)) bad("beta1", options.beta1, "is not in [0, 1)");
    if (!(options.beta2 >= 0 && options.beta2 < 1)) bad("beta2", options.beta2, "is not in [0, 1)");
    if (!(options.eps >= 0) || !std::isfinite(options.eps)) bad("eps", options.eps, "is not >= 0");
    if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay))
      bad("weight_decay", options.weight_decay, "is not >= 0");
  }

  void step(std::span<const parameter> params, std::span<const double> lr_per_param) {
    detail::check_step(name, params, lr_per_param, true);
    update(params, lr_per_param, 0);
  }
  void step(std::span<const parameter> params, double lr) {
    detail::check_step(name, params, std::span<const double>(&lr, 1), false);
    update(params, {}, lr);
  }

  void save(std::ostream& out) const { state_.save(out); }
  void load(std::istream& in) { state_.load(in); }

  [[nodiscard]] const adam_options& options() const noexcept { return options_; }

 private:
  void update(std::span<const parameter> params, std::span<const double> lrs, double lr) {
    state_.bind(params);
    const auto t = static_cast<double>(state_.steps + 1);
    const double c1 = 1 - std::pow(options_.beta1, t), c2 = 1 - std::pow(options_.beta2, t);
    const auto wd = options_.weight_decay;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& p = params[i];
      const double rate = lrs.empty() ? lr : lrs[i];
      const float decay = options_.decoupled ? static_cast<float>(1 - rate * wd) : 1.0f;
      const float l2 = options_.decoupled ? 0.0f : static_cast<float>(wd);
      detail::adam_loop(p.value.data(), p.grad.data(), state_.buffer(i, 0), state_.buffer(i, 1), p.value.size(),
                        static_cast<float>(rate / c1), static_cast<float>(options_.beta1),
                        static_cast<float>(1 - options_.beta1), static_cast<float>(options_.beta2),
                        static_cast<float>(1 - options_.beta2), static_cast<float>(std::sqrt(c2)),
                        static_cast<float>(options_.eps), l2, decay);
    }
    ++state_.steps;
  }

  adam_options options_;
  detail::optimizer_state state_;
};

//! LARS / LARC around any optimiser, after NVIDIA apex's LARC (apex/parallel/LARC.py), exactly:
//! for each parameter with ‖w‖ ≠ 0 and ‖g‖ ≠ 0 (norms in double) that is not excluded,
//!   local_lr = eta·‖w‖ / (‖g‖ + weight_decay·‖w‖ + epsilon),
//!   scale    = local_lr                  (LARS: the parameter's rate becomes lr·local_lr)
//!            = min(local_lr / lr, 1)     (clip, LARC: the rate becomes min(local_lr, lr)),
//!   g        ← (g + weight_decay·w) · scale,
//! then the inner optimiser steps with the unchanged lr. Like apex, the rate is scaled through the
//! gradient, not the lr: for SGD without momentum the two are the same; with momentum the buffer
//! accumulates the scaled gradients, which is You et al.'s Algorithm 1 (v ← m·v + lr·local_lr·(g + wd·w))
//! at a constant lr; under Adam the scale mostly cancels, as it does in apex. Also like apex, a
//! parameter with a zero norm, or excluded as 1-D, keeps its gradient as it is — no scaling and no
//! weight decay (excluding biases and norm weights from both is what You et al. and NVIDIA's
//! examples do) — and the gradients are rewritten in place (the caller's are consumed).
//!
//! Which parameters are 1-D is the caller's to say, with one flag per parameter in step order
//! (`parameter` carries no shape, and names are the model's own convention).
template <class Inner>
class lars {
  static_assert(optimizer<Inner>,
                "tutti::trainer::lars<Inner> requires Inner to be an optimizer: step(params, lr), "
                "step(params, lr_per_param), save(out), load(in) and a static name");

 public:
  static constexpr std::string_view name = "lars";

  explicit lars(Inner inner, lars_options options = {}, std::span<const bool> is_1d = {})
      : inner_(std::move(inner)), options_(options), is_1d_(is_1d.begin(), is_1d.end()) {
    const std::string where = "tutti::trainer::lars(inner, lars_options, is_1d): ";
    auto bad = [&](const char* what, double v, const char* rule) {
      throw invalid_argument(where + what + " " + detail::number(v) + " " + rule);
    };
    if (!(options.eta > 0) || !std::isfinite(options.eta)) bad("eta", options.eta, "is not > 0");
    if (!(options.epsilon >= 0) || !std::isfinite(options.epsilon)) bad("epsilon", options.epsilon, "is not >= 0");
    if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay))
      bad("weight_decay", options.weight_decay, "is not >= 0");
    if (options.exclude_1d && is_1d.empty())
      throw invalid_argument(where + "exclude_1d needs is_1d, one flag per parameter; pass them, or set "
                                     "exclude_1d = false to adapt every parameter");
    if constexpr (requires { inner_.options().weight_decay; })
      if (inner_.options().weight_decay != 0)
        throw invalid_argument(where + "the inner " + std::string(Inner::name) + " has weight_decay " +
                               detail::number(inner_.options().weight_decay) +
                               "; lars applies weight decay itself (lars_options::weight_decay), so set the inner "
                               "one to 0");
  }

  void step(std::span<const parameter> params, std::span<const double> lr_per_param) {
    detail::check_step(name, params, lr_per_param, true);
    adapt(params, lr_per_param, 0);
    inner_.step(params, lr_per_param);
  }
  void step(std::span<const parameter> params, double lr) {
    detail::check_step(name, params, std::span<const double>(&lr, 1), false);
    adapt(params, {}, lr);
    inner_.step(params, lr);
  }

  //! lars keeps no state of its own: an empty state under its name (so that another optimiser's
  //! stream is refused by name), then the inner optimiser's.
  void save(std::ostream& out) const {
    header_.save(out);
    inner_.save(out);
  }
  void load(std::istream& in) {
    header_.load(in);
    inner_.load(in);
  }

  [[nodiscard]] Inner& inner() noexcept { return inner_; }
  [[nodiscard]] const Inner& inner() const noexcept { return inner_; }
  [[nodiscard]] const lars_options& options() const noexcept { return options_; }

 private:
  void adapt(std::span<const parameter> params, std::span<const double> lrs, double lr) {
    if (options_.exclude_1d && is_1d_.size() != params.size())
      throw invalid_argument(detail::optimizer_where(name, "step") + "is_1d has " + std::to_string(is_1d_.size()) +
                             " flags for " + std::to_string(params.size()) + " parameters");
    const double wd = options_.weight_decay;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (options_.exclude_1d && is_1d_[i]) continue;
      const auto& p = params[i];
      const double w_norm = std::sqrt(detail::squared_norm(p.value.data(), p.value.size()));
      const double g_norm = std::sqrt(detail::squared_norm(p.grad.data(), p.grad.size()));
      if (w_norm == 0 || g_norm == 0) continue;
      double scale = options_.eta * w_norm / (g_norm + wd * w_norm + options_.epsilon);
      if (options_.clip) scale = std::min(scale / (lrs.empty() ? lr : lrs[i]), 1.0);  // lr 0: inf → 1
      detail::lars_scale_loop(p.grad.data(), p.value.data(), p.value.size(), static_cast<float>(wd),
                              static_cast<float>(scale));
    }
  }

  Inner inner_;
  lars_options options_;
  std::vector<char> is_1d_;  //!< one flag per parameter, in step order
  detail::optimizer_state header_{name, 0};
};

}  // namespace tutti::trainer
