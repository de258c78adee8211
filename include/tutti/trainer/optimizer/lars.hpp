//! @file lars.hpp  lars<Inner>: LARS / LARC around any optimiser, as NVIDIA apex's LARC does it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
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
#include "tutti/trainer/optimizer/concepts.hpp"
#include "tutti/trainer/optimizer/state.hpp"

namespace tutti::trainer {

//! LARS (You et al., arXiv:1708.03888) and its clipped variant LARC, as in NVIDIA apex's LARC.
struct lars_options {
  double eta = 0.001;      //!< trust coefficient
  double epsilon = 1e-9;   //!< added to the trust ratio's denominator
  double weight_decay = 0; //!< folded into the gradient before scaling (the inner optimiser's must be 0)
  bool clip = false;       //!< LARC: the parameter's rate is min(local_lr, lr) instead of lr · local_lr
  bool exclude_1d = true;  //!< leave 1-D parameters (biases, norm weights) to the inner optimiser alone
};

namespace detail {

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

//! apex LARC's gradient rewrite: g ← (g + wd·w) · scale.
inline void lars_scale_loop(float* __restrict g, const float* __restrict w, std::size_t n, float wd,
                            float scale) noexcept {
  for (std::size_t i = 0; i < n; ++i) g[i] = (g[i] + wd * w[i]) * scale;
}

}  // namespace detail

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
