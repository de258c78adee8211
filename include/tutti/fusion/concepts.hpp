//! @file concepts.hpp  The FusionStrategy concept: when a batch of pending tensors is sent.
#pragma once
#include <concepts>
#include <cstddef>
#include <string_view>

#include "tutti/core/policy.hpp"

namespace tutti {

/// A FusionStrategy names itself and says how many bytes of small tensors it batches into one
/// collective (0: no batching). The background fusion engine is not built yet (see README).
template <class F>
concept fusion_policy = std::same_as<typename F::tutti_role, role::fusion> && requires {
  { F::name } -> std::convertible_to<std::string_view>;
  { F::threshold_bytes } -> std::convertible_to<std::size_t>;
};

}  // namespace tutti
