//! @file channel.hpp  transport::shm's two-sided operations: send, recv, test, wait over the rings.
//!
//! send/recv only queue an operation; test/wait drive every queued operation of this rank (copy
//! fragments into peers' rings, drain fragments out of ours), so a rank waiting on a receive still
//! pushes its own sends and no progress thread is needed. Waits spin, then yield, then sleep, and
//! ask liveness.hpp whether the peer is still there, so a killed peer is reported within
//! milliseconds.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/detail/op_queue.hpp"
#include "tutti/transport/detail/operation.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#include "tutti/transport/shm/liveness.hpp"
#include "tutti/transport/shm/startup.hpp"

namespace tutti::transport::shm_detail {

using detail::op_free, detail::op_pending, detail::op_done, detail::op_failed;

//! One queued send or receive, moved fragment by fragment by push() / pull().
struct op_state : detail::operation {
  int status = op_free;
  bool started = false;  //!< first fragment written / read
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  std::size_t done = 0;  //!< payload bytes moved so far
  op_state* next = nullptr;
  std::string failure;
};

class channel {
 public:
  using request = request_handle<op_state>;
  static constexpr const char* name = "shm";

  channel(mapped_job& job, liveness& live)
      : job_(job),
        live_(live),
        produced_(static_cast<std::size_t>(job.world), 0),
        expected_(static_cast<std::size_t>(job.world), 0),
        sends_(static_cast<std::size_t>(job.world)),
        recvs_(static_cast<std::size_t>(job.world)) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    op_state* op = acquire(peer, tag, bytes, true);
    op->src = static_cast<const std::byte*>(data);
    sends_[static_cast<std::size_t>(peer)].push(op);
    push(peer);  // small messages usually complete right here
    return request(op);
  }

  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return recv_up_to(peer, tag, data, bytes, nullptr);
  }
  //! recv taking a message of at most `capacity` bytes; its size lands in *arrived (concepts.hpp).
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived) {
    op_state* op = acquire(peer, tag, capacity, false);
    op->arrived_out = arrived;
    op->dst = static_cast<std::byte*>(data);
    recvs_[static_cast<std::size_t>(peer)].push(op);
    pull(peer);
    return request(op);
  }

  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    progress();
    if (r.op->status == op_pending) {
      if (!gone(r.op->peer)) return false;
      // A peer may send its last message and exit between the progress() above and the liveness
      // check: what it sent is still in our rings, so look once more before calling it lost (as
      // wait() does). Without this a peer that finished first failed a slower rank's last receive.
      progress();
      if (r.op->status == op_pending) lost(r);
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    backoff b(job_.spin_rounds);
    for (;;) {
      progress();
      if (r.op->status != op_pending) return finish(r);
      if (b.check_clock()) {
        if (gone(r.op->peer)) {
          progress();  // what the peer sent before leaving is still in our rings
          if (r.op->status != op_pending) return finish(r);
          lost(r);
        }
        if (until.passed()) {
          const std::string what = describe(*r.op) + " did not complete before the deadline (TUTTI_TIMEOUT)";
          job_.broken = what;  // a half-moved message leaves the stream unusable
          throw timeout(what);
        }
      }
      b.pause();
    }
  }

  //! Moves every queued operation along without waiting.
  void progress() {
    for (int p = 0; p < job_.world; ++p) {
      if (sends_[static_cast<std::size_t>(p)].head) push(p);
      if (recvs_[static_cast<std::size_t>(p)].head) pull(p);
    }
  }

  //! Fails every queued operation with job.broken (abort()). Only this process ever touches the
  //! user buffers of its operations, so nothing can write into them afterwards.
  void fail_all() noexcept {
    for (auto* queues : {&sends_, &recvs_}) {
      for (auto& q : *queues) {
        while (q.head) {
          q.head->failure = job_.broken;
          q.head->status = op_failed;
          q.pop();
        }
      }
    }
  }

 private:
  bool gone(int peer) { return live_.gone(peer, job_.header(peer)); }

  op_state* acquire(int peer, std::uint64_t tag, std::size_t bytes, bool is_send) {
    check_peer(job_.rank, name, is_send, peer, job_.world);
    if (!job_.broken.empty()) throw transport_error(job_.broken + "; the transport is unusable");
    op_state* op = ops_.acquire(job_.rank, name);
    op->posting(is_send, peer, tag, bytes);
    op->status = op_pending;
    op->started = false;
    op->done = 0;
    op->src = nullptr;
    op->dst = nullptr;
    return op;
  }

  void finish(request& r) {
    op_state* op = std::exchange(r.op, nullptr);
    const int s = op->status;
    op->status = op_free;
    ops_.release(op);
    if (s == op_failed) throw transport_error(op->failure);
  }

  [[noreturn]] void lost(request& r) {
    const int peer = r.op->peer;
    const std::string what = describe(*r.op) + ": rank " + job_.label(peer) + " is gone (peer lost)";
    // Only the streams with `peer` are lost (every later operation with it fails the same way); the
    // others still work, so a survivor can tell the rest who was lost (the fusion engine's
    // coordinator does) before it aborts.
    throw peer_lost(peer, what);
  }

  [[nodiscard]] std::string describe(const op_state& op) const {
    return on_rank(job_.job_rank(job_.rank)) + detail::op_text(op, job_.label(op.peer));
  }

  //! Copies queued sends to `peer` into its ring for us, fragment by fragment, while slots are free.
  void push(int peer) {
    auto& q = sends_[static_cast<std::size_t>(peer)];
    std::byte* base = job_.bases[static_cast<std::size_t>(peer)];
    auto* ctl = job_.control(base, job_.rank);
    auto& produced = produced_[static_cast<std::size_t>(peer)];
    const layout& geometry = job_.geometry;
    while (op_state* op = q.head) {
      while (!(op->started && op->done == op->bytes)) {
        if (produced - ctl->consumed.load(std::memory_order_acquire) >= geometry.slots) return;  // ring full
        auto* h = job_.slot(base, job_.rank, produced);
        const std::size_t n = std::min(geometry.slot_bytes, op->bytes - op->done);
        if (n) std::memcpy(reinterpret_cast<std::byte*>(h + 1), op->src + op->done, n);
        h->tag = op->tag;
        h->message_bytes = op->bytes;
        h->bytes = static_cast<std::uint32_t>(n);
        h->first = op->started ? 0 : 1;
        h->seq.store(produced + 1, std::memory_order_release);
        ++produced;
        op->done += n;
        op->started = true;
      }
      op->status = op_done;
      q.pop();
    }
  }

  //! Copies fragments that `peer` put in our ring into the queued receives, in order.
  void pull(int peer) {
    auto& q = recvs_[static_cast<std::size_t>(peer)];
    std::byte* base = job_.bases[static_cast<std::size_t>(job_.rank)];
    auto* ctl = job_.control(base, peer);
    auto& expected = expected_[static_cast<std::size_t>(peer)];
    while (op_state* op = q.head) {
      while (!(op->started && op->done == op->bytes)) {
        auto* h = job_.slot(base, peer, expected);
        if (h->seq.load(std::memory_order_acquire) != expected + 1) return;  // nothing new yet
        if (!op->started && (!h->first || h->tag != op->tag || !op->takes(h->message_bytes))) {
          job_.broken = on_rank(job_.job_rank(job_.rank)) + "receive from rank " + job_.label(peer) + " expected " +
                        std::to_string(op->bytes) + " bytes with tag " + std::to_string(op->tag) + " but rank " +
                        job_.label(peer) + " sent " + std::to_string(h->message_bytes) + " bytes with tag " +
                        std::to_string(h->tag) + " (receives must be posted in the order sent)";
          op->failure = job_.broken;
          op->status = op_failed;
          q.pop();
          return;
        }
        if (h->bytes) std::memcpy(op->dst + op->done, reinterpret_cast<const std::byte*>(h + 1), h->bytes);
        op->done += h->bytes;
        op->started = true;
        ctl->consumed.store(expected + 1, std::memory_order_release);
        ++expected;
      }
      op->status = op_done;
      q.pop();
    }
  }

  mapped_job& job_;
  liveness& live_;
  std::vector<std::uint64_t> produced_;  //!< fragments written into each peer's ring for us
  std::vector<std::uint64_t> expected_;  //!< next fragment expected from each peer
  std::vector<detail::op_queue<op_state>> sends_;
  std::vector<detail::op_queue<op_state>> recvs_;
  op_pool<op_state> ops_;
};

}  // namespace tutti::transport::shm_detail
