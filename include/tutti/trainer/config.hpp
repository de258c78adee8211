//! @file config.hpp  The experiment configuration in Determined AI's shape, read strictly from YAML.
//!
//! A Determined experiment file runs under tutti with the same keys and the same meanings wherever
//! tutti can honour them (docs/trainer.md has the table). Where it cannot (a hyperparameter search,
//! storage other than a shared file system) or where the file is wrong (an unknown key, a wrong type,
//! an impossible value) parse() refuses with `<file>:<line>: <key>: <problem>, got '<value>'`: a typo
//! should cost one start of the launcher, not a training run that quietly ignored the key.
//! Hyperparameters are read by name by whoever needs them (number(), text(), flag()), so only after
//! training is set up can check_hyperparameters_used() say which ones nobody read.
//! Needs yaml-cpp (CMake target tutti::yaml).
#pragma once
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/core/error.hpp"

namespace tutti::trainer {

//! A training length as Determined writes it: `{epochs: N}`, `{batches: N}` or `{records: N}`.
struct length {
  enum class unit { epochs, batches, records };
  unit u = unit::epochs;
  std::size_t value = 0;
};

//! The unit's key in the YAML ("epochs", "batches", "records").
[[nodiscard]] inline std::string_view unit_name(length::unit u) noexcept {
  switch (u) {
    case length::unit::epochs: return "epochs";
    case length::unit::batches: return "batches";
    case length::unit::records: return "records";
  }
  return "?";
}

//! A length as the YAML writes it, e.g. "{epochs: 5}", for messages.
[[nodiscard]] inline std::string to_string(const length& l) {
  std::string s = "{";
  s += unit_name(l.u);
  s += ": " + std::to_string(l.value) + "}";
  return s;
}

//! Determined's `optimizations` section: how gradients are aggregated and fused.
struct optimizations {
  std::size_t aggregation_frequency = 1;       //!< batches whose gradients are summed before one exchange
  bool average_aggregated_gradients = true;    //!< divide that sum by aggregation_frequency
  bool average_training_metrics = true;        //!< average metrics over slots, else report the chief's
  std::string gradient_compression = "none";   //!< a codec name: none fp16 bf16 int8 topk onebit
  bool auto_tune_tensor_fusion = false;        //!< fusion::autotuned instead of fusion::threshold
  std::size_t tensor_fusion_threshold_mb = 64; //!< Determined's unit, MB (tutti's TUTTI_FUSION_THRESHOLD is bytes)
  double tensor_fusion_cycle_time_ms = 5;      //!< Determined's unit, ms
};

namespace config_detail {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours each cost one, so "optimisations" and "learnig_rate" are one step from the real key.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate `word` is most likely a typo of, or "" when none is close: two edits, or a third of
// the shorter word if more, and fewer edits than its length, so "value" suggests "val" and
// "optimisations" "optimizations", but "colour" suggests nothing.
[[nodiscard]] inline std::string closest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto c : candidates) {
    const std::size_t d = edit_distance(word, c);
    const std::size_t shorter = std::min(word.size(), c.size());
    if (d < best_distance && d < shorter && d <= std::max<std::size_t>(2, shorter / 3)) {
      best = std::string(c);
      best_distance = d;
    }
  }
  return best;
}

// " (did you mean 'x'?)" or "".
[[nodiscard]] inline std::string suggestion(const std::string& best) {
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

// "<source>:<line>: ", or "<source>: " where there is no line (a key that is missing altogether).
[[nodiscard]] inline std::string where(const std::string& source, int line) {
  return line > 0 ? source + ":" + std::to_string(line) + ": " : source + ": ";
}

// The 1-based line of a node, 0 when it has none (yaml-cpp counts from 0).
[[nodiscard]] inline int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

// A quoted scalar ("5", '5') is text even when it looks like a number, as in Determined's loader:
// yaml-cpp tags quoted scalars "!" and plain ones "?".
[[nodiscard]] inline bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

// How a value is shown after "got".
[[nodiscard]] inline std::string shown(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'" + (quoted(n) ? " (quoted, so text)" : "");
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  return "nothing";
}

[[nodiscard]] inline std::optional<std::size_t> to_unsigned(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  unsigned long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v > std::numeric_limits<std::size_t>::max())
    return std::nullopt;
  return static_cast<std::size_t>(v);
}

