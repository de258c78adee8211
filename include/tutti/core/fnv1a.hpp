//! @file fnv1a.hpp  FNV-1a, 64 bits: a quick checksum of bytes that ranks compare (not a defence
//! against forgery). Tuning tables are compared by it (tuner/table_write.hpp).
#pragma once
#include <cstdint>
#include <string_view>

namespace tutti {

[[nodiscard]] constexpr std::uint64_t fnv1a_64(std::string_view text) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace tutti
