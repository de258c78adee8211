//! @file fabric.hpp  The shared state through which in-process ranks (threads) exchange messages.
//!
//! Each ordered pair of ranks has a channel holding posted-but-unmatched sends and receives.
//! Whichever side arrives second copies the bytes straight from the sender's buffer into the
//! receiver's (one copy, no staging) under the channel's lock, so a rank that leaves can withdraw
//! its pending operations and be sure nobody touches its memory afterwards.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tutti/core/message.hpp"
#include "tutti/transport/activity_board.hpp"
#include "tutti/transport/detail/op_queue.hpp"
#include "tutti/transport/detail/operation.hpp"

namespace tutti::transport::inproc_detail {

using detail::op_status, detail::op_free, detail::op_pending, detail::op_done, detail::op_failed;

//! One posted send or receive. Lives in its rank's fixed pool; linked into a channel while unmatched.
struct op_state : detail::operation {
  std::atomic<int> status{op_free};
  const void* src = nullptr;  //!< sender's bytes (sends)
  void* dst = nullptr;        //!< receiver's bytes (receives)
  op_state* next = nullptr;   //!< channel queue link
  std::string failure;        //!< why it failed, written before status becomes op_failed
};

using op_queue = detail::op_queue<op_state>;

struct channel {
  std::mutex mutex;
  op_queue sends;  //!< sends from src to dst not yet matched
  op_queue recvs;  //!< receives by dst from src not yet matched
};

class fabric {
 public:
  explicit fabric(int world_size)
      : world_(world_size),
        channels_(std::make_unique<channel[]>(static_cast<std::size_t>(world_size) * static_cast<std::size_t>(world_size))),
        gone_(std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(world_size))),
        board_(world_size) {
    for (std::size_t r = 0; r < static_cast<std::size_t>(world_size); ++r) gone_[r].store(false);
  }

  [[nodiscard]] int world_size() const noexcept { return world_; }
  //! Simulated node of each rank (inproc::run's node_ids); "inproc" for all when none were given.
  [[nodiscard]] std::string node_id(int rank) const {
    return node_ids_.empty() ? std::string("inproc") : node_ids_[static_cast<std::size_t>(rank)];
  }
  void set_node_ids(std::vector<std::string> ids) { node_ids_ = std::move(ids); }

  //! Posts a send from `src`; completes it at once if `op->peer` already posted the receive.
  void post_send(int src, op_state* op) { post(between(src, op->peer), op, true, src); }
  //! Posts a receive by `dst`; completes it at once if `op->peer` already posted the send.
  void post_recv(int dst, op_state* op) { post(between(op->peer, dst), op, false, dst); }

  //! Takes an unmatched op of `rank` back out of its channel (after a timeout or when leaving).
  void withdraw(int rank, op_state* op) {
    channel& ch = op->is_send ? between(rank, op->peer) : between(op->peer, rank);
    std::lock_guard lock(ch.mutex);
    (op->is_send ? ch.sends : ch.recvs).remove(op);
  }

  //! What the ranks' stall inspectors post and read (activity_board.hpp).
  [[nodiscard]] local_activity_board& board() noexcept { return board_; }

  void leave(int rank) noexcept { gone_[static_cast<std::size_t>(rank)].store(true, std::memory_order_release); }
  [[nodiscard]] bool gone(int rank) const noexcept {
    return gone_[static_cast<std::size_t>(rank)].load(std::memory_order_acquire);
  }

 private:
  channel& between(int src, int dst) noexcept {
    return channels_[static_cast<std::size_t>(src) * static_cast<std::size_t>(world_) + static_cast<std::size_t>(dst)];
  }

  void post(channel& ch, op_state* op, bool is_send, int self) {
    std::lock_guard lock(ch.mutex);
    op_state* match = (is_send ? ch.recvs : ch.sends).take(op->tag);
    if (!match) {
      (is_send ? ch.sends : ch.recvs).push(op);
      return;
    }
    op_state* send = is_send ? op : match;
    op_state* recv = is_send ? match : op;
    if (!recv->takes(send->bytes)) {
      const int sender = is_send ? self : op->peer;
      const int receiver = is_send ? op->peer : self;
      const std::string why = rank_text(sender) + " sent " + std::to_string(send->bytes) +
                              " bytes (tag " + std::to_string(op->tag) + ") but rank " + std::to_string(receiver) +
                              " posted a receive of " + std::to_string(recv->bytes) + " bytes";
      send->failure = why;
      recv->failure = why;
      send->status.store(op_failed, std::memory_order_release);
      recv->status.store(op_failed, std::memory_order_release);
      return;
    }
    if (send->bytes) std::memcpy(recv->dst, send->src, send->bytes);
    send->status.store(op_done, std::memory_order_release);
    recv->status.store(op_done, std::memory_order_release);
  }

  int world_;
  std::vector<std::string> node_ids_;
  std::unique_ptr<channel[]> channels_;
  std::unique_ptr<std::atomic<bool>[]> gone_;
  local_activity_board board_;
};

}  // namespace tutti::transport::inproc_detail
