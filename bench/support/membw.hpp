//! @file membw.hpp  The machine's own memory bandwidth (-M 1): the reference PEERS.md compares
//! busbw against.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <limits>

#include "buffers.hpp"

namespace bench {

//! Single-thread memcpy of 256 MiB, best of 5, counting bytes read plus bytes written
//! (the convention of PEERS.md's "memcpy one thread 24 GB/s").
inline double memcpy_bandwidth_gbs() {
  constexpr std::size_t bytes = std::size_t{256} << 20;
  const buffer src = buffer::heap(bytes, 1), dst = buffer::heap(bytes, 0);
  double best = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 5; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.get(), src.get(), bytes);
#if defined(__GNUC__)
    asm volatile("" : : "r"(dst.get()) : "memory");  // the copy is observable: keep it
#endif
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return 2.0 * static_cast<double>(bytes) / best / 1e9;
}

}  // namespace bench
