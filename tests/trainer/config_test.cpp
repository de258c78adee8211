//! @file config_test.cpp  trainer::experiment_config: Determined's YAML accepted, and every mistake refused by line.
#include <doctest/doctest.h>

#if TUTTI_HAVE_YAML
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tutti/core/error.hpp"
#include "tutti/trainer/config.hpp"

namespace {

using tutti::trainer::experiment_config;
using tutti::trainer::length;

//! The message parse() refuses `yaml` with, or "" when it accepts it.
std::string refusal(const std::string& yaml) {
  try {
    (void)experiment_config::parse(yaml, "config.yaml");
  } catch (const tutti::invalid_argument& e) {
    return e.what();
  }
  return "";
}

//! The smallest valid experiment, with `extra` appended (so an error's line is 4 + its line in `extra`).
std::string minimal(const std::string& extra = "") {
  return "hyperparameters:\n"
         "  global_batch_size: 64\n"
         "searcher:\n"
         "  max_length: {batches: 100}\n" +
         extra;
}

}  // namespace

TEST_CASE("config: a full Determined experiment is read with its meaning") {
  const std::string yaml = R"(name: fashion-mnist
description: a small MLP on Fashion-MNIST
entrypoint: python3 train.py
resources:
  slots_per_trial: 4
  dtrain_network_interface: eth,ib
hyperparameters:
  global_batch_size: 256
  learning_rate: {type: const, val: 0.05}
  optimizer: sgd
  nesterov: true
records_per_epoch: 60000
searcher:
  name: single
  metric: validation_loss
  smaller_is_better: true
  max_length:
    epochs: 5
min_validation_period: {batches: 100}
min_checkpoint_period: {epochs: 1}
optimizations:
  aggregation_frequency: 2
  average_aggregated_gradients: false
  average_training_metrics: false
  gradient_compression: int8
  auto_tune_tensor_fusion: true
  tensor_fusion_threshold: 32
  tensor_fusion_cycle_time: 2.5
checkpoint_storage:
  type: shared_fs
  host_path: /scratch/checkpoints
  storage_path: fashion
  save_trial_best: 1
  save_trial_latest: 2
  save_experiment_best: 0
max_restarts: 0
environment:
  image: determinedai/environments:py-3.8
)";
  const auto c = experiment_config::parse(yaml, "fashion.yaml");
  CHECK(c.slots_per_trial == 4);
  CHECK(c.network_interface == "eth,ib");
  CHECK(c.global_batch_size == 256);
  CHECK(c.records_per_epoch == 60000);
  CHECK(c.max_length.u == length::unit::epochs);
  CHECK(c.max_length.value == 5);
  REQUIRE(c.min_validation_period);
  CHECK(c.min_validation_period->u == length::unit::batches);
  CHECK(c.min_validation_period->value == 100);
  REQUIRE(c.min_checkpoint_period);
  CHECK(c.min_checkpoint_period->u == length::unit::epochs);
  CHECK(c.optimizations.aggregation_frequency == 2);
  CHECK_FALSE(c.optimizations.average_aggregated_gradients);
  CHECK_FALSE(c.optimizations.average_training_metrics);
  CHECK(c.optimizations.gradient_compression == "int8");
  CHECK(c.optimizations.auto_tune_tensor_fusion);
  CHECK(c.optimizations.tensor_fusion_threshold_mb == 32);
  CHECK(c.optimizations.tensor_fusion_cycle_time_ms == doctest::Approx(2.5));
  CHECK(c.checkpoint_dir == "/scratch/checkpoints/fashion");
  CHECK(c.warnings.empty());

  CHECK(c.per_slot_batch_size() == 64);
  CHECK(c.batches_per_epoch() == 234);  // 60000 // 256
  CHECK(c.to_batches(c.max_length) == 5 * 234);
  CHECK(c.to_batches(length{length::unit::records, 1000}) == 3);  // rounded down
  CHECK(c.to_batches(*c.min_validation_period) == 100);

  // The const form and the plain form read the same; absent keys give the fallback.
  CHECK(c.number("learning_rate", 1) == doctest::Approx(0.05));
  CHECK(c.text("optimizer", "adam") == "sgd");
  CHECK(c.flag("nesterov", false));
  CHECK(c.number("momentum", 0.9) == doctest::Approx(0.9));
  CHECK(c.number("global_batch_size", 0) == 256);
  CHECK_NOTHROW(c.check_hyperparameters_used());
}

