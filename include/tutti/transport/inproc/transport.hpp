//! @file transport.hpp  transport::inproc — every rank a thread of one process; for tests and examples.
#pragma once
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/detail/operation.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"
#include "tutti/transport/inproc/fabric.hpp"

namespace tutti::transport {

class inproc {
 public:
  using tutti_role = role::transport;
  using fabric = inproc_detail::fabric;
  static constexpr transport_traits traits{.intra_node = true, .device_memory = false, .one_sided = false};
  static constexpr const char* name = "inproc";
  static constexpr std::size_t max_outstanding = max_outstanding_ops;

  //! Handle to a posted operation; empty once waited on (or tested complete).
  using request = request_handle<inproc_detail::op_state>;

  //! The fabric and rank are checked before any member uses them (board_ reads the fabric).
  inproc(std::shared_ptr<fabric> f, int rank) : fabric_(checked(std::move(f), rank)), rank_(rank) {}
  inproc(const inproc&) = delete;
  inproc& operator=(const inproc&) = delete;

  //! Leaving withdraws every unmatched operation (so peers never touch this rank's memory again)
  //! and marks the rank gone, which turns peers' waits on it into tutti::peer_lost.
  ~inproc() { abort(); }

  //! Withdraws every pending operation and tells the peers this rank is gone. Called by the
  //! communicator when a collective fails midway; the transport is unusable afterwards.
  void abort() noexcept {
    pool_.for_each([&](inproc_detail::op_state& op) {
      if (op.status.load() == inproc_detail::op_pending) fabric_->withdraw(rank_, &op);
    });
    fabric_->leave(rank_);
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return fabric_->world_size(); }
  //! The simulated node this rank is on (see run()), for hierarchical algorithms' grouping.
  [[nodiscard]] std::string node_id() const { return fabric_->node_id(rank_); }
  //! Where the communicator's stall inspector posts and reads (the fabric's, shared by the threads).
  [[nodiscard]] transport::activity_board& activity_board() noexcept { return board_; }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    auto* op = acquire(peer, tag, bytes, true);
    op->src = data;
    fabric_->post_send(rank_, op);
    return request(op);
  }

  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return recv_up_to(peer, tag, data, bytes, nullptr);
  }
  //! recv taking a message of at most `capacity` bytes; its size lands in *arrived (concepts.hpp).
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived) {
    auto* op = acquire(peer, tag, capacity, false);
    op->dst = data;
    op->arrived_out = arrived;
    fabric_->post_recv(rank_, op);
    return request(op);
  }

  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    const int s = r.op->status.load(std::memory_order_acquire);
    if (s == inproc_detail::op_pending) {
      if (!fabric_->gone(r.op->peer)) return false;
      finish_or_lost(r);
      return true;
    }
    finish(r, s);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    backoff b;
    for (;;) {
      const int s = r.op->status.load(std::memory_order_acquire);
      if (s != inproc_detail::op_pending) return finish(r, s);
      if (b.check_clock()) {
        if (fabric_->gone(r.op->peer)) return finish_or_lost(r);
        if (until.passed()) {
          const std::string what = describe(*r.op) + " did not complete before the deadline (TUTTI_TIMEOUT)";
          abandon(r);
          throw timeout(what);
        }
      }
      b.pause();
    }
  }

  //! Runs fn(transport&) on `world_size` threads sharing one fabric and returns each rank's
  //! exception (null where the rank succeeded). The transport of a rank that throws is destroyed
  //! at once, so its peers see peer_lost instead of waiting for the deadline. `node_ids`, when
  //! given, simulates nodes: rank r reports node_ids[r] as its node_id().
  template <class F>
  static std::vector<std::exception_ptr> run(int world_size, F&& fn, std::vector<std::string> node_ids = {}) {
    if (world_size < 1) throw invalid_argument("transport::inproc::run: world_size " + std::to_string(world_size) + " < 1");
    if (!node_ids.empty() && node_ids.size() != static_cast<std::size_t>(world_size))
      throw invalid_argument("transport::inproc::run: " + std::to_string(node_ids.size()) + " node ids for " +
                             std::to_string(world_size) + " ranks");
    auto shared = std::make_shared<fabric>(world_size);
    shared->set_node_ids(std::move(node_ids));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world_size));
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(world_size));
    for (int r = 0; r < world_size; ++r) {
      threads.emplace_back([&, r] {
        try {
          inproc t(shared, r);
          fn(t);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    return errors;
  }

 private:
  inproc_detail::op_state* acquire(int peer, std::uint64_t tag, std::size_t bytes, bool is_send) {
    check_peer(rank_, name, is_send, peer, world_size());
    auto* op = pool_.acquire(rank_, name);
    op->posting(is_send, peer, tag, bytes);
    op->src = nullptr;
    op->dst = nullptr;
    op->status.store(inproc_detail::op_pending, std::memory_order_relaxed);
    return op;
  }

  void release(request& r) noexcept {
    r.op->status.store(inproc_detail::op_free, std::memory_order_relaxed);
    pool_.release(std::exchange(r.op, nullptr));
  }

  void finish(request& r, int status) {
    if (status == inproc_detail::op_done) return release(r);
    const std::string what = on_rank(rank_) + r.op->failure;
    release(r);
    throw transport_error(what);
  }

  void abandon(request& r) {
    fabric_->withdraw(rank_, r.op);
    release(r);
  }

  // The peer may have completed this op just before it left: withdraw, then trust the status.
  void finish_or_lost(request& r) {
    fabric_->withdraw(rank_, r.op);
    const int s = r.op->status.load(std::memory_order_acquire);
    if (s != inproc_detail::op_pending) return finish(r, s);
    const int peer = r.op->peer;
    const std::string what = describe(*r.op) + ": rank " + std::to_string(peer) + " left (peer lost)";
    abandon(r);
    throw peer_lost(peer, what);
  }

  static std::shared_ptr<fabric> checked(std::shared_ptr<fabric> f, int rank) {
    if (!f) throw invalid_argument("transport::inproc: null fabric");
    if (rank < 0 || rank >= f->world_size())
      throw invalid_argument("transport::inproc: rank " + std::to_string(rank) + " is outside [0, " +
                             std::to_string(f->world_size()) + ")");
    return f;
  }

  [[nodiscard]] std::string describe(const inproc_detail::op_state& op) const {
    return on_rank(rank_) + detail::op_text(op, std::to_string(op.peer));
  }

  std::shared_ptr<fabric> fabric_;
  int rank_;
  transport::local_activity_board::view board_{fabric_->board(), rank_};
  op_pool<inproc_detail::op_state> pool_;
};

static_assert(transport_policy<inproc>, "transport::inproc must satisfy tutti::transport_policy");

}  // namespace tutti::transport
