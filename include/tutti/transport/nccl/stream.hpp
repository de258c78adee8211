//! @file stream.hpp  transport::nccl's stream: group calls posted on it, events that say when
//! they ran, and the polls that bound every wait by the deadline.
//!
//! A CUDA event recorded after each group call says when it is done; groups run in stream order,
//! so one number (the last group known complete) answers every request.
//!
//! Inputs: before anything it enqueues, the stream waits for an event recorded on the legacy
//! default stream (follow_callers_work), which completes only after all earlier work of the
//! device's blocking streams: cudaMemcpy, kernels launched without a stream, the per-thread default
//! streams, streams made by cudaStreamCreate. Without it the stream (non-blocking, so that nobody
//! else's default-stream work waits behind a collective in flight) can read an input before the
//! caller's write lands: cudaMemcpy from pageable memory returns once the bytes are staged, before
//! the DMA to the device ends (seen on an H100: the last 4 % of a 1 MiB alltoall input was stale).
//! Work on the caller's own *non-blocking* streams is not covered: synchronise it, or make
//! stream() wait for an event recorded after it.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/transport/nccl/device.hpp"
#include "tutti/transport/nccl/error.hpp"
#include "tutti/transport/nccl/group.hpp"
#include "tutti/transport/nccl/liveness.hpp"
#include "tutti/transport/nccl/startup.hpp"

namespace tutti::transport::nccl_detail {

class stream_order {
 public:
  stream_order(communicator& c, liveness& live) : c_(c), live_(live) { in_flight_.reserve(64); }
  stream_order(const stream_order&) = delete;
  stream_order& operator=(const stream_order&) = delete;

  //! The last group posted; post_groups numbers the groups it posts from this + 1 on.
  [[nodiscard]] std::uint64_t last_sequence() const noexcept { return next_sequence_; }
  //! How post_groups cut its last run (one group: it never cuts; see group.hpp).
  [[nodiscard]] const std::vector<group_span>& last_split() const noexcept { return last_split_; }

  //! Posts ops as one group call, settled and followed by an event; returns its sequence number.
  std::uint64_t post_groups(std::span<const p2p_op> ops, std::string_view what, deadline until) {
    // One group for the whole run. NCCL 2.28 takes any number of sends and receives in a group
    // (p2pTaskAppend queues them per peer; NCCL_MAX_OPS only sizes pools) and cuts them into
    // kernels itself, in an order every rank shares. A cut made here is each rank's own: a mirrored
    // pair can fall in group 1 on one side and group 2 on the other, and since a group completes
    // only when all its operations do, alltoall over more than 1024 ranks cut at 2048 operations
    // waits in a cycle until the deadline (group_test.cpp simulates it).
    last_split_ = splitter_.split(ops, c_.world, std::max<std::size_t>(ops.size(), 1));
    std::uint64_t last = 0;
    for (const auto& g : last_split_) {
      live_.guarded([&] {
        TUTTI_NCCL_CHECK(c_.rank, what, ncclGroupStart());
        // Every call between start and end is made, so the group is always closed on this thread;
        // the first failure is reported after ncclGroupEnd.
        ncclResult_t failed = ncclSuccess;
        const char* failed_call = "";
        for (std::size_t i = g.first; i < g.first + g.count; ++i) {
          const auto& op = ops[i];
          const ncclResult_t r = op.is_send ? ncclSend(op.data, op.bytes, ncclUint8, op.peer, c_.comm, c_.stream)
                                            : ncclRecv(op.data, op.bytes, ncclUint8, op.peer, c_.comm, c_.stream);
          if (failed == ncclSuccess && classify(r) >= failure::peer_lost) {
            failed = r;
            failed_call = op.is_send ? "ncclSend" : "ncclRecv";
          }
        }
        TUTTI_NCCL_CHECK(c_.rank, what, ncclGroupEnd());
        if (failed != ncclSuccess) raise(failed, c_.rank, what, failed_call);
      });
      settle(what, until);
      last = record(what);
    }
    return last;
  }