[[nodiscard]] inline std::optional<double> to_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// YAML 1.2's booleans, as Determined's loader reads them (not YAML 1.1's yes/no/on/off).
[[nodiscard]] inline std::optional<bool> to_flag(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

// Reads values out of YAML nodes for one source, throwing invalid_argument that names the source,
// the line, the dotted key and the value.
class reader {
 public:
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] std::string at(const YAML::Node& n) const { return where(source_, line(n)); }

  // yaml-cpp marks an empty value (`max_restarts:` and nothing) where the next token starts, often
  // the next line; so the line of its key is kept here and reported instead.
  void empty_value(const YAML::Node& value, const YAML::Node& key) const {
    if (value.IsNull()) empty_values_.emplace_back(value, line_of(key));
  }
  [[nodiscard]] int line(const YAML::Node& n) const {
    if (n.IsDefined() && n.IsNull())
      for (const auto& [value, key_line] : empty_values_)
        if (value.is(n)) return key_line;
    return line_of(n);
  }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const { throw invalid_argument(at(n) + what); }
  [[noreturn]] void expected(const YAML::Node& n, const std::string& key, const std::string& what) const {
    fail(n, key + ": expected " + what + ", got " + shown(n));
  }
  //! `key` is absent; the message points at its parent's line when there is a parent.
  [[noreturn]] void missing(const YAML::Node* parent, const std::string& key, const std::string& hint) const {
    throw invalid_argument(where(source_, parent ? line(*parent) : 0) + "missing required key '" + key + "' (" +
                           hint + ")");
  }

  [[nodiscard]] std::size_t positive_integer(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_unsigned(n.Scalar()) : std::nullopt;
    if (!v || *v == 0) expected(n, key, "a positive integer");
    return *v;
  }
  [[nodiscard]] std::size_t non_negative_integer(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_unsigned(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "a non-negative integer");
    return *v;
  }
  [[nodiscard]] double number(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_number(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "a number");
    return *v;
  }
  [[nodiscard]] bool flag(const YAML::Node& n, const std::string& key) const {
    const auto v = n.IsScalar() && !quoted(n) ? to_flag(n.Scalar()) : std::nullopt;
    if (!v) expected(n, key, "true or false");
    return *v;
  }
  [[nodiscard]] std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar() || n.Scalar().empty()) expected(n, key, "text");
    return n.Scalar();
  }

 private:
  std::string source_;
  mutable std::vector<std::pair<YAML::Node, int>> empty_values_;
};

// One YAML mapping with its keys checked: each a scalar, none twice, each among `known` (unless
// `known` is empty: any key). Lookups by key afterwards.
class mapping {
 public:
  struct entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  // Keys of Determined's that tutti does not support: named as such rather than as typos.
  mapping(const reader& r, const YAML::Node& node, std::string path, std::vector<std::string_view> known,
          std::vector<std::string_view> determined_only = {})
      : path_(std::move(path)) {
    if (!node.IsMap() && path_.empty()) r.fail(node, "expected a mapping of Determined's experiment keys, got " + shown(node));
    if (!node.IsMap()) r.expected(node, path_, "a mapping");
    // By value: yaml-cpp's iterator-> returns a temporary proxy, so a reference to it->first dangles.
    for (const auto& kv : node) {
      const YAML::Node k = kv.first;
      if (!k.IsScalar()) r.fail(k, (path_.empty() ? std::string() : path_ + ": ") + "expected a key, got " + shown(k));
      const std::string name = k.Scalar();
      for (const auto& e : entries_)
        if (e.key == name)
          r.fail(k, "duplicate key '" + dotted(name) + "' (first at line " + std::to_string(line_of(e.key_node)) + ")");
      if (!known.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
        if (std::find(determined_only.begin(), determined_only.end(), name) != determined_only.end())
          r.fail(k, "unsupported key '" + dotted(name) + "': Determined reads it, tutti does not; remove it");
        const std::string best = closest(name, known);
        r.fail(k, "unknown key '" + dotted(name) + "'" + suggestion(best.empty() ? best : dotted(best)));
      }
      r.empty_value(kv.second, k);
      entries_.push_back({name, k, kv.second});
    }
  }

