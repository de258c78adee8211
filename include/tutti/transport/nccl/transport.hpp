//! @file transport.hpp  transport::nccl — ranks on GPUs, talking through an NCCL communicator.
//!
//! Bootstrap: rank 0's ncclUniqueId travels through a Store (unique_id.hpp); every rank then makes
//! a *non-blocking* NCCL communicator (ncclCommInitRankConfig with config.blocking = 0, the
//! non-blocking form of ncclCommInitRank) on its device and a CUDA stream of its own. Non-blocking,
//! because a blocking communicator waits inside NCCL, with no deadline, for peers that may never
//! come (ncclCommInitRank, and a group's connection setup); here every such wait is a poll of
//! ncclCommGetAsyncError that tutti bounds by TUTTI_TIMEOUT.
//!
//! Point to point: send/recv only queue; the queue is flushed as ncclGroupStart / ncclSend... /
//! ncclRecv... / ncclGroupEnd on the transport's stream when a request is tested or waited, so a
//! send and a receive to the same peer posted back to back run in one group and never deadlock.
//! A run is never cut into several groups (see post_groups). A CUDA event recorded after each
//! group says when it is done; groups run in stream order, so one number (the last group known
//! complete) answers every request. NCCL matches sends and receives per pair of ranks in posting
//! order and carries no tag: ranks must post, per peer, in the same order (tutti's algorithms do),
//! and with the same sizes. Buffers must be device memory (traits.device_memory).
//!
//! Collectives: algorithm::native issues NCCL collectives on the same stream through collective()
//! and exchange(), which wait the same way, so the blocking API's contract holds.
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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/nccl/device.hpp"
#include "tutti/transport/nccl/error.hpp"
#include "tutti/transport/nccl/group.hpp"
#include "tutti/transport/nccl/options.hpp"
#include "tutti/transport/nccl/unique_id.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#if TUTTI_HAVE_NET
#include "tutti/bootstrap/job_store.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#endif

namespace tutti::transport {

namespace nccl_detail {

enum op_status : int { op_free, op_queued, op_posted, op_done, op_failed };

//! One send or receive: queued until a test or wait flushes it, then carried by group `group`.
struct op_state {
  int state = op_free;
  bool is_send = false;
  int peer = -1;
  std::uint64_t tag = 0;
  void* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t group = 0;  //!< sequence number of the group call that carries it, once posted
};

//! Grow-only memory for native's scratch: device memory (cudaMalloc) or pinned host memory
//! (cudaMallocHost; pageable copies would synchronise the stream without a deadline).
class cuda_buffer {
 public:
  enum kind_t { device, pinned_host };
  explicit cuda_buffer(kind_t kind) noexcept : kind_(kind) {}
  cuda_buffer(const cuda_buffer&) = delete;
  cuda_buffer& operator=(const cuda_buffer&) = delete;
  ~cuda_buffer() { release(); }

