//! @file choose.hpp  The honest rule: from measured samples to a table's rows, switching away from
//! the default only where a challenger wins by more than the noise.
//!
//! For one (collective, dtype class, layout), at each measured size: the candidate with the lowest
//! median is the best (equal medians: the earlier candidate). It replaces the default only when
//! `median_default - median_best > (spread_best + spread_default) / 2`: the two interquartile
//! ranges (median ± spread / 2) do not overlap, so a win that a rerun could undo does not switch
//! algorithms. Until 2026-11-26 the bar was the larger spread: an erratic default (hierarchical
//! at 512 KiB over a shaped 1 Gbit/s link: 12.4 ms ± 6.1, sometimes 25) then kept its place
//! against a steady challenger twice as fast (ring: 6.6 ms ± 0.02), which no rerun would undo. Adjacent
//! sizes with the same choice make one row; between two measured sizes s1 < s2 that chose
//! differently the boundary is their geometric mean sqrt(s1 s2) (sizes grow geometrically, so this
//! is the midpoint on the axis they were measured on); the first row starts at 0, the last ends at
//! "inf". Each row keeps the winner's and the runner-up's measurements at its largest measured size
//! and a sentence saying why. tutti-tune's --explain (tuner/explain.hpp) prints it back.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! The rule in words, as a table's provenance records it.
inline constexpr std::string_view noise_rule =
    "a challenger replaces the default at a measured size only when median_default - median_best > "
    "(spread_best + spread_default) / 2, i.e. their interquartile ranges do not overlap (a spread: the "
    "interquartile range of the repeats, as tutti-tune measures it); equal medians go to the earlier candidate; a range boundary "
    "between measured sizes s1 < s2 that chose differently is sqrt(s1*s2); the default is the candidate without tuning values "
    "that was fastest at the most sizes all of them measured (ties: the lower geometric mean, then algorithm::automatic's "
    "choice; tuner/measured_default.hpp)";

//! Whether a measurement with median `faster_us` beats one with `slower_us` beyond the noise: the
//! gap larger than half the two spreads together, i.e. their interquartile ranges (median ±
//! spread / 2) apart. The rule that chooses rows, and that tutti-tune --versus judges them by.
[[nodiscard]] constexpr bool beyond_noise(double faster_us, double faster_spread, double slower_us,
                                          double slower_spread) noexcept {
  return slower_us - faster_us > (faster_spread + slower_spread) / 2;
}

//! One thing that can run: an algorithm (its name as tables write it) with tuning values.
struct contender {
  std::string algorithm;
  std::vector<tuning_value> tuning;
};

//! Same algorithm and the same tuning values, in any order.
[[nodiscard]] inline bool same(const contender& c, std::string_view algorithm, std::span<const tuning_value> tuning) {
  return c.algorithm == algorithm && c.tuning.size() == tuning.size() &&
         std::is_permutation(c.tuning.begin(), c.tuning.end(), tuning.begin());
}

//! "8 B", "64 KiB", "1448 B": a size as messages show it (a unit only where it divides exactly).
[[nodiscard]] inline std::string bytes_text(std::uint64_t b) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (b == std::numeric_limits<std::uint64_t>::max()) return "inf";
  int u = 0;
  while (b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + " " + units[u];
}

//! "30.1 +-1.2 us": a measurement's median and spread.
[[nodiscard]] inline std::string time_text(const measurement& m) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f +-%.1f us", m.median_us, m.spread_us);
  return buffer;
}

//! "direct{direct.one_shot_bytes=4096}" or "ring": a contender as messages show it.
[[nodiscard]] inline std::string contender_text(std::string_view algorithm, std::span<const tuning_value> tuning) {
  std::string s(algorithm);
  if (tuning.empty()) return s;
  s += '{';
  for (std::size_t i = 0; i < tuning.size(); ++i)
    s += (i ? ", " : "") + tuning[i].name + "=" + std::to_string(tuning[i].value);
  return s + '}';
}

