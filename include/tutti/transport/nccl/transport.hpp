//! @file transport.hpp  transport::nccl — ranks on GPUs, talking through an NCCL communicator.
//!
//! The class composes its parts, one concern per file:
//! - options.hpp: timeouts and the device (TUTTI_TIMEOUT, TUTTI_NCCL_*); device.hpp: which GPU;
//! - startup.hpp and unique_id.hpp: the ncclUniqueId through a Store, the non-blocking communicator;
//! - channel.hpp: send/recv/test/wait, queued and posted as group calls;
//! - stream.hpp: the stream, its group calls and events, deadline-bounded waits;
//! - liveness.hpp: abort, what errors and deadlines throw, the shutdown;
//! - operation.hpp, error.hpp, group.hpp, types.hpp: the record, error wording, group cutting,
//!   tutti's dtypes and ops as NCCL's; scratch memory is cuda/scratch_buffer.hpp.
//!
//! Collectives: algorithm::native issues NCCL collectives on the same stream through collective()
//! and exchange(), which wait the same way, so the blocking API's contract holds.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/cuda/device.hpp"
#include "tutti/cuda/scratch_buffer.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/nccl/channel.hpp"
#include "tutti/transport/nccl/device.hpp"
#include "tutti/transport/nccl/error.hpp"
#include "tutti/transport/nccl/group.hpp"
#include "tutti/transport/nccl/liveness.hpp"
#include "tutti/transport/nccl/operation.hpp"
#include "tutti/transport/nccl/options.hpp"
#include "tutti/transport/nccl/startup.hpp"
#include "tutti/transport/nccl/stream.hpp"
#include "tutti/transport/nccl/unique_id.hpp"
#include "tutti/transport/op_pool.hpp"
#if TUTTI_HAVE_NET
#include "tutti/bootstrap/job_store.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#endif

namespace tutti::transport {

class nccl {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{.intra_node = false, .device_memory = true, .one_sided = false};
  static constexpr const char* name = "nccl";
  static constexpr std::size_t max_outstanding = max_outstanding_ops;

  using request = nccl_detail::channel::request;
  using p2p_op = nccl_detail::p2p_op;

  //! Joins a job of `world_size` ranks through `store`: rank 0 publishes the ncclUniqueId under
  //! `<key_prefix>/unique_id`, the others read it (until options.timeout), and all make the NCCL
  //! communicator on the device options choose. `key_prefix` must be the same on every rank and
  //! used by no other communicator in that store. The store is not needed after construction.
  template <bootstrap::store Store>
  nccl(int rank, int world_size, Store& store, std::string key_prefix = "tutti/nccl",
       nccl_options options = nccl_options::from_env())
      : comm_{nccl_detail::checked_rank(rank, world_size), world_size, options,
              nccl_detail::choose_device(rank, options.device, options.local_rank, cuda::device_count())},
        live_(comm_, queue_),
        streams_(comm_, live_),
        channel_(comm_, queue_, streams_, live_) {
    nccl_detail::device_guard on(comm_.device);
    try {
      const deadline until = deadline::after(comm_.options.timeout);
      const ncclUniqueId id = nccl_detail::exchange_unique_id(comm_.rank, store, key_prefix, until);
      comm_.open(id);
      streams_.settle("setup (ncclCommInitRankConfig: every rank must join)", until);
    } catch (...) {
      release_all(true);
      throw;
    }
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
    nccl_detail::device_guard on(comm_.device);
    if (!comm_.aborted && !comm_.failed) live_.close_gracefully();
    release_all(comm_.failed);
  }

  [[nodiscard]] int rank() const noexcept { return comm_.rank; }
  [[nodiscard]] int world_size() const noexcept { return comm_.world; }
  [[nodiscard]] int device() const noexcept { return comm_.device; }  //!< the CUDA device of this rank
  [[nodiscard]] cudaStream_t stream() const noexcept { return comm_.stream; }
  [[nodiscard]] ncclComm_t comm() const noexcept { return comm_.comm; }

