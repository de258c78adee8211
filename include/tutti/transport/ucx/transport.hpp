//! @file transport.hpp  transport::ucx — ranks on any hosts, talking through UCX tag matching.
//!
//! Bootstrap: one UCP context and worker per rank. Each rank publishes its worker address in a
//! Store (bootstrap/concepts.hpp) under `<prefix>/addr/<rank>`, reads every peer's, and creates an
//! endpoint to each (itself included) with peer error handling, so a dead or unreachable peer
//! fails that endpoint instead of hanging it.
//!
//! Matching: a UCP tag is (source rank << 40) | tutti tag, received with a full mask, so a receive
//! matches exactly one (peer, tag) stream and UCX keeps messages of a stream in posting order.
//!
//! Progress: nothing runs in the background on tutti's behalf. test/wait call ucp_worker_progress
//! (which also moves this rank's own sends), yielding the core after a run of empty rounds.
//!
//! Failure: UCX calls the endpoint's error handler when a peer's connection breaks; the peer is
//! then marked lost, its endpoint force-closed (pending sends to it fail) and the receives posted
//! for it cancelled, so every wait involving it throws tutti::peer_lost at once rather than at the
//! deadline. abort() tears this rank's worker down, which peers see as exactly such a break.
//!
//! Leaving: a rank whose transport is destroyed while the others still expect messages (it
//! returned from main or threw right after joining, say) is not a broken connection: its endpoints
//! close cleanly. So the destructor first flushes and closes the endpoints (bounded by
//! close_timeout), then announces `<prefix>/left/<rank>` in the store. A rank whose operation with
//! that peer has waited departure_poll checks for the announcement (then every departure_poll) and
//! fails it with peer_lost naming the rank that left, in about a second instead of at the deadline.
//!
//! Shutdown: after announcing, the destructor meets the other ranks in a store barrier
//! (`<prefix>/closed`, polled while progressing, bounded by the timeout) so that no rank destroys
//! its worker while a peer still flushes to it. A rank that aborted, saw a peer die or saw one
//! leave sets `<prefix>/abandoned` instead (at once, from abort()), which releases the others: the
//! rank that left is then gone within a second of being noticed. Store calls on these failure
//! paths are bounded by failure_store_wait (first_loss.hpp): the store may have died with rank 0.
#pragma once
#include <sched.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/store_calls.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/first_loss.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#include "tutti/transport/ucx/options.hpp"
#include "tutti/transport/ucx/worker.hpp"

namespace tutti::transport {

namespace ucx_detail {

enum op_status : int { op_free, op_pending, op_done, op_failed };

//! One posted send or receive. Records live in a fixed pool; UCX's completion callbacks write into
//! them, so a record whose caller gave up (timeout) stays out of the pool until UCX is done with it.
struct op_state {
  int state = op_free;
  bool is_send = false;
  bool abandoned = false;        //!< the caller stopped waiting: the completion callback frees it
  int peer = -1;
  std::uint64_t tag = 0;
  std::size_t bytes = 0;         //!< posted size
  std::size_t arrived = 0;       //!< receive: size of the message that matched
  ucs_status_t status = UCS_OK;
  void* request = nullptr;       //!< UCX's request while the operation is in flight
  std::chrono::steady_clock::time_point posted{};  //!< when it was posted (departure checks wait a while)
  op_pool<op_state>* pool = nullptr;  //!< where the completion callback returns an abandoned record
};

//! Marks `op` finished; called from UCX's callbacks (inside ucp_worker_progress or a cancel).
inline void complete(op_state* op, void* request, ucs_status_t status) noexcept {
  op->request = nullptr;
  op->status = status;
  op->state = status == UCS_OK ? op_done : op_failed;
  ucp_request_free(request);
  if (op->abandoned) {
    op->abandoned = false;
    op->state = op_free;
    op->pool->release(op);  // never allocates: safe inside UCX's callback
  }
}

inline void send_done(void* request, ucs_status_t status, void* user_data) noexcept {
  complete(static_cast<op_state*>(user_data), request, status);
}

inline void recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) noexcept {
  auto* op = static_cast<op_state*>(user_data);
  if (info && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED)) op->arrived = info->length;
  complete(op, request, status);
}

}  // namespace ucx_detail

