//! @file modes.hpp  tutti-tune's modes that need no launcher: --explain SIZE, --check FILE and
//! --export nccl|ucc|ompi, each on one table read here; and writing a sweep's table.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <tutti/algorithm/context.hpp>
#include <tutti/core/error.hpp>
#include <tutti/tuner/choose.hpp>
#include <tutti/tuner/explain.hpp>
#include <tutti/tuner/interpolate.hpp>
#include <tutti/tuner/measured_default.hpp>
#include <tutti/tuner/selection.hpp>
#include <tutti/tuner/table.hpp>
#include <tutti/tuner/table_write.hpp>

#include "files.hpp"
#include "options.hpp"
#include "sweep.hpp"

namespace tune {

//! Every layout the rows (and samples) of `t` are for, in the order first met.
[[nodiscard]] inline std::vector<tutti::tuner::layout> layouts_of(const tutti::tuner::table& t) {
  std::vector<tutti::tuner::layout> all;
  auto add = [&](const tutti::tuner::layout& l) {
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  };
  for (const auto& r : t.rows) add(r.where);
  for (const auto& s : t.samples) add(s.where);
  return all;
}

//! "1x4 (world 4)".
[[nodiscard]] inline std::string layout_words(const tutti::tuner::layout& l) {
  return tutti::tuner::layout_text(l) + " (world " + std::to_string(l.world) + ")";
}

//! "0 B..2047 B" with the last range's "inf".
[[nodiscard]] inline std::string range_text(const tutti::tuner::row& r) {
  const bool last = r.max_bytes == std::numeric_limits<std::uint64_t>::max();
  return std::to_string(r.min_bytes) + ".." + (last ? std::string("inf") : std::to_string(r.max_bytes)) + " B";
}

//! The candidates tutti-tune measures for a layout (shm's on one node, multi_node's across nodes),
//! as tuned<...> over that transport would list them, and that list's name for messages.
struct candidate_set {
  std::span<const tutti::tuner::candidate_info> candidates;
  std::string_view name;
  std::string by_default;  //!< what algorithm::automatic runs on that layout (the rule's default)
};
candidate_set candidates_for_layout(const tutti::tuner::layout& l);  // tutti_tune.cpp: it knows the lists

//! --check FILE: read (every field, with its line), compile every layout's rows (ranges, algorithms,
//! tuning values) and print what the table holds. Exit 0 when valid, 2 with the first error.
inline int check_mode(const options& o) {
  const tutti::tuner::table t = tutti::tuner::read_table_file(o.table);
  const auto& p = t.made;
  std::printf("%s: a valid tutti tuning table (format %d): %zu rows, %zu samples, %s\n", o.table.c_str(),
              tutti::tuner::table::format_version, t.rows.size(), t.samples.size(),
              t.model ? "a fitted cost model" : "no cost model");
  if (!p.date.empty() || !p.command.empty())
    std::printf("measured %s on %zu host(s) (%s), %s, %s, tutti %s, transport %s, in %.1f s\n  command: %s\n",
                p.date.c_str(), p.hosts.size(), p.hosts.empty() ? "" : p.hosts.front().c_str(), p.cpu.c_str(),
                p.kernel.c_str(), p.tutti_commit.c_str(), p.transport.c_str(), p.tune_seconds, p.command.c_str());
  for (const auto& where : layouts_of(t)) {
    const candidate_set set = candidates_for_layout(where);
    // Throws invalid_argument with the row and line of the first bad row (or gap, or overlap).
    (void)tutti::tuner::compile(t, where, set.candidates, 0);
    std::printf("%s, checked against %s:\n", layout_words(where).c_str(), std::string(set.name).c_str());
    std::vector<const tutti::tuner::row*> rows;
    for (const auto& r : t.rows)
      if (r.where == where) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
      return std::tie(a->collective_kind, a->dtypes, a->min_bytes) < std::tie(b->collective_kind, b->dtypes, b->min_bytes);
    });
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = *rows[i];
      const bool first = i == 0 || rows[i - 1]->collective_kind != r.collective_kind || rows[i - 1]->dtypes != r.dtypes;
      if (first)
        std::printf("  %s %s:", std::string(tutti::name_of(r.collective_kind)).c_str(),
                    std::string(tutti::tuner::name_of(r.dtypes)).c_str());
      std::string tuning;
      for (const auto& v : r.tuning) tuning += " {" + v.name + ": " + std::to_string(v.value) + "}";
      std::printf("%s %s %s%s", first ? "" : ";", range_text(r).c_str(), r.algorithm.c_str(), tuning.c_str());
      if (i + 1 == rows.size() || rows[i + 1]->collective_kind != r.collective_kind || rows[i + 1]->dtypes != r.dtypes)
        std::printf("\n");
    }
    if (rows.empty()) std::printf("  no rows: samples only (tuned interpolates them)\n");
  }
  return 0;
}

