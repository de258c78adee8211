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
//!
//! Joint tuning: over a communicator whose algorithm has a run-time control (algorithm::tuned<A...>,
//! fusion/joint.hpp) the search gains a third, categorical dimension: which algorithm runs the
//! engine's collectives — level 0 the algorithm's own per-call choice (tuned's table), level k its
//! k-th candidate with an allreduce. TUTTI_AUTOTUNE_ALGORITHM=0 leaves it out. The levels are
//! unordered (bayesian_options::unordered_levels): one GP over all samples, where a level's score
//! informs the others as far as the fitted length scale says they behave alike.
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
#include "tutti/core/log.hpp"
#include "tutti/fusion/bayesian_optimizer.hpp"
#include "tutti/fusion/concepts.hpp"
#include "tutti/fusion/autotune_interface.hpp"
#include "tutti/fusion/joint.hpp"

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
  //! Joint tuning's third coordinate: the level (0 .. levels - 1) that x falls in, and back (its centre).
  [[nodiscard]] static std::size_t level_at(double x, std::size_t levels) {
    const auto n = static_cast<double>(levels);
    return static_cast<std::size_t>(std::clamp(std::floor(x * n), 0.0, n - 1));
  }
  [[nodiscard]] static double level_of(std::size_t level, std::size_t levels) {
    return (static_cast<double>(level) + 0.5) / static_cast<double>(levels);
  }
};

//! The autotuner's knobs, from TUTTI_AUTOTUNE_* variables.
struct autotune_settings {
  std::size_t warmup_samples = 3;    //!< TUTTI_AUTOTUNE_WARMUP_SAMPLES: discarded first samples
  std::size_t steps_per_sample = 5;  //!< TUTTI_AUTOTUNE_STEPS_PER_SAMPLE: training steps per sample
  std::size_t max_samples = 24;      //!< TUTTI_AUTOTUNE_MAX_SAMPLES: scored samples before settling
  std::string log_path;              //!< TUTTI_AUTOTUNE_LOG: a CSV row per sample
  std::uint64_t seed = 1;            //!< TUTTI_AUTOTUNE_SEED
  bool algorithm = true;             //!< TUTTI_AUTOTUNE_ALGORITHM: joint tuning, where the algorithm has a control

  [[nodiscard]] static autotune_settings from_env() {
    autotune_settings s;
    s.warmup_samples = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_WARMUP_SAMPLES", 3, 0, 1000));
    s.steps_per_sample = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_STEPS_PER_SAMPLE", 5, 1, 100000));
    s.max_samples = static_cast<std::size_t>(config::integer("TUTTI_AUTOTUNE_MAX_SAMPLES", 24, 1, 10000));
    s.log_path = config::raw("TUTTI_AUTOTUNE_LOG").value_or("");
    s.seed = static_cast<std::uint64_t>(config::integer("TUTTI_AUTOTUNE_SEED", 1, 0, INT64_MAX));
    s.algorithm = config::flag("TUTTI_AUTOTUNE_ALGORITHM", true);
    return s;
  }
};

//! The tuner fusion::autotuned gives the engine (rank 0 only).
class bayesian_tuner final : public tuner {
 public:
  //! `choices`: the candidates joint tuning may run the engine's collectives with (joint.hpp);
  //! fewer than two, or TUTTI_AUTOTUNE_ALGORITHM=0, and the algorithm is not tuned.
  bayesian_tuner(const parameters& initial, autotune_settings s, std::string codec, std::string algorithm,
                 std::vector<algorithm_choice> choices = {})
      : settings_(std::move(s)),
        choices_(settings_.algorithm && choices.size() >= 2 ? std::move(choices) : std::vector<algorithm_choice>{}),
        optimizer_(choices_.empty() ? std::vector<std::size_t>{0, 0} : std::vector<std::size_t>{0, 0, levels()},
                   bayesian_options{.initial_samples = 5, .candidates = 2000, .xi = 0.01, .noise = 1e-3,
                                    .seed = settings_.seed, .unordered_levels = true}),
        current_(initial),
        x_(point_of(initial)),
        codec_(std::move(codec)),
        algorithm_(std::move(algorithm)) {
    if (!settings_.log_path.empty()) {
      log_ = std::fopen(settings_.log_path.c_str(), "w");
      if (!log_) throw invalid_argument("TUTTI_AUTOTUNE_LOG=" + settings_.log_path + ": cannot open it for writing");
      std::fputs("sample,threshold_bytes,cycle_us,codec,algorithm,score_bytes_per_s,warmup,best_score_bytes_per_s\n", log_);
      std::fflush(log_);
    }
    if (!choices_.empty()) {
      std::string names = algorithm_ + " (its own choice)";
      for (const auto& c : choices_) names += ", " + std::string(c.name);
      log(log_level::info, 0, "autotune: the engine's collectives' algorithm is tuned too, among " + names);
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
    current_ = parameters_at(x_);
    return current_;
  }

  [[nodiscard]] bool settled() const noexcept { return settled_; }

 private:
  //! Joint tuning's levels: the algorithm's own choice, then each candidate.
  [[nodiscard]] std::size_t levels() const noexcept { return choices_.size() + 1; }

  [[nodiscard]] parameters parameters_at(const std::vector<double>& x) const {
    parameters p = fusion_search_space::at(x);
    if (!choices_.empty()) {
      const std::size_t level = fusion_search_space::level_at(x[2], levels());
      p.algorithm = level == 0 ? 0 : choices_[level - 1].candidate + 1;
    }
    return p;
  }
  [[nodiscard]] std::vector<double> point_of(const parameters& p) const {
    auto x = fusion_search_space::of(p);
    if (!choices_.empty()) {
      std::size_t level = 0;
      for (std::size_t k = 0; k < choices_.size(); ++k)
        if (choices_[k].candidate + 1 == p.algorithm) level = k + 1;
      x.push_back(fusion_search_space::level_of(level, levels()));
    }
    return x;
  }

  //! A composed algorithm's name has a comma ("hierarchical<direct, ring>"): one CSV field, quoted.
  static std::string csv_field(std::string name) {
    return name.find(',') == std::string::npos ? name : '"' + name + '"';
  }
  //! The log's algorithm column: the communicator's algorithm, or the candidate joint tuning forced.
  [[nodiscard]] std::string algorithm_column() const {
    for (const auto& c : choices_)
      if (c.candidate + 1 == current_.algorithm) return csv_field(std::string(c.name));
    return csv_field(algorithm_);
  }

  void write_row(double score, bool warmup) {
    if (!log_) return;
    std::fprintf(log_, "%zu,%zu,%lld,%s,%s,%.6g,%d,%.6g\n", taken_, current_.threshold_bytes,
                 static_cast<long long>(current_.cycle_time.count()), codec_.c_str(), algorithm_column().c_str(),
                 score, warmup ? 1 : 0, best_);
    std::fflush(log_);
  }

  autotune_settings settings_;
  std::vector<algorithm_choice> choices_;  //!< empty: the algorithm is not tuned
  bayesian_optimizer optimizer_;
  parameters current_;
  std::vector<double> x_;
  std::string codec_, algorithm_;  //!< the communicator's policies' names
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

  static std::unique_ptr<tuner> make_tuner(const parameters& initial, std::string_view codec, std::string_view algorithm,
                                           const std::vector<algorithm_choice>& choices = {}) {
    return std::make_unique<bayesian_tuner>(initial, autotune_settings::from_env(), std::string(codec),
                                            std::string(algorithm), choices);
  }
};

static_assert(fusion_policy<autotuned<>>);

}  // namespace tutti::fusion
