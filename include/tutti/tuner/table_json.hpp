//! @file table_json.hpp  Reading a tuning table from JSON, strictly, every error at its row and line.
//!
//! The format (version 1) is what tuner/table_write.hpp writes; docs/tuning.md "Reading a table"
//! describes every field. JSON is YAML 1.2, so yaml-cpp (tutti::yaml) parses it and gives every
//! node its line, which JSON libraries do not keep. Refused, each as tutti::invalid_argument naming
//! the file, the row (or sample) number and the line: text that is not JSON, a wrong "format" or
//! "version", a field that is not one of the format's (with the closest one it might be a typo
//! of), a field given twice, a missing required field, a value of the wrong kind, a layout whose
//! numbers disagree, an unknown collective, dtype class or tuning value. What only a communicator
//! knows (which algorithms are compiled in; whether ranges overlap or leave gaps) compile() in
//! tuner/selection.hpp checks, with the same row and line.
#pragma once
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tutti/core/collective.hpp"
#include "tutti/core/did_you_mean.hpp"
#include "tutti/core/error.hpp"
#include "tutti/tuner/knobs.hpp"
#include "tutti/tuner/table.hpp"
#include "tutti/tuner/table_write.hpp"

namespace tutti::tuner {

namespace table_json_detail {

//! The 1-based line of a node (yaml-cpp counts from 0), 0 when it has none.
[[nodiscard]] inline int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

[[nodiscard]] inline std::string shown(const YAML::Node& n) {
  if (n.IsNull()) return "null";
  if (n.IsScalar()) return "'" + n.Scalar() + "'" + (n.Tag() == "!" ? " (quoted, so text)" : "");
  if (n.IsMap()) return "an object";
  if (n.IsSequence()) return "a list";
  return "nothing";
}

//! One JSON object being read: each field found once, and a field the format does not have refused
//! with the closest one it has. `where` begins every message ("t.json: row 3 (line 40): ").
class object {
 public:
  object(const YAML::Node& n, std::string where, std::vector<std::string_view> known,
         std::string_view unknown = "field")
      : where_(std::move(where)), line_(line_of(n)) {
    if (!n.IsMap()) fail(n, "", "expected an object {...}, got " + shown(n));
    for (const auto& kv : n) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar()) fail(k, "", "a field's name must be text, got " + shown(k));
      const std::string name = k.Scalar();
      if (std::find(known.begin(), known.end(), name) == known.end())
        fail(k, "", "unknown " + std::string(unknown) + " '" + name + "'" +
                        spelling::suggestion(spelling::closest(name, known)));
      for (const auto& f : fields_)
        if (f.first == name)
          fail(k, name, "given twice (first at line " + std::to_string(line_of(f.second)) + ")");
      fields_.emplace_back(name, kv.second);
    }
  }

  [[nodiscard]] const std::string& where() const noexcept { return where_; }
  //! How an object inside field `field` begins its messages: this one's, the field, its own line.
  [[nodiscard]] std::string where_inside(const YAML::Node& n, std::string_view field) const {
    const int l = line_of(n);
    return where_ + "field '" + std::string(field) + "'" + own_line(l) + ": ";
  }
  [[nodiscard]] int line() const noexcept { return line_; }
  [[nodiscard]] bool has(std::string_view name) const { return find(name) != nullptr; }

  //! "field 'x' (line 42): what" after `where`, the line only when it is not the object's own.
  [[noreturn]] void fail(const YAML::Node& at, std::string_view field, const std::string& what) const {
    const int l = line_of(at);
    std::string m = where_;
    if (!field.empty()) m += "field '" + std::string(field) + "'" + own_line(l) + ": ";
    else if (l && l != line_) m += "line " + std::to_string(l) + ": ";
    throw invalid_argument(m + what);
  }

  [[nodiscard]] const YAML::Node& required(std::string_view name) const {
    if (const YAML::Node* n = find(name)) return *n;
    throw invalid_argument(where_ + "missing field '" + std::string(name) + "'");
  }

  [[nodiscard]] std::string text(std::string_view name) const { return text_of(required(name), name); }
  [[nodiscard]] std::string text(std::string_view name, std::string otherwise) const {
    const YAML::Node* n = find(name);
    return n ? text_of(*n, name) : otherwise;
  }
  [[nodiscard]] std::string text_of(const YAML::Node& n, std::string_view name) const {
    if (!n.IsScalar()) fail(n, name, "expected text, got " + shown(n));
    return n.Scalar();
  }

