//! @file liveness.hpp  transport::nccl's failures and ending: aborting the communicator, what an
//! error, an asynchronous error or a passed deadline throws, and a clean shutdown.
//!
//! Failure: an NCCL error, or an asynchronous one (ncclCommGetAsyncError, polled while waiting),
//! aborts the communicator (ncclCommAbort) and throws: ncclRemoteError as tutti::peer_lost, the rest
//! as tutti::transport_error, naming the rank and what it was doing. A deadline that passes aborts
//! too, then throws tutti::timeout. abort() is ncclCommAbort; requests still held then fail.
//!
//! Shutdown: the destructor lets the stream drain and ncclCommFinalize quiesce (bounded by
//! close_timeout), then ncclCommDestroy; after a failure, or when that bound passes, ncclCommAbort.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <string_view>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/nccl/device.hpp"
#include "tutti/transport/nccl/error.hpp"
#include "tutti/transport/nccl/operation.hpp"
#include "tutti/transport/nccl/startup.hpp"

namespace tutti::transport::nccl_detail {

class liveness {
 public:
  liveness(communicator& c, p2p_queue& q) noexcept : c_(c), q_(q) {}
  liveness(const liveness&) = delete;
  liveness& operator=(const liveness&) = delete;

  //! Throws when the transport was aborted (`what`: the call refused).
  void usable(std::string_view what) const {
    if (c_.aborted)
      throw transport_error(on_rank(c_.rank) + "transport::nccl " + std::string(what) +
                            ": the transport was aborted and is unusable");
  }

  //! ncclCommAbort: stops what runs on the device for this communicator and withdraws every
  //! request (their buffers are never touched again).
  void abort() noexcept {
    if (c_.aborted) return;
    c_.aborted = true;
    device_guard on(c_.device);
    if (c_.comm) ncclCommAbort(c_.comm);
    c_.comm = nullptr;
    q_.withdraw_all();
  }

  //! Runs `body`; a tutti::error from it (a failed NCCL or CUDA call) marks the transport failed and
  //! aborts the communicator first, as NCCL requires after an error.
  template <class F>
  void guarded(F&& body) {
    try {
      body();
    } catch (const error&) {
      c_.failed = true;
      abort();
      throw;
    }
  }

  //! An asynchronous NCCL error: abort, then throw what it means (peer_lost for ncclRemoteError).
  [[noreturn]] void fail(ncclResult_t state, std::string_view what, int peer) {
    c_.failed = true;
    abort();
    raise(state, c_.rank, what, "ncclCommGetAsyncError", peer);
  }

  //! The deadline passed: abort the communicator (NCCL offers no way to withdraw one operation),
  //! then throw tutti::timeout.
  [[noreturn]] void give_up(std::string_view what, const char* why) {
    c_.failed = true;
    abort();
    throw timeout(on_rank(c_.rank) + "transport::nccl " + std::string(what) +
                  ": the deadline (TUTTI_TIMEOUT) passed; " + why + "; the NCCL communicator was aborted");
  }

  //! Normal shutdown: drain the stream, ncclCommFinalize until quiescent, ncclCommDestroy — each
  //! bounded by close_timeout, after which the communicator is aborted instead (c.failed is set).
  void close_gracefully() noexcept {
    if (!c_.comm) return;
    q_.queued.clear();  // never posted: their buffers were never touched
    const deadline until = deadline::after(c_.options.close_timeout);
    backoff wait_a_bit(0);
    while (cudaStreamQuery(c_.stream) == cudaErrorNotReady && !until.passed()) wait_a_bit.pause();
    bool quiet = cudaStreamQuery(c_.stream) == cudaSuccess;
    if (quiet) {
      const ncclResult_t finalized = ncclCommFinalize(c_.comm);
      quiet = finalized == ncclSuccess || finalized == ncclInProgress;
    }
    ncclResult_t state = ncclInProgress;
    while (quiet && ncclCommGetAsyncError(c_.comm, &state) == ncclSuccess && state == ncclInProgress && !until.passed())
      wait_a_bit.pause();
    quiet = quiet && state == ncclSuccess;
    if (quiet && ncclCommDestroy(c_.comm) == ncclSuccess) {
      c_.comm = nullptr;
      return;
    }
    log(log_level::warn, c_.rank,
        "transport::nccl: the communicator did not quiesce within TUTTI_NCCL_CLOSE_TIMEOUT; aborting it");
    c_.failed = true;
  }

  //! Frees the communicator (`abort_comm`: aborted, not destroyed): first, so that nothing of it
  //! still runs on the device when the other parts free their memory and events.
  void release_comm(bool abort_comm) noexcept {
    if (!c_.comm) return;
    if (abort_comm) ncclCommAbort(c_.comm);
    else ncclCommDestroy(c_.comm);
    c_.comm = nullptr;
  }
  //! Frees the callers'-work event and the stream: last.
  void release_stream() noexcept {
    if (c_.callers_work) cudaEventDestroy(c_.callers_work);
    c_.callers_work = nullptr;
    if (c_.stream) cudaStreamDestroy(c_.stream);
    c_.stream = nullptr;
  }

 private:
  communicator& c_;
  p2p_queue& q_;
};

}  // namespace tutti::transport::nccl_detail
