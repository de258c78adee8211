//! @file none.hpp  codec::none — elements travel as they are.
#pragma once
#include <cstddef>
#include <string_view>

#include "tutti/codec/concepts.hpp"

namespace tutti::codec {

struct none {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "none";
  static constexpr bool lossless = true;
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype t, std::size_t count) noexcept {
    return count * size_of(t);
  }
};

static_assert(codec_policy<none>);

}  // namespace tutti::codec
