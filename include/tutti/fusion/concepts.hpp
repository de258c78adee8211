//! @file concepts.hpp  The FusionStrategy concept: when a batch of pending tensors is sent.
#pragma once
#include <chrono>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "tutti/core/policy.hpp"

namespace tutti {

/// A FusionStrategy configures the communicator's fusion engine (fusion/engine.hpp), which serves
/// `allreduce_async`:
///  - `threshold_bytes`: the most bytes of tensors batched into one collective (0: one per tensor);
///  - `cycle_time`: how long the engine lets tensors accumulate between negotiation rounds;
///  - `autotune`: whether the engine's tuner may change both while it runs (fusion::autotuned).
/// TUTTI_FUSION_THRESHOLD and TUTTI_CYCLE_TIME override the first two at run time (the same on
/// every rank, checked when the engine starts).
template <class F>
concept fusion_policy = std::same_as<typename F::tutti_role, role::fusion> && requires {
  { F::name } -> std::convertible_to<std::string_view>;
  { F::threshold_bytes } -> std::convertible_to<std::size_t>;
  { F::cycle_time } -> std::convertible_to<std::chrono::microseconds>;
  { F::autotune } -> std::convertible_to<bool>;
};

}  // namespace tutti