  //! A whole number from 0 to `most`, written as a JSON number (a quoted "5" is text).
  [[nodiscard]] std::uint64_t count_of(const YAML::Node& n, std::string_view name,
                                       std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) const {
    std::uint64_t v = 0;
    if (n.IsScalar() && n.Tag() != "!") {
      const std::string& s = n.Scalar();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (!s.empty() && ec == std::errc{} && end == s.data() + s.size() && v <= most) return v;
    }
    fail(n, name, "expected a whole number from 0 to " + std::to_string(most) + ", got " + shown(n));
  }
  [[nodiscard]] std::uint64_t count(std::string_view name,
                                    std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) const {
    return count_of(required(name), name, most);
  }
  [[nodiscard]] int small(std::string_view name, int otherwise) const {
    const YAML::Node* n = find(name);
    return n ? static_cast<int>(count_of(*n, name, std::numeric_limits<int>::max())) : otherwise;
  }

  //! JSON's true or false.
  [[nodiscard]] bool flag(std::string_view name, bool otherwise) const {
    const YAML::Node* n = find(name);
    if (!n) return otherwise;
    if (n->IsScalar() && n->Tag() != "!" && (n->Scalar() == "true" || n->Scalar() == "false")) return n->Scalar() == "true";
    fail(*n, name, "expected true or false, got " + shown(*n));
  }

  //! A finite number (JSON's: 30.1, 1e-06).
  [[nodiscard]] double number(std::string_view name, std::optional<double> otherwise = std::nullopt) const {
    const YAML::Node* n = find(name);
    if (!n) {
      if (otherwise) return *otherwise;
      (void)required(name);
    }
    double v = 0;
    if (n->IsScalar() && n->Tag() != "!") {
      const std::string& s = n->Scalar();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (!s.empty() && ec == std::errc{} && end == s.data() + s.size() && std::isfinite(v)) return v;
    }
    fail(*n, name, "expected a finite number, got " + shown(*n));
  }

  [[nodiscard]] const YAML::Node* find(std::string_view name) const {
    for (const auto& f : fields_)
      if (f.first == name) return &f.second;
    return nullptr;
  }

 private:
  //! " (line 42)" when `l` is not the object's own line, else "".
  [[nodiscard]] std::string own_line(int l) const {
    return l && l != line_ ? " (line " + std::to_string(l) + ")" : std::string();
  }

  std::string where_;
  int line_;
  std::vector<std::pair<std::string, YAML::Node>> fields_;
};

//! "t.json: row 3 (line 40): ", as selection.hpp's row_where begins compile's refusals.
[[nodiscard]] inline std::string item_where(const std::string& source, std::string_view what, std::size_t index, int line) {
  return source + ": " + std::string(what) + " " + std::to_string(index + 1) +
         (line ? " (line " + std::to_string(line) + ")" : "") + ": ";
}

//! One of `names`, or refused with the closest of them.
template <class Enum, std::size_t N>
[[nodiscard]] Enum one_of(const object& o, std::string_view field, const std::array<Enum, N>& values,
                          std::optional<Enum> otherwise = std::nullopt) {
  if (!o.has(field) && otherwise) return *otherwise;
  const YAML::Node& n = o.required(field);
  const std::string given = o.text_of(n, field);
  std::vector<std::string_view> names;
  for (const Enum v : values) {
    if (name_of(v) == given) return v;
    names.push_back(name_of(v));
  }
  std::string list;
  for (const auto nm : names) list += (list.empty() ? "" : ", ") + std::string(nm);
  o.fail(n, field, "unknown " + std::string(field) + " '" + given + "'" +
                       spelling::suggestion(spelling::closest(given, names)) + " (known: " + list + ")");
}

inline constexpr std::array all_collectives{
    collective::allreduce, collective::reduce_scatter, collective::allgather, collective::broadcast,
    collective::barrier,   collective::reduce,         collective::alltoall};
inline constexpr std::array all_classes{dtype_class::floating, dtype_class::integer};

