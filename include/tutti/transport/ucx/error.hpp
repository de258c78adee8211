//! @file error.hpp  How transport::ucx words a failure: UCX's statuses, and what a finished
//! operation that failed throws (size mismatch, withdrawal, a lost or departed peer, the rest).
#pragma once
#include <ucp/api/ucp.h>

#include <string>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/transport/detail/operation.hpp"

namespace tutti::transport::ucx_detail {

using tutti::rank_text;

//! "Connection reset by remote peer (UCS_ERR_CONNECTION_RESET)": UCX's words and the code to grep for.
inline std::string status_text(ucs_status_t s) {
  return std::string(ucs_status_string(s)) + " (UCS status " + std::to_string(static_cast<int>(s)) + ")";
}

[[noreturn]] inline void fail(int rank, const std::string& call, ucs_status_t s) {
  throw transport_error(on_rank(rank) + "transport::ucx: " + call + " failed: " + status_text(s));
}

//! Statuses with which UCX fails an operation or an endpoint because the remote process is gone,
//! unreachable or stopped answering: the caller sees these as tutti::peer_lost.
inline bool is_peer_failure(ucs_status_t s) noexcept {
  switch (s) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_TIMED_OUT:
      return true;
    default:
      return false;
  }
}

//! "rank 2: transport::ucx send of 8 bytes to rank 3 with tag 7": an operation, in messages.
[[nodiscard]] inline std::string describe(int rank, const detail::operation& op) {
  return on_rank(rank) + "transport::ucx " + detail::op_text_with_tag(op);
}

//! A receive whose matched message had another size than the one posted (`arrived`, known when
//! `known`; else only "more than" the posted size).
[[nodiscard]] inline transport_error size_mismatch(int rank, const detail::operation& op, bool known,
                                                   std::size_t arrived) {
  return transport_error(on_rank(rank) + "transport::ucx receive from rank " + std::to_string(op.peer) +
                         " with tag " + std::to_string(op.tag) + " posted " + std::to_string(op.bytes) +
                         " bytes but rank " + std::to_string(op.peer) + " sent " +
                         (known ? std::to_string(arrived) : std::string("more than ") + std::to_string(op.bytes)) +
                         " bytes (sizes must match; receives must be posted in the order sent)");
}

//! Why an operation with a peer failed, as the exception its wait throws: `status` is the
//! operation's own, `lost` the peer's (UCS_OK while it is fine), `left` whether it announced its
//! departure, `aborted` whether this rank withdrew it.
[[noreturn]] inline void raise_failure(int rank, const detail::operation& op, ucs_status_t status, ucs_status_t lost,
                                       bool left, bool aborted) {
  if (status == UCS_ERR_CANCELED && aborted)
    throw transport_error(describe(rank, op) + " was withdrawn: the transport was aborted");
  if (left)
    throw peer_lost(op.peer, describe(rank, op) + ": rank " + std::to_string(op.peer) +
                                 " left the job (peer lost): its transport was closed (its process returned, "
                                 "exited or threw) while this rank still waited for it");
  if (lost != UCS_OK || is_peer_failure(status)) {
    const ucs_status_t why = lost != UCS_OK ? lost : status;
    throw peer_lost(op.peer, describe(rank, op) + ": rank " + std::to_string(op.peer) + " is lost (peer lost: " +
                                 status_text(why) + ")");
  }
  throw transport_error(describe(rank, op) + " failed: " + status_text(status));
}

}  // namespace tutti::transport::ucx_detail
