//! @file determined_schema.hpp  Determined's experiment keys as tables of fields, each with its rule.
//!
//! A Determined experiment file runs under tutti with the same keys and the same meanings wherever
//! tutti can honour them (docs/trainer.md has the table). Where it cannot (a hyperparameter search,
//! storage other than a shared file system) or where the file is wrong (an unknown key, a wrong type,
//! an impossible value) parse() refuses with `<file>:<line>: <key>: <problem>, got '<value>'`: a typo
//! should cost one start of the launcher, not a training run that quietly ignored the key.
//!
//! Each section is a table of fields in the order they are read; a field names its key, the rule
//! that reads it, and whether it may be absent. The keys a section accepts are its table's keys, so
//! a key added here is known to the strict reader (yaml_reader.hpp) at once. Checks that involve
//! several keys run after every field is read (`across_keys`).
#pragma once
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/core/error.hpp"
#include "tutti/trainer/config/experiment_config.hpp"
#include "tutti/trainer/config/yaml_reader.hpp"

namespace tutti::trainer::config_schema {

using config_detail::mapping;
using config_detail::reader;

//! What the rules leave for parse() and for the checks across keys.
struct parse_state {
  struct read_length {
    std::string key;
    YAML::Node node;
    length value;
  };
  config_detail::hyperparameter_table hyperparameters;
  std::vector<read_length> lengths;                       //!< every length, for the checks needing records_per_epoch
  std::map<std::string, YAML::Node, std::less<>> values;  //!< every field's value, by dotted key

  //! The value written for `dotted`, if the file has the key (its value may be empty).
  [[nodiscard]] std::optional<YAML::Node> find(std::string_view dotted) const {
    const auto it = values.find(dotted);
    return it == values.end() ? std::nullopt : std::optional<YAML::Node>(it->second);
  }
  //! The same, or a null node (no line) when the file has none.
  [[nodiscard]] YAML::Node value(std::string_view dotted) const { return find(dotted).value_or(YAML::Node()); }
};

//! A field being read: its value and key, its dotted name, and the configuration it fills.
struct input {
  const reader& r;
  YAML::Node node;     //!< the value (a null node when an always-read field is absent)
  YAML::Node key;      //!< the key, whose line a missing key inside this value points at
  std::string dotted;  //!< "optimizations.aggregation_frequency"
  bool present;        //!< false only for an always-read field (field::when_absent::read) that is absent
  experiment_config& c;
  parse_state& s;

