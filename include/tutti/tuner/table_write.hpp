//! @file table_write.hpp  A tuning table as canonical JSON (one row, one sample a line) and its hash.
//!
//! The writer is the format's definition of "the same table": fields in a fixed order, numbers in
//! their shortest exact form, tuning values sorted by name, nothing about where the text came from
//! (source, line numbers). So `table_hash` of a table read back from any spelling of the same JSON
//! (other whitespace, other key order) is the same, and ranks compare tables by one number.
//! Needs no YAML: tutti-tune writes tables wherever it is built. Reading is tuner/table_json.hpp.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/collective.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/fnv1a.hpp"
#include "tutti/core/json_text.hpp"
#include "tutti/tuner/table.hpp"

namespace tutti::tuner {

//! The format's name and version, as the first line of every table says them.
inline constexpr std::string_view table_format_name = "tutti-tuning-table";

namespace table_text {

//! A JSON string (core/json_text.hpp escapes it).
inline void quote(std::string& out, std::string_view s) {
  out += '"';
  out += json_escaped(s);
  out += '"';
}

//! The shortest text that reads back as exactly `v` (std::to_chars). A time or a bandwidth that is
//! not finite has no JSON spelling: refused, naming the field, rather than written as garbage.
inline void number(std::string& out, double v, std::string_view field) {
  if (!std::isfinite(v))
    throw invalid_argument("tuning table: field '" + std::string(field) + "' is not a finite number; JSON cannot hold it");
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  out.append(buffer, end);
}

//! `"key": ` after a separator when `first` is false.
inline void key(std::string& out, std::string_view k, bool& first) {
  if (!first) out += ", ";
  first = false;
  quote(out, k);
  out += ": ";
}

inline void tuning(std::string& out, const std::vector<tuning_value>& values) {
  std::vector<const tuning_value*> sorted;
  for (const auto& v : values) sorted.push_back(&v);
  std::sort(sorted.begin(), sorted.end(), [](const tuning_value* a, const tuning_value* b) { return a->name < b->name; });
  out += '{';
  bool first = true;
  for (const auto* v : sorted) {
    key(out, v->name, first);
    out += std::to_string(v->value);
  }
  out += '}';
}

inline void where(std::string& out, const layout& l, bool& first) {
  key(out, "world", first);
  out += std::to_string(l.world);
  key(out, "nodes", first);
  out += std::to_string(l.nodes);
  key(out, "ranks_per_node", first);
  out += std::to_string(l.ranks_per_node);
}

//! A measurement's fields inside an object already opened (a sample's are flat, a row's nested).
inline void measured_fields(std::string& out, const measurement& m, bool& first) {
  key(out, "algorithm", first);
  quote(out, m.algorithm);
  key(out, "tuning", first);
  tuning(out, m.tuning);
  key(out, "median_us", first);
  number(out, m.median_us, "median_us");
  key(out, "spread_us", first);
  number(out, m.spread_us, "spread_us");
  key(out, "busbw_gbs", first);
  number(out, m.busbw_gbs, "busbw_gbs");
}

inline void kind(std::string& out, collective c, dtype_class d, bool& first) {
  key(out, "collective", first);
  quote(out, name_of(c));
  key(out, "dtype_class", first);
  quote(out, name_of(d));
}

inline void row_line(std::string& out, const row& r) {
  out += '{';
  bool first = true;
  kind(out, r.collective_kind, r.dtypes, first);
  key(out, "min_bytes", first);
  out += std::to_string(r.min_bytes);
  key(out, "max_bytes", first);
  if (r.max_bytes == std::numeric_limits<std::uint64_t>::max()) out += "\"inf\"";
  else out += std::to_string(r.max_bytes);
  where(out, r.where, first);
  key(out, "algorithm", first);
  quote(out, r.algorithm);
  key(out, "tuning", first);
  tuning(out, r.tuning);
  for (const auto& [name, m] : {std::pair{"winner", &r.winner}, std::pair{"runner_up", &r.runner_up}}) {
    if (!*m) continue;
    key(out, name, first);
    out += '{';
    bool inner = true;
    measured_fields(out, **m, inner);
    out += '}';
  }
  if (!r.reason.empty()) {
    key(out, "reason", first);
    quote(out, r.reason);
  }
  out += '}';
}

inline void sample_line(std::string& out, const sample& s) {
  out += '{';
  bool first = true;
  kind(out, s.collective_kind, s.dtypes, first);
  where(out, s.where, first);
  key(out, "bytes", first);
  out += std::to_string(s.bytes);
  measured_fields(out, s.measured, first);
  out += '}';
}

[[nodiscard]] inline bool empty(const provenance& p) {
  return p.hosts.empty() && p.cpu.empty() && p.date.empty() && p.tutti_commit.empty() && p.transport.empty() &&
         p.ucx_version.empty() && p.kernel.empty() && p.command.empty() && p.tune_seconds == 0 && p.noise_rule.empty();
}

inline void provenance_line(std::string& out, const provenance& p) {
  out += '{';
  bool first = true;
  key(out, "hosts", first);
  out += '[';
  for (std::size_t i = 0; i < p.hosts.size(); ++i) {
    if (i) out += ", ";
    quote(out, p.hosts[i]);
  }
  out += ']';
  for (const auto& [name, value] : {std::pair{"cpu", &p.cpu}, std::pair{"date", &p.date},
                                    std::pair{"tutti_commit", &p.tutti_commit}, std::pair{"transport", &p.transport},
                                    std::pair{"ucx_version", &p.ucx_version}, std::pair{"kernel", &p.kernel},
                                    std::pair{"command", &p.command}}) {
    key(out, name, first);
    quote(out, *value);
  }
  key(out, "tune_seconds", first);
  number(out, p.tune_seconds, "tune_seconds");
  key(out, "noise_rule", first);
  quote(out, p.noise_rule);
  out += '}';
}

inline void model_line(std::string& out, const fitted_model& m) {
  out += '{';
  bool first = true;
  for (const auto& [name, value] :
       {std::pair{"alpha_intra", m.alpha_intra}, std::pair{"beta_intra", m.beta_intra},
        std::pair{"alpha_inter", m.alpha_inter}, std::pair{"beta_inter", m.beta_inter}, std::pair{"gamma", m.gamma},
        std::pair{"alpha_sync", m.alpha_sync}, std::pair{"base_latency", m.base_latency},
        std::pair{"switch_cost", m.switch_cost}, std::pair{"memory_beta", m.memory_beta},
        std::pair{"cache_bytes", m.cache_bytes}, std::pair{"rms_relative_error", m.rms_relative_error},
        std::pair{"max_relative_error", m.max_relative_error}}) {
    key(out, name, first);
    number(out, value, name);
  }
  key(out, "network_on_cpus", first);
  out += m.network_on_cpus ? "true" : "false";
  key(out, "samples", first);
  out += std::to_string(m.samples);
  out += '}';
}

}  // namespace table_text

//! The table as JSON, tuner/table_json.hpp's format version 1: the header line, then provenance and
//! model when there are any, then one row a line and one sample a line.
[[nodiscard]] inline std::string write_table(const table& t) {
  std::string out = "{\n  \"format\": ";
  table_text::quote(out, table_format_name);
  out += ", \"version\": " + std::to_string(table::format_version) + ",\n";
  if (!table_text::empty(t.made)) {
    out += "  \"provenance\": ";
    table_text::provenance_line(out, t.made);
    out += ",\n";
  }
  if (t.model) {
    out += "  \"model\": ";
    table_text::model_line(out, *t.model);
    out += ",\n";
  }
  out += "  \"rows\": [";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    table_text::row_line(out, t.rows[i]);
  }
  out += t.rows.empty() ? "]" : "\n  ]";
  if (!t.samples.empty()) {
    out += ",\n  \"samples\": [";
    for (std::size_t i = 0; i < t.samples.size(); ++i) {
      out += i ? ",\n    " : "\n    ";
      table_text::sample_line(out, t.samples[i]);
    }
    out += "\n  ]";
  }
  out += "\n}\n";
  return out;
}

//! The hash of the table's canonical text (write_table): equal for the same rows, samples, model
//! and provenance however the file was spaced or its keys ordered.
[[nodiscard]] inline std::uint64_t table_hash(const table& t) { return fnv1a_64(write_table(t)); }

//! "0x1234abcd5678ef90": how messages show a hash.
[[nodiscard]] inline std::string hash_text(std::uint64_t h) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) s += hex[(h >> shift) & 15];
  return s;
}

}  // namespace tutti::tuner
