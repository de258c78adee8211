//! @file transport.hpp  transport::ucx — ranks on any hosts, talking through UCX tag matching.
//!
//! The class composes its parts, one concern per file:
//! - options.hpp: timeouts and spinning (TUTTI_TIMEOUT, TUTTI_UCX_*);
//! - startup.hpp: who this rank is, and the worker addresses exchanged through a Store;
//! - worker.hpp: the UCP context, worker and endpoints;
//! - channel.hpp: send/recv/test/wait by tag matching, progress driven by the waiting thread;
//! - liveness.hpp: peers lost (endpoint errors), peers that left, abort, the shutdown barrier;
//! - operation.hpp and error.hpp: the operation record, UCX's callbacks, and how failures read.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/first_loss.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/ucx/channel.hpp"
#include "tutti/transport/ucx/liveness.hpp"
#include "tutti/transport/ucx/operation.hpp"
#include "tutti/transport/ucx/options.hpp"
#include "tutti/transport/ucx/startup.hpp"
#include "tutti/transport/ucx/worker.hpp"

namespace tutti::transport {

class ucx {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{};  // any hosts, host memory, two-sided only
  static constexpr const char* name = "ucx";
  static constexpr std::size_t max_outstanding = max_outstanding_ops;
  static constexpr int tag_bits = ucx_detail::tag_bits;             //!< tutti tags below 2^40; the source rank above
  static constexpr std::uint64_t tag_limit = ucx_detail::tag_limit;
  static constexpr int world_limit = ucx_detail::world_limit;       //!< ranks must fit the 24 bits left
  //! How long an operation waits before the store is asked whether its peer left (liveness.hpp).
  static constexpr std::chrono::milliseconds departure_poll = ucx_detail::departure_poll;

  using request = ucx_detail::channel::request;

  //! Joins a job of `world_size` ranks through `store`: publishes this rank's worker address under
  //! `<key_prefix>/addr/<rank>`, waits (until options.timeout) for every peer's, and connects.
  //! `key_prefix` must be the same on every rank and used by no other transport in that store.
  //! The store must outlive the transport: the destructor's barrier goes through it.
  template <bootstrap::store Store>
  ucx(int rank, int world_size, Store& store, std::string key_prefix = "tutti/ucx",
      ucx_options options = ucx_options::from_env())
      : job_{ucx_detail::checked_rank(rank, world_size), world_size, std::move(key_prefix), options,
             bootstrap::store_ops::of(store)},
        peers_(job_, ops_, worker_),
        channel_(job_, ops_, peers_, worker_),
        worker_(rank, static_cast<std::size_t>(world_size), job_.options.rndv_thresh) {
    job_.spin = outnumbered_cores(job_.world) ? 1 : job_.options.spin_before_yield;
    ucx_detail::connect(job_, store, worker_,
                        [this](int peer, const bootstrap::store_bytes& address) { peers_.connect(peer, address); });
  }

  ucx(const ucx&) = delete;
  ucx& operator=(const ucx&) = delete;

  ~ucx() {
    if (!job_.aborted) peers_.close_gracefully();
    peers_.shutdown_barrier();
    peers_.free_closing();
    worker_.destroy();  // before the op pool: no callback may run after this (abort() did it already)
  }

  [[nodiscard]] int rank() const noexcept { return job_.rank; }
  [[nodiscard]] int world_size() const noexcept { return job_.world; }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    return channel_.send(peer, tag, data, bytes);
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return channel_.recv(peer, tag, data, bytes);
  }
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived) {
    return channel_.recv_up_to(peer, tag, data, capacity, arrived);
  }
  [[nodiscard]] bool test(request& r) { return channel_.test(r); }
  void wait(request& r, deadline until) { channel_.wait(r, until); }

  //! Drives UCX once (this rank's sends included) and handles peers reported lost meanwhile; a
  //! composite transport calls it while it waits on its other half. Returns UCX's event count.
  unsigned progress() { return channel_.progress(); }

  //! The job's first lost rank, for the communicator's error (communicator.hpp): see first_loss.hpp.
  [[nodiscard]] loss_account first_loss(int peer, const std::string& what) {
    return peers_.first_loss(peer, what);
  }

  //! Withdraws every pending operation and tears UCX down at once: the worker's connections
  //! close, so peers see this rank's endpoints fail (peer_lost) within milliseconds. (A forced
  //! endpoint close alone leaves UCX's TCP connection open until the process exits.) The
  //! transport is unusable afterwards; requests still held fail with a message saying so.
  void abort() noexcept {
    if (job_.aborted) return;
    job_.aborted = true;
    peers_.abort();
    worker_.destroy();  // no UCX callback runs after this, and no user buffer is touched again
    channel_.withdraw_all();
  }

 private:
  ucx_detail::job job_;
  op_pool<ucx_detail::op_state> ops_;
  ucx_detail::peer_watch peers_;
  ucx_detail::channel channel_;
  // Last: built after, and destroyed before, everything UCX's callbacks may touch.
  ucx_detail::worker worker_;
};

static_assert(transport_policy<ucx>, "transport::ucx must satisfy tutti::transport_policy");

}  // namespace tutti::transport
