//! @file measured_default.hpp  The rule's default for one sweep: the candidate fastest at the most
//! sizes, not a compile-time guess.
//!
//! The honest rule (tuner/choose.hpp) switches away from the default only where a challenger wins
//! beyond the noise, so wherever the candidates are within the noise of one another the default
//! runs. Until 2026-11-26 (late) that default was algorithm::automatic's compile-time choice. On
//! namespace hosts 4 x 1 it is hierarchical<direct, ring> (one rank per node: ring with a detour),
//! which halving_doubling beat at 128 KiB-64 MiB by 0-20 % in every launch (medians of three tunes,
//! e.g. 323 against 402 us at 128 KiB), yet within a tune's ±25 % interquartile ranges at most sizes:
//! the table kept the slower algorithm at 64-256 KiB and 1-4 MiB and --versus then measured tuned
//! at 0.79-0.84 of halving_doubling there. The default is now the plain candidate (no tuning
//! values) that was fastest at the most sizes every plain candidate was measured at; a tie goes to
//! the lower geometric mean of the medians, then to the given default (automatic's choice). Not the
//! geometric mean alone: eager, twice as fast as any other at 8 B-1 KiB and ring's schedule above,
//! had the lowest mean on 4 x 1 and became the default where halving_doubling was faster.
#pragma once
#include <algorithm>
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

//! For (c, d, where): the plain candidate of `samples` fastest at the most sizes every plain candidate
//! has (ties: the lower geometric mean of medians there, then `fallback`); `fallback` when there are
//! fewer than two plain candidates or no common size.
[[nodiscard]] inline contender measured_default(std::span<const sample> samples, collective c, dtype_class d,
                                                const layout& where, const contender& fallback) {
  std::map<std::string, std::map<std::uint64_t, double>> medians;  // plain algorithm -> size -> median
  for (const sample& s : samples)
    if (s.collective_kind == c && s.dtypes == d && s.where == where && s.measured.tuning.empty() &&
        s.measured.median_us > 0)
      medians[s.measured.algorithm][s.bytes] = s.measured.median_us;
  if (medians.size() < 2) return fallback;
  std::map<std::string, int> wins;  // sizes at which each was the fastest (every one tied for it counts)
  std::map<std::string, double> log_sum;
  int common = 0;
  for (const auto& [bytes, unused] : medians.begin()->second) {
    bool everyone = true;
    double fastest = INFINITY;
    for (const auto& [name, by_size] : medians) {
      const auto at = by_size.find(bytes);
      everyone = everyone && at != by_size.end();
      if (at != by_size.end()) fastest = std::min(fastest, at->second);
    }
    if (!everyone) continue;
    ++common;
    for (const auto& [name, by_size] : medians) {
      const double us = by_size.at(bytes);
      wins[name] += us == fastest ? 1 : 0;
      log_sum[name] += std::log(us);
    }
  }
  if (common == 0) return fallback;
  const bool has_fallback = fallback.tuning.empty() && medians.count(fallback.algorithm);
  std::string best = has_fallback ? fallback.algorithm : medians.begin()->first;
  for (const auto& [name, unused] : medians) {
    const bool more = wins[name] > wins[best];
    const bool as_many_and_faster = wins[name] == wins[best] && log_sum[name] < log_sum[best];
    if (more || as_many_and_faster) best = name;
  }
  return best == fallback.algorithm && has_fallback ? fallback : contender{best, {}};
}

}  // namespace tutti::tuner