[[nodiscard]] inline std::vector<tuning_value> tuning_of(const object& o, std::string_view field) {
  std::vector<tuning_value> values;
  const YAML::Node* n = o.find(field);
  if (!n) return values;
  std::vector<std::string> known_names;
  const std::string all = knob_names();
  for (std::string_view rest = all; !rest.empty();) {
    const auto comma = rest.find(", ");
    known_names.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  std::vector<std::string_view> known(known_names.begin(), known_names.end());
  const object values_of(*n, o.where_inside(*n, field), known, "tuning value");
  for (const auto& name : known_names)
    if (values_of.has(name)) values.push_back({name, values_of.count(name)});
  return values;
}

[[nodiscard]] inline layout layout_of(const object& o) {
  layout l;
  l.world = static_cast<int>(o.count("world", std::numeric_limits<int>::max()));
  l.nodes = o.small("nodes", 1);
  l.ranks_per_node = o.small("ranks_per_node", l.nodes > 0 && l.world % l.nodes == 0 ? l.world / l.nodes : 0);
  if (l.world < 1 || l.nodes < 1 || l.nodes > l.world)
    throw invalid_argument(o.where() + "world " + std::to_string(l.world) + " on " + std::to_string(l.nodes) +
                           " node(s): a layout has at least one rank and one rank per node");
  if (l.ranks_per_node != 0 && l.ranks_per_node * l.nodes != l.world)
    throw invalid_argument(o.where() + "world " + std::to_string(l.world) + " is not " + std::to_string(l.nodes) +
                           " node(s) x " + std::to_string(l.ranks_per_node) +
                           " ranks_per_node (0 says the nodes hold different numbers)");
  return l;
}

inline constexpr std::string_view measured_names[] = {"algorithm", "tuning", "median_us", "spread_us", "busbw_gbs"};

[[nodiscard]] inline measurement measurement_of(const object& o) {
  measurement m;
  m.algorithm = o.text("algorithm");
  m.tuning = tuning_of(o, "tuning");
  m.median_us = o.number("median_us");
  m.spread_us = o.number("spread_us", 0.0);
  m.busbw_gbs = o.number("busbw_gbs", 0.0);
  if (m.median_us < 0 || m.spread_us < 0)
    throw invalid_argument(o.where() + "a time is never negative (median_us " + std::to_string(m.median_us) +
                           ", spread_us " + std::to_string(m.spread_us) + ")");
  return m;
}

[[nodiscard]] inline row row_of(const YAML::Node& n, const std::string& source, std::size_t index) {
  const int line = line_of(n);
  const object o(n, item_where(source, "row", index, line),
                 {"collective", "dtype_class", "min_bytes", "max_bytes", "world", "nodes", "ranks_per_node",
                  "algorithm", "tuning", "winner", "runner_up", "reason"});
  row r;
  r.line = line;
  r.collective_kind = one_of(o, "collective", all_collectives);
  r.dtypes = one_of(o, "dtype_class", all_classes, std::optional{dtype_class::floating});
  r.min_bytes = o.count("min_bytes");
  const YAML::Node& max = o.required("max_bytes");
  if (max.IsScalar() && max.Scalar() == "inf") r.max_bytes = std::numeric_limits<std::uint64_t>::max();
  else if (max.IsScalar() && max.Tag() != "!") r.max_bytes = o.count_of(max, "max_bytes");
  else o.fail(max, "max_bytes", "expected a whole number of bytes or \"inf\", got " + shown(max));
  if (r.max_bytes < r.min_bytes)
    o.fail(max, "max_bytes", std::to_string(r.max_bytes) + " is below min_bytes " + std::to_string(r.min_bytes));
  r.where = layout_of(o);
  r.algorithm = o.text("algorithm");
  r.tuning = tuning_of(o, "tuning");
  const std::vector<std::string_view> m_names(std::begin(measured_names), std::end(measured_names));
  for (const auto& [field, into] : {std::pair{"winner", &r.winner}, std::pair{"runner_up", &r.runner_up}})
    if (const YAML::Node* m = o.find(field)) *into = measurement_of(object(*m, o.where_inside(*m, field), m_names));
  r.reason = o.text("reason", "");
  return r;
}

[[nodiscard]] inline sample sample_of(const YAML::Node& n, const std::string& source, std::size_t index) {
  const int line = line_of(n);
  const object o(n, item_where(source, "sample", index, line),
                 {"collective", "dtype_class", "world", "nodes", "ranks_per_node", "bytes", "algorithm", "tuning",
                  "median_us", "spread_us", "busbw_gbs"});
  sample s;
  s.line = line;
  s.collective_kind = one_of(o, "collective", all_collectives);
  s.dtypes = one_of(o, "dtype_class", all_classes, std::optional{dtype_class::floating});
  s.where = layout_of(o);
  s.bytes = o.count("bytes");
  s.measured = measurement_of(o);
  return s;
}

[[nodiscard]] inline provenance provenance_of(const YAML::Node& n, const std::string& source) {
  const object o(n, source + ": provenance (line " + std::to_string(line_of(n)) + "): ",
                 {"hosts", "cpu", "date", "tutti_commit", "transport", "ucx_version", "kernel", "command",
                  "tune_seconds", "noise_rule"});
  provenance p;
  if (const YAML::Node* hosts = o.find("hosts")) {
    if (!hosts->IsSequence()) o.fail(*hosts, "hosts", "expected a list of host names, got " + shown(*hosts));
    for (const auto& h : *hosts) p.hosts.push_back(o.text_of(h, "hosts"));
  }
  for (const auto& [field, into] : {std::pair{"cpu", &p.cpu}, std::pair{"date", &p.date},
                                    std::pair{"tutti_commit", &p.tutti_commit}, std::pair{"transport", &p.transport},
                                    std::pair{"ucx_version", &p.ucx_version}, std::pair{"kernel", &p.kernel},
                                    std::pair{"command", &p.command}, std::pair{"noise_rule", &p.noise_rule}})
    *into = o.text(field, "");
  p.tune_seconds = o.number("tune_seconds", 0.0);
  return p;
}

[[nodiscard]] inline fitted_model model_of(const YAML::Node& n, const std::string& source) {
  const object o(n, source + ": model (line " + std::to_string(line_of(n)) + "): ",
                 {"alpha_intra", "beta_intra", "alpha_inter", "beta_inter", "gamma", "alpha_sync", "base_latency", "switch_cost",
                  "memory_beta", "cache_bytes", "network_on_cpus", "rms_relative_error",
                  "max_relative_error", "samples"});
  fitted_model m;
  for (const auto& [field, into] :
       {std::pair{"alpha_intra", &m.alpha_intra}, std::pair{"beta_intra", &m.beta_intra},
        std::pair{"alpha_inter", &m.alpha_inter}, std::pair{"beta_inter", &m.beta_inter}, std::pair{"gamma", &m.gamma},
        std::pair{"base_latency", &m.base_latency}, std::pair{"switch_cost", &m.switch_cost},
        std::pair{"memory_beta", &m.memory_beta},
        std::pair{"cache_bytes", &m.cache_bytes}, std::pair{"rms_relative_error", &m.rms_relative_error},
        std::pair{"max_relative_error", &m.max_relative_error}})
    *into = o.number(field, 0.0);
  // A model written before alpha_sync existed priced direct's epochs as messages.
  m.alpha_sync = o.has("alpha_sync") ? o.number("alpha_sync", 0.0) : m.alpha_intra;
  m.network_on_cpus = o.flag("network_on_cpus", false);
  m.samples = o.has("samples") ? static_cast<std::size_t>(o.count("samples")) : 0;
  return m;
}

template <class Item, class Read>
void list_of(const object& top, std::string_view field, std::vector<Item>& into, Read read) {
  const YAML::Node* n = top.find(field);
  if (!n) return;
  if (!n->IsSequence()) top.fail(*n, field, "expected a list [...], got " + shown(*n));
  std::size_t i = 0;
  for (const auto& item : *n) into.push_back(read(item, i++));
}

}  // namespace table_json_detail

