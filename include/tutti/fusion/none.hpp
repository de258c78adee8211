//! @file none.hpp  fusion::none — every tensor is its own collective.
#pragma once
#include <cstddef>
#include <string_view>

#include "tutti/fusion/concepts.hpp"

namespace tutti::fusion {

struct none {
  using tutti_role = role::fusion;
  static constexpr std::string_view name = "none";
  static constexpr std::size_t threshold_bytes = 0;
};

static_assert(fusion_policy<none>);

}  // namespace tutti::fusion
