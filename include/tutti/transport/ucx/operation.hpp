//! @file operation.hpp  transport::ucx's record of a posted send or receive, and UCX's completion
//! callbacks that write into it.
#pragma once
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>

#include "tutti/transport/detail/operation.hpp"
#include "tutti/transport/op_pool.hpp"

namespace tutti::transport::ucx_detail {

using detail::op_free, detail::op_pending, detail::op_done, detail::op_failed;

//! One posted send or receive. Records live in a fixed pool; UCX's completion callbacks write into
//! them, so a record whose caller gave up (timeout) stays out of the pool until UCX is done with it.
struct op_state : detail::operation {
  int state = op_free;
  bool abandoned = false;        //!< the caller stopped waiting: the completion callback frees it
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

}  // namespace tutti::transport::ucx_detail
