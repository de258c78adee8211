//! @file from_config.hpp  From Determined's experiment configuration to tutti's policies and options.
//!
//! | Determined | tutti |
//! |---|---|
//! | resources.slots_per_trial | the number of ranks (`tutti-run -n`), checked against the job |
//! | hyperparameters.global_batch_size | trainer_options::global_batch_size (per slot: global // slots) |
//! | searcher.max_length, min_validation_period, min_checkpoint_period | trainer_options in batches |
//! | optimizations.aggregation_frequency, average_aggregated_gradients, average_training_metrics | the same trainer_options |
//! | optimizations.gradient_compression | the communicator's Codec policy (with_codec.hpp) |
//! | optimizations.auto_tune_tensor_fusion | TUTTI_AUTOTUNE for fusion::autotuned |
//! | optimizations.tensor_fusion_threshold (MB), tensor_fusion_cycle_time (ms) | TUTTI_FUSION_THRESHOLD, TUTTI_CYCLE_TIME |
//! | dtrain_network_interface | TUTTI_NET_IFACE |
//! | checkpoint_storage.host_path | trainer_options::checkpoint_dir |
//! | max_restarts | the launcher's (tutti-run --max-restarts): apply_environment says when they differ |
#pragma once
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/trainer/any_optimizer.hpp"
#include "tutti/trainer/config.hpp"
#include "tutti/trainer/data_parallel_trainer.hpp"
#include "tutti/trainer/lr_schedule.hpp"
#include "tutti/trainer/optimizer.hpp"
#include "tutti/trainer/with_codec.hpp"

