//! @file channel.hpp  transport::ucx's two-sided operations: send, recv, test, wait by UCX tag matching.
//!
//! Matching: a UCP tag is (source rank << 40) | tutti tag, received with a full mask, so a receive
//! matches exactly one (peer, tag) stream and UCX keeps messages of a stream in posting order.
//!
//! Progress: nothing runs in the background on tutti's behalf. test/wait call ucp_worker_progress
//! (which also moves this rank's own sends), yielding the core after a run of empty rounds; while
//! an operation waits, liveness.hpp is asked whether its peer was lost or left.
#pragma once
#include <sched.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#include "tutti/transport/ucx/error.hpp"
#include "tutti/transport/ucx/liveness.hpp"
#include "tutti/transport/ucx/operation.hpp"
#include "tutti/transport/ucx/startup.hpp"
#include "tutti/transport/ucx/worker.hpp"

namespace tutti::transport::ucx_detail {

class channel {
 public:
  using request = request_handle<op_state>;
  static constexpr const char* name = "ucx";

  //! Binds the parts it works with; `w` may be built later (nothing here runs until a send or receive).
  channel(job& j, op_pool<op_state>& ops, peer_watch& peers, worker& w) : job_(j), ops_(ops), peers_(peers), worker_(w) {
    ops_.for_each([this](op_state& op) { op.pool = &ops_; });
  }
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    auto* op = acquire(peer, tag, bytes, true);
    if (peers_.lost(peer) != UCS_OK) return fail_now(op, peers_.lost(peer));
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &send_done;
    param.user_data = op;
    settle(op, ucp_tag_send_nbx(peers_.endpoint(peer), data, bytes, wire_tag(job_.rank, tag), &param));
    return request(op);
  }

  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return recv_up_to(peer, tag, data, bytes, nullptr);
  }
  //! recv taking a message of at most `capacity` bytes (UCX matches any shorter one into the same
  //! buffer); its size lands in *arrived once the request completes (concepts.hpp).
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived) {
    auto* op = acquire(peer, tag, capacity, false);
    op->arrived_out = arrived;
    ucp_tag_recv_info_t info{};
    ucp_request_param_t param{};
    // NO_IMM_CMPL: a message that already arrived completes through the callback too, which is
    // the only path where UCX reports the length of a message too long for the buffer.
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &recv_done;
    param.user_data = op;
    param.recv_info.tag_info = &info;
    const ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(worker_.get(), data, capacity, wire_tag(peer, tag), ~std::uint64_t{0}, &param);
    if (sp == nullptr) op->arrived = info.length;  // not expected with NO_IMM_CMPL, but cheap to honour
    settle(op, sp);
    // What a lost peer sent before dying may still be matched above; nothing more will come.
    if (op->request && peers_.lost(peer) != UCS_OK) ucp_request_cancel(worker_.get(), op->request);
    return request(op);
  }

  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    progress();
    if (r.op->state == op_pending) {
      watch_departure(r);
      if (r.op->state == op_pending) return false;
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    unsigned idle = 0;
    while (r.op->state == op_pending) {
      if (progress() != 0) {
        idle = 0;
      } else if (++idle >= job_.spin) {
        ::sched_yield();
        idle = 0;
      }
      if (r.op->state == op_pending) watch_departure(r);
      if (r.op->state == op_pending && until.passed()) give_up(r);
    }
    finish(r);
  }

  //! Drives UCX once (this rank's sends included) and handles peers reported lost meanwhile.
  //! Returns UCX's event count.
  unsigned progress() {
    if (job_.aborted) return 0;
    const unsigned n = worker_.progress();
    peers_.after_progress();
    return n;
  }

  //! abort(), once the worker is gone: every operation still pending fails as withdrawn.
  void withdraw_all() noexcept {
    ops_.for_each([this](op_state& op) {
      if (op.state != op_pending) return;
      op.request = nullptr;
      op.status = UCS_ERR_CANCELED;
      op.state = op_failed;
      if (op.abandoned) {
        op.abandoned = false;
        release(&op);
      }
    });
  }

 private:
  static std::uint64_t wire_tag(int source, std::uint64_t tag) noexcept {
    return (static_cast<std::uint64_t>(source) << tag_bits) | tag;
  }

  //! See liveness.hpp (Loss, Leaving). Called while `r`'s operation is pending.
  void watch_departure(request& r) {
    op_state& op = *r.op;
    const auto word = peers_.check_long_wait(op);
    if (word == peer_watch::long_wait::nothing) return;
    if (word == peer_watch::long_wait::job_lost) give_up_on_loss(r);
    // A peer lost or gone: what it sent has arrived or never will; let UCX deliver what it can.
    const deadline drain = deadline::after(std::chrono::milliseconds(20));
    while (op.state == op_pending && !drain.passed()) progress();
    if (op.state != op_pending) return;
    if (word == peer_watch::long_wait::peer_left) {
      peers_.departed(op);
      return;
    }
    // Lost, and its operation never finishes (a matched receive: UCX cannot cancel it).
    const op_state stuck = op;
    abandon(r);
    raise_failure(job_.rank, stuck, UCS_ERR_CANCELED, peers_.lost(stuck.peer), false, false);
  }

  op_state* acquire(int peer, std::uint64_t tag, std::size_t bytes, bool is_send) {
    const char* what = is_send ? "send to" : "recv from";
    check_peer(job_.rank, name, is_send, peer, job_.world);
    if (tag >= tag_limit)
      throw invalid_argument(on_rank(job_.rank) + "transport::ucx " + what + " rank " + std::to_string(peer) +
                             ": tag " + std::to_string(tag) + " is not below 2^40 = " + std::to_string(tag_limit) +
                             " (the source rank takes the top 24 bits of UCX's tag)");
    if (job_.aborted)
      throw transport_error(on_rank(job_.rank) + "transport::ucx " + what + " rank " + std::to_string(peer) +
                            ": the transport was aborted and is unusable");
    auto* op = ops_.acquire(job_.rank, name);
    op->posting(is_send, peer, tag, bytes);
    op->state = op_pending;
    op->abandoned = false;
    op->arrived = 0;
    op->status = UCS_OK;
    op->request = nullptr;
    op->posted = std::chrono::steady_clock::now();
    return op;
  }

  //! Records what ucp_tag_{send,recv}_nbx returned: done at once, failed at once, or in flight.
  static void settle(op_state* op, ucs_status_ptr_t sp) noexcept {
    if (sp == nullptr) {
      op->state = op_done;
    } else if (UCS_PTR_IS_ERR(sp)) {
      op->status = UCS_PTR_STATUS(sp);
      op->state = op_failed;
    } else if (op->state == op_pending) {
      op->request = sp;  // else the callback already ran (and freed it) inside the call
    }
  }

  request fail_now(op_state* op, ucs_status_t status) noexcept {
    op->status = status;
    op->state = op_failed;
    return request(op);
  }

  void release(op_state* op) noexcept {
    op->state = op_free;
    ops_.release(op);
  }

  //! The deadline passed: cancel a receive (a send stays with UCX until it completes or its
  //! endpoint closes); the record returns to the pool from the completion callback.
  [[noreturn]] void give_up(request& r) {
    const std::string what = describe(job_.rank, *r.op) + " did not complete before the deadline (TUTTI_TIMEOUT)";
    abandon(r);
    throw timeout(what);
  }

  //! The job recorded a loss while this operation waited (liveness.hpp, Loss): it cannot complete.
  [[noreturn]] void give_up_on_loss(request& r) {
    const auto& [first, how] = peers_.recorded_loss();
    const std::string what = describe(job_.rank, *r.op) + ": the job lost " + rank_text(first) +
                             " (recorded by the rank that saw it first: " + how + "); this operation cannot complete";
    abandon(r);
    throw peer_lost(first, what);
  }

  void abandon(request& r) noexcept {
    auto* op = std::exchange(r.op, nullptr);
    op->abandoned = true;
    if (op->is_send)
      peers_.stalled(op->peer);  // UCX cannot cancel a send: close() forces it out
    else
      ucp_request_cancel(worker_.get(), op->request);
  }

  void finish(request& r) {
    auto* op = std::exchange(r.op, nullptr);
    op_state done = *op;
    release(op);
    if (done.state == op_done) {
      if (!done.is_send && !done.takes(done.arrived)) throw size_mismatch(job_.rank, done, true, done.arrived);
      return;
    }
    if (done.status == UCS_ERR_MESSAGE_TRUNCATED)
      throw size_mismatch(job_.rank, done, done.arrived > done.bytes, done.arrived);
    raise_failure(job_.rank, done, done.status, peers_.lost(done.peer), peers_.left(done.peer), job_.aborted);
  }

  job& job_;
  op_pool<op_state>& ops_;
  peer_watch& peers_;
  worker& worker_;
};

}  // namespace tutti::transport::ucx_detail