  //! At least `bytes` (the caller has made its device current and drained the stream's use of it).
  std::byte* get(std::size_t bytes, int rank) {
    if (bytes <= size_) return data_;
    release();
    const std::size_t rounded = (bytes + 255) & ~std::size_t{255};
    void* p = nullptr;
    if (kind_ == device) TUTTI_NCCL_CHECK(rank, "scratch", cudaMalloc(&p, rounded));
    else TUTTI_NCCL_CHECK(rank, "scratch", cudaMallocHost(&p, rounded));
    data_ = static_cast<std::byte*>(p);
    size_ = rounded;
    return data_;
  }
  void release() noexcept {
    if (!data_) return;
    if (kind_ == device) cudaFree(data_);
    else cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  kind_t kind_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace nccl_detail

class nccl {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{.intra_node = false, .device_memory = true, .one_sided = false};
  static constexpr const char* name = "nccl";
  static constexpr std::size_t max_outstanding = max_outstanding_ops;

  using request = request_handle<nccl_detail::op_state>;
  using p2p_op = nccl_detail::p2p_op;

  //! Joins a job of `world_size` ranks through `store`: rank 0 publishes the ncclUniqueId under
  //! `<key_prefix>/unique_id`, the others read it (until options.timeout), and all make the NCCL
  //! communicator on the device options choose. `key_prefix` must be the same on every rank and
  //! used by no other communicator in that store. The store is not needed after construction.
  template <bootstrap::store Store>
  nccl(int rank, int world_size, Store& store, std::string key_prefix = "tutti/nccl",
       nccl_options options = nccl_options::from_env())
      : rank_(checked_rank(rank, world_size)),
        world_(world_size),
        options_(options),
        device_(nccl_detail::choose_device(rank, options.device, options.local_rank, cuda::device_count())) {
    nccl_detail::device_guard on(device_);
    try {
      const deadline until = deadline::after(options_.timeout);
      const ncclUniqueId id = nccl_detail::exchange_unique_id(rank_, store, key_prefix, until);
      TUTTI_NCCL_CHECK(rank_, "setup", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      TUTTI_NCCL_CHECK(rank_, "setup", cudaEventCreateWithFlags(&callers_work_, cudaEventDisableTiming));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // see the top of this file
      TUTTI_NCCL_CHECK(rank_, "setup", ncclCommInitRankConfig(&comm_, world_, id, rank_, &config));
      settle("setup (ncclCommInitRankConfig: every rank must join)", until);
    } catch (...) {
      release_all(true);
      throw;
    }
    queue_.reserve(max_outstanding);
    ops_scratch_.reserve(max_outstanding);
    in_flight_.reserve(64);
  }

#if TUTTI_HAVE_NET
  //! Joins the job the launcher describes (tutti-run, mpirun, srun, torchrun): the job's store
  //! (bootstrap/job_store.hpp) carries the id, and the device is the local rank's unless
  //! TUTTI_NCCL_DEVICE says otherwise.
  [[nodiscard]] static std::unique_ptr<nccl> from_env() {
    const auto info = rank_info_from_env();
    auto options = nccl_options::from_env();
    options.local_rank = info.local_rank;
    auto store = bootstrap::job_store(info);
    return std::make_unique<nccl>(info.rank, info.world_size, *store, bootstrap::next_scope() + "/nccl", options);
  }
#endif

  nccl(const nccl&) = delete;
  nccl& operator=(const nccl&) = delete;

  ~nccl() {
    nccl_detail::device_guard on(device_);
    if (!aborted_ && !failed_) close_gracefully();
    release_all(failed_);
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return world_; }
  [[nodiscard]] int device() const noexcept { return device_; }  //!< the CUDA device of this rank
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] ncclComm_t comm() const noexcept { return comm_; }

  //! Queues a send of `bytes` device bytes to `peer`; it is posted when a request is tested or
  //! waited on. `tag` is recorded for messages only: NCCL matches in posting order per peer.
  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    return enqueue(true, peer, tag, const_cast<void*>(data), bytes);
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return enqueue(false, peer, tag, data, bytes);
  }

  //! Flushes the queue if the request is still in it (which may wait, up to TUTTI_TIMEOUT, for the
  //! peers to post their side of the group), then says whether its group has completed.
  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    if (r.op->state == nccl_detail::op_queued) flush(deadline::after(options_.timeout));
    if (r.op->state == nccl_detail::op_posted) {
      const std::string_view what = r.op->is_send ? "send" : "recv";
      if (!reached(r.op->group, what, r.op->peer)) return false;
      r.op->state = nccl_detail::op_done;
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    if (r.op->state == nccl_detail::op_queued) flush(until);
    if (r.op->state == nccl_detail::op_posted) {
      try {
        wait_for_group(r.op->group, r.op->is_send ? "send" : "recv", until, r.op->peer);
      } catch (const timeout&) {
        auto* op = std::exchange(r.op, nullptr);
        const std::string what = describe(*op);
        release(op);
        throw timeout(what + " did not complete before the deadline (TUTTI_TIMEOUT); the NCCL communicator was aborted");
      }
      r.op->state = nccl_detail::op_done;
    }
    finish(r);
  }

  //! ncclCommAbort: stops what runs on the device for this communicator and withdraws every
  //! request (their buffers are never touched again); peers' NCCL operations with this rank then
  //! fail (ncclRemoteError) or reach their deadline. The transport is unusable afterwards.
  void abort() noexcept {
    if (aborted_) return;
    aborted_ = true;
    nccl_detail::device_guard on(device_);
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    queue_.clear();
    ops_.for_each([](nccl_detail::op_state& op) {
      if (op.state == nccl_detail::op_queued || op.state == nccl_detail::op_posted) op.state = nccl_detail::op_failed;
    });
  }

  // ---- for algorithm::native ---------------------------------------------------------------------
  //! Issues one NCCL collective, `issue(comm, stream)` returning its checked ncclResult_t, after
  //! whatever sends and receives are queued, and waits until the stream has run it (polling for
  //! asynchronous errors; the deadline aborts). `what` names the collective in errors.
  template <class Issue>
  void collective(std::string_view what, deadline until, Issue&& issue) {
    enqueue(what, until, std::forward<Issue>(issue));
    finish_on_stream(what, until);
  }

  //! Posts `ops` (device buffers) as group calls after whatever is queued, and waits for them all:
  //! alltoall's one group.
  void exchange(std::span<const p2p_op> ops, std::string_view what, deadline until) {
    usable(what);
    nccl_detail::device_guard on(device_);
    flush(until);
    if (ops.empty()) return;
    follow_callers_work(what);
    wait_for_group(post_groups(ops, what, until), what, until, -1);
  }

  // ---- stream-ordered steps that do not wait (native's codec schedules) --------------------------
  //! A schedule of several steps (kernels, NCCL calls, kernels) on the stream waits once, at its
  //! end (finish_on_stream): the steps below only enqueue. Between two of them the host waits for
  //! NCCL to have *enqueued* its work (settle: a non-blocking communicator may still be doing so
  //! when a call returns), never for the device to have run it.

  //! Runs `fn(comm, stream)` (CUDA and NCCL calls on the stream, checked by the caller), then
  //! settles; does not wait for the stream.
  template <class F>
  void enqueue(std::string_view what, deadline until, F&& fn) {
    usable(what);
    nccl_detail::device_guard on(device_);
    flush(until);
    follow_callers_work(what);
    guarded([&] { fn(comm_, stream_); });
    settle(what, until);
  }

  //! Posts `ops` as one group call on the stream; does not wait for it.
  void post(std::span<const p2p_op> ops, std::string_view what, deadline until) {
    usable(what);
    nccl_detail::device_guard on(device_);
    flush(until);
    if (ops.empty()) return;
    follow_callers_work(what);
    post_groups(ops, what, until);
  }

  //! Waits until the stream has run everything enqueued so far (asynchronous-error polling; the
  //! deadline aborts): the one wait of a schedule made of enqueue() and post() steps.
  void finish_on_stream(std::string_view what, deadline until) {
    usable(what);
    nccl_detail::device_guard on(device_);
    flush(until);
    wait_for_group(record(what), what, until, -1);
  }

  //! Device scratch (cudaMalloc, grow-only, kept until the transport goes); and pinned host
  //! scratch for what a collective reads back. Only between collectives: the stream must not be
  //! using the previous allocation (native's collectives wait before they return).
  [[nodiscard]] std::byte* device_scratch(std::size_t bytes) {
    nccl_detail::device_guard on(device_);
    return device_scratch_.get(bytes, rank_);
  }
  [[nodiscard]] std::byte* host_scratch(std::size_t bytes) {
    nccl_detail::device_guard on(device_);
    return host_scratch_.get(bytes, rank_);
  }

  //! Runs `fn` (CUDA calls on stream(), checked by the caller), then waits, like collective().
  template <class F>
  void on_stream(std::string_view what, deadline until, F&& fn) {
    usable(what);
    nccl_detail::device_guard on(device_);
    flush(until);
    follow_callers_work(what);
    guarded([&] { fn(stream_); });
    wait_for_group(record(what), what, until, -1);
  }

 private:
  struct group_record {
    std::uint64_t sequence = 0;
    cudaEvent_t done = nullptr;
  };

  static int checked_rank(int rank, int world) {
    if (world < 1)
      throw invalid_argument("rank " + std::to_string(rank) + ": transport::nccl: world_size " + std::to_string(world) +
                             " is not positive");
    if (rank < 0 || rank >= world)
      throw invalid_argument("rank " + std::to_string(rank) + ": transport::nccl: rank is outside [0, " +
                             std::to_string(world) + ")");
    return rank;
  }

  void usable(std::string_view what) const {
    if (aborted_)
      throw transport_error("rank " + std::to_string(rank_) + ": transport::nccl " + std::string(what) +
                            ": the transport was aborted and is unusable");
  }

  request enqueue(bool is_send, int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    check_peer(rank_, name, is_send, peer, world_);
    usable(is_send ? "send" : "recv");
    auto* op = ops_.acquire(rank_, name);
    *op = nccl_detail::op_state{nccl_detail::op_queued, is_send, peer, tag, data, bytes, 0};
    // Nothing to move: done at once on both sides (sizes match), without NCCL.
    if (bytes == 0) op->state = nccl_detail::op_done;
    else queue_.push_back(op);
    return request(op);
  }

  //! Runs `body`; a tutti::error from it (a failed NCCL or CUDA call) marks the transport failed and
  //! aborts the communicator first, as NCCL requires after an error.
  template <class F>
  void guarded(F&& body) {
    try {
      body();
    } catch (const error&) {
      failed_ = true;
      abort();
      throw;
    }
  }

  //! Posts the queued sends and receives (see the top of this file).
  void flush(deadline until) {
    if (queue_.empty()) return;
    nccl_detail::device_guard on(device_);
    follow_callers_work("send/recv");
    ops_scratch_.clear();
    for (auto* op : queue_) ops_scratch_.push_back({op->is_send, op->peer, op->data, op->bytes});
    const std::uint64_t first_group = next_sequence_ + 1;
    post_groups(ops_scratch_, "send/recv", until);
    // Which group carries each operation: post_groups numbered them from first_group on.
    std::size_t i = 0;
    for (const auto& g : last_split_) {
      for (std::size_t k = 0; k < g.count; ++k, ++i) {
        queue_[i]->state = nccl_detail::op_posted;
        queue_[i]->group = first_group + (&g - last_split_.data());
      }
    }
    queue_.clear();
  }

  //! Posts ops as one group call, settled and followed by an event; returns its sequence number.
  std::uint64_t post_groups(std::span<const p2p_op> ops, std::string_view what, deadline until) {
    // One group for the whole run. NCCL 2.28 takes any number of sends and receives in a group
    // (p2pTaskAppend queues them per peer; NCCL_MAX_OPS only sizes pools) and cuts them into
    // kernels itself, in an order every rank shares. A cut made here is each rank's own: a mirrored
    // pair can fall in group 1 on one side and group 2 on the other, and since a group completes
    // only when all its operations do, alltoall over more than 1024 ranks cut at 2048 operations
    // waits in a cycle until the deadline (group_test.cpp simulates it).
    last_split_ = splitter_.split(ops, world_, std::max<std::size_t>(ops.size(), 1));
    std::uint64_t last = 0;
    for (const auto& g : last_split_) {
      guarded([&] {
        TUTTI_NCCL_CHECK(rank_, what, ncclGroupStart());
        // Every call between start and end is made, so the group is always closed on this thread;
        // the first failure is reported after ncclGroupEnd.
        ncclResult_t failed = ncclSuccess;
        const char* failed_call = "";
        for (std::size_t i = g.first; i < g.first + g.count; ++i) {
          const auto& op = ops[i];
          const ncclResult_t r = op.is_send ? ncclSend(op.data, op.bytes, ncclUint8, op.peer, comm_, stream_)
                                            : ncclRecv(op.data, op.bytes, ncclUint8, op.peer, comm_, stream_);
          if (failed == ncclSuccess && nccl_detail::classify(r) >= nccl_detail::failure::peer_lost) {
            failed = r;
            failed_call = op.is_send ? "ncclSend" : "ncclRecv";
          }
        }
        TUTTI_NCCL_CHECK(rank_, what, ncclGroupEnd());
        if (failed != ncclSuccess) nccl_detail::raise(failed, rank_, what, failed_call);
      });
      settle(what, until);
      last = record(what);
    }
    return last;
  }

  //! Records an event after what is on the stream now; returns the new group's sequence number.
  std::uint64_t record(std::string_view what) {
    cudaEvent_t ev = nullptr;
    guarded([&] {
      if (!free_events_.empty()) {
        ev = free_events_.back();
        free_events_.pop_back();
      } else {
        TUTTI_NCCL_CHECK(rank_, what, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      }
      TUTTI_NCCL_CHECK(rank_, what, cudaEventRecord(ev, stream_));
    });
    in_flight_.push_back({++next_sequence_, ev});
    return next_sequence_;
  }

  //! Makes the stream wait for the caller's earlier device work (see the top of this file): an
  //! event on the legacy default stream, which waits for every blocking stream of the device.
  //! About a microsecond of host time per call (one record, one wait; nothing synchronises).
  void follow_callers_work(std::string_view what) {
    guarded([&] {
      TUTTI_NCCL_CHECK(rank_, what, cudaEventRecord(callers_work_, cudaStreamLegacy));
      TUTTI_NCCL_CHECK(rank_, what, cudaStreamWaitEvent(stream_, callers_work_, 0));
    });
  }

  //! Polls the communicator's state until NCCL has finished enqueueing (a non-blocking
  //! communicator returns ncclInProgress while it connects or waits for peers).
  void settle(std::string_view what, deadline until) {
    backoff wait_a_bit(0);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      guarded([&] { TUTTI_NCCL_CHECK(rank_, what, ncclCommGetAsyncError(comm_, &state)); });
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(state, what, -1);
      if (until.passed()) give_up(what, "NCCL was still waiting for the other ranks to join or connect");
      wait_a_bit.pause();
    }
  }

  //! Whether group `sequence` has completed; throws on an asynchronous error (aborting first).
  bool reached(std::uint64_t sequence, std::string_view what, int peer) {
    nccl_detail::device_guard on(device_);
    while (!in_flight_.empty() && completed_ < sequence) {
      const cudaError_t e = cudaEventQuery(in_flight_.front().done);
      if (e == cudaErrorNotReady) break;
      guarded([&] { nccl_detail::check(e, rank_, what, "cudaEventQuery"); });
      completed_ = in_flight_.front().sequence;
      free_events_.push_back(in_flight_.front().done);
      in_flight_.erase(in_flight_.begin());
    }
    if (completed_ >= sequence) return true;
    ncclResult_t state = ncclSuccess;
    guarded([&] { TUTTI_NCCL_CHECK(rank_, what, ncclCommGetAsyncError(comm_, &state)); });
    if (state != ncclSuccess && state != ncclInProgress) fail(state, what, peer);
    return false;
  }

  void wait_for_group(std::uint64_t sequence, std::string_view what, deadline until, int peer) {
    backoff wait_a_bit;
    while (!reached(sequence, what, peer)) {
      if (wait_a_bit.check_clock() && until.passed())
        give_up(what, "the stream had not run it (a peer that never posted its side, or a hung device)");
      wait_a_bit.pause();
    }
  }

  //! An asynchronous NCCL error: abort, then throw what it means (peer_lost for ncclRemoteError).
  [[noreturn]] void fail(ncclResult_t state, std::string_view what, int peer) {
    failed_ = true;
    abort();
    nccl_detail::raise(state, rank_, what, "ncclCommGetAsyncError", peer);
  }

  //! The deadline passed: abort the communicator (NCCL offers no way to withdraw one operation),
  //! then throw tutti::timeout.
  [[noreturn]] void give_up(std::string_view what, const char* why) {
    failed_ = true;
    abort();
    throw timeout("rank " + std::to_string(rank_) + ": transport::nccl " + std::string(what) +
                  ": the deadline (TUTTI_TIMEOUT) passed; " + why + "; the NCCL communicator was aborted");
  }

  void finish(request& r) {
    auto* op = std::exchange(r.op, nullptr);
    const nccl_detail::op_state done = *op;
    release(op);
    if (done.state == nccl_detail::op_done) return;
    throw transport_error(describe(done) + " was withdrawn: the transport was aborted");
  }

  void release(nccl_detail::op_state* op) noexcept {
    op->state = nccl_detail::op_free;
    ops_.release(op);
  }

  [[nodiscard]] std::string describe(const nccl_detail::op_state& op) const {
    return "rank " + std::to_string(rank_) + ": transport::nccl " + (op.is_send ? "send of " : "receive of ") +
           std::to_string(op.bytes) + " bytes " + (op.is_send ? "to" : "from") + " rank " + std::to_string(op.peer) +
           " with tag " + std::to_string(op.tag);
  }

  //! Normal shutdown: drain the stream, ncclCommFinalize until quiescent, ncclCommDestroy — each
  //! bounded by close_timeout, after which the communicator is aborted instead.
  void close_gracefully() noexcept {
    if (!comm_) return;
    queue_.clear();  // never posted: their buffers were never touched
    const deadline until = deadline::after(options_.close_timeout);
    backoff wait_a_bit(0);
    while (cudaStreamQuery(stream_) == cudaErrorNotReady && !until.passed()) wait_a_bit.pause();
    bool quiet = cudaStreamQuery(stream_) == cudaSuccess;
    if (quiet) {
      const ncclResult_t finalized = ncclCommFinalize(comm_);
      quiet = finalized == ncclSuccess || finalized == ncclInProgress;
    }
    ncclResult_t state = ncclInProgress;
    while (quiet && ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress && !until.passed())
      wait_a_bit.pause();
    quiet = quiet && state == ncclSuccess;
    if (quiet && ncclCommDestroy(comm_) == ncclSuccess) {
      comm_ = nullptr;
      return;
    }
    log(log_level::warn, rank_,
        "transport::nccl: the communicator did not quiesce within TUTTI_NCCL_CLOSE_TIMEOUT; aborting it");
    failed_ = true;
  }

  //! Frees what the transport holds; `abort_comm`: a communicator still held is aborted, not destroyed.
  void release_all(bool abort_comm) noexcept {
    if (comm_) {
      if (abort_comm) ncclCommAbort(comm_);
      else ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
    for (auto& g : in_flight_) cudaEventDestroy(g.done);
    in_flight_.clear();
    for (auto ev : free_events_) cudaEventDestroy(ev);
    free_events_.clear();
    if (callers_work_) cudaEventDestroy(callers_work_);
    callers_work_ = nullptr;
    device_scratch_.release();
    host_scratch_.release();
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  int rank_;
  int world_;
  nccl_options options_;
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t callers_work_ = nullptr;  //!< re-recorded by every follow_callers_work()
  bool aborted_ = false;
  bool failed_ = false;  //!< an error or a deadline ended the communicator: abort, never finalize
  std::vector<nccl_detail::op_state*> queue_;  //!< queued, in posting order
  std::vector<p2p_op> ops_scratch_;
  nccl_detail::group_splitter splitter_;
  std::vector<nccl_detail::group_span> last_split_;
  std::vector<group_record> in_flight_;        //!< groups posted and not known complete, oldest first
  std::vector<cudaEvent_t> free_events_;
  std::uint64_t next_sequence_ = 0;             //!< the last group posted
  std::uint64_t completed_ = 0;                 //!< every group up to this one has completed
  nccl_detail::cuda_buffer device_scratch_{nccl_detail::cuda_buffer::device};
  nccl_detail::cuda_buffer host_scratch_{nccl_detail::cuda_buffer::pinned_host};
  op_pool<nccl_detail::op_state> ops_;
};

static_assert(transport_policy<nccl>, "transport::nccl must satisfy tutti::transport_policy");

}  // namespace tutti::transport
