//! @file adam.hpp  torch.optim.Adam and AdamW (decoupled weight decay), amsgrad off, exactly.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"
#include "tutti/trainer/model.hpp"
#include "tutti/trainer/optimizer/arguments.hpp"
#include "tutti/trainer/optimizer/state.hpp"

namespace tutti::trainer {

//! torch.optim.Adam's options; decoupled = true is torch.optim.AdamW (w ← w·(1 − lr·weight_decay)).
struct adam_options {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;
};

namespace detail {

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

}  // namespace detail

//! torch.optim.Adam (decoupled = false) and torch.optim.AdamW (decoupled = true), amsgrad off.
class adam : public detail::stateful_optimizer<adam> {
 public:
  static constexpr std::string_view name = "adam";

  explicit adam(adam_options options = {})
      : detail::stateful_optimizer<adam>(2), options_(options) {
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

  [[nodiscard]] const adam_options& options() const noexcept { return options_; }

 private:
  friend class detail::stateful_optimizer<adam>;

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
};

}  // namespace tutti::trainer
