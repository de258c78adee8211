//! @file experiment_config.hpp  What an experiment file says, checked: lengths, optimizations, hyperparameters.
//!
//! The result of reading a Determined experiment (determined_schema.hpp fills it; include
//! tutti/trainer/config.hpp, which has both). Hyperparameters are read by name by whoever needs
//! them (number(), text(), flag()), so only after training is set up can
//! check_hyperparameters_used() say which ones nobody read.
#pragma once
#include <cerrno>
#include <cstddef>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/did_you_mean.hpp"
#include "tutti/trainer/config/yaml_reader.hpp"

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

//! One hyperparameter as the file gave it, and whether anything has read it yet.
struct hyperparameter {
  std::string value;
  bool quoted = false;
  int line = 0;
  mutable bool used = false;
};
using hyperparameter_table = std::map<std::string, hyperparameter, std::less<>>;

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
  std::optional<std::size_t> max_restarts;         //!< max_restarts: whole-job restarts the launcher may do
  std::vector<std::string> warnings;               //!< what is allowed but probably not meant

  //! The hyperparameter `key` as a number; `fallback` when absent. Not a number: invalid_argument
  //! naming the key, the value and its line.
  [[nodiscard]] double number(const std::string& key, double fallback) const {
    const config_detail::hyperparameter* h = find(key);
    if (h == nullptr) return fallback;
    const auto v = h->quoted ? std::nullopt : config_detail::to_number(h->value);
    if (!v) throw invalid_argument(bad_hyperparameter(key, *h, "a number"));
    return *v;
  }
  //! The hyperparameter `key` as text (any scalar); `fallback` when absent.
  [[nodiscard]] std::string text(const std::string& key, const std::string& fallback) const {
    const config_detail::hyperparameter* h = find(key);
    return h == nullptr ? fallback : h->value;
  }
  //! The hyperparameter `key` as true or false; `fallback` when absent.
  [[nodiscard]] bool flag(const std::string& key, bool fallback) const {
    const config_detail::hyperparameter* h = find(key);
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
                  spelling::suggestion(spelling::closest(key, missed));
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

  //! Parses Determined-style YAML; `source_name` (a file name) begins every message. Defined with
  //! the schema, in determined_schema.hpp.
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
  const config_detail::hyperparameter* find(const std::string& key) const {
    asked_.insert(key);
    const auto it = hyperparameters_.find(key);
    if (it == hyperparameters_.end()) return nullptr;
    it->second.used = true;
    return &it->second;
  }
  std::string bad_hyperparameter(const std::string& key, const config_detail::hyperparameter& h, const char* what) const {
    return config_detail::where(source_, h.line) + "hyperparameters." + key + ": expected " + what + ", got '" +
           h.value + "'" + (h.quoted ? " (quoted, so text)" : "");
  }

  config_detail::hyperparameter_table hyperparameters_;
  mutable std::set<std::string, std::less<>> asked_;  // every key read, present or not
  std::string source_;
};

}  // namespace tutti::trainer