  [[nodiscard]] std::optional<YAML::Node> get(std::string_view key) const {
    for (const auto& e : entries_)
      if (e.key == key) return e.value;
    return std::nullopt;
  }
  // The key itself (for its line: a block mapping's own mark is its first entry's line).
  [[nodiscard]] std::optional<YAML::Node> key_node(std::string_view key) const {
    for (const auto& e : entries_)
      if (e.key == key) return e.key_node;
    return std::nullopt;
  }
  [[nodiscard]] std::string dotted(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  [[nodiscard]] const std::vector<entry>& entries() const noexcept { return entries_; }

 private:
  std::string path_;
  std::vector<entry> entries_;
};

}  // namespace config_detail

//! An experiment as Determined's YAML describes it, checked: every value in range, every key known.
//! Not thread-safe: number(), text() and flag() record which hyperparameters were read.
struct experiment_config {
  std::size_t slots_per_trial = 1;                 //!< resources.slots_per_trial: ranks training together
  std::size_t global_batch_size = 0;               //!< hyperparameters.global_batch_size: records per batch, all slots
  std::size_t records_per_epoch = 0;               //!< records_per_epoch: needed by lengths in epochs
  length max_length;                               //!< searcher.max_length: how long the trial trains
  std::optional<length> min_validation_period;     //!< validate at least this often
  std::optional<length> min_checkpoint_period;     //!< checkpoint at least this often
  trainer::optimizations optimizations;            //!< optimizations.* (qualified: the member hides the type)
  std::string network_interface;                   //!< dtrain_network_interface, in TUTTI_NET_IFACE's syntax
  std::string checkpoint_dir;                      //!< checkpoint_storage host_path (+ storage_path); "" if none
  std::vector<std::string> warnings;               //!< what is allowed but probably not meant

  //! The hyperparameter `key` as a number; `fallback` when absent. Not a number: invalid_argument
  //! naming the key, the value and its line.
  [[nodiscard]] double number(const std::string& key, double fallback) const {
    const hyperparameter* h = find(key);
    if (h == nullptr) return fallback;
    const auto v = h->quoted ? std::nullopt : config_detail::to_number(h->value);
    if (!v) throw invalid_argument(bad_hyperparameter(key, *h, "a number"));
    return *v;
  }
  //! The hyperparameter `key` as text (any scalar); `fallback` when absent.
  [[nodiscard]] std::string text(const std::string& key, const std::string& fallback) const {
    const hyperparameter* h = find(key);
    return h == nullptr ? fallback : h->value;
  }
  //! The hyperparameter `key` as true or false; `fallback` when absent.
  [[nodiscard]] bool flag(const std::string& key, bool fallback) const {
    const hyperparameter* h = find(key);
    if (h == nullptr) return fallback;
    const auto v = h->quoted ? std::nullopt : config_detail::to_flag(h->value);
    if (!v) throw invalid_argument(bad_hyperparameter(key, *h, "true or false"));
    return *v;
  }

  //! Throws naming every hyperparameter that nothing has read (a misspelt one would otherwise be
  //! ignored and its fallback used), with a suggestion among the keys that were asked for.
  void check_hyperparameters_used() const {
    std::vector<std::string_view> missed;  // asked for but absent: what a typo probably meant
    for (const auto& k : asked_)
      if (!hyperparameters_.contains(k)) missed.push_back(k);
    std::string problems;
    for (const auto& [key, h] : hyperparameters_) {
      if (h.used) continue;
      if (!problems.empty()) problems += "; ";
      problems += config_detail::where(source_, h.line) + "unknown hyperparameter '" + key + "'" +
                  config_detail::suggestion(config_detail::closest(key, missed));
    }
    if (!problems.empty()) throw invalid_argument(problems);
  }

