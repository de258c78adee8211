//! @file sgd.hpp  torch.optim.SGD (momentum, dampening, Nesterov, L2 weight decay), exactly.
#pragma once
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

//! torch.optim.SGD's options (lr is given to each step).
struct sgd_options {
  double momentum = 0;
  bool nesterov = false;     //!< needs momentum > 0 and dampening 0
  double weight_decay = 0;   //!< L2: added to the gradient as weight_decay · w
  double dampening = 0;
};

namespace detail {

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

}  // namespace detail

//! torch.optim.SGD: d = g + wd·w; with momentum b = momentum·b + (1 − dampening)·d (b = d on the
//! first step) and d = d + momentum·b (nesterov) or d = b; then w ← w − lr·d.
class sgd : public detail::stateful_optimizer<sgd> {
 public:
  static constexpr std::string_view name = "sgd";

  explicit sgd(sgd_options options = {})
      : detail::stateful_optimizer<sgd>(options.momentum != 0 ? 1 : 0), options_(options) {
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

  [[nodiscard]] const sgd_options& options() const noexcept { return options_; }

 private:
  friend class detail::stateful_optimizer<sgd>;

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
};

}  // namespace tutti::trainer
