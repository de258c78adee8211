//! @file config.hpp  The experiment configuration in Determined AI's shape, read strictly from YAML.
//!
//! `experiment_config::load("experiment.yaml")` / `parse(text, source)`. Three parts, each its own
//! file under trainer/config/: the result (experiment_config.hpp: lengths, optimizations,
//! hyperparameters read by name), the strict YAML reader (yaml_reader.hpp: typed values, checked
//! mappings, every error at its line) and Determined's schema (determined_schema.hpp: which keys
//! exist and the rule of each). Needs yaml-cpp (CMake target tutti::yaml).
#pragma once
#include "tutti/trainer/config/determined_schema.hpp"
#include "tutti/trainer/config/experiment_config.hpp"