  //! Records each slot trains on per batch: the global batch divided by the slots, rounded down.
  [[nodiscard]] std::size_t per_slot_batch_size() const noexcept {
    return slots_per_trial == 0 ? 0 : global_batch_size / slots_per_trial;
  }
  //! Whole batches in one epoch: records_per_epoch divided by the global batch, rounded down.
  [[nodiscard]] std::size_t batches_per_epoch() const noexcept {
    return global_batch_size == 0 ? 0 : records_per_epoch / global_batch_size;
  }
  //! A length in batches: epochs times batches_per_epoch(), or records divided by the global batch
  //! (rounded down).
  [[nodiscard]] std::size_t to_batches(const length& l) const {
    if (global_batch_size == 0)
      throw invalid_argument("experiment_config::to_batches(" + to_string(l) + "): hyperparameters.global_batch_size is 0");
    switch (l.u) {
      case length::unit::batches: return l.value;
      case length::unit::records: return l.value / global_batch_size;
      case length::unit::epochs:
        if (records_per_epoch == 0)
          throw invalid_argument("experiment_config::to_batches(" + to_string(l) + ") needs records_per_epoch");
        return l.value * batches_per_epoch();
    }
    return 0;
  }

  //! Parses Determined-style YAML; `source_name` (a file name) begins every message.
  [[nodiscard]] static experiment_config parse(const std::string& yaml_text, const std::string& source_name);
  //! Reads and parses the file at `path`.
  [[nodiscard]] static experiment_config load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw invalid_argument("cannot read the experiment configuration '" + path +
                             "': " + std::generic_category().message(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path);
  }

 private:
  struct hyperparameter {
    std::string value;
    bool quoted = false;
    int line = 0;
    mutable bool used = false;
  };

  const hyperparameter* find(const std::string& key) const {
    asked_.insert(key);
    const auto it = hyperparameters_.find(key);
    if (it == hyperparameters_.end()) return nullptr;
    it->second.used = true;
    return &it->second;
  }
  std::string bad_hyperparameter(const std::string& key, const hyperparameter& h, const char* what) const {
    return config_detail::where(source_, h.line) + "hyperparameters." + key + ": expected " + what + ", got '" +
           h.value + "'" + (h.quoted ? " (quoted, so text)" : "");
  }

  std::map<std::string, hyperparameter, std::less<>> hyperparameters_;
  mutable std::set<std::string, std::less<>> asked_;  // every key read, present or not
  std::string source_;
};

