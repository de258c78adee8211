//! @file versus.hpp  tutti-tune --versus TABLE: algorithm::tuned reading TABLE against each of its
//! candidates alone, measured in one interleaved sweep, as a markdown report.
//!
//! Why in one process: on a small, shared machine two launches of the same binary and algorithm
//! can differ by 1.5x (4 ranks on 2 cores: 58 vs 88 us at 8 B, depending on where the scheduler
//! puts the ranks), far more than the 5 % this comparison must resolve. Interleaving tuned and the
//! candidates point by point in one communicator puts every one of them under the same placement
//! and the same slow moments. Each candidate alone runs through tuned's dispatch with it forced,
//! so the dispatch's own cost (a binary search and an index, nanoseconds) is in both; the report
//! compares the table's choices, not two builds.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "contenders.hpp"
#include "sweep.hpp"
#include "tutti/core/collective.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_json.hpp"

namespace tune {

//! The bar of issue 20: never below this fraction of the best single algorithm at any point.
inline constexpr double versus_floor = 0.95;

//! The contenders of a --versus series: the table's choice first, then each candidate alone.
[[nodiscard]] inline std::vector<contender> versus_contenders(std::vector<contender> singles) {
  singles.insert(singles.begin(), contender{table_choice, "tuned", {}, {}, nullptr});
  return singles;
}

struct versus_result {
  std::string text;
  bool met = true;
};

[[nodiscard]] inline std::string us_text(double us, double spread) {
  char b[64];
  std::snprintf(b, sizeof b, us < 100 ? "%.2f ±%.2f" : "%.1f ±%.1f", us, spread);
  return b;
}

//! One series' table: per size, tuned's median (and spread, p75 - p25), what it ran, each
//! candidate's, the best candidate, and best / tuned (above 1: tuned is faster); then tuned's
//! geometric-mean speed against each candidate.
//! Whether `table` runs a candidate with its default tuning for (s, where) at `bytes`: then tuned
//! and that candidate alone are the same code, and only the algorithm's own variation separates
//! them (hierarchical<direct, ring> at 512 KiB over 1 Gbit/s: 4.6 or 12+ ms from one repeat to the
//! next, as the token bucket of tc's shaping lets its bursts through or not).
[[nodiscard]] inline bool plain_row_at(const tutti::tuner::table& table, const series& s,
                                       const tutti::tuner::layout& where, std::uint64_t bytes) {
  for (const auto& row : table.rows)
    if (row.collective_kind == s.collective && row.dtypes == tutti::tuner::class_of(s.type) && row.where == where &&
        row.min_bytes <= bytes && bytes <= row.max_bytes)
      return row.tuning.empty();
  return false;  // interpolated or from the model: not known to be the same code
}

inline void versus_series(const series& s, std::span<const tutti::tuner::candidate_info> candidates,
                          const tutti::tuner::table& table, const tutti::tuner::layout& where, versus_result& r) {
  std::string& t = r.text;
  t += "\n## " + std::string(tutti::name_of(s.collective)) + " " + std::string(tutti::name_of(s.type)) + "\n\n";
  t += "| size | tuned µs | tuned runs |";
  for (std::size_t j = 1; j < s.contenders.size(); ++j) t += " " + s.contenders[j].algorithm + " µs |";
  t += " best single | tuned / best |\n|---:|---:|:---|";
  for (std::size_t j = 1; j < s.contenders.size(); ++j) t += "---:|";
  t += ":---|---:|\n";
  std::vector<double> log_speed(s.contenders.size(), 0.0);
  std::vector<std::size_t> ran_as(s.contenders.size(), 0);  //!< sizes at which tuned ran contender j's candidate
  double worst = std::numeric_limits<double>::infinity(), worst_beyond = worst;
  std::uint64_t worst_at = 0, worst_beyond_at = 0;
  std::size_t sizes = 0;
  std::vector<double> median(s.contenders.size()), spread(s.contenders.size());
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const auto& row = s.points[i];
    if (row.empty() || row[0].rep_us.empty()) continue;
    for (std::size_t j = 0; j < row.size(); ++j) {  // once per point: median_of and spread_of sort a copy
      median[j] = median_of(row[j].rep_us);
      spread[j] = spread_of(row[j].rep_us);
    }
    const double tuned = median[0];
    std::size_t best = 0;
    for (std::size_t j = 1; j < row.size(); ++j)
      if (!row[j].rep_us.empty() && (best == 0 || median[j] < median[best])) best = j;
    if (best == 0 || tuned <= 0) continue;
    ++sizes;
    const double speed = median[best] / tuned;
    // Below the bar beyond the noise: by the rule that chose the rows (tuner/choose.hpp). Where
    // tuned runs the best candidate itself (its default tuning), the table chose right and only
    // that algorithm's own variation separates them: reported, not counted as the table's miss.
    const std::uint32_t ran = row[0].ran;
    const bool same_code = s.contenders[best].candidate == ran && plain_row_at(table, s, where, s.sizes[i]);
    const bool short_beyond_noise = speed < versus_floor && !same_code &&
                                    tutti::tuner::beyond_noise(median[best], spread[best], tuned, spread[0]);
    if (speed < worst) worst = speed, worst_at = s.sizes[i];
    if (short_beyond_noise && speed < worst_beyond) worst_beyond = speed, worst_beyond_at = s.sizes[i];
    for (std::size_t j = 1; j < row.size(); ++j) ran_as[j] += s.contenders[j].candidate == ran ? 1 : 0;
    t += "| " + bytes_text(s.sizes[i]) + " | " + us_text(tuned, spread[0]) + " | " +
         (ran < candidates.size() ? std::string(candidates[ran].name) : std::string("?")) + " |";
    for (std::size_t j = 1; j < row.size(); ++j) {
      t += " " + (row[j].rep_us.empty() ? std::string("-") : us_text(median[j], spread[j])) + " |";
      if (!row[j].rep_us.empty()) log_speed[j] += std::log(median[j] / tuned);
    }
    char b[96];
    std::snprintf(b, sizeof b, "%.3f%s", speed,
                  short_beyond_noise             ? " **<0.95**"
                  : speed < versus_floor && same_code ? " (<0.95: the same algorithm, its own variation)"
                  : speed < versus_floor         ? " (<0.95 within the noise)"
                                                 : "");
    t += " " + s.contenders[best].algorithm + " | " + b + " |\n";
  }
  if (sizes == 0) {
    t += "\n(no point measured)\n";
    r.met = false;
    return;
  }
  t += "\n";
  for (std::size_t j = 1; j < s.contenders.size(); ++j) {
    const double g = std::exp(log_speed[j] / static_cast<double>(sizes));
    char b[160];
    std::snprintf(b, sizeof b, "- geometric mean, tuned against %s: %.3f over %zu sizes%s", s.contenders[j].algorithm.c_str(),
                  g, sizes, g > 1 ? "" : " (**not above 1**)");
    t += b;
    // Where one candidate is the best at (almost) every size, tuned runs it there: against it the
    // geometric mean is 1 up to the noise, and cannot be above it.
    if (g <= 1 && 2 * ran_as[j] > sizes)
      t += "; tuned runs " + s.contenders[j].algorithm + " itself at " + std::to_string(ran_as[j]) + " of " +
           std::to_string(sizes) + " sizes";
    t += "\n";
    if (g <= 1) r.met = false;
  }
  char b[200];
  std::snprintf(b, sizeof b, "- worst point: %.3f of the best single algorithm (at %s)", worst, bytes_text(worst_at).c_str());
  t += b;
  if (worst_beyond < versus_floor) {
    std::snprintf(b, sizeof b, "; below 0.95 beyond the noise at %s (%.3f) and maybe elsewhere\n",
                  bytes_text(worst_beyond_at).c_str(), worst_beyond);
    r.met = false;
  } else {
    std::snprintf(b, sizeof b, worst < versus_floor ? "; below 0.95 only within the noise (the interquartile ranges overlap) "
                                                      "or where tuned ran that algorithm itself\n"
                                                    : "; at least 0.95 everywhere\n");
  }
  t += b;
}

//! The whole report: a heading with the table and the run, one section per series, the verdict.
[[nodiscard]] inline versus_result versus_report(const std::vector<series>& all, const std::string& table_path,
                                                 const tutti::tuner::layout& where,
                                                 std::span<const tutti::tuner::candidate_info> candidates,
                                                 const std::string& how) {
  versus_result r;
  r.text = "# algorithm::tuned (" + table_path + ") against every single algorithm: world " + std::to_string(where.world) +
           " (" + std::to_string(where.nodes) + " node(s) x " + std::to_string(where.ranks_per_node) + ")\n\n" + how +
           "\n\nMedians of the interleaved repeats, ± their spread (p75 - p25); tuned / best: the best single "
           "algorithm's time over tuned's (above 1: tuned is faster).\n";
  const tutti::tuner::table table = tutti::tuner::read_table_file(table_path);
  for (const auto& s : all) versus_series(s, candidates, table, where, r);
  r.text += r.met ? "\n**Goal met**: nowhere below 0.95 of the best single algorithm beyond the noise, and above "
                    "every one in geometric mean.\n"
                  : "\n**Goal missed** (above).\n";
  return r;
}

}  // namespace tune