  [[nodiscard]] std::size_t positive_integer() const { return r.positive_integer(node, dotted); }
  [[nodiscard]] std::size_t non_negative_integer() const { return r.non_negative_integer(node, dotted); }
  [[nodiscard]] double number() const { return r.number(node, dotted); }
  [[nodiscard]] bool flag() const { return r.flag(node, dotted); }
  [[nodiscard]] std::string text() const { return r.text(node, dotted); }
  [[noreturn]] void fail(const std::string& what) const { r.fail(node, what); }
  [[noreturn]] void expected(const std::string& what) const { r.expected(node, dotted, what); }
};

using rule = void (*)(const input&);

//! One key of a section. Absent, it is skipped (the default stays), refused as a missing required
//! key (`missing_key`, default the key itself, with `hint`), or read all the same (`present` false).
struct field {
  enum class when_absent { skip, refuse, read };
  std::string_view key;
  rule read;
  when_absent absent = when_absent::skip;
  std::string_view hint = {};
  std::string_view missing_key = {};
};

[[nodiscard]] constexpr field required(std::string_view key, rule read, std::string_view hint,
                                       std::string_view missing_key = {}) {
  return {key, read, field::when_absent::refuse, hint, missing_key};
}
[[nodiscard]] constexpr field always(std::string_view key, rule read) { return {key, read, field::when_absent::read}; }

[[nodiscard]] inline std::vector<std::string_view> keys_of(std::span<const field> fields) {
  std::vector<std::string_view> keys;
  for (const auto& f : fields) keys.push_back(f.key);
  return keys;
}

//! Reads `fields` out of the checked mapping `m`, in table order; `parent` is the key of the
//! section (nullptr at the top), whose line a missing key's message gives.
inline void read_fields(const reader& r, const mapping& m, const YAML::Node* parent, std::span<const field> fields,
                        experiment_config& c, parse_state& s) {
  for (const auto& f : fields) {
    const auto value = m.get(f.key);
    if (!value && f.absent == field::when_absent::refuse)
      r.missing(parent, f.missing_key.empty() ? m.dotted(f.key) : std::string(f.missing_key), std::string(f.hint));
    if (!value && f.absent == field::when_absent::skip) continue;
    const input in{r, value.value_or(YAML::Node()), m.key_node(f.key).value_or(YAML::Node()), m.dotted(f.key),
                   value.has_value(), c, s};
    if (value) s.values.emplace(in.dotted, *value);
    f.read(in);
  }
}

//! The rule of a section whose keys are exactly those of `Fields`.
template <const auto& Fields>
void section(const input& x) {
  const mapping m(x.r, x.node, x.dotted, keys_of(Fields));
  read_fields(x.r, m, &x.key, Fields, x.c, x.s);
}

// ---- rules ------------------------------------------------------------------------------------

//! Free text, a flag, a count that tutti checks the type of and does not use.
inline void checked_text(const input& x) { (void)x.text(); }
inline void checked_flag(const input& x) { (void)x.flag(); }
inline void checked_count(const input& x) { (void)x.non_negative_integer(); }
//! A mapping of anything (environment: the container's settings).
inline void checked_any_mapping(const input& x) { (void)mapping(x.r, x.node, x.dotted, {}); }

inline void entrypoint(const input& x) {
  if (x.node.IsSequence()) {
    for (const auto& part : x.node) (void)x.r.text(part, x.dotted);
  } else {
    (void)x.text();
  }
}

//! `{epochs: N}`, `{batches: N}` or `{records: N}`, remembered for the checks across keys.
[[nodiscard]] inline length read_length(const input& x) {
  if (!x.node.IsMap()) x.expected("a length such as {epochs: 1}, {batches: 100} or {records: 6400}");
  const mapping m(x.r, x.node, x.dotted, {"epochs", "batches", "records"});
  if (m.entries().size() != 1)
    x.fail(x.dotted + ": expected exactly one of epochs, batches or records, got " +
           (m.entries().empty() ? std::string("none") : m.entries()[0].key + " and " + m.entries()[1].key));
  const auto& e = m.entries()[0];
  length l;
  l.u = e.key == "epochs" ? length::unit::epochs : e.key == "batches" ? length::unit::batches : length::unit::records;
  l.value = x.r.positive_integer(e.value, x.dotted + "." + e.key);
  x.s.lengths.push_back({x.dotted, x.node, l});
  return l;
}

inline constexpr std::string_view global_batch_size_hint = "the records of one batch, summed over all slots";

//! Each a value, or Determined's {type: const, val: X}; a search is refused. global_batch_size is
//! read here, for every trial; the rest when the program asks for them.
inline void hyperparameters(const input& x) {
  const reader& r = x.r;
  const mapping hps(r, x.node, x.dotted, {});
  for (const auto& e : hps.entries()) {
    const std::string key = hps.dotted(e.key);
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
    auto& h = x.s.hyperparameters[e.key];
    h = {value.Scalar(), config_detail::quoted(value), config_detail::line_of(value)};
    if (e.key == "global_batch_size") {
      x.c.global_batch_size = r.positive_integer(value, key);
      h.used = true;
    }
  }
  if (x.c.global_batch_size == 0)
    r.missing(&x.key, "hyperparameters.global_batch_size", std::string(global_batch_size_hint));
}

//! Determined accepts the interface at the top or under resources: one of them, or both alike.
inline void network_interface(const input& x) {
  std::optional<YAML::Node> node;
  std::string key = x.dotted;
  if (x.present) node = x.node;
  if (const auto i = x.s.find("resources.dtrain_network_interface")) {
    if (node && x.r.text(*node, key) != x.r.text(*i, "resources.dtrain_network_interface"))
      x.r.fail(*i, "resources.dtrain_network_interface '" + i->Scalar() + "' disagrees with dtrain_network_interface '" +
                       node->Scalar() + "' (line " + std::to_string(config_detail::line_of(*node)) + "): keep one");
    node = *i;
    key = "resources.dtrain_network_interface";
  }
  if (!node) return;
  x.c.network_interface = x.r.text(*node, key);
  try {
    (void)bootstrap::interface_filter::parse(x.c.network_interface, key);
  } catch (const invalid_argument& e) {
    x.r.fail(*node, e.what());
  }
}

inline void searcher_name(const input& x) {
  const std::string name = x.text();
  if (name != "single") x.fail(x.dotted + ": tutti runs one trial, so only 'single' is accepted, got '" + name + "'");
}

//! Determined's boolean means Horovod's fp16 compression; tutti also takes a codec by name.
inline void gradient_compression(const input& x) {
  static constexpr std::string_view codecs[] = {"none", "fp16", "bf16", "int8", "topk", "onebit"};
  const auto f = x.node.IsScalar() && !config_detail::quoted(x.node) ? config_detail::to_flag(x.node.Scalar()) : std::nullopt;
  auto& o = x.c.optimizations;
  if (f) {
    o.gradient_compression = *f ? "fp16" : "none";
  } else if (x.node.IsScalar() && std::find(std::begin(codecs), std::end(codecs), x.node.Scalar()) != std::end(codecs)) {
    o.gradient_compression = x.node.Scalar();
  } else {
    x.expected("true, false or a codec (none, fp16, bf16, int8, topk, onebit)");
  }
}

// The bounds of TUTTI_FUSION_THRESHOLD (1 GiB) and TUTTI_CYCLE_TIME (10 s), in Determined's units.
inline void tensor_fusion_threshold(const input& x) {
  auto& mb = x.c.optimizations.tensor_fusion_threshold_mb;
  mb = x.non_negative_integer();
  if (mb > 1024) x.expected("at most 1024 (MB)");
}
inline void tensor_fusion_cycle_time(const input& x) {
  auto& ms = x.c.optimizations.tensor_fusion_cycle_time_ms;
  ms = x.number();
  if (ms < 0 || ms > 10000) x.expected("a number of milliseconds in [0, 10000]");
}

inline void checkpoint_storage_type(const input& x) {
  const std::string t = x.text();
  if (t != "shared_fs")
    x.fail(x.dotted + ": tutti writes checkpoints to a shared file system, so only 'shared_fs' is accepted, got '" + t +
           "'");
}
inline void host_path(const input& x) {
  x.c.checkpoint_dir = std::filesystem::path(x.text()).lexically_normal().string();
}
//! Determined: a subdirectory of host_path, given relative to it or as an absolute path inside it.
inline void storage_path(const input& x) {
  namespace fs = std::filesystem;
  const fs::path host(x.c.checkpoint_dir);  // host_path, read before (the table's order)
  const fs::path dir = (host / x.text()).lexically_normal();
  const fs::path inside = dir.lexically_relative(host);
  if (inside.empty() || *inside.begin() == "..")
    x.fail(x.dotted + ": expected a directory inside host_path '" + host.string() + "', got '" + x.node.Scalar() + "'");
  x.c.checkpoint_dir = dir.string();
}

// ---- the tables -------------------------------------------------------------------------------

inline constexpr field resources_fields[] = {
    {"slots_per_trial", [](const input& x) { x.c.slots_per_trial = x.positive_integer(); }},
    {"dtrain_network_interface", [](const input&) {}},  // read with the top-level key (network_interface)
};

inline constexpr std::string_view max_length_hint = "how long the trial trains, e.g. {epochs: 1}";

inline constexpr field searcher_fields[] = {
    {"name", searcher_name},
    {"metric", checked_text},
    {"smaller_is_better", checked_flag},
    required("max_length", [](const input& x) { x.c.max_length = read_length(x); }, max_length_hint),
};

inline constexpr field optimizations_fields[] = {
    {"aggregation_frequency", [](const input& x) { x.c.optimizations.aggregation_frequency = x.positive_integer(); }},
    {"average_aggregated_gradients",
     [](const input& x) { x.c.optimizations.average_aggregated_gradients = x.flag(); }},
    {"average_training_metrics", [](const input& x) { x.c.optimizations.average_training_metrics = x.flag(); }},
    {"auto_tune_tensor_fusion", [](const input& x) { x.c.optimizations.auto_tune_tensor_fusion = x.flag(); }},
    {"gradient_compression", gradient_compression},
    {"tensor_fusion_threshold", tensor_fusion_threshold},
    {"tensor_fusion_cycle_time", tensor_fusion_cycle_time},
};

inline constexpr field checkpoint_storage_fields[] = {
    required("type", checkpoint_storage_type, "tutti writes checkpoints to type: shared_fs"),
    required("host_path", host_path, "the directory checkpoints are written under"),
    {"storage_path", storage_path},
    {"save_trial_best", checked_count},
    {"save_trial_latest", checked_count},
    {"save_experiment_best", checked_count},
};

//! The top level, in the order its keys are read (which error a file with several reports first).
inline constexpr field experiment_fields[] = {
    {"name", checked_text},
    {"description", checked_text},
    {"entrypoint", entrypoint},
    {"environment", checked_any_mapping},
    {"max_restarts", [](const input& x) { x.c.max_restarts = x.non_negative_integer(); }},  // the launcher's to do
    {"resources", section<resources_fields>},
    always("dtrain_network_interface", network_interface),
    required("hyperparameters", hyperparameters, global_batch_size_hint, "hyperparameters.global_batch_size"),
    {"records_per_epoch", [](const input& x) { x.c.records_per_epoch = x.positive_integer(); }},
    required("searcher", section<searcher_fields>, max_length_hint, "searcher.max_length"),
    {"min_validation_period", [](const input& x) { x.c.min_validation_period = read_length(x); }},
    {"min_checkpoint_period", [](const input& x) { x.c.min_checkpoint_period = read_length(x); }},
    {"optimizations", section<optimizations_fields>},
    {"checkpoint_storage", section<checkpoint_storage_fields>},
};

//! Keys Determined reads and tutti does not: named as such rather than as typos.
inline constexpr std::string_view determined_only[] = {
    "bind_mounts", "data",      "debug", "labels", "perform_initial_validation", "profiling",     "project",
    "reproducibility", "scheduling_unit", "workspace", "pbs", "slurm", "integrations", "log_policies",
    "retention_policy", "internal"};

// ---- checks across keys, each reported at the line of the value that has to change -------------

using check = void (*)(const reader&, experiment_config&, const parse_state&);

inline void slots_within_batch(const reader& r, experiment_config& c, const parse_state& s) {
  if (c.slots_per_trial > c.global_batch_size)
    r.fail(s.value("resources.slots_per_trial"),
           "resources.slots_per_trial " + std::to_string(c.slots_per_trial) +
               " is larger than hyperparameters.global_batch_size " + std::to_string(c.global_batch_size) +
               ": every slot needs at least one record per batch");
}

inline void epoch_within_batch(const reader& r, experiment_config& c, const parse_state& s) {
  if (c.records_per_epoch != 0 && c.records_per_epoch < c.global_batch_size)
    r.fail(s.value("records_per_epoch"), "records_per_epoch " + std::to_string(c.records_per_epoch) +
                                             " is smaller than hyperparameters.global_batch_size " +
                                             std::to_string(c.global_batch_size) + ": an epoch would be less than one batch");
}

inline void lengths_in_batches(const reader& r, experiment_config& c, const parse_state& s) {
  for (const auto& [key, node, l] : s.lengths) {
    if (l.u == length::unit::epochs && c.records_per_epoch == 0)
      r.fail(node, key + " " + to_string(l) + " is in epochs, which needs records_per_epoch (the records in one "
                                              "epoch of the training set)");
    if (c.to_batches(l) == 0)
      r.fail(node, key + " " + to_string(l) + " is less than one batch (hyperparameters.global_batch_size " +
                       std::to_string(c.global_batch_size) + ")");
  }
}

//! Allowed, as in Determined, but said: the records a batch drops when slots do not divide it.
inline void warn_dropped_records(const reader&, experiment_config& c, const parse_state&) {
  if (const std::size_t dropped = c.global_batch_size % c.slots_per_trial; dropped != 0) {
    const auto records = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " record" : " records"); };
    const std::size_t per_slot = c.per_slot_batch_size();
    c.warnings.push_back("hyperparameters.global_batch_size " + std::to_string(c.global_batch_size) +
                         " is not divisible by resources.slots_per_trial " + std::to_string(c.slots_per_trial) +
                         ": each slot takes " + records(per_slot) + " per batch and " + records(dropped) +
                         (dropped == 1 ? " per batch is" : " per batch are") + " dropped (" +
                         std::to_string(per_slot * c.slots_per_trial) + " per batch are trained)");
  }
}

