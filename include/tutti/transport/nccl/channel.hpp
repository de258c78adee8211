//! @file channel.hpp  transport::nccl's point-to-point operations: send, recv, test, wait.
//!
//! send/recv only queue; the queue is flushed as ncclGroupStart / ncclSend... / ncclRecv... /
//! ncclGroupEnd on the transport's stream when a request is tested or waited, so a send and a
//! receive to the same peer posted back to back run in one group and never deadlock. A run is
//! never cut into several groups (stream.hpp's post_groups). NCCL matches sends and receives per
//! pair of ranks in posting order and carries no tag: ranks must post, per peer, in the same order
//! (tutti's algorithms do), and with the same sizes. Buffers must be device memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/detail/operation.hpp"
#include "tutti/transport/nccl/device.hpp"
#include "tutti/transport/nccl/liveness.hpp"
#include "tutti/transport/nccl/operation.hpp"
#include "tutti/transport/nccl/startup.hpp"
#include "tutti/transport/nccl/stream.hpp"
#include "tutti/transport/op_pool.hpp"
#include "tutti/transport/request_handle.hpp"

namespace tutti::transport::nccl_detail {

class channel {
 public:
  using request = request_handle<op_state>;
  static constexpr const char* name = "nccl";

  channel(communicator& c, p2p_queue& q, stream_order& streams, liveness& live) noexcept
      : c_(c), q_(q), streams_(streams), live_(live) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  //! Queues a send or receive of `bytes` device bytes with `peer`; it is posted when a request is
  //! tested or waited on.
  [[nodiscard]] request enqueue(bool is_send, int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    check_peer(c_.rank, name, is_send, peer, c_.world);
    live_.usable(is_send ? "send" : "recv");
    auto* op = q_.ops.acquire(c_.rank, name);
    op->posting(is_send, peer, tag, bytes);
    op->state = op_queued;
    op->data = data;
    op->group = 0;
    // Nothing to move: done at once on both sides (sizes match), without NCCL.
    if (bytes == 0) op->state = op_done;
    else q_.queued.push_back(op);
    return request(op);
  }

  //! Flushes the queue if the request is still in it (which may wait, up to TUTTI_TIMEOUT, for the
  //! peers to post their side of the group), then says whether its group has completed.
  [[nodiscard]] bool test(request& r) {
    if (!r.op) return true;
    if (r.op->state == op_queued) flush(deadline::after(c_.options.timeout));
    if (r.op->state == op_posted) {
      const std::string_view what = r.op->is_send ? "send" : "recv";
      if (!streams_.reached(r.op->group, what, r.op->peer)) return false;
      r.op->state = op_done;
    }
    finish(r);
    return true;
  }

  void wait(request& r, deadline until) {
    if (!r.op) return;
    if (r.op->state == op_queued) flush(until);
    if (r.op->state == op_posted) {
      try {
        streams_.wait_for_group(r.op->group, r.op->is_send ? "send" : "recv", until, r.op->peer);
      } catch (const timeout&) {
        auto* op = std::exchange(r.op, nullptr);
        const std::string what = describe(*op);
        release(op);
        throw timeout(what + " did not complete before the deadline (TUTTI_TIMEOUT); the NCCL communicator was aborted");
      }
      r.op->state = op_done;
    }
    finish(r);
  }

  //! Posts the queued sends and receives (see the top of this file).
  void flush(deadline until) {
    if (q_.queued.empty()) return;
    device_guard on(c_.device);
    streams_.follow_callers_work("send/recv");
    q_.scratch.clear();
    for (auto* op : q_.queued) q_.scratch.push_back({op->is_send, op->peer, op->data, op->bytes});
    const std::uint64_t first_group = streams_.last_sequence() + 1;
    streams_.post_groups(q_.scratch, "send/recv", until);
    // Which group carries each operation: post_groups numbered them from first_group on.
    const auto& split = streams_.last_split();
    std::size_t i = 0;
    for (const auto& g : split) {
      for (std::size_t k = 0; k < g.count; ++k, ++i) {
        q_.queued[i]->state = op_posted;
        q_.queued[i]->group = first_group + static_cast<std::uint64_t>(&g - split.data());
      }
    }
    q_.queued.clear();
  }

 private:
  void finish(request& r) {
    auto* op = std::exchange(r.op, nullptr);
    const op_state done = *op;
    release(op);
    if (done.state == op_done) return;
    throw transport_error(describe(done) + " was withdrawn: the transport was aborted");
  }

  void release(op_state* op) noexcept {
    op->state = op_free;
    q_.ops.release(op);
  }

  [[nodiscard]] std::string describe(const op_state& op) const {
    return on_rank(c_.rank) + "transport::nccl " + detail::op_text_with_tag(op);
  }

  communicator& c_;
  p2p_queue& q_;
  stream_order& streams_;
  liveness& live_;
};

}  // namespace tutti::transport::nccl_detail