TEST_CASE("config: defaults where Determined has them") {
  const auto c = experiment_config::parse(minimal(), "config.yaml");
  CHECK(c.slots_per_trial == 1);
  CHECK(c.records_per_epoch == 0);
  CHECK_FALSE(c.min_validation_period);
  CHECK_FALSE(c.min_checkpoint_period);
  CHECK(c.optimizations.aggregation_frequency == 1);
  CHECK(c.optimizations.average_aggregated_gradients);
  CHECK(c.optimizations.average_training_metrics);
  CHECK(c.optimizations.gradient_compression == "none");
  CHECK_FALSE(c.optimizations.auto_tune_tensor_fusion);
  CHECK(c.optimizations.tensor_fusion_threshold_mb == 64);
  CHECK(c.optimizations.tensor_fusion_cycle_time_ms == doctest::Approx(5));
  CHECK(c.network_interface.empty());
  CHECK(c.checkpoint_dir.empty());
  CHECK(c.to_batches(c.max_length) == 100);
  CHECK_NOTHROW(c.check_hyperparameters_used());
}

TEST_CASE("config: unknown keys are refused with their line and a suggestion") {
  CHECK(refusal(minimal("optimisations:\n  aggregation_frequency: 2\n")) ==
        "config.yaml:5: unknown key 'optimisations' (did you mean 'optimizations'?)");
  CHECK(refusal(minimal("resources:\n  slots_per_trail: 2\n")) ==
        "config.yaml:6: unknown key 'resources.slots_per_trail' (did you mean 'resources.slots_per_trial'?)");
  CHECK(refusal(minimal("colour: blue\n")) == "config.yaml:5: unknown key 'colour'");
  CHECK(refusal(minimal("bind_mounts: []\n")) ==
        "config.yaml:5: unsupported key 'bind_mounts': Determined reads it, tutti does not; remove it");
  CHECK(refusal(minimal("records_per_epoch: 640\nrecords_per_epoch: 640\n")) ==
        "config.yaml:6: duplicate key 'records_per_epoch' (first at line 5)");
}

TEST_CASE("config: wrong types and impossible values name the key, the value and the line") {
  CHECK(refusal(minimal("optimizations:\n  aggregation_frequency: two\n")) ==
        "config.yaml:6: optimizations.aggregation_frequency: expected a positive integer, got 'two'");
  CHECK(refusal(minimal("optimizations:\n  aggregation_frequency: 0\n")) ==
        "config.yaml:6: optimizations.aggregation_frequency: expected a positive integer, got '0'");
  CHECK(refusal(minimal("resources:\n  slots_per_trial: -2\n")) ==
        "config.yaml:6: resources.slots_per_trial: expected a positive integer, got '-2'");
  CHECK(refusal(minimal("resources:\n  slots_per_trial: \"2\"\n")) ==
        "config.yaml:6: resources.slots_per_trial: expected a positive integer, got '2' (quoted, so text)");
  CHECK(refusal(minimal("optimizations:\n  average_training_metrics: yes\n")) ==
        "config.yaml:6: optimizations.average_training_metrics: expected true or false, got 'yes'");
  CHECK(refusal(minimal("optimizations:\n  tensor_fusion_cycle_time: -1\n")) ==
        "config.yaml:6: optimizations.tensor_fusion_cycle_time: expected a number of milliseconds in [0, 10000], got '-1'");
  CHECK(refusal(minimal("optimizations: [1, 2]\n")) == "config.yaml:5: optimizations: expected a mapping, got a list");
  CHECK(refusal(minimal("max_restarts:\n")) ==
        "config.yaml:5: max_restarts: expected a non-negative integer, got nothing");
  CHECK(refusal(minimal("dtrain_network_interface: ^\n")) ==
        "config.yaml:5: dtrain_network_interface='^': no interface names after the leading ^ or = (expected NCCL's "
        "syntax: prefixes separated by commas, optionally starting with ^ to exclude and = for exact names, e.g. "
        "'eth,ib', '^docker,lo', '=eth0')");
}

TEST_CASE("config: slots and the global batch") {
  CHECK(refusal("resources:\n  slots_per_trial: 8\n"
                "hyperparameters:\n  global_batch_size: 4\n"
                "searcher:\n  max_length: {batches: 10}\n") ==
        "config.yaml:2: resources.slots_per_trial 8 is larger than hyperparameters.global_batch_size 4: every slot "
        "needs at least one record per batch");

  const auto c = experiment_config::parse("resources: {slots_per_trial: 3}\n"
                                          "hyperparameters: {global_batch_size: 100}\n"
                                          "searcher: {max_length: {batches: 10}}\n",
                                          "config.yaml");
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] ==
        "hyperparameters.global_batch_size 100 is not divisible by resources.slots_per_trial 3: each slot takes 33 "
        "records per batch and 1 record per batch is dropped (99 per batch are trained)");
  CHECK(c.per_slot_batch_size() == 33);

  const auto two = experiment_config::parse("resources: {slots_per_trial: 3}\n"
                                            "hyperparameters: {global_batch_size: 5}\n"
                                            "searcher: {max_length: {batches: 10}}\n",
                                            "config.yaml");
  REQUIRE(two.warnings.size() == 1);
  CHECK(two.warnings[0] ==
        "hyperparameters.global_batch_size 5 is not divisible by resources.slots_per_trial 3: each slot takes 1 "
        "record per batch and 2 records per batch are dropped (3 per batch are trained)");
}

