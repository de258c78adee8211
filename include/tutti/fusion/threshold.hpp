//! @file threshold.hpp  fusion::threshold<Bytes, CycleMicroseconds> — Horovod's fusion threshold and cycle time.
#pragma once
#include <chrono>
#include <cstddef>
#include <string_view>

#include "tutti/fusion/concepts.hpp"

namespace tutti::fusion {

//! Tensors ready on every rank are batched, in the agreed order, into buffers of at most `Bytes`
//! (a larger tensor goes alone, without a copy); the engine negotiates every `CycleMicroseconds`.
//! Horovod's defaults are 128 MiB and 1 ms (older releases: 64 MiB, 5 ms); torch DDP's bucket is
//! 25 MiB. bench/fusion measures what suits a machine; docs/fusion.md says how to read it.
template <std::size_t Bytes = (std::size_t{64} << 20), unsigned CycleMicroseconds = 1000>
struct threshold {
  using tutti_role = role::fusion;
  static constexpr std::string_view name = "threshold";
  static constexpr std::size_t threshold_bytes = Bytes;
  static constexpr std::chrono::microseconds cycle_time{CycleMicroseconds};
  static constexpr bool autotune = false;
};

static_assert(fusion_policy<threshold<>>);

}  // namespace tutti::fusion
