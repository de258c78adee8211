//! @file make_table.hpp  From a sweep's points to a tuning table: the samples, the rows the honest
//! rule chooses (tuner/choose.hpp), the fitted model when Eigen is there, and --merge.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sweep.hpp"
#include "tutti/tuner/table.hpp"

namespace tune {

//! Every measured point of `s` over `where` as a table sample: median and spread of its repeats.
[[nodiscard]] inline std::vector<tutti::tuner::sample> samples_of(const series& s, const tutti::tuner::layout& where) {
  std::vector<tutti::tuner::sample> out;
  for (std::size_t i = 0; i < s.sizes.size(); ++i)
    for (std::size_t j = 0; j < s.contenders.size(); ++j) {
      const point& p = s.points[i][j];
      if (p.rep_us.empty()) continue;
      tutti::tuner::sample x;
      x.collective_kind = s.collective;
      x.dtypes = tutti::tuner::class_of(s.type);
      x.where = where;
      x.bytes = s.sizes[i];
      x.measured.algorithm = s.contenders[j].algorithm;
      x.measured.tuning = s.contenders[j].tuning;
      x.measured.median_us = median_of(p.rep_us);
      x.measured.spread_us = spread_of(p.rep_us);
      x.measured.busbw_gbs = busbw_gbs(s.collective, s.sizes[i], where.world, x.measured.median_us);
      out.push_back(std::move(x));
    }
  return out;
}

//! Whether `old` (a row's or sample's) is replaced by this sweep: the same layout, collective and class.
template <class Item>
[[nodiscard]] bool remeasured(const Item& old, const tutti::tuner::table& fresh) {
  return std::any_of(fresh.samples.begin(), fresh.samples.end(), [&](const tutti::tuner::sample& s) {
    return s.where == old.where && s.collective_kind == old.collective_kind && s.dtypes == old.dtypes;
  });
}

//! "a", "a | b" (each part once): two provenances' texts side by side.
[[nodiscard]] inline std::string joined(const std::string& a, const std::string& b, const char* between = " | ") {
  if (a.empty() || a == b) return b;
  if (b.empty()) return a;
  return a + between + b;
}

//! `fresh` with `old`'s rows and samples of other layouts (or collectives, or classes) kept before
//! its own: several tune runs (2, 3, 4 ranks; shm then multi_node) make one table. The provenance
//! lists every run's hosts, transports and commands; tune_seconds adds up.
[[nodiscard]] inline tutti::tuner::table merged(const tutti::tuner::table& old, tutti::tuner::table fresh) {
  tutti::tuner::table t;
  for (const auto& r : old.rows)
    if (!remeasured(r, fresh)) t.rows.push_back(r);
  for (const auto& s : old.samples)
    if (!remeasured(s, fresh)) t.samples.push_back(s);
  t.rows.insert(t.rows.end(), fresh.rows.begin(), fresh.rows.end());
  t.samples.insert(t.samples.end(), fresh.samples.begin(), fresh.samples.end());
  for (auto& r : t.rows) r.line = 0;
  for (auto& s : t.samples) s.line = 0;
  auto& p = t.made;
  const auto &a = old.made, &b = fresh.made;
  p.hosts = a.hosts;
  for (const auto& h : b.hosts)
    if (std::find(p.hosts.begin(), p.hosts.end(), h) == p.hosts.end()) p.hosts.push_back(h);
  p.cpu = joined(a.cpu, b.cpu);
  p.date = b.date;
  p.tutti_commit = joined(a.tutti_commit, b.tutti_commit);
  p.transport = a.transport.find(b.transport) != std::string::npos ? a.transport : joined(a.transport, b.transport, ", ");
  p.ucx_version = joined(a.ucx_version, b.ucx_version);
  p.kernel = joined(a.kernel, b.kernel);
  p.command = joined(a.command, b.command, " ; then ");
  p.tune_seconds = a.tune_seconds + b.tune_seconds;
  p.noise_rule = joined(a.noise_rule, b.noise_rule);
  t.model = fresh.model;  // refitted over every sample by the caller when it can
  t.source = fresh.source;
  return t;
}

}  // namespace tune