TEST_CASE("config: required keys") {
  CHECK(refusal("searcher:\n  max_length: {batches: 10}\n") ==
        "config.yaml: missing required key 'hyperparameters.global_batch_size' (the records of one batch, summed over "
        "all slots)");
  CHECK(refusal("searcher:\n  max_length: {batches: 10}\nhyperparameters:\n  lr: 0.1\n") ==
        "config.yaml:3: missing required key 'hyperparameters.global_batch_size' (the records of one batch, summed "
        "over all slots)");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\nsearcher:\n  name: single\n") ==
        "config.yaml:3: missing required key 'searcher.max_length' (how long the trial trains, e.g. {epochs: 1})");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n") ==
        "config.yaml: missing required key 'searcher.max_length' (how long the trial trains, e.g. {epochs: 1})");
  CHECK(refusal("") ==
        "config.yaml: empty experiment configuration: expected Determined's keys (searcher, hyperparameters, "
        "resources, ...)");
  CHECK(refusal(minimal("checkpoint_storage:\n  type: shared_fs\n")) ==
        "config.yaml:5: missing required key 'checkpoint_storage.host_path' (the directory checkpoints are written "
        "under)");
}

TEST_CASE("config: one trial: searcher and hyperparameter searches are refused") {
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n"
                "searcher:\n  name: adaptive_asha\n  max_length: {batches: 10}\n") ==
        "config.yaml:4: searcher.name: tutti runs one trial, so only 'single' is accepted, got 'adaptive_asha'");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n  lr: {type: double, minval: 0.001, maxval: 0.1}\n"
                "searcher:\n  max_length: {batches: 10}\n") ==
        "config.yaml:3: hyperparameters.lr: type 'double' asks for a search, and tutti runs one trial: use {type: "
        "const, val: ...} or a plain value");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n  lr: {type: const, value: 0.1}\n"
                "searcher:\n  max_length: {batches: 10}\n") ==
        "config.yaml:3: unknown key 'hyperparameters.lr.value' (did you mean 'hyperparameters.lr.val'?)");
  CHECK(refusal("hyperparameters:\n  global_batch_size: {type: const, val: 0}\n"
                "searcher:\n  max_length: {batches: 10}\n") ==
        "config.yaml:2: hyperparameters.global_batch_size: expected a positive integer, got '0'");
  CHECK(refusal(minimal("checkpoint_storage: {type: s3, bucket: b}\n")) ==
        "config.yaml:5: unknown key 'checkpoint_storage.bucket'");
  CHECK(refusal(minimal("checkpoint_storage: {type: shared_fs, host_path: /ckpt, storage_path: ../elsewhere}\n")) ==
        "config.yaml:5: checkpoint_storage.storage_path: expected a directory inside host_path '/ckpt', got "
        "'../elsewhere'");
  CHECK(experiment_config::parse(minimal("checkpoint_storage: {type: shared_fs, host_path: /ckpt/, storage_path: "
                                         "/ckpt/run1}\n"),
                                 "config.yaml")
            .checkpoint_dir == "/ckpt/run1");
  CHECK(refusal(minimal("dtrain_network_interface: eth\nresources:\n  dtrain_network_interface: ib\n")) ==
        "config.yaml:7: resources.dtrain_network_interface 'ib' disagrees with dtrain_network_interface 'eth' "
        "(line 5): keep one");
  CHECK(refusal(minimal("checkpoint_storage: {type: s3}\n")) ==
        "config.yaml:5: checkpoint_storage.type: tutti writes checkpoints to a shared file system, so only "
        "'shared_fs' is accepted, got 's3'");
}

TEST_CASE("config: lengths") {
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n"
                "searcher:\n  max_length: {epochs: 1, batches: 10}\n") ==
        "config.yaml:4: searcher.max_length: expected exactly one of epochs, batches or records, got epochs and "
        "batches");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n"
                "searcher:\n  max_length: 100\n") ==
        "config.yaml:4: searcher.max_length: expected a length such as {epochs: 1}, {batches: 100} or "
        "{records: 6400}, got '100'");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n"
                "searcher:\n  max_length: {steps: 100}\n") ==
        "config.yaml:4: unknown key 'searcher.max_length.steps'");
  CHECK(refusal("hyperparameters:\n  global_batch_size: 64\n"
                "searcher:\n  max_length: {epochs: 2}\n") ==
        "config.yaml:4: searcher.max_length {epochs: 2} is in epochs, which needs records_per_epoch (the records in "
        "one epoch of the training set)");
  CHECK(refusal(minimal("records_per_epoch: 32\n")) ==
        "config.yaml:5: records_per_epoch 32 is smaller than hyperparameters.global_batch_size 64: an epoch would "
        "be less than one batch");
  CHECK(refusal(minimal("min_validation_period: {records: 10}\n")) ==
        "config.yaml:5: min_validation_period {records: 10} is less than one batch "
        "(hyperparameters.global_batch_size 64)");
  CHECK(refusal(minimal("min_checkpoint_period: {batches: 0}\n")) ==
        "config.yaml:5: min_checkpoint_period.batches: expected a positive integer, got '0'");
}