  //! Records an event after what is on the stream now; returns the new group's sequence number.
  std::uint64_t record(std::string_view what) {
    cudaEvent_t ev = nullptr;
    live_.guarded([&] {
      if (!free_events_.empty()) {
        ev = free_events_.back();
        free_events_.pop_back();
      } else {
        TUTTI_NCCL_CHECK(c_.rank, what, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      }
      TUTTI_NCCL_CHECK(c_.rank, what, cudaEventRecord(ev, c_.stream));
    });
    in_flight_.push_back({++next_sequence_, ev});
    return next_sequence_;
  }

  //! Makes the stream wait for the caller's earlier device work (see the top of this file): an
  //! event on the legacy default stream, which waits for every blocking stream of the device.
  //! About a microsecond of host time per call (one record, one wait; nothing synchronises).
  void follow_callers_work(std::string_view what) {
    live_.guarded([&] {
      TUTTI_NCCL_CHECK(c_.rank, what, cudaEventRecord(c_.callers_work, cudaStreamLegacy));
      TUTTI_NCCL_CHECK(c_.rank, what, cudaStreamWaitEvent(c_.stream, c_.callers_work, 0));
    });
  }

  //! Polls the communicator's state until NCCL has finished enqueueing (a non-blocking
  //! communicator returns ncclInProgress while it connects or waits for peers).
  void settle(std::string_view what, deadline until) {
    backoff wait_a_bit(0);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      live_.guarded([&] { TUTTI_NCCL_CHECK(c_.rank, what, ncclCommGetAsyncError(c_.comm, &state)); });
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) live_.fail(state, what, -1);
      if (until.passed()) live_.give_up(what, "NCCL was still waiting for the other ranks to join or connect");
      wait_a_bit.pause();
    }
  }

  //! Whether group `sequence` has completed; throws on an asynchronous error (aborting first).
  bool reached(std::uint64_t sequence, std::string_view what, int peer) {
    device_guard on(c_.device);
    while (!in_flight_.empty() && completed_ < sequence) {
      const cudaError_t e = cudaEventQuery(in_flight_.front().done);
      if (e == cudaErrorNotReady) break;
      live_.guarded([&] { check(e, c_.rank, what, "cudaEventQuery"); });
      completed_ = in_flight_.front().sequence;
      free_events_.push_back(in_flight_.front().done);
      in_flight_.erase(in_flight_.begin());
    }
    if (completed_ >= sequence) return true;
    ncclResult_t state = ncclSuccess;
    live_.guarded([&] { TUTTI_NCCL_CHECK(c_.rank, what, ncclCommGetAsyncError(c_.comm, &state)); });
    if (state != ncclSuccess && state != ncclInProgress) live_.fail(state, what, peer);
    return false;
  }

  void wait_for_group(std::uint64_t sequence, std::string_view what, deadline until, int peer) {
    backoff wait_a_bit;
    while (!reached(sequence, what, peer)) {
      if (wait_a_bit.check_clock() && until.passed())
        live_.give_up(what, "the stream had not run it (a peer that never posted its side, or a hung device)");
      wait_a_bit.pause();
    }
  }

  //! Frees every event (the communicator is gone: nothing will record them again).
  void release_events() noexcept {
    for (auto& g : in_flight_) cudaEventDestroy(g.done);
    in_flight_.clear();
    for (auto ev : free_events_) cudaEventDestroy(ev);
    free_events_.clear();
  }

 private:
  struct group_record {
    std::uint64_t sequence = 0;
    cudaEvent_t done = nullptr;
  };

  communicator& c_;
  liveness& live_;
  group_splitter splitter_;
  std::vector<group_span> last_split_;
  std::vector<group_record> in_flight_;  //!< groups posted and not known complete, oldest first
  std::vector<cudaEvent_t> free_events_;
  std::uint64_t next_sequence_ = 0;      //!< the last group posted
  std::uint64_t completed_ = 0;          //!< every group up to this one has completed
};

}  // namespace tutti::transport::nccl_detail
