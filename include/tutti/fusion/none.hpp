//! @file none.hpp  fusion::none — every tensor is its own collective.
#pragma once
#include <chrono>
#include <cstddef>
#include <string_view>

#include "tutti/fusion/concepts.hpp"

namespace tutti::fusion {

//! allreduce_async still negotiates (every rank reduces the same tensors in the same order) but
//! never batches: one collective per tensor, the baseline bench/fusion compares against.
struct none {
  using tutti_role = role::fusion;
  static constexpr std::string_view name = "none";
  static constexpr std::size_t threshold_bytes = 0;
  static constexpr std::chrono::microseconds cycle_time{0};
  static constexpr bool autotune = false;
};

static_assert(fusion_policy<none>);

}  // namespace tutti::fusion
