//! @file op.hpp  Reduction operators.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace tutti {

//! avg is sum followed by division by the number of contributing ranks. On integer dtypes the
//! division truncates toward zero (C++ integer division) and the sum wraps modulo 2^bits, as sum does.
enum class op : std::uint8_t { sum, prod, min, max, avg };

inline constexpr std::array<op, 5> all_ops = {op::sum, op::prod, op::min, op::max, op::avg};

[[nodiscard]] constexpr std::string_view name_of(op o) noexcept {
  switch (o) {
    case op::sum: return "sum";
    case op::prod: return "prod";
    case op::min: return "min";
    case op::max: return "max";
    case op::avg: return "avg";
  }
  return "?";
}

[[nodiscard]] constexpr bool is_valid(op o) noexcept {
  return static_cast<std::uint8_t>(o) <= static_cast<std::uint8_t>(op::avg);
}

}  // namespace tutti