//! --explain SIZE: the row that covers SIZE, its reason, every candidate's measurement there and
//! the rule (tuner/choose.hpp's explain).
inline int explain_mode(const options& o) {
  const tutti::tuner::table t = table_for(o);
  tutti::tuner::layout where{o.world, o.nodes, o.ranks_per_node};
  if (o.world == 0) {
    const auto all = layouts_of(t);
    if (all.size() != 1) {
      std::string list;
      for (const auto& l : all)
        list += "\n  --world " + std::to_string(l.world) + " --nodes " + std::to_string(l.nodes) + " --ranks-per-node " +
                std::to_string(l.ranks_per_node);
      throw usage_error{t.source + " has " + (all.empty() ? std::string("no layout") : std::to_string(all.size()) + " layouts") +
                        "; say which with" + (all.empty() ? std::string(" --world N --nodes N --ranks-per-node N") : list)};
    }
    where = all.front();
  } else {
    if (o.nodes == 0) where.nodes = 1;
    if (o.ranks_per_node < 0) where.ranks_per_node = where.world % where.nodes ? 0 : where.world / where.nodes;
  }
  const auto cls = o.explain_dtype == "integer" ? tutti::tuner::dtype_class::integer : tutti::tuner::dtype_class::floating;
  // The default the rows were chosen with: fastest at the most sizes (tuner/measured_default.hpp).
  const tutti::tuner::contender automatic{candidates_for_layout(where).by_default, {}};
  const std::string by_default =
      tutti::tuner::measured_default(t.samples, o.explain_collective, cls, where, automatic).algorithm;
  std::printf("%s\n", tutti::tuner::explain(t, where, o.explain_collective, cls, o.explain_bytes, by_default).c_str());
  return 0;
}

//! --rechoose FILE --output OUT: every row chosen again from FILE's samples by this tutti-tune's
//! rule (tuner/choose.hpp, tuner/measured_default.hpp), nothing measured: when the rule changes,
//! the tables measured under the old one follow it without another tune. Each (collective, class,
//! layout) with samples gets new rows (candidates in tuned<...>'s order, knob variants after them);
//! one without samples (a hand-written row) keeps its rows; the samples and the model stay.
inline int rechoose_mode(const options& o) {
  namespace tn = tutti::tuner;
  if (!o.output_given) throw usage_error{"--rechoose FILE needs --output FILE"};
  tn::table t = tn::read_table_file(o.table);
  std::vector<tn::row> rows;
  const std::vector<const tn::sample*> series = tn::series_of(t.samples);
  for (const tn::sample* first : series) {
    const tn::sample& s = *first;
    const candidate_set set = candidates_for_layout(s.where);
    std::vector<tn::contender> order;
    for (const auto& c : set.candidates) order.push_back({std::string(c.name), {}});
    const bool automatic_measured = std::any_of(t.samples.begin(), t.samples.end(), [&](const tn::sample& x) {
      return tn::same_series(x, s) && x.measured.tuning.empty() && x.measured.algorithm == set.by_default;
    });
    const tn::contender fallback{automatic_measured ? set.by_default : s.measured.algorithm, {}};
    const tn::contender deflt = tn::measured_default(t.samples, s.collective_kind, s.dtypes, s.where, fallback);
    for (auto& r : tn::choose(t.samples, s.collective_kind, s.dtypes, s.where, deflt, order)) rows.push_back(std::move(r));
  }
  for (const auto& r : t.rows)  // rows nothing was measured for stay as they are
    if (std::none_of(series.begin(), series.end(), [&](const tn::sample* k) { return tn::same_series(*k, r); }))
      rows.push_back(r);
  for (auto& r : rows) r.line = 0;
  t.rows = std::move(rows);
  t.made.noise_rule = std::string(tn::noise_rule);
  t.made.command += " ; rows chosen again by " + o.command;
  t.source = o.output;
  for (const auto& where : layouts_of(t)) (void)tn::compile(t, where, candidates_for_layout(where).candidates, 0);
  write_file(o.output, tn::write_table(t));
  std::fprintf(stderr, "tutti-tune: wrote %s: %zu rows chosen again from %zu samples\n", o.output.c_str(), t.rows.size(),
               t.samples.size());
  return 0;
}

//! --export FORMAT (tools/tune/export_mode.cpp: tuner/export.hpp's helpers and tuner/choose.hpp's
//! share names, so they live in a translation unit of their own).
int export_mode(const options& o);

}  // namespace tune
