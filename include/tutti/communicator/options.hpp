//! @file options.hpp  communicator_options: a communicator's run-time settings (TUTTI_* variables).
#pragma once
#include <chrono>
#include <cstddef>

#include "tutti/core/config.hpp"
#include "tutti/tuner/pipeline.hpp"

namespace tutti {

//! Run-time settings of a communicator; from_env() reads the TUTTI_* variables.
struct communicator_options {
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);  //!< TUTTI_TIMEOUT: any one collective
  std::size_t chunk_bytes = tuner::pipeline_tuning{}.chunk_bytes;  //!< TUTTI_CHUNK_BYTES: pipelining unit of chunked algorithms
  bool check = true;                    //!< TUTTI_CHECK: cross-rank argument check before each collective
  //! TUTTI_STALL_TIMEOUT: how long a tensor enqueued by some ranks waits for the others before its
  //! handles fail naming the missing ranks (allreduce_async).
  std::chrono::nanoseconds stall_timeout = std::chrono::seconds(60);
  //! TUTTI_STALL_WARN: a wait in one collective this long logs who is missing (communicator/
  //! stall_inspector.hpp); 0 turns the inspector (and its thread) off.
  std::chrono::nanoseconds stall_warn = std::chrono::seconds(60);

  [[nodiscard]] static communicator_options from_env() {
    communicator_options o;
    o.timeout = config::timeout();
    o.chunk_bytes = config::bytes("TUTTI_CHUNK_BYTES", o.chunk_bytes, 64, std::size_t{1} << 30);
    o.check = config::flag("TUTTI_CHECK", o.check);
    o.stall_timeout = config::seconds("TUTTI_STALL_TIMEOUT", o.stall_timeout);
    const auto warn = config::raw("TUTTI_STALL_WARN");
    o.stall_warn = warn && *warn == "0" ? std::chrono::nanoseconds::zero() : config::seconds("TUTTI_STALL_WARN", o.stall_warn);
    return o;
  }
};

}  // namespace tutti
