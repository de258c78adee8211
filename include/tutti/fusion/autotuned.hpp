//! @file autotuned.hpp  fusion::autotuned — the fusion threshold and cycle time chosen by Bayesian optimisation.
//!
//! Needs Eigen 3 (CMake target tutti::eigen); tutti.hpp does not include this header, so only
//! programs that choose this strategy need Eigen.
//!
//! Rank 0's engine measures a sample — bytes reduced per second of wall time over about
//! TUTTI_AUTOTUNE_STEPS_PER_SAMPLE training steps (a step: as many completed tensors as the job has
//! distinct names) — and hands it to a Gaussian process (bayesian_optimizer.hpp), which proposes
//! the next (threshold, cycle time) by expected improvement. The first TUTTI_AUTOTUNE_WARMUP_SAMPLES
//! samples are discarded (caches, page faults and the first negotiations of every name make them
//! slow). After TUTTI_AUTOTUNE_MAX_SAMPLES the best point by the model's posterior mean is kept for
//! good. New parameters travel in the coordinator's next response, so every rank applies them at
//! the same round, between collectives. TUTTI_AUTOTUNE_LOG=file.csv gets one row per sample.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/fusion/bayesian_optimizer.hpp"
#include "tutti/fusion/concepts.hpp"
#include "tutti/fusion/autotune_interface.hpp"

namespace tutti::fusion {

//! The search space: threshold 0 (one collective per tensor) or 1 KiB .. 256 MiB on a log scale,
//! cycle time 0 .. 50 ms linearly (Horovod's autotuner's ranges).
struct fusion_search_space {
  static constexpr double zero_below = 0.05;  //!< x0 under this: threshold 0
  static constexpr double log2_min = 10, log2_max = 28;
  static constexpr double max_cycle_ms = 50;

  [[nodiscard]] static parameters at(const std::vector<double>& x) {
    parameters p;
    p.threshold_bytes = x[0] < zero_below ? 0
                                          : static_cast<std::size_t>(std::llround(std::exp2(
                                                log2_min + (x[0] - zero_below) / (1 - zero_below) * (log2_max - log2_min))));
    p.cycle_time = std::chrono::microseconds(std::llround(x[1] * max_cycle_ms * 1000));
    return p;
  }
  [[nodiscard]] static std::vector<double> of(const parameters& p) {
    double x0 = 0;
    if (p.threshold_bytes > 0) {
      const double l = std::clamp(std::log2(static_cast<double>(p.threshold_bytes)), log2_min, log2_max);
      x0 = zero_below + (l - log2_min) / (log2_max - log2_min) * (1 - zero_below);
    }
    const double x1 = std::clamp(std::chrono::duration<double, std::milli>(p.cycle_time).count() / max_cycle_ms, 0.0, 1.0);
    return {x0, x1};
  }
};

//! The autotuner's knobs, from TUTTI_AUTOTUNE_* variables.
struct autotune_settings {
  std::size_t warmup_samples = 3;    //!< TUTTI_AUTOTUNE_WARMUP_SAMPLES: discarded first samples
  std::size_t steps_per_sample = 5;  //!< TUTTI_AUTOTUNE_STEPS_PER_SAMPLE: training steps per sample
  std::size_t max_samples = 24;      //!< TUTTI_AUTOTUNE_MAX_SAMPLES: scored samples before settling
  std::string log_path;              //!< TUTTI_AUTOTUNE_LOG: a CSV row per sample
  std::uint64_t seed = 1;            //!< TUTTI_AUTOTUNE_SEED

