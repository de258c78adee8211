//! @file helpers.hpp  Small pieces every algorithm uses.
#pragma once
#include <cstddef>
#include <cstring>

namespace tutti::algorithm {

//! Copies a result into place unless it is already there (in-place calls); memmove because the
//! sanctioned in-place layouts may overlap.
inline void copy_if_distinct(void* out, const void* in, std::size_t bytes) noexcept {
  if (out != in && bytes) std::memmove(out, in, bytes);
}

//! x mod n in [0, n), for rank arithmetic around a ring.
[[nodiscard]] constexpr int wrap(int x, int n) noexcept { return ((x % n) + n) % n; }

//! Elements of `esz` bytes per pipelining chunk of `chunk_bytes` (at least one).
[[nodiscard]] constexpr std::size_t chunk_elems(std::size_t chunk_bytes, std::size_t esz) noexcept {
  const std::size_t e = chunk_bytes / esz;
  return e ? e : 1;
}

}  // namespace tutti::algorithm