TEST_CASE("config: gradient_compression takes Determined's boolean or a tutti codec") {
  const auto compression = [](const std::string& value) {
    return experiment_config::parse(minimal("optimizations:\n  gradient_compression: " + value + "\n"), "config.yaml")
        .optimizations.gradient_compression;
  };
  CHECK(compression("true") == "fp16");
  CHECK(compression("false") == "none");
  CHECK(compression("int8") == "int8");
  CHECK(compression("onebit") == "onebit");
  CHECK(refusal(minimal("optimizations:\n  gradient_compression: zip\n")) ==
        "config.yaml:6: optimizations.gradient_compression: expected true, false or a codec (none, fp16, bf16, int8, "
        "topk, onebit), got 'zip'");
}

TEST_CASE("config: hyperparameters are checked when read, and each must be read") {
  const std::string yaml = "hyperparameters:\n"
                           "  global_batch_size: 64\n"
                           "  learnig_rate: 0.1\n"
                           "  optimizer: {type: const, val: adam}\n"
                           "  dropout: half\n"
                           "  shuffle: \"true\"\n"
                           "searcher:\n"
                           "  max_length: {batches: 10}\n";
  const auto h = experiment_config::parse(yaml, "fashion.yaml");
  CHECK(h.number("learning_rate", 0.01) == doctest::Approx(0.01));  // the typo: the fallback is used...
  CHECK(h.text("optimizer", "sgd") == "adam");
  CHECK_THROWS_WITH_AS((void)h.number("dropout", 0.5), "fashion.yaml:5: hyperparameters.dropout: expected a number, got 'half'",
                       tutti::invalid_argument);
  CHECK_THROWS_WITH_AS((void)h.flag("shuffle", false),
                       "fashion.yaml:6: hyperparameters.shuffle: expected true or false, got 'true' (quoted, so text)",
                       tutti::invalid_argument);
  // ...and the check after setup names the key nobody read, with the one that was asked for.
  CHECK_THROWS_WITH_AS(h.check_hyperparameters_used(),
                       "fashion.yaml:3: unknown hyperparameter 'learnig_rate' (did you mean 'learning_rate'?)",
                       tutti::invalid_argument);
}

TEST_CASE("config: malformed YAML reports the parser's message and line") {
  const std::string msg = refusal("hyperparameters:\n  global_batch_size: 64\nsearcher: [1, 2\n");
  CHECK(msg.rfind("config.yaml:", 0) == 0);
  CHECK(msg.find("invalid YAML") != std::string::npos);
  CHECK(refusal("- 1\n- 2\n") == "config.yaml:1: expected a mapping of Determined's experiment keys, got a list");
}

TEST_CASE("config: lines count from 1 in files with comments and blank lines") {
  const std::string yaml = "# fashion-mnist, one trial\n"
                           "\n"
                           "hyperparameters:\n"
                           "  global_batch_size: 64   # records per batch, all slots\n"
                           "searcher:\n"
                           "  max_length:\n"
                           "    batches: 100\n"
                           "\n"
                           "optimizations:\n"
                           "  # how many batches per exchange\n"
                           "  aggregation_frequency: 1.5\n";
  CHECK(refusal(yaml) == "config.yaml:11: optimizations.aggregation_frequency: expected a positive integer, got '1.5'");
}

TEST_CASE("config: load() reads a file and names it in messages") {
  char dir_template[] = "/tmp/tutti_config_test_XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string path = std::string(dir_template) + "/experiment.yaml";
  {
    std::ofstream out(path);
    out << minimal("colour: blue\n");
  }
  CHECK_THROWS_WITH_AS((void)experiment_config::load(path), (path + ":5: unknown key 'colour'").c_str(),
                       tutti::invalid_argument);
  {
    std::ofstream out(path);
    out << minimal();
  }
  CHECK(experiment_config::load(path).global_batch_size == 64);
  std::remove(path.c_str());
  ::rmdir(dir_template);
  CHECK_THROWS_WITH_AS((void)experiment_config::load(path),
                       ("cannot read the experiment configuration '" + path + "': No such file or directory").c_str(),
                       tutti::invalid_argument);
}

#else
TEST_CASE("config: not built (yaml-cpp not found: tutti::yaml missing)") {}
#endif