inline constexpr check across_keys[] = {slots_within_batch, epoch_within_batch, lengths_in_batches, warn_dropped_records};

//! Reads the whole document `root` into `c`, leaving the hyperparameters in `s`.
inline void read_experiment(const reader& r, const YAML::Node& root, experiment_config& c, parse_state& s) {
  if (!root.IsMap()) r.fail(root, "expected a mapping of Determined's experiment keys, got " + config_detail::shown(root));
  const mapping top(r, root, "", keys_of(experiment_fields),
                    std::vector<std::string_view>(std::begin(determined_only), std::end(determined_only)),
                    "Determined reads it, tutti does not; remove it");
  read_fields(r, top, nullptr, experiment_fields, c, s);
  for (const check f : across_keys) f(r, c, s);
}

}  // namespace tutti::trainer::config_schema

namespace tutti::trainer {

inline experiment_config experiment_config::parse(const std::string& yaml_text, const std::string& source_name) {
  const config_detail::reader r(source_name);
  const YAML::Node root = config_detail::load_document(yaml_text, source_name);
  if (root.IsNull() || !root.IsDefined())
    throw invalid_argument(source_name + ": empty experiment configuration: expected Determined's keys "
                                         "(searcher, hyperparameters, resources, ...)");
  experiment_config c;
  c.source_ = source_name;
  config_schema::parse_state s;
  config_schema::read_experiment(r, root, c, s);
  c.hyperparameters_ = std::move(s.hyperparameters);
  return c;
}

}  // namespace tutti::trainer