class ucx {
 public:
  using tutti_role = role::transport;
  static constexpr transport_traits traits{};  // any hosts, host memory, two-sided only
  static constexpr const char* name = "ucx";
  static constexpr std::size_t max_outstanding = max_outstanding_ops;
  static constexpr int tag_bits = tags::bits;             //!< tutti tags below 2^40 (core/tags.hpp); the source rank above
  static constexpr std::uint64_t tag_limit = std::uint64_t{1} << tag_bits;
  static constexpr int world_limit = 1 << (64 - tag_bits);  //!< ranks must fit the 24 bits left
  //! How long an operation waits before the store is asked whether its peer left, and how often
  //! after that: a wait that long is already slow, and a peer that left is named within a second.
  static constexpr std::chrono::milliseconds departure_poll{250};

  using request = request_handle<ucx_detail::op_state>;

  //! Joins a job of `world_size` ranks through `store`: publishes this rank's worker address under
  //! `<key_prefix>/addr/<rank>`, waits (until options.timeout) for every peer's, and connects.
  //! `key_prefix` must be the same on every rank and used by no other transport in that store.
  //! The store must outlive the transport: the destructor's barrier goes through it.
  template <bootstrap::store Store>
  ucx(int rank, int world_size, Store& store, std::string key_prefix = "tutti/ucx",
      ucx_options options = ucx_options::from_env())
      : rank_(checked_rank(rank, world_size)),
        world_(world_size),
        prefix_(std::move(key_prefix)),
        options_(options),
        eps_(static_cast<std::size_t>(world_size), nullptr),
        slots_(std::make_unique<peer_slot[]>(static_cast<std::size_t>(world_size))),
        lost_(static_cast<std::size_t>(world_size), UCS_OK),
        loss_handled_(static_cast<std::size_t>(world_size), false),
        left_(static_cast<std::size_t>(world_size), false),
        stalled_(static_cast<std::size_t>(world_size), false),
        store_(bootstrap::store_ops::of(store)),
        worker_(rank, static_cast<std::size_t>(world_size)) {
    ops_.for_each([this](ucx_detail::op_state& op) { op.pool = &ops_; });
    cpu_set_t cpus;
    const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    spin_ = world_ > usable ? 1 : options_.spin_before_yield;
    connect(store);
  }

  ucx(const ucx&) = delete;
  ucx& operator=(const ucx&) = delete;

