//! @file options.hpp  transport::shm's ring geometry and pool size, read from TUTTI_SHM_*.
#pragma once
#include <chrono>
#include <cstddef>

#include "tutti/core/config.hpp"

namespace tutti::transport {

//! Ring geometry; every rank of a job must use the same (checked at bootstrap).
struct shm_options {
  std::size_t slots = 16;                //!< TUTTI_SHM_SLOTS: fragments in flight per pair of ranks
  std::size_t slot_bytes = 64 << 10;     //!< TUTTI_SHM_SLOT_BYTES: fragment size
  std::size_t stage_bytes = 1 << 20;     //!< TUTTI_SHM_STAGE_BYTES: each of two staging buffers (one-sided algorithms)
  std::size_t pool_bytes = 256 << 20;    //!< TUTTI_SHM_POOL_BYTES: registered memory for allocate() (tmpfs, used lazily)
  bool debug_pool = false;               //!< TUTTI_DEBUG_POOL: poison and protect freed blocks (pool.hpp)
  std::chrono::nanoseconds bootstrap_timeout = std::chrono::seconds(300);  //!< TUTTI_TIMEOUT

  [[nodiscard]] static shm_options from_env() {
    shm_options o;
    o.slots = static_cast<std::size_t>(config::integer("TUTTI_SHM_SLOTS", static_cast<long long>(o.slots), 2, 4096));
    o.slot_bytes = config::bytes("TUTTI_SHM_SLOT_BYTES", o.slot_bytes, 64, std::size_t{64} << 20);
    o.slot_bytes = (o.slot_bytes + 63) & ~std::size_t{63};
    o.stage_bytes = (config::bytes("TUTTI_SHM_STAGE_BYTES", o.stage_bytes, 4096, std::size_t{1} << 32) + 63) & ~std::size_t{63};
    o.pool_bytes = (config::bytes("TUTTI_SHM_POOL_BYTES", o.pool_bytes, 0, std::size_t{1} << 40) + 4095) & ~std::size_t{4095};
    o.debug_pool = config::flag("TUTTI_DEBUG_POOL", false);
    o.bootstrap_timeout = config::timeout();
    return o;
  }
};

}  // namespace tutti::transport