  [[nodiscard]] static autotune_settings from_env() {
    autotune_settings s;
    s.warmup_samples = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_WARMUP_SAMPLES", 3, 0, 1000));
    s.steps_per_sample = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_STEPS_PER_SAMPLE", 5, 1, 100000));
    s.max_samples = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_MAX_SAMPLES", 24, 1, 10000));
    s.log_path = config::raw("TUTTI_AUTOTUNE_LOG").value_or("");
    s.seed = static_cast<std::uint64_t>(config::integer("TUTTI_AUTOTUNE_SEED", 1, 0, INT64_MAX));
    return s;
  }
};

//! The tuner fusion::autotuned gives the engine (rank 0 only).
class bayesian_tuner final : public tuner {
 public:
  bayesian_tuner(const parameters& initial, autotune_settings s, std::string codec, std::string algorithm)
      : settings_(std::move(s)),
        optimizer_({0, 0}, bayesian_options{.initial_samples = 5, .candidates = 2000, .xi = 0.01, .noise = 1e-3, .seed = settings_.seed}),
        current_(initial),
        x_(fusion_search_space::of(initial)),
        codec_(std::move(codec)),
        // A composed algorithm's name has a comma ("hierarchical<direct, ring>"): one CSV field, quoted.
        algorithm_(algorithm.find(',') == std::string::npos ? std::move(algorithm) : '"' + algorithm + '"') {
    if (!settings_.log_path.empty()) {
      log_ = std::fopen(settings_.log_path.c_str(), "w");
      if (!log_) throw invalid_argument("TUTTI_AUTOTUNE_LOG=" + settings_.log_path + ": cannot open it for writing");
      std::fputs("sample,threshold_bytes,cycle_us,codec,algorithm,score_bytes_per_s,warmup,best_score_bytes_per_s\n", log_);
      std::fflush(log_);
    }
  }
  ~bayesian_tuner() override {
    if (log_) std::fclose(log_);
  }
  bayesian_tuner(const bayesian_tuner&) = delete;
  bayesian_tuner& operator=(const bayesian_tuner&) = delete;

  std::optional<parameters> observe(std::size_t bytes, std::size_t tensors, std::size_t distinct,
                                    clock::time_point now) override {
    if (settled_) return std::nullopt;
    if (!window_open_) {
      if (tensors == 0) return std::nullopt;  // a sample starts with the first work under its parameters
      window_open_ = true;
      window_start_ = now;
      window_bytes_ = window_tensors_ = 0;
      return std::nullopt;  // this round ran partly before the window: not counted
    }
    window_bytes_ += bytes;
    window_tensors_ += tensors;
    if (distinct == 0 || window_tensors_ < settings_.steps_per_sample * distinct) return std::nullopt;
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    const double score = seconds > 0 ? static_cast<double>(window_bytes_) / seconds : 0;
    window_open_ = false;
    ++taken_;
    const bool warmup = taken_ <= settings_.warmup_samples;
    if (!warmup) {
      optimizer_.observe(x_, score);
      best_ = std::max(best_, score);
    }
    write_row(score, warmup);
    if (warmup) return std::nullopt;  // the same parameters again, measured for real this time
    if (optimizer_.samples() >= settings_.max_samples) {
      settled_ = true;
      x_ = optimizer_.best_point();
    } else {
      x_ = optimizer_.next();
    }
    current_ = fusion_search_space::at(x_);
    return current_;
  }

  [[nodiscard]] bool settled() const noexcept { return settled_; }

 private:
  void write_row(double score, bool warmup) {
    if (!log_) return;
    std::fprintf(log_, "%zu,%zu,%lld,%s,%s,%.6g,%d,%.6g\n", taken_, current_.threshold_bytes,
                 static_cast<long long>(current_.cycle_time.count()), codec_.c_str(), algorithm_.c_str(), score,
                 warmup ? 1 : 0, best_);
    std::fflush(log_);
  }

  autotune_settings settings_;
  bayesian_optimizer optimizer_;
  parameters current_;
  std::vector<double> x_;
  std::string codec_, algorithm_;
  std::FILE* log_ = nullptr;
  bool window_open_ = false, settled_ = false;
  clock::time_point window_start_{};
  std::size_t window_bytes_ = 0, window_tensors_ = 0, taken_ = 0;
  double best_ = 0;
};

//! Starts from `InitialBytes` and `InitialCycleMicroseconds` (or TUTTI_FUSION_THRESHOLD /
//! TUTTI_CYCLE_TIME), then tunes both while the job runs; TUTTI_AUTOTUNE=0 keeps them fixed.
template <std::size_t InitialBytes = (std::size_t{64} << 20), unsigned InitialCycleMicroseconds = 1000>
struct autotuned {
  using tutti_role = role::fusion;
  static constexpr std::string_view name = "autotuned";
  static constexpr std::size_t threshold_bytes = InitialBytes;
  static constexpr std::chrono::microseconds cycle_time{InitialCycleMicroseconds};
  static constexpr bool autotune = true;

  static std::unique_ptr<tuner> make_tuner(const parameters& initial, std::string_view codec, std::string_view algorithm) {
    return std::make_unique<bayesian_tuner>(initial, autotune_settings::from_env(), std::string(codec),
                                            std::string(algorithm));
  }
};

static_assert(fusion_policy<autotuned<>>);

}  // namespace tutti::fusion