namespace choose_detail {

//! What the rule decided at one measured size.
struct verdict {
  std::uint64_t bytes = 0;
  std::size_t chosen = 0;                       //!< index into the candidates
  const measurement* winner = nullptr;          //!< the chosen one's measurement
  const measurement* runner_up = nullptr;       //!< the fastest of the others (null: no other)
  const measurement* default_m = nullptr;       //!< the default's (null: not measured here)
  bool kept_in_noise = false;                   //!< a faster challenger was within the noise
};

//! The rows of consecutive verdicts with the same choice, and why.
inline std::string reason_of(std::span<const verdict> run, const std::vector<contender>& candidates,
                             std::size_t by_default) {
  const verdict& last = run.back();
  const std::string span = run.size() == 1 ? bytes_text(run.front().bytes)
                                           : bytes_text(run.front().bytes) + ".." + bytes_text(last.bytes);
  const std::string where =
      "at " + span + " (" + std::to_string(run.size()) + " size" + (run.size() == 1 ? "" : "s") + ") ";
  const std::string chosen = contender_text(candidates[last.chosen].algorithm, candidates[last.chosen].tuning);
  const std::string deflt = contender_text(candidates[by_default].algorithm, candidates[by_default].tuning);
  const auto versus = [&](const measurement* other) {
    return other ? ", e.g. " + time_text(*last.winner) + " vs " + time_text(*other) + " for " +
                       contender_text(other->algorithm, other->tuning) + " at " + bytes_text(last.bytes)
                 : ", e.g. " + time_text(*last.winner) + " at " + bytes_text(last.bytes);
  };
  if (last.chosen != by_default) {
    if (!last.default_m)
      return where + chosen + " was fastest; the default (" + deflt + ") was not measured" + versus(last.runner_up);
    return where + chosen + " beat " + deflt + " (the default) beyond the noise (their interquartile ranges apart)" + versus(last.default_m);
  }
  const auto noisy = std::count_if(run.begin(), run.end(), [](const verdict& v) { return v.kept_in_noise; });
  if (noisy == 0) return where + deflt + " (the default) was fastest" + versus(last.runner_up);
  return where + deflt + " (the default) stays: where another was faster (" + std::to_string(noisy) + " of " +
         std::to_string(run.size()) + " sizes) it was within the noise" + versus(last.runner_up);
}

//! Where a row starting at measured size s2, after one ending at s1, begins: sqrt(s1 s2), rounded,
//! so that s1 stays below and s2 inside.
[[nodiscard]] inline std::uint64_t boundary(std::uint64_t s1, std::uint64_t s2) {
  const long double mean = std::sqrt(static_cast<long double>(s1)) * std::sqrt(static_cast<long double>(s2));
  const auto rounded = static_cast<std::uint64_t>(std::llround(mean));
  return std::clamp<std::uint64_t>(rounded, s1 + 1, s2);
}

}  // namespace choose_detail