  //! Queues a send of `bytes` device bytes to `peer`; it is posted when a request is tested or
  //! waited on. `tag` is recorded for messages only: NCCL matches in posting order per peer.
  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    return channel_.enqueue(true, peer, tag, const_cast<void*>(data), bytes);
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return channel_.enqueue(false, peer, tag, data, bytes);
  }
  //! Flushes the queue if the request is still in it, then says whether its group has completed.
  [[nodiscard]] bool test(request& r) { return channel_.test(r); }
  void wait(request& r, deadline until) { channel_.wait(r, until); }

  //! ncclCommAbort: stops what runs on the device for this communicator and withdraws every
  //! request (their buffers are never touched again); peers' NCCL operations with this rank then
  //! fail (ncclRemoteError) or reach their deadline. The transport is unusable afterwards.
  void abort() noexcept { live_.abort(); }

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
    live_.usable(what);
    nccl_detail::device_guard on(comm_.device);
    channel_.flush(until);
    if (ops.empty()) return;
    streams_.follow_callers_work(what);
    streams_.wait_for_group(streams_.post_groups(ops, what, until), what, until, -1);
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
    live_.usable(what);
    nccl_detail::device_guard on(comm_.device);
    channel_.flush(until);
    streams_.follow_callers_work(what);
    live_.guarded([&] { fn(comm_.comm, comm_.stream); });
    streams_.settle(what, until);
  }

  //! Posts `ops` as one group call on the stream; does not wait for it.
  void post(std::span<const p2p_op> ops, std::string_view what, deadline until) {
    live_.usable(what);
    nccl_detail::device_guard on(comm_.device);
    channel_.flush(until);
    if (ops.empty()) return;
    streams_.follow_callers_work(what);
    streams_.post_groups(ops, what, until);
  }

  //! Waits until the stream has run everything enqueued so far (asynchronous-error polling; the
  //! deadline aborts): the one wait of a schedule made of enqueue() and post() steps.
  void finish_on_stream(std::string_view what, deadline until) {
    live_.usable(what);
    nccl_detail::device_guard on(comm_.device);
    channel_.flush(until);
    streams_.wait_for_group(streams_.record(what), what, until, -1);
  }

  //! Device scratch (cudaMalloc, grow-only, kept until the transport goes); and pinned host
  //! scratch for what a collective reads back. Only between collectives: the stream must not be
  //! using the previous allocation (native's collectives wait before they return).
  [[nodiscard]] std::byte* device_scratch(std::size_t bytes) { return scratch(device_scratch_, bytes); }
  [[nodiscard]] std::byte* host_scratch(std::size_t bytes) { return scratch(host_scratch_, bytes); }

  //! Runs `fn` (CUDA calls on stream(), checked by the caller), then waits, like collective().
  template <class F>
  void on_stream(std::string_view what, deadline until, F&& fn) {
    live_.usable(what);
    nccl_detail::device_guard on(comm_.device);
    channel_.flush(until);
    streams_.follow_callers_work(what);
    live_.guarded([&] { fn(comm_.stream); });
    streams_.wait_for_group(streams_.record(what), what, until, -1);
  }

 private:
  std::byte* scratch(cuda::scratch_buffer& buffer, std::size_t bytes) {
    nccl_detail::device_guard on(comm_.device);
    nccl_detail::check(buffer.reserve(bytes), comm_.rank, "scratch", buffer.allocator_name());
    return buffer.data();
  }

  //! Frees what the transport holds; `abort_comm`: a communicator still held is aborted, not destroyed.
  void release_all(bool abort_comm) noexcept {
    live_.release_comm(abort_comm);
    streams_.release_events();
    device_scratch_.release();
    host_scratch_.release();
    live_.release_stream();
  }

  nccl_detail::communicator comm_;
  nccl_detail::p2p_queue queue_;
  nccl_detail::liveness live_;
  nccl_detail::stream_order streams_;
  nccl_detail::channel channel_;
  cuda::scratch_buffer device_scratch_{cuda::scratch_buffer::device};
  cuda::scratch_buffer host_scratch_{cuda::scratch_buffer::pinned_host};
};

static_assert(transport_policy<nccl>, "transport::nccl must satisfy tutti::transport_policy");

}  // namespace tutti::transport
