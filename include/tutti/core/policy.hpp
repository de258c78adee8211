//! @file policy.hpp  Role tags: each policy says which axis of a communicator it fills.
#pragma once
#include <string_view>

namespace tutti::role {

// A policy class declares `using tutti_role = tutti::role::<axis>;`. The communicator sorts its
// template arguments by these tags, so policies may be given in any order.
struct transport { static constexpr std::string_view name = "Transport"; };
struct algorithm { static constexpr std::string_view name = "Algorithm"; };
struct codec { static constexpr std::string_view name = "Codec"; };
struct fusion { static constexpr std::string_view name = "FusionStrategy"; };

}  // namespace tutti::role

namespace tutti {
//! Used in static_asserts that must only fire when a template is instantiated.
template <class...> inline constexpr bool dependent_false = false;
}  // namespace tutti