//! The rows for (c, d, where) from those of `samples` that are for it. `candidates` gives the
//! order ties go by (a measured contender not in it joins at the end, in the order first seen);
//! `by_default` is what runs where no challenger wins beyond the noise (tutti-tune passes what
//! algorithm::automatic runs there). No samples for (c, d, where): no rows.
[[nodiscard]] inline std::vector<row> choose(std::span<const sample> samples, collective c, dtype_class d,
                                             const layout& where, const contender& by_default,
                                             std::span<const contender> candidates = {}) {
  namespace detail = choose_detail;
  std::vector<contender> order(candidates.begin(), candidates.end());
  const auto index_of = [&](const measurement& m) {
    for (std::size_t i = 0; i < order.size(); ++i)
      if (same(order[i], m.algorithm, m.tuning)) return i;
    order.push_back({m.algorithm, m.tuning});
    return order.size() - 1;
  };
  std::size_t deflt = order.size();
  for (std::size_t i = 0; i < order.size() && deflt == order.size(); ++i)
    if (same(order[i], by_default.algorithm, by_default.tuning)) deflt = i;
  if (deflt == order.size()) order.push_back(by_default);

  // The samples of this key by size, each with its candidate's index.
  struct point {
    std::uint64_t bytes;
    std::size_t candidate;
    const measurement* m;
  };
  std::vector<point> points;
  for (const sample& s : samples)
    if (s.collective_kind == c && s.dtypes == d && s.where == where)
      points.push_back({s.bytes, index_of(s.measured), &s.measured});
  std::stable_sort(points.begin(), points.end(), [](const point& a, const point& b) { return a.bytes < b.bytes; });

  std::vector<detail::verdict> verdicts;
  for (std::size_t begin = 0; begin < points.size();) {
    std::size_t end = begin;
    while (end < points.size() && points[end].bytes == points[begin].bytes) ++end;
    // The best by median (ties: the earlier candidate), and the default's measurement.
    const point* best = nullptr;
    const point* def = nullptr;
    for (std::size_t i = begin; i < end; ++i) {
      const point& p = points[i];
      if (!best || p.m->median_us < best->m->median_us ||
          (p.m->median_us == best->m->median_us && p.candidate < best->candidate))
        best = &p;
      if (p.candidate == deflt && !def) def = &p;
    }
    detail::verdict v{points[begin].bytes, best->candidate, best->m, nullptr, def ? def->m : nullptr, false};
    if (def && best != def) {
      const bool strictly_faster = best->m->median_us < def->m->median_us;
      if (!beyond_noise(best->m->median_us, best->m->spread_us, def->m->median_us, def->m->spread_us)) v = {v.bytes, deflt, def->m, nullptr, def->m, strictly_faster};
    }
    // The runner-up: the fastest of the others (ties: the earlier candidate).
    const point* second = nullptr;
    for (std::size_t i = begin; i < end; ++i) {
      const point& p = points[i];
      if (p.candidate == v.chosen) continue;
      if (!second || p.m->median_us < second->m->median_us ||
          (p.m->median_us == second->m->median_us && p.candidate < second->candidate))
        second = &p;
    }
    v.runner_up = second ? second->m : nullptr;
    verdicts.push_back(v);
    begin = end;
  }

  std::vector<row> rows;
  for (std::size_t begin = 0; begin < verdicts.size();) {
    std::size_t end = begin;
    while (end < verdicts.size() && verdicts[end].chosen == verdicts[begin].chosen) ++end;
    const std::span<const detail::verdict> run(verdicts.data() + begin, end - begin);
    row r;
    r.collective_kind = c;
    r.dtypes = d;
    r.where = where;
    r.min_bytes = begin == 0 ? 0 : detail::boundary(verdicts[begin - 1].bytes, verdicts[begin].bytes);
    r.max_bytes = end == verdicts.size() ? std::numeric_limits<std::uint64_t>::max()
                                         : detail::boundary(verdicts[end - 1].bytes, verdicts[end].bytes) - 1;
    r.algorithm = order[run.back().chosen].algorithm;
    r.tuning = order[run.back().chosen].tuning;
    r.winner = *run.back().winner;
    if (run.back().runner_up) r.runner_up = *run.back().runner_up;
    r.reason = detail::reason_of(run, order, deflt);
    rows.push_back(std::move(r));
    begin = end;
  }
  return rows;
}

//! The first sample of each (collective, dtype class, layout) series in `samples`, in the order first seen.
[[nodiscard]] inline std::vector<const sample*> series_of(std::span<const sample> samples) {
  std::vector<const sample*> firsts;
  for (const sample& s : samples)
    if (std::none_of(firsts.begin(), firsts.end(), [&](const sample* k) { return same_series(*k, s); }))
      firsts.push_back(&s);
  return firsts;
}

//! The rows for every (collective, dtype class, layout) that `samples` has, in the order first seen;
//! `default_for(c, where)` names each one's default (what algorithm::automatic runs there).
template <class DefaultFor>
[[nodiscard]] std::vector<row> choose_all(std::span<const sample> samples, DefaultFor&& default_for,
                                          std::span<const contender> candidates = {}) {
  std::vector<row> rows;
  for (const sample* first : series_of(samples)) {
    const sample& s = *first;
    const contender by_default = default_for(s.collective_kind, s.where);
    for (row& r : choose(samples, s.collective_kind, s.dtypes, s.where, by_default, candidates))
      rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace tutti::tuner
