//! @file operation.hpp  transport::nccl's record of a send or receive, and the queue of those not
//! yet posted to NCCL.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tutti/transport/detail/operation.hpp"
#include "tutti/transport/nccl/group.hpp"
#include "tutti/transport/op_pool.hpp"

namespace tutti::transport::nccl_detail {

//! NCCL's operations are queued before they are posted (channel.hpp), so a record has two pending
//! states where the other transports have one (detail::op_status).
enum op_status : int { op_free, op_queued, op_posted, op_done, op_failed };

//! One send or receive: queued until a test or wait flushes it, then carried by group `group`.
struct op_state : detail::operation {
  int state = op_free;
  void* data = nullptr;
  std::uint64_t group = 0;  //!< sequence number of the group call that carries it, once posted
};

//! The records of this rank and those queued, in posting order; what abort() withdraws.
struct p2p_queue {
  std::vector<op_state*> queued;  //!< queued, in posting order
  std::vector<p2p_op> scratch;    //!< the queued operations as group.hpp takes them (reused)
  op_pool<op_state> ops;

  p2p_queue() {
    queued.reserve(max_outstanding_ops);
    scratch.reserve(max_outstanding_ops);
  }

  //! Every queued or posted record fails (abort()); none of their buffers is touched again.
  void withdraw_all() noexcept {
    queued.clear();
    ops.for_each([](op_state& op) {
      if (op.state == op_queued || op.state == op_posted) op.state = op_failed;
    });
  }
};

}  // namespace tutti::transport::nccl_detail