//! The table in `text`, read from `source` (a file name, or what the text is: messages begin with it).
[[nodiscard]] inline table read_table(std::string_view text, std::string source) {
  namespace d = table_json_detail;
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw invalid_argument(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                           ": not valid JSON: " + e.msg);
  }
  const d::object top(doc, source + ": ", {"format", "version", "provenance", "model", "rows", "samples"});
  const YAML::Node& format = top.required("format");
  if (top.text_of(format, "format") != table_format_name)
    top.fail(format, "format", "expected \"" + std::string(table_format_name) + "\", got " + d::shown(format) +
                                   ": this is not a tutti tuning table");
  const YAML::Node& version = top.required("version");
  if (top.count_of(version, "version") != table::format_version)
    top.fail(version, "version", "version " + version.Scalar() + " is not one this tutti reads (it reads version " +
                                     std::to_string(table::format_version) + ")");
  (void)top.required("rows");
  table t;
  t.source = source;
  if (const YAML::Node* p = top.find("provenance")) t.made = d::provenance_of(*p, source);
  if (const YAML::Node* m = top.find("model")) t.model = d::model_of(*m, source);
  d::list_of(top, "rows", t.rows, [&](const YAML::Node& n, std::size_t i) { return d::row_of(n, source, i); });
  d::list_of(top, "samples", t.samples, [&](const YAML::Node& n, std::size_t i) { return d::sample_of(n, source, i); });
  return t;
}

//! The table in file `path` (messages name the path).
[[nodiscard]] inline table read_table_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument("cannot read tuning table '" + path + "': " + std::generic_category().message(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return read_table(text.str(), path);
}

}  // namespace tutti::tuner