  ~ucx() {
    if (!aborted_) close_gracefully();
    shutdown_barrier();
    for (void* r : closing_) ucp_request_free(r);  // released by UCX when it completes them
    closing_.clear();
    worker_.destroy();  // before the op pool: no callback may run after this (abort() did it already)
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return world_; }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    auto* op = acquire(peer, tag, bytes, true);
    if (lost_[static_cast<std::size_t>(peer)] != UCS_OK) return fail_now(op, lost_[static_cast<std::size_t>(peer)]);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &ucx_detail::send_done;
    param.user_data = op;
    settle(op, ucp_tag_send_nbx(eps_[static_cast<std::size_t>(peer)], data, bytes, wire_tag(rank_, tag), &param));
    return request(op);
  }

  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    auto* op = acquire(peer, tag, bytes, false);
    ucp_tag_recv_info_t info{};
    ucp_request_param_t param{};
    // NO_IMM_CMPL: a message that already arrived completes through the callback too, which is
    // the only path where UCX reports the length of a message too long for the buffer.
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &ucx_detail::recv_done;
    param.user_data = op;
    param.recv_info.tag_info = &info;
    const ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(worker_.get(), data, bytes, wire_tag(peer, tag), ~std::uint64_t{0}, &param);
    if (sp == nullptr) op->arrived = info.length;  // not expected with NO_IMM_CMPL, but cheap to honour
    settle(op, sp);
    // What a lost peer sent before dying may still be matched above; nothing more will come.
    if (op->request && lost_[static_cast<std::size_t>(peer)] != UCS_OK) ucp_request_cancel(worker_.get(), op->request);
    return request(op);
  }

  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    progress();
    if (r.op->state == ucx_detail::op_pending) {
      watch_departure(*r.op);
      if (r.op->state == ucx_detail::op_pending) return false;
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    unsigned idle = 0;
    while (r.op->state == ucx_detail::op_pending) {
      if (progress() != 0) {
        idle = 0;
      } else if (++idle >= spin_) {
        ::sched_yield();
        idle = 0;
      }
      if (r.op->state == ucx_detail::op_pending) watch_departure(*r.op);
      if (r.op->state == ucx_detail::op_pending && until.passed()) give_up(r);
    }
    finish(r);
  }

  //! Drives UCX once (this rank's sends included) and handles peers reported lost meanwhile; a
  //! composite transport calls it while it waits on its other half. Returns UCX's event count.
  unsigned progress() {
    if (aborted_) return 0;
    const unsigned n = worker_.progress();
    if (losses_pending_) handle_losses();
    if (!closing_.empty()) reap_closes();
    return n;
  }

  //! The job's first lost rank, for the communicator's error (communicator.hpp): see first_loss.hpp.
  [[nodiscard]] std::pair<int, std::string> first_loss(int peer, const std::string& what) {
    return transport::first_loss(store_, key("lost"), rank_, peer, what, store_failed_);
  }

  //! Withdraws every pending operation and tears UCX down at once: the worker's connections
  //! close, so peers see this rank's endpoints fail (peer_lost) within milliseconds. (A forced
  //! endpoint close alone leaves UCX's TCP connection open until the process exits.) The
  //! transport is unusable afterwards; requests still held fail with a message saying so.
  void abort() noexcept {
    if (aborted_) return;
    aborted_ = true;
    abandon_job();  // a rank waiting in its shutdown barrier (one that left) need not wait for us
    cancel_receives(-1);
    for (int p = 0; p < world_; ++p) close_endpoint(p, UCP_EP_CLOSE_FLAG_FORCE);
    for (void* r : closing_) ucp_request_free(r);  // released by UCX when it completes them
    closing_.clear();
    worker_.destroy();  // no UCX callback runs after this, and no user buffer is touched again
    ops_.for_each([this](ucx_detail::op_state& op) {
      if (op.state != ucx_detail::op_pending) return;
      op.request = nullptr;
      op.status = UCS_ERR_CANCELED;
      op.state = ucx_detail::op_failed;
      if (op.abandoned) {
        op.abandoned = false;
        release(&op);
      }
    });
  }

 private:
  struct peer_slot {
    ucx* self = nullptr;
    int peer = -1;
  };

  static int checked_rank(int rank, int world) {
    if (world < 1 || world >= world_limit)
      throw invalid_argument("rank " + std::to_string(rank) + ": transport::ucx: world_size " + std::to_string(world) +
                             " is outside [1, 2^24 = " + std::to_string(world_limit) +
                             "): the source rank takes the top 24 bits of UCX's 64-bit tag");
    if (rank < 0 || rank >= world)
      throw invalid_argument("rank " + std::to_string(rank) + ": transport::ucx: rank is outside [0, " +
                             std::to_string(world) + ")");
    return rank;
  }

  static std::uint64_t wire_tag(int source, std::uint64_t tag) noexcept {
    return (static_cast<std::uint64_t>(source) << tag_bits) | tag;
  }

  [[nodiscard]] std::string key(const std::string& what) const { return prefix_ + "/" + what; }

  template <class Store>
  void connect(Store& store) {
    const deadline until = deadline::after(options_.timeout);
    const auto mine = worker_.address();
    store.set(key("addr/" + std::to_string(rank_)), bootstrap::store_bytes(mine.begin(), mine.end()));
    for (int p = 0; p < world_; ++p) {
      bootstrap::store_bytes theirs;
      if (p == rank_) {
        theirs.assign(mine.begin(), mine.end());
      } else {
        try {
          theirs = store.get(key("addr/" + std::to_string(p)), until);
        } catch (const timeout& e) {
          throw timeout("rank " + std::to_string(rank_) + ": transport::ucx: rank " + std::to_string(p) +
                        " did not publish its worker address (" + key("addr/" + std::to_string(p)) +
                        ") before the deadline (TUTTI_TIMEOUT; is it running, with the same world size and prefix?): " +
                        e.what());
        }
      }
      slots_[static_cast<std::size_t>(p)] = peer_slot{this, p};
      eps_[static_cast<std::size_t>(p)] =
          worker_.connect(p, theirs, &ucx::on_endpoint_error, &slots_[static_cast<std::size_t>(p)]);
    }
  }

  //! UCX's endpoint error handler: runs inside ucp_worker_progress, so it only records the loss;
  //! progress() acts on it once UCX has returned.
  static void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) noexcept {
    auto* slot = static_cast<peer_slot*>(arg);
    ucx& self = *slot->self;
    auto& lost = self.lost_[static_cast<std::size_t>(slot->peer)];
    if (lost != UCS_OK) return;
    lost = status == UCS_OK ? UCS_ERR_CONNECTION_RESET : status;
    self.losses_pending_ = true;
  }

  void handle_losses() noexcept {
    losses_pending_ = false;
    for (int p = 0; p < world_; ++p) {
      const auto i = static_cast<std::size_t>(p);
      if (lost_[i] == UCS_OK || loss_handled_[i]) continue;
      loss_handled_[i] = true;
      if (!left_[i])  // a departure was logged where it was found
        log(log_level::info, rank_,
            "transport::ucx: rank " + std::to_string(p) + " is lost: " + ucx_detail::status_text(lost_[i]));
      cancel_receives(p);
      close_endpoint(p, UCP_EP_CLOSE_FLAG_FORCE);  // UCX requires a forced close of a failed endpoint
    }
  }

  //! See the top of this file (Leaving). Called while an operation with `op.peer` is pending.
  void watch_departure(ucx_detail::op_state& op) {
    const auto now = std::chrono::steady_clock::now();
    if (now - op.posted < departure_poll || now < next_departure_check_ || store_failed_) return;
    next_departure_check_ = now + departure_poll;
    const auto p = static_cast<std::size_t>(op.peer);
    if (lost_[p] != UCS_OK || op.peer == rank_) return;
    try {
      if (!store_.check(key("left/" + std::to_string(op.peer)), deadline::after(failure_store_wait))) return;
    } catch (const std::exception&) {
      store_failed_ = true;  // the store's process is gone: UCX reports that loss itself
      return;
    }
    // It flushed its sends before announcing, so what it sent has arrived: let UCX deliver it.
    const deadline drain = deadline::after(std::chrono::milliseconds(20));
    while (op.state == ucx_detail::op_pending && !drain.passed()) progress();
    if (op.state != ucx_detail::op_pending) return;
    log(log_level::info, rank_, "transport::ucx: rank " + std::to_string(op.peer) + " left the job while " +
                                    describe(op) + " waited for it");
    left_[p] = true;
    lost_[p] = UCS_ERR_CONNECTION_RESET;
    losses_pending_ = true;
    handle_losses();  // its receives cancelled, its endpoint forced closed: the op fails next progress
    abandon_job();
  }

  //! Tells ranks waiting in their shutdown barrier that this job is over (best effort, bounded).
  void abandon_job() noexcept {
    if (abandoned_ || store_failed_ || world_ == 1) return;
    abandoned_ = true;
    try {
      store_.set(key("abandoned"), bootstrap::store_bytes{1}, deadline::after(failure_store_wait));
    } catch (const std::exception&) {
      store_failed_ = true;
    }
  }

  //! Cancels the pending receives from `peer` (every peer: -1); they fail with UCS_ERR_CANCELED.
  void cancel_receives(int peer) noexcept {
    ops_.for_each([&](ucx_detail::op_state& op) {
      if (op.state == ucx_detail::op_pending && !op.is_send && op.request && (peer < 0 || op.peer == peer))
        ucp_request_cancel(worker_.get(), op.request);
    });
  }

  void close_endpoint(int p, std::uint32_t flags) noexcept {
    ucp_ep_h ep = std::exchange(eps_[static_cast<std::size_t>(p)], nullptr);
    if (!ep) return;
    if (void* r = ucx_detail::worker::close(ep, flags)) closing_.push_back(r);
  }

  void reap_closes() noexcept {
    std::erase_if(closing_, [](void* r) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
      ucp_request_free(r);
      return true;
    });
  }

  //! Destructor, not aborted: withdraws leftover receives, lets every endpoint flush what is in
  //! flight (bounded by close_timeout) and closes it; endpoints with a timed-out send are forced.
  void close_gracefully() noexcept {
    cancel_receives(-1);
    for (int p = 0; p < world_; ++p) close_endpoint(p, stalled_[static_cast<std::size_t>(p)] ? UCP_EP_CLOSE_FLAG_FORCE : 0);
    const deadline until = deadline::after(options_.close_timeout);
    while (!closing_.empty() && !until.passed()) {
      worker_.progress();
      reap_closes();
    }
    if (!closing_.empty())
      log(log_level::warn, rank_,
          "transport::ucx: " + std::to_string(closing_.size()) +
              " endpoints did not finish flushing within TUTTI_UCX_CLOSE_TIMEOUT; destroying them anyway");
  }

  [[nodiscard]] bool any_peer_lost() const noexcept {
    for (auto s : lost_)
      if (s != UCS_OK) return true;
    return false;
  }

  //! Announces this rank's departure (see the top of this file), then waits, polling the store
  //! and progressing UCX so that peers' flushes to us complete, until every rank has closed its
  //! endpoints, someone abandoned the job, a peer was lost, or the timeout passes.
  void shutdown_barrier() noexcept {
    if (world_ == 1 || store_failed_) return;
    const std::string closed = key("closed"), abandoned = key("abandoned");
    if (aborted_ || any_peer_lost()) return abandon_job();
    try {
      const deadline until = deadline::after(options_.timeout);
      store_.set(key("left/" + std::to_string(rank_)), bootstrap::store_bytes{1}, until);
      store_.add(closed, 1, until);
      for (;;) {
        const std::int64_t seen = store_.add(closed, 0, until);
        if (seen >= world_ || store_.check(abandoned, until)) return;
        if (until.passed()) {
          log(log_level::warn, rank_, "transport::ucx: shutdown barrier " + closed + " saw " + std::to_string(seen) +
                                          " of " + std::to_string(world_) + " ranks before TUTTI_TIMEOUT; closing anyway");
          return;
        }
        const deadline slice = deadline::after(std::chrono::milliseconds(5));
        while (!slice.passed())
          if (worker_.progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    } catch (const std::exception& e) {
      log(log_level::warn, rank_, std::string("transport::ucx: shutdown barrier through the store failed: ") + e.what());
    }
  }

  ucx_detail::op_state* acquire(int peer, std::uint64_t tag, std::size_t bytes, bool is_send) {
    const char* what = is_send ? "send to" : "recv from";
    check_peer(rank_, name, is_send, peer, world_);
    if (tag >= tag_limit)
      throw invalid_argument("rank " + std::to_string(rank_) + ": transport::ucx " + what + " rank " +
                             std::to_string(peer) + ": tag " + std::to_string(tag) + " is not below 2^40 = " +
                             std::to_string(tag_limit) + " (the source rank takes the top 24 bits of UCX's tag)");
    if (aborted_)
      throw transport_error("rank " + std::to_string(rank_) + ": transport::ucx " + what + " rank " +
                            std::to_string(peer) + ": the transport was aborted and is unusable");
    auto* op = ops_.acquire(rank_, name);
    op->state = ucx_detail::op_pending;
    op->is_send = is_send;
    op->abandoned = false;
    op->peer = peer;
    op->tag = tag;
    op->bytes = bytes;
    op->arrived = 0;
    op->status = UCS_OK;
    op->request = nullptr;
    op->posted = std::chrono::steady_clock::now();
    return op;
  }

  //! Records what ucp_tag_{send,recv}_nbx returned: done at once, failed at once, or in flight.
  static void settle(ucx_detail::op_state* op, ucs_status_ptr_t sp) noexcept {
    if (sp == nullptr) {
      op->state = ucx_detail::op_done;
    } else if (UCS_PTR_IS_ERR(sp)) {
      op->status = UCS_PTR_STATUS(sp);
      op->state = ucx_detail::op_failed;
    } else if (op->state == ucx_detail::op_pending) {
      op->request = sp;  // else the callback already ran (and freed it) inside the call
    }
  }

  request fail_now(ucx_detail::op_state* op, ucs_status_t status) noexcept {
    op->status = status;
    op->state = ucx_detail::op_failed;
    return request(op);
  }

  void release(ucx_detail::op_state* op) noexcept {
    op->state = ucx_detail::op_free;
    ops_.release(op);
  }

  //! The deadline passed: cancel a receive (a send stays with UCX until it completes or its
  //! endpoint closes); the record returns to the pool from the completion callback.
  [[noreturn]] void give_up(request& r) {
    auto* op = std::exchange(r.op, nullptr);
    const std::string what = describe(*op) + " did not complete before the deadline (TUTTI_TIMEOUT)";
    op->abandoned = true;
    if (op->is_send)
      stalled_[static_cast<std::size_t>(op->peer)] = true;  // UCX cannot cancel a send: close() forces it out
    else
      ucp_request_cancel(worker_.get(), op->request);
    throw timeout(what);
  }

  void finish(request& r) {
    auto* op = std::exchange(r.op, nullptr);
    const ucx_detail::op_state done = *op;
    release(op);
    const auto peer = static_cast<std::size_t>(done.peer);
    if (done.state == ucx_detail::op_done) {
      if (!done.is_send && done.arrived != done.bytes) throw size_mismatch(done);
      return;
    }
    if (done.status == UCS_ERR_MESSAGE_TRUNCATED) throw size_mismatch(done);
    if (done.status == UCS_ERR_CANCELED && aborted_)
      throw transport_error(describe(done) + " was withdrawn: the transport was aborted");
    if (left_[peer])
      throw peer_lost(done.peer, describe(done) + ": rank " + std::to_string(done.peer) +
                                     " left the job (peer lost): its transport was closed (its process returned, "
                                     "exited or threw) while this rank still waited for it");
    if (lost_[peer] != UCS_OK || ucx_detail::is_peer_failure(done.status)) {
      const ucs_status_t why = lost_[peer] != UCS_OK ? lost_[peer] : done.status;
      throw peer_lost(done.peer, describe(done) + ": rank " + std::to_string(done.peer) + " is lost (peer lost: " +
                                     ucx_detail::status_text(why) + ")");
    }
    throw transport_error(describe(done) + " failed: " + ucx_detail::status_text(done.status));
  }

  [[nodiscard]] transport_error size_mismatch(const ucx_detail::op_state& op) const {
    const bool known = op.status == UCS_OK || op.arrived > op.bytes;
    return transport_error("rank " + std::to_string(rank_) + ": transport::ucx receive from rank " +
                           std::to_string(op.peer) + " with tag " + std::to_string(op.tag) + " posted " +
                           std::to_string(op.bytes) + " bytes but rank " + std::to_string(op.peer) + " sent " +
                           (known ? std::to_string(op.arrived) : std::string("more than ") + std::to_string(op.bytes)) +
                           " bytes (sizes must match; receives must be posted in the order sent)");
  }

  [[nodiscard]] std::string describe(const ucx_detail::op_state& op) const {
    return "rank " + std::to_string(rank_) + ": transport::ucx " + (op.is_send ? "send of " : "receive of ") +
           std::to_string(op.bytes) + " bytes " + (op.is_send ? "to" : "from") + " rank " + std::to_string(op.peer) +
           " with tag " + std::to_string(op.tag);
  }

  int rank_;
  int world_;
  std::string prefix_;
  ucx_options options_;
  std::vector<ucp_ep_h> eps_;                 //!< null once closed
  std::unique_ptr<peer_slot[]> slots_;        //!< error handlers' arguments: stable addresses
  std::vector<ucs_status_t> lost_;            //!< UCS_OK while the peer is fine, else why it was lost
  std::vector<bool> loss_handled_;
  std::vector<bool> left_;                    //!< announced its departure while we waited for it
  std::vector<bool> stalled_;                 //!< a send to this peer timed out: flushing would wait for it
  bool losses_pending_ = false;
  bool aborted_ = false;
  bool abandoned_ = false;                    //!< `<prefix>/abandoned` set (or tried) by this rank
  bool store_failed_ = false;                 //!< a store operation failed after a loss: skip the barrier
  std::chrono::steady_clock::time_point next_departure_check_{};
  unsigned spin_ = 1000;
  std::vector<void*> closing_;                //!< endpoint close requests still in progress
  op_pool<ucx_detail::op_state> ops_;
  bootstrap::store_ops store_;  //!< for leaving, the first loss and the shutdown barrier (the caller keeps it alive)
  // Last: built after, and destroyed before, everything UCX's callbacks may touch.
  ucx_detail::worker worker_;
};

static_assert(transport_policy<ucx>, "transport::ucx must satisfy tutti::transport_policy");

}  // namespace tutti::transport