inline experiment_config experiment_config::parse(const std::string& yaml_text, const std::string& source_name) {
  using config_detail::line_of;
  using config_detail::mapping;
  const config_detail::reader r(source_name);

  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) throw invalid_argument(source_name + ": invalid YAML: " + e.msg);
    throw invalid_argument(source_name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                           ": invalid YAML: " + e.msg);
  }
  if (root.IsNull() || !root.IsDefined())
    throw invalid_argument(source_name + ": empty experiment configuration: expected Determined's keys "
                                         "(searcher, hyperparameters, resources, ...)");

  experiment_config c;
  c.source_ = source_name;
  const mapping top(r, root, "",
                    {"name", "description", "entrypoint", "resources", "hyperparameters", "records_per_epoch",
                     "searcher", "min_validation_period", "min_checkpoint_period", "optimizations",
                     "checkpoint_storage", "max_restarts", "environment", "dtrain_network_interface"},
                    {"bind_mounts", "data", "debug", "labels", "perform_initial_validation", "profiling", "project",
                     "reproducibility", "scheduling_unit", "workspace", "pbs", "slurm", "integrations",
                     "log_policies", "retention_policy", "internal"});

  // Free text that tutti only checks the type of.
  for (const char* key : {"name", "description"})
    if (const auto v = top.get(key)) (void)r.text(*v, key);
  if (const auto v = top.get("entrypoint")) {
    if (v->IsSequence()) {
      for (const auto& part : *v) (void)r.text(part, "entrypoint");
    } else {
      (void)r.text(*v, "entrypoint");
    }
  }
  if (const auto v = top.get("environment")) (void)mapping(r, *v, "environment", {});
  if (const auto v = top.get("max_restarts")) (void)r.non_negative_integer(*v, "max_restarts");

  // resources and the network interface, which Determined accepts in either place.
  YAML::Node slots_node;
  std::optional<YAML::Node> iface_node = top.get("dtrain_network_interface");
  std::string iface_key = "dtrain_network_interface";
  if (const auto v = top.get("resources")) {
    const mapping res(r, *v, "resources", {"slots_per_trial", "dtrain_network_interface"});
    if (const auto s = res.get("slots_per_trial")) {
      c.slots_per_trial = r.positive_integer(*s, "resources.slots_per_trial");
      slots_node = *s;
    }
    if (const auto i = res.get("dtrain_network_interface")) {
      if (iface_node && r.text(*iface_node, iface_key) != r.text(*i, "resources.dtrain_network_interface"))
        r.fail(*i, "resources.dtrain_network_interface '" + i->Scalar() + "' disagrees with dtrain_network_interface '" +
                       iface_node->Scalar() + "' (line " + std::to_string(line_of(*iface_node)) + "): keep one");
      iface_node = *i;
      iface_key = "resources.dtrain_network_interface";
    }
  }
  if (iface_node) {
    c.network_interface = r.text(*iface_node, iface_key);
    try {
      (void)bootstrap::interface_filter::parse(c.network_interface, iface_key);
    } catch (const invalid_argument& e) {
      r.fail(*iface_node, e.what());
    }
  }

  // hyperparameters: each a value, or Determined's {type: const, val: X}; a search is refused.
  const auto hp_section = top.get("hyperparameters");
  if (hp_section) {
    const mapping hps(r, *hp_section, "hyperparameters", {});
    for (const auto& e : hps.entries()) {
      const std::string key = "hyperparameters." + e.key;
      YAML::Node value = e.value;
      if (value.IsMap()) {
        const auto type = [&]() -> std::optional<YAML::Node> {
          for (const auto& kv : value)
            if (kv.first.IsScalar() && kv.first.Scalar() == "type") return kv.second;
          return std::nullopt;
        }();
        if (!type) r.expected(value, key, "a value or {type: const, val: ...}");
        const std::string t = r.text(*type, key + ".type");
        if (t != "const")
          r.fail(*type, key + ": type '" + t + "' asks for a search, and tutti runs one trial: use {type: const, "
                              "val: ...} or a plain value");
        const mapping form(r, value, key, {"type", "val"});
        const auto val = form.get("val");
        if (!val) r.missing(&e.key_node, key + ".val", "the value of a const hyperparameter");
        value = *val;
      }
      if (!value.IsScalar()) r.expected(value, key, "a value or {type: const, val: ...}");
      c.hyperparameters_[e.key] = {value.Scalar(), config_detail::quoted(value), line_of(value)};
      if (e.key == "global_batch_size") {
        c.global_batch_size = r.positive_integer(value, key);
        c.hyperparameters_[e.key].used = true;  // read here, for every trial
      }
    }
  }
  const auto hp_key = top.key_node("hyperparameters");
  if (c.global_batch_size == 0)
    r.missing(hp_key ? &*hp_key : nullptr, "hyperparameters.global_batch_size",
            "the records of one batch, summed over all slots");

  YAML::Node records_node;
  if (const auto v = top.get("records_per_epoch")) {
    c.records_per_epoch = r.positive_integer(*v, "records_per_epoch");
    records_node = *v;
  }

  // Lengths; each remembers its node, for the checks that need records_per_epoch.
  struct read_length_t {
    std::string key;
    YAML::Node node;
    length value;
  };
  std::vector<read_length_t> lengths;
  const auto read_length = [&](const YAML::Node& n, const std::string& key) {
    if (!n.IsMap()) r.expected(n, key, "a length such as {epochs: 1}, {batches: 100} or {records: 6400}");
    const mapping m(r, n, key, {"epochs", "batches", "records"});
    if (m.entries().size() != 1)
      r.fail(n, key + ": expected exactly one of epochs, batches or records, got " +
                    (m.entries().empty() ? std::string("none") : m.entries()[0].key + " and " + m.entries()[1].key));
    const auto& e = m.entries()[0];
    length l;
    l.u = e.key == "epochs" ? length::unit::epochs : e.key == "batches" ? length::unit::batches : length::unit::records;
    l.value = r.positive_integer(e.value, key + "." + e.key);
    lengths.push_back({key, n, l});
    return l;
  };

  // searcher: one trial, for max_length.
  const auto searcher_node = top.get("searcher");
  if (!searcher_node) r.missing(nullptr, "searcher.max_length", "how long the trial trains, e.g. {epochs: 1}");
  const mapping searcher(r, *searcher_node, "searcher", {"name", "metric", "smaller_is_better", "max_length"});
  if (const auto v = searcher.get("name")) {
    const std::string name = r.text(*v, "searcher.name");
    if (name != "single")
      r.fail(*v, "searcher.name: tutti runs one trial, so only 'single' is accepted, got '" + name + "'");
  }
  if (const auto v = searcher.get("metric")) (void)r.text(*v, "searcher.metric");
  if (const auto v = searcher.get("smaller_is_better")) (void)r.flag(*v, "searcher.smaller_is_better");
  const auto max_length_node = searcher.get("max_length");
  if (!max_length_node) {
    const YAML::Node searcher_key = *top.key_node("searcher");
    r.missing(&searcher_key, "searcher.max_length", "how long the trial trains, e.g. {epochs: 1}");
  }
  c.max_length = read_length(*max_length_node, "searcher.max_length");
  if (const auto v = top.get("min_validation_period")) c.min_validation_period = read_length(*v, "min_validation_period");
  if (const auto v = top.get("min_checkpoint_period")) c.min_checkpoint_period = read_length(*v, "min_checkpoint_period");

  if (const auto v = top.get("optimizations")) {
    const mapping opt(r, *v, "optimizations",
                      {"aggregation_frequency", "average_aggregated_gradients", "average_training_metrics",
                       "gradient_compression", "auto_tune_tensor_fusion", "tensor_fusion_threshold",
                       "tensor_fusion_cycle_time"});
    auto& o = c.optimizations;
    if (const auto x = opt.get("aggregation_frequency"))
      o.aggregation_frequency = r.positive_integer(*x, "optimizations.aggregation_frequency");
    if (const auto x = opt.get("average_aggregated_gradients"))
      o.average_aggregated_gradients = r.flag(*x, "optimizations.average_aggregated_gradients");
    if (const auto x = opt.get("average_training_metrics"))
      o.average_training_metrics = r.flag(*x, "optimizations.average_training_metrics");
    if (const auto x = opt.get("auto_tune_tensor_fusion"))
      o.auto_tune_tensor_fusion = r.flag(*x, "optimizations.auto_tune_tensor_fusion");
    if (const auto x = opt.get("gradient_compression")) {
      // Determined's boolean means Horovod's fp16 compression; tutti also takes a codec by name.
      static constexpr std::string_view codecs[] = {"none", "fp16", "bf16", "int8", "topk", "onebit"};
      const auto f = x->IsScalar() && !config_detail::quoted(*x) ? config_detail::to_flag(x->Scalar()) : std::nullopt;
      if (f) {
        o.gradient_compression = *f ? "fp16" : "none";
      } else if (x->IsScalar() && std::find(std::begin(codecs), std::end(codecs), x->Scalar()) != std::end(codecs)) {
        o.gradient_compression = x->Scalar();
      } else {
        r.expected(*x, "optimizations.gradient_compression", "true, false or a codec (none, fp16, bf16, int8, topk, onebit)");
      }
    }
    // The bounds of TUTTI_FUSION_THRESHOLD (1 GiB) and TUTTI_CYCLE_TIME (10 s), in Determined's units.
    if (const auto x = opt.get("tensor_fusion_threshold")) {
      o.tensor_fusion_threshold_mb = r.non_negative_integer(*x, "optimizations.tensor_fusion_threshold");
      if (o.tensor_fusion_threshold_mb > 1024)
        r.expected(*x, "optimizations.tensor_fusion_threshold", "at most 1024 (MB)");
    }
    if (const auto x = opt.get("tensor_fusion_cycle_time")) {
      o.tensor_fusion_cycle_time_ms = r.number(*x, "optimizations.tensor_fusion_cycle_time");
      if (o.tensor_fusion_cycle_time_ms < 0 || o.tensor_fusion_cycle_time_ms > 10000)
        r.expected(*x, "optimizations.tensor_fusion_cycle_time", "a number of milliseconds in [0, 10000]");
    }
  }

  if (const auto v = top.get("checkpoint_storage")) {
    const YAML::Node cs_key = *top.key_node("checkpoint_storage");
    const mapping cs(r, *v, "checkpoint_storage",
                     {"type", "host_path", "storage_path", "save_trial_best", "save_trial_latest", "save_experiment_best"});
    const auto type = cs.get("type");
    if (!type) r.missing(&cs_key, "checkpoint_storage.type", "tutti writes checkpoints to type: shared_fs");
    const std::string t = r.text(*type, "checkpoint_storage.type");
    if (t != "shared_fs")
      r.fail(*type, "checkpoint_storage.type: tutti writes checkpoints to a shared file system, so only 'shared_fs' is "
                    "accepted, got '" + t + "'");
    const auto host = cs.get("host_path");
    if (!host) r.missing(&cs_key, "checkpoint_storage.host_path", "the directory checkpoints are written under");
    namespace fs = std::filesystem;
    const fs::path host_path = fs::path(r.text(*host, "checkpoint_storage.host_path")).lexically_normal();
    fs::path dir = host_path;
    if (const auto s = cs.get("storage_path")) {
      // Determined: a subdirectory of host_path, given relative to it or as an absolute path inside it.
      dir = (host_path / r.text(*s, "checkpoint_storage.storage_path")).lexically_normal();
      const fs::path inside = dir.lexically_relative(host_path);
      if (inside.empty() || *inside.begin() == "..")
        r.fail(*s, "checkpoint_storage.storage_path: expected a directory inside host_path '" + host_path.string() +
                       "', got '" + s->Scalar() + "'");
    }
    c.checkpoint_dir = dir.string();
    for (const char* key : {"save_trial_best", "save_trial_latest", "save_experiment_best"})
      if (const auto x = cs.get(key)) (void)r.non_negative_integer(*x, std::string("checkpoint_storage.") + key);
  }

  // Checks across keys, each reported at the line of the value that has to change.
  if (c.slots_per_trial > c.global_batch_size)
    r.fail(slots_node, "resources.slots_per_trial " + std::to_string(c.slots_per_trial) +
                           " is larger than hyperparameters.global_batch_size " + std::to_string(c.global_batch_size) +
                           ": every slot needs at least one record per batch");
  if (c.records_per_epoch != 0 && c.records_per_epoch < c.global_batch_size)
    r.fail(records_node, "records_per_epoch " + std::to_string(c.records_per_epoch) +
                             " is smaller than hyperparameters.global_batch_size " +
                             std::to_string(c.global_batch_size) + ": an epoch would be less than one batch");
  for (const auto& [key, node, l] : lengths) {
    if (l.u == length::unit::epochs && c.records_per_epoch == 0)
      r.fail(node, key + " " + to_string(l) + " is in epochs, which needs records_per_epoch (the records in one "
                                              "epoch of the training set)");
    if (c.to_batches(l) == 0)
      r.fail(node, key + " " + to_string(l) + " is less than one batch (hyperparameters.global_batch_size " +
                       std::to_string(c.global_batch_size) + ")");
  }

  if (const std::size_t dropped = c.global_batch_size % c.slots_per_trial; dropped != 0) {
    const auto records = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " record" : " records"); };
    const std::size_t per_slot = c.per_slot_batch_size();
    c.warnings.push_back("hyperparameters.global_batch_size " + std::to_string(c.global_batch_size) +
                         " is not divisible by resources.slots_per_trial " + std::to_string(c.slots_per_trial) +
                         ": each slot takes " + records(per_slot) + " per batch and " + records(dropped) +
                         (dropped == 1 ? " per batch is" : " per batch are") + " dropped (" + std::to_string(per_slot * c.slots_per_trial) +
                         " per batch are trained)");
  }
  return c;
}

}  // namespace tutti::trainer
