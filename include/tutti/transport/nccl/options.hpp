//! @file options.hpp  nccl_options: the knobs of transport::nccl, read from TUTTI_* variables.
//!
//! NCCL's own variables (NCCL_DEBUG, NCCL_SOCKET_IFNAME, NCCL_IB_*, ...) are not read here: NCCL
//! reads them itself, so users tune it the way they already know.
#pragma once
#include <algorithm>
#include <chrono>

#include "tutti/core/config.hpp"

namespace tutti::transport {

struct nccl_options {
  //! TUTTI_TIMEOUT: how long the constructor waits for rank 0's ncclUniqueId and for
  //! ncclCommInitRank to connect the ranks (the communicator is non-blocking, so this is enforced).
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  //! TUTTI_NCCL_CLOSE_TIMEOUT: how long the destructor lets the stream drain and ncclCommFinalize
  //! quiesce before it aborts the communicator instead (never longer than timeout).
  std::chrono::nanoseconds close_timeout = std::chrono::seconds(10);
  //! TUTTI_NCCL_DEVICE: the CUDA device this rank uses; -1 (default) takes local_rank modulo the
  //! number of visible devices, the usual one-GPU-per-rank layout.
  int device = -1;
  //! This rank's index among the ranks of its node (rank_info::local_rank); from_env() of the
  //! transport fills it in from the launcher.
  int local_rank = 0;

  [[nodiscard]] static nccl_options from_env() {
    nccl_options o;
    o.timeout = config::timeout();
    o.close_timeout = std::min(o.timeout, config::seconds("TUTTI_NCCL_CLOSE_TIMEOUT", o.close_timeout));
    o.device = static_cast<int>(config::integer("TUTTI_NCCL_DEVICE", o.device, -1, 1 << 16));
    return o;
  }
};

}  // namespace tutti::transport
