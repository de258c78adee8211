//! @file make_table.hpp  From a sweep's points to a tuning table: the samples, the rows the honest
//! rule chooses (tuner/choose.hpp), the fitted model when Eigen is there, and --merge.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "files.hpp"
#include "options.hpp"
#include "pool.hpp"
#include "sweep.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/choose.hpp"
#include "tutti/tuner/measured_default.hpp"
#include "tutti/tuner/selection.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_json.hpp"
#include "tutti/tuner/table_write.hpp"
#if defined(TUTTI_HAVE_EIGEN)
#include "tutti/tuner/fit_table.hpp"
#endif

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
  return std::any_of(fresh.samples.begin(), fresh.samples.end(),
                     [&](const tutti::tuner::sample& s) { return tutti::tuner::same_series(s, old); });
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

//! The rows of every series by the honest rule (tuner/choose.hpp): the default is the plain
//! candidate fastest over the sweep's sizes (tuner/measured_default.hpp), else `by_default` (what
//! algorithm::automatic runs here) where it has the collective, else the first candidate that has
//! it (what tuned<...> falls back to); ties go by tuned<...>'s order, defaults first.
[[nodiscard]] inline std::vector<tutti::tuner::row> rows_of(const std::vector<series>& all,
                                                            std::span<const tutti::tuner::sample> samples,
                                                            const tutti::tuner::layout& where, const std::string& by_default) {
  std::vector<tutti::tuner::row> rows;
  for (const auto& s : all) {
    if (s.contenders.empty()) continue;
    std::vector<tutti::tuner::contender> order;
    for (const auto& c : s.contenders) order.push_back({c.algorithm, c.tuning});
    const bool has_default = std::any_of(s.contenders.begin(), s.contenders.end(),
                                         [&](const contender& c) { return !c.knob && c.algorithm == by_default; });
    const tutti::tuner::contender fallback{has_default ? by_default : s.contenders.front().algorithm, {}};
    const auto d = tutti::tuner::class_of(s.type);
    const tutti::tuner::contender deflt = tutti::tuner::measured_default(samples, s.collective, d, where, fallback);
    for (auto& r : tutti::tuner::choose(samples, s.collective, d, where, deflt, order))
      rows.push_back(std::move(r));
  }
  return rows;
}

//! The cost model fitted to every sample of `t` (float ones when there are any: gamma differs
//! between classes), or none without Eigen or with too few samples (then rank 0 says why). What
//! the fit is told rather than finding (tuner::machine_shape): each node's cores (this machine's,
//! or --machine-cores shared by every node, which also puts the "network" on those CPUs), a
//! core's L2 cache, and how arguments were checked (direct's first epoch when shm's tuned<...>
//! has direct, the communicator's exchange across nodes, none with TUTTI_CHECK=0).
inline void fit_model(tutti::tuner::table& t, const options& o) {
  t.model.reset();
#if defined(TUTTI_HAVE_EIGEN)
  namespace tn = tutti::tuner;
  tn::fit_options f;
  const bool any_float = std::any_of(t.samples.begin(), t.samples.end(),
                                     [](const tn::sample& s) { return s.dtypes == tn::dtype_class::floating; });
  f.of_class = any_float ? tn::dtype_class::floating : tn::dtype_class::integer;
  if (o.machine_cores > 0) f.machine_cores = o.machine_cores;
  else f.cores_per_node = std::thread::hardware_concurrency();
  f.machine.network_on_cpus = o.machine_cores > 0;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  f.machine.cache_bytes = l2 > 0 ? static_cast<double>(l2) : 0;
  const auto check = tutti::config::raw("TUTTI_CHECK");
  f.machine.check = check && *check == "0"     ? tn::argument_check::none
                    : o.transport == "shm"     ? tn::argument_check::epoch
                                               : tn::argument_check::exchange;
  try {
    t.model = tn::fit_samples(t.samples, f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-tune: note: no cost model in the table: %s\n", e.what());
  }
#else
  (void)o;
  std::fprintf(stderr, "tutti-tune: note: no cost model in the table: this tutti-tune was built without Eigen\n");
#endif
}

//! Rank 0, after the sweep: the table (merged with --merge's), checked as tuned<...> will compile
//! it, written through a temporary file.
inline void write_table_of(const options& o, const std::vector<series>& all, const tutti::tuner::layout& where,
                           std::span<const tutti::tuner::candidate_info> candidates, const std::string& by_default,
                           tutti::tuner::provenance made) {
  tutti::tuner::table fresh;
  for (const auto& s : all)
    for (auto& x : samples_of(s, where)) fresh.samples.push_back(std::move(x));
  if (!o.pool.empty()) {
    fresh.samples = pooled(std::move(fresh.samples), o.pool);
    std::string commands;  // the table's cost is every launch's; its commands, each launch's in order
    for (const auto& f : o.pool) {
      const auto earlier = tutti::tuner::read_table_file(f).made;
      made.tune_seconds += earlier.tune_seconds;
      commands = joined(commands, earlier.command, " ; pooled with ");
    }
    made.command = joined(commands, made.command, " ; pooled with ");
  }
  fresh.rows = rows_of(all, fresh.samples, where, by_default);
  made.noise_rule = tutti::tuner::noise_rule;
  fresh.made = std::move(made);
  fresh.source = o.output;
  tutti::tuner::table t = std::move(fresh);
  if (!o.merge.empty() && std::filesystem::exists(o.merge)) t = merged(tutti::tuner::read_table_file(o.merge), std::move(t));
  fit_model(t, o);
  (void)tutti::tuner::compile(t, where, candidates, 0);  // what tuned<...> will check, before anyone reads it
  write_file(o.output, tutti::tuner::write_table(t));
  std::fprintf(stderr, "tutti-tune: wrote %s: %zu rows and %zu samples (this layout: %zu rows)\n", o.output.c_str(),
               t.rows.size(), t.samples.size(),
               static_cast<std::size_t>(std::count_if(t.rows.begin(), t.rows.end(),
                                                      [&](const tutti::tuner::row& r) { return r.where == where; })));
}

//! --combine A,B,... --output C: the tables merged in order (a later one's layouts replace an
//! earlier one's), the model refitted over all samples, written. No launcher: nothing is measured.
inline int combine_mode(const options& o) {
  if (o.combine.size() < 2 || !o.output_given)
    throw usage_error{"--combine takes two or more tables (A,B,...) and --output FILE"};
  tutti::tuner::table t = tutti::tuner::read_table_file(o.combine.front());
  for (std::size_t i = 1; i < o.combine.size(); ++i) t = merged(t, tutti::tuner::read_table_file(o.combine[i]));
  t.source = o.output;
  fit_model(t, o);
  write_file(o.output, tutti::tuner::write_table(t));
  std::fprintf(stderr, "tutti-tune: wrote %s: %zu rows and %zu samples from %zu tables\n", o.output.c_str(), t.rows.size(),
               t.samples.size(), o.combine.size());
  return 0;
}

}  // namespace tune
