//! @file measured_default.hpp  The rule's default for one sweep: the candidate fastest over all its
//! sizes (geometric mean), not a compile-time guess.
//!
//! The honest rule (tuner/choose.hpp) switches away from the default only where a challenger wins
//! beyond the noise, so wherever the candidates are within the noise of one another the default
//! runs. Until 2026-11-26 (late) that default was algorithm::automatic's compile-time choice. On
//! namespace hosts 4 x 1 it is hierarchical<direct, ring> (one rank per node: ring with a detour),
//! which halving_doubling beat at 128 KiB-64 MiB by 0-20 % in every launch (medians of three tunes,
//! e.g. 323 against 402 us at 128 KiB), yet within a tune's ±25 % interquartile ranges at most sizes:
//! the table kept the slower algorithm at 64-256 KiB and 1-4 MiB and --versus then measured tuned
//! at 0.79-0.84 of halving_doubling there. The default is now the plain candidate (no tuning
//! values) with the lowest geometric mean of its medians over the sizes every plain candidate was
//! measured at: the one algorithm a user would pick from the sweep. Only a lower mean replaces the
//! given default (automatic's choice), so ties keep it; a sweep with no common size keeps it too.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! For (c, d, where): the plain candidate of `samples` with the lowest geometric mean of medians over
//! the sizes every plain candidate has, when lower than `fallback`'s; otherwise `fallback`.
[[nodiscard]] inline contender measured_default(std::span<const sample> samples, collective c, dtype_class d,
                                                const layout& where, const contender& fallback) {
  std::map<std::string, std::map<std::uint64_t, double>> medians;  // plain algorithm -> size -> median
  for (const sample& s : samples)
    if (s.collective_kind == c && s.dtypes == d && s.where == where && s.measured.tuning.empty() &&
        s.measured.median_us > 0)
      medians[s.measured.algorithm][s.bytes] = s.measured.median_us;
  if (medians.size() < 2) return fallback;
  std::vector<std::uint64_t> common;  // sizes every plain candidate measured
  for (const auto& [bytes, us] : medians.begin()->second) {
    bool everyone = true;
    for (const auto& [name, by_size] : medians) everyone = everyone && by_size.count(bytes);
    if (everyone) common.push_back(bytes);
  }
  if (common.empty()) return fallback;
  const auto log_mean = [&](const std::map<std::uint64_t, double>& by_size) {
    double sum = 0;
    for (auto bytes : common) sum += std::log(by_size.at(bytes));
    return sum / static_cast<double>(common.size());
  };
  const bool has_fallback = fallback.tuning.empty() && medians.count(fallback.algorithm);
  std::string best = has_fallback ? fallback.algorithm : std::string{};
  double best_mean = has_fallback ? log_mean(medians.at(fallback.algorithm)) : INFINITY;
  for (const auto& [name, by_size] : medians)
    if (const double m = log_mean(by_size); m < best_mean) best = name, best_mean = m;
  if (best.empty()) return fallback;
  return best == fallback.algorithm && has_fallback ? fallback : contender{best, {}};
}

}  // namespace tutti::tuner
