//! @file startup.hpp  transport::nccl's start-up: the communicator, its stream, and who this rank is.
//!
//! Rank 0's ncclUniqueId travels through a Store (unique_id.hpp); every rank then makes a
//! *non-blocking* NCCL communicator (ncclCommInitRankConfig with config.blocking = 0, the
//! non-blocking form of ncclCommInitRank) on its device and a CUDA stream of its own. Non-blocking,
//! because a blocking communicator waits inside NCCL, with no deadline, for peers that may never
//! come (ncclCommInitRank, and a group's connection setup); here every such wait is a poll of
//! ncclCommGetAsyncError that tutti bounds by TUTTI_TIMEOUT (stream.hpp's settle).
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/nccl/error.hpp"
#include "tutti/transport/nccl/options.hpp"

namespace tutti::transport::nccl_detail {

//! `rank` when it is a rank of a world of `world` (at least one).
inline int checked_rank(int rank, int world) {
  if (world < 1)
    throw invalid_argument(on_rank(rank) + "transport::nccl: world_size " + std::to_string(world) +
                           " is not positive");
  if (rank < 0 || rank >= world)
    throw invalid_argument(on_rank(rank) + "transport::nccl: rank is outside [0, " + std::to_string(world) + ")");
  return rank;
}

//! Who this rank is and what it holds of NCCL and CUDA: what every part of transport::nccl reads.
struct communicator {
  int rank;
  int world;
  nccl_options options;
  int device;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t callers_work = nullptr;  //!< re-recorded by every follow_callers_work() (stream.hpp)
  bool aborted = false;
  bool failed = false;  //!< an error or a deadline ended the communicator: abort, never finalize

  //! The stream, the callers'-work event and the communicator (its device current); the caller
  //! settles the communicator (stream.hpp), since ncclCommInitRankConfig returns before it is ready.
  void open(const ncclUniqueId& id) {
    TUTTI_NCCL_CHECK(rank, "setup", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    TUTTI_NCCL_CHECK(rank, "setup", cudaEventCreateWithFlags(&callers_work, cudaEventDisableTiming));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // see the top of this file
    TUTTI_NCCL_CHECK(rank, "setup", ncclCommInitRankConfig(&comm, world, id, rank, &config));
  }
};

}  // namespace tutti::transport::nccl_detail