namespace tutti::trainer {

//! Sets the TUTTI_* variables the configuration decides, unless the environment already sets them
//! (an explicit variable wins, as on Determined's agents); returns one line per decision.
inline std::vector<std::string> apply_environment(const experiment_config& c) {
  std::vector<std::string> said;
  auto set = [&](const char* var, const std::string& value, const char* key) {
    if (const char* have = std::getenv(var); have && *have) {
      said.push_back(std::string(var) + "=" + have + " from the environment (" + key + " says " + value + ")");
      return;
    }
    ::setenv(var, value.c_str(), 1);
    said.push_back(std::string(var) + "=" + value + " (" + key + ")");
  };
  const auto& o = c.optimizations;
  set("TUTTI_FUSION_THRESHOLD", std::to_string(o.tensor_fusion_threshold_mb) + "M", "optimizations.tensor_fusion_threshold");
  set("TUTTI_CYCLE_TIME", std::to_string(o.tensor_fusion_cycle_time_ms), "optimizations.tensor_fusion_cycle_time");
  set("TUTTI_AUTOTUNE", o.auto_tune_tensor_fusion ? "1" : "0", "optimizations.auto_tune_tensor_fusion");
  if (!c.network_interface.empty()) set("TUTTI_NET_IFACE", c.network_interface, "dtrain_network_interface");
  // Restarting is the launcher's: a process cannot restart the job it is part of. tutti-run says
  // how often it will (TUTTI_MAX_RESTARTS); a configuration asking for another number is told so.
  if (c.max_restarts) {
    const auto launcher = config::raw("TUTTI_MAX_RESTARTS");
    if (!launcher || *launcher != std::to_string(*c.max_restarts))
      said.push_back("warning: max_restarts is " + std::to_string(*c.max_restarts) +
                     (launcher ? " but the launcher restarts the job at most " + *launcher + " times"
                               : " but no launcher said it restarts the job (TUTTI_MAX_RESTARTS is unset)") +
                     ": start the job with tutti-run --max-restarts " + std::to_string(*c.max_restarts) +
                     " (across hosts: a relaunch loop around mpirun or srun, docs/trainer.md)");
  }
  return said;
}

//! The learning-rate schedule from the hyperparameters learning_rate, lr_scaling (none, linear,
//! sqrt), base_batch_size, warmup_epochs, lr_decay (none, step, exponential, cosine),
//! lr_step_epochs, lr_gamma, min_learning_rate; the effective batch is global × aggregation.
inline lr_schedule schedule_from(const experiment_config& c) {
  lr_schedule_options s;
  s.base_lr = c.number("learning_rate", s.base_lr);
  s.scaling = parse_scaling_rule(c.text("lr_scaling", "linear"));
  s.base_batch_size = static_cast<std::size_t>(c.number("base_batch_size", static_cast<double>(c.global_batch_size)));
  s.global_batch_size = c.global_batch_size * c.optimizations.aggregation_frequency;
  s.warmup_epochs = c.number("warmup_epochs", 0);
  s.decay = parse_decay_kind(c.text("lr_decay", "none"));
  s.step_epochs = c.number("lr_step_epochs", s.step_epochs);
  s.gamma = c.number("lr_gamma", s.gamma);
  s.total_epochs = c.records_per_epoch ? static_cast<double>(c.to_batches(c.max_length)) /
                                             static_cast<double>(c.batches_per_epoch())
                                       : s.total_epochs;
  s.min_lr = c.number("min_learning_rate", 0);
  return lr_schedule(s);
}

//! The optimiser from the hyperparameters optimizer (sgd, adam, adamw), momentum, nesterov,
//! weight_decay, lars (true: wrap it in LARS), lars_eta, larc (true: LARS with clipping).
//! `is_1d` flags each parameter that LARS leaves unadapted (biases, norms).
inline any_optimizer optimizer_from(const experiment_config& c, std::span<const bool> is_1d) {
  const std::string kind = c.text("optimizer", "sgd");
  const double wd = c.number("weight_decay", 0);
  const bool use_lars = c.flag("lars", false), clip = c.flag("larc", false);
  lars_options lo;
  lo.eta = c.number("lars_eta", lo.eta);
  lo.clip = clip;
  lo.weight_decay = use_lars || clip ? wd : 0;
  const double inner_wd = use_lars || clip ? 0 : wd;
  std::string what = kind;
  if (kind == "sgd") {
    sgd_options o;
    o.momentum = c.number("momentum", 0.9);
    o.nesterov = c.flag("nesterov", false);
    o.weight_decay = inner_wd;
    what += ", momentum " + std::to_string(o.momentum) + (o.nesterov ? " (Nesterov)" : "");
    if (use_lars || clip) return any_optimizer(lars<sgd>(sgd(o), lo, is_1d), (clip ? "LARC(" : "LARS(") + what + ")");
    return any_optimizer(sgd(o), what);
  }
  if (kind == "adam" || kind == "adamw") {
    adam_options o;
    o.weight_decay = inner_wd;
    o.decoupled = kind == "adamw";
    if (use_lars || clip) return any_optimizer(lars<adam>(adam(o), lo, is_1d), (clip ? "LARC(" : "LARS(") + what + ")");
    return any_optimizer(adam(o), what);
  }
  throw invalid_argument("hyperparameters.optimizer: '" + kind + "' is not one of sgd, adam, adamw");
}

//! The trainer's options from the configuration (lengths in batches; the schedule by epoch).
inline trainer_options options_from(const experiment_config& c, const lr_schedule& schedule) {
  trainer_options o;
  o.slots_per_trial = c.slots_per_trial;
  o.global_batch_size = c.global_batch_size;
  o.aggregation_frequency = c.optimizations.aggregation_frequency;
  o.average_aggregated_gradients = c.optimizations.average_aggregated_gradients;
  o.average_training_metrics = c.optimizations.average_training_metrics;
  o.max_batches = c.to_batches(c.max_length);
  if (c.min_validation_period) o.validation_period = c.to_batches(*c.min_validation_period);
  if (c.min_checkpoint_period) o.checkpoint_period = c.to_batches(*c.min_checkpoint_period);
  o.checkpoint_dir = c.checkpoint_dir;
  o.seed = static_cast<std::uint64_t>(c.number("seed", 1));
  o.learning_rate = [schedule](double epoch) { return schedule.at(epoch); };
  return o;
}

}  // namespace tutti::trainer
