//! @file lr_schedule.hpp  The learning rate as a function of the (fractional) epoch: scaled with the
//! global batch, warmed up, then decayed.
//!
//! Scaling (Goyal et al., arXiv:1706.02677; Krizhevsky's square-root rule, arXiv:1404.5997): with a
//! global batch of k · base_batch_size, the scaled rate is base_lr · k (linear) or base_lr · √k (sqrt).
//! Warm-up ramps linearly from base_lr at epoch 0 to the scaled rate at warmup_epochs (Goyal et al.'s
//! gradual warm-up). Decay then starts its own clock at the end of warm-up (as torch's SequentialLR
//! starts the scheduler it switches to), with e = epoch − warmup_epochs:
//!   step:        scaled · gamma^⌊e / step_epochs⌋
//!   exponential: scaled · gamma^e                      (gamma per epoch, continuous in e)
//!   cosine:      min_lr + (scaled − min_lr) · (1 + cos(π · e / (total_epochs − warmup_epochs))) / 2,
//!                min_lr from total_epochs on
//! and min_lr is a floor for step and exponential decay too.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <sstream>
#include <string>
#include <string_view>

#include "tutti/core/error.hpp"

namespace tutti::trainer {

//! How the rate grows with the global batch: none, linear (× global/base), sqrt (× √(global/base)).
enum class scaling_rule { none, linear, sqrt };

//! What follows warm-up.
enum class decay_kind { none, step, exponential, cosine };

struct lr_schedule_options {
  double base_lr = 0.1;                        //!< the rate at base_batch_size
  std::size_t base_batch_size = 256;
  std::size_t global_batch_size = 256;         //!< the effective batch (× aggregation_frequency)
  scaling_rule scaling = scaling_rule::linear;
  double warmup_epochs = 0;                    //!< linear ramp from base_lr to the scaled rate
  decay_kind decay = decay_kind::none;
  double step_epochs = 30;                     //!< step: epochs between multiplications by gamma
  double gamma = 0.1;                          //!< step: factor per step; exponential: per epoch
  double total_epochs = 90;                    //!< cosine: where the rate reaches min_lr
  double min_lr = 0;                           //!< the floor every decay stops at
};

[[nodiscard]] constexpr std::string_view to_string(scaling_rule r) noexcept {
  switch (r) {
    case scaling_rule::none: return "none";
    case scaling_rule::linear: return "linear";
    case scaling_rule::sqrt: return "sqrt";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(decay_kind d) noexcept {
  switch (d) {
    case decay_kind::none: return "none";
    case decay_kind::step: return "step";
    case decay_kind::exponential: return "exponential";
    case decay_kind::cosine: return "cosine";
  }
  return "?";
}

[[nodiscard]] inline scaling_rule parse_scaling_rule(std::string_view s) {
  for (auto r : {scaling_rule::none, scaling_rule::linear, scaling_rule::sqrt})
    if (s == to_string(r)) return r;
  throw invalid_argument("tutti::trainer::parse_scaling_rule: '" + std::string(s) +
                         "' is not a scaling rule; accepted: none, linear, sqrt");
}

[[nodiscard]] inline decay_kind parse_decay_kind(std::string_view s) {
  for (auto d : {decay_kind::none, decay_kind::step, decay_kind::exponential, decay_kind::cosine})
    if (s == to_string(d)) return d;
  throw invalid_argument("tutti::trainer::parse_decay_kind: '" + std::string(s) +
                         "' is not a decay; accepted: none, step, exponential, cosine");
}

class lr_schedule {
 public:
  explicit lr_schedule(lr_schedule_options options) : o_(options) {
    auto bad = [](const char* what, const std::string& v, const char* rule) {
      throw invalid_argument(std::string("tutti::trainer::lr_schedule: ") + what + " " + v + " " + rule);
    };
    const auto num = &number;
    if (!(o_.base_lr > 0) || !std::isfinite(o_.base_lr)) bad("base_lr", num(o_.base_lr), "is not > 0");
    if (o_.base_batch_size == 0) bad("base_batch_size", "0", "is not > 0");
    if (o_.global_batch_size == 0) bad("global_batch_size", "0", "is not > 0");
    if (!(o_.warmup_epochs >= 0) || !std::isfinite(o_.warmup_epochs))
      bad("warmup_epochs", num(o_.warmup_epochs), "is not >= 0");
    const double k = static_cast<double>(o_.global_batch_size) / static_cast<double>(o_.base_batch_size);
    scaled_ = o_.scaling == scaling_rule::linear ? o_.base_lr * k
              : o_.scaling == scaling_rule::sqrt ? o_.base_lr * std::sqrt(k)
                                                 : o_.base_lr;
    if (o_.decay == decay_kind::step && (!(o_.step_epochs > 0) || !std::isfinite(o_.step_epochs)))
      bad("step_epochs", num(o_.step_epochs), "is not > 0");
    if ((o_.decay == decay_kind::step || o_.decay == decay_kind::exponential) && !(o_.gamma > 0 && o_.gamma <= 1))
      bad("gamma", num(o_.gamma), "is not in (0, 1]");
    if (o_.decay == decay_kind::cosine && (!(o_.total_epochs > o_.warmup_epochs) || !std::isfinite(o_.total_epochs)))
      bad("total_epochs", num(o_.total_epochs),
          ("is not after the end of warm-up (warmup_epochs " + num(o_.warmup_epochs) + ")").c_str());
    if (o_.decay != decay_kind::none && !(o_.min_lr >= 0 && o_.min_lr <= scaled_))
      bad("min_lr", num(o_.min_lr), ("is not in [0, the scaled rate " + num(scaled_) + "]").c_str());
  }

  //! base_lr scaled to the global batch: the rate at the end of warm-up.
  [[nodiscard]] double scaled_lr() const noexcept { return scaled_; }

  [[nodiscard]] const lr_schedule_options& options() const noexcept { return o_; }

  //! The rate at `epoch` (fractional; ≥ 0).
  [[nodiscard]] double at(double epoch) const {
    if (!(epoch >= 0) || !std::isfinite(epoch))
      throw invalid_argument("tutti::trainer::lr_schedule::at: epoch " + number(epoch) +
                             " is not a finite number >= 0");
    if (epoch < o_.warmup_epochs) return o_.base_lr + (scaled_ - o_.base_lr) * (epoch / o_.warmup_epochs);
    const double e = epoch - o_.warmup_epochs;
    switch (o_.decay) {
      case decay_kind::none: return scaled_;
      case decay_kind::step: return std::max(o_.min_lr, scaled_ * std::pow(o_.gamma, std::floor(e / o_.step_epochs)));
      case decay_kind::exponential: return std::max(o_.min_lr, scaled_ * std::pow(o_.gamma, e));
      case decay_kind::cosine: {
        const double t = std::min(1.0, e / (o_.total_epochs - o_.warmup_epochs));
        return o_.min_lr + (scaled_ - o_.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * t));
      }
    }
    return scaled_;
  }

 private:
  static std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  lr_schedule_options o_;
  double scaled_ = 0;
};

}  // namespace tutti::trainer
