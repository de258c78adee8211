//! @file pool.hpp  --pool: one layout's points measured by several launches, pooled point by point
//! before the rule chooses.
//!
//! Why: a launch can keep a state the next launch does not have. On this 2-core machine the same
//! binary ran shm 4 ranks' 8 B allreduce with direct at 18.3 us in one tune and 3.2-3.6 us in six
//! later launches (bound to cores or not); the table the slow launch wrote chose against direct, and
//! `--versus` then measured tuned at 0.36x of direct there. Repeats inside one launch cannot see
//! such a state: they share it. Launches separated in time (tools/tune/machine.sh runs every layout
//! once per pass, PASSES times) can, and the median over them leaves out one launch's state when
//! there are three or more.
//!
//! The pooled point: median_us is the median of the launches' medians; spread_us the median of
//! their spreads (the noise one launch sees, which is what the rule's bar compares: tuner/choose.hpp).
//! Only the pool files' samples of this run's layout, collectives and classes are used; they must be
//! earlier launches' own tables, not pooled ones (a pooled table would count its launches twice).
#pragma once
#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sweep.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_json.hpp"

namespace tune {

//! The key of one point: what was measured where, at which size.
[[nodiscard]] inline auto point_key(const tutti::tuner::sample& s) {
  std::vector<std::tuple<std::string, std::uint64_t>> knobs;
  for (const auto& v : s.measured.tuning) knobs.emplace_back(v.name, v.value);
  return std::tuple(static_cast<int>(s.collective_kind), static_cast<int>(s.dtypes), s.where.world, s.where.nodes,
                    s.where.ranks_per_node, s.bytes, s.measured.algorithm, std::move(knobs));
}

//! `fresh` (this launch's samples) pooled with the same points of every table in `files`. A point
//! only some launches measured (a budget cut a sweep short) is pooled over those that did.
[[nodiscard]] inline std::vector<tutti::tuner::sample> pooled(std::vector<tutti::tuner::sample> fresh,
                                                              const std::vector<std::string>& files) {
  using tutti::tuner::sample;
  if (fresh.empty()) return fresh;
  std::vector<sample> others;
  for (const auto& f : files)
    for (auto& s : tutti::tuner::read_table_file(f).samples) {
      const bool this_run_has_it =
          std::any_of(fresh.begin(), fresh.end(), [&](const sample& x) { return tutti::tuner::same_series(x, s); });
      if (this_run_has_it) others.push_back(std::move(s));
    }
  // Every point once, in this launch's order, then points only earlier launches reached.
  std::vector<sample> out;
  std::vector<std::vector<double>> medians, spreads;
  std::map<decltype(point_key(fresh.front())), std::size_t> index;
  auto add = [&](const sample& s) {
    const auto [at, first] = index.try_emplace(point_key(s), out.size());
    if (first) {
      out.push_back(s);
      medians.emplace_back();
      spreads.emplace_back();
    }
    const std::size_t i = at->second;
    medians[i].push_back(s.measured.median_us);
    spreads[i].push_back(s.measured.spread_us);
  };
  for (const auto& s : fresh) add(s);
  for (const auto& s : others) add(s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& m = out[i].measured;
    const double old_median = m.median_us;
    m.median_us = median_of(medians[i]);
    m.spread_us = median_of(spreads[i]);
    if (m.median_us > 0 && old_median > 0) m.busbw_gbs *= old_median / m.median_us;  // busbw scales with 1/time
    out[i].line = 0;
  }
  return out;
}

}  // namespace tune
