//! @file error.hpp  One check for every NCCL and CUDA call: a failure becomes a tutti::error naming
//! the rank, what was being done and the call, e.g.
//! "rank 3: transport::nccl allreduce: ncclAllReduce: unhandled cuda error (run with NCCL_DEBUG=INFO for details)".
//!
//! ncclRemoteError (a peer exited or the network failed) becomes tutti::peer_lost; every other
//! failure tutti::transport_error, so that the communicator aborts (an NCCL "invalid argument"
//! seen by one rank mid-collective is not the all-ranks-agree refusal tutti::invalid_argument
//! means). ncclInProgress is not a failure: the communicator is non-blocking (startup.hpp), and
//! the caller settles it by polling ncclCommGetAsyncError.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <string_view>

#include "tutti/core/error.hpp"

namespace tutti::transport::nccl_detail {

enum class failure { none, in_progress, peer_lost, error };

//! What a result means for the caller.
[[nodiscard]] constexpr failure classify(ncclResult_t r) noexcept {
  switch (r) {
    case ncclSuccess: return failure::none;
    case ncclInProgress: return failure::in_progress;
    case ncclRemoteError: return failure::peer_lost;
    default: return failure::error;
  }
}

//! "ncclAllReduce" from "ncclAllReduce(in, out, n, ...)": the check macro stringises the whole call.
[[nodiscard]] constexpr std::string_view function_name(std::string_view call) noexcept {
  const auto paren = call.find('(');
  return paren == std::string_view::npos ? call : call.substr(0, paren);
}

//! "rank 3: transport::nccl allreduce: ncclAllReduce: <why>".
[[nodiscard]] inline std::string message(int rank, std::string_view what, std::string_view call, std::string_view why) {
  std::string m = "rank " + std::to_string(rank) + ": transport::nccl ";
  m += what;
  m += ": ";
  m += function_name(call);
  m += ": ";
  m += why;
  return m;
}

//! The error an NCCL result that is a failure becomes. `peer` names the lost rank where the caller
//! knows it (a send or receive); NCCL itself does not say which peer failed a collective.
[[noreturn]] inline void raise(ncclResult_t r, int rank, std::string_view what, std::string_view call, int peer = -1) {
  std::string why = ncclGetErrorString(r);
  // The thread's last NCCL error, when NCCL recorded one, says more than the code's text.
  if (const char* last = ncclGetLastError(nullptr); last && *last) {
    why += ": ";
    why += last;
  }
  if (classify(r) == failure::peer_lost) {
    why += peer >= 0 ? " (rank " + std::to_string(peer) + " is lost)" : std::string(" (a peer is lost; NCCL does not say which)");
    throw peer_lost(peer, message(rank, what, call, why));
  }
  throw transport_error(message(rank, what, call, why));
}

//! Passes ncclSuccess and ncclInProgress through; throws for anything else.
inline ncclResult_t check(ncclResult_t r, int rank, std::string_view what, std::string_view call) {
  const auto f = classify(r);
  if (f == failure::none || f == failure::in_progress) return r;
  raise(r, rank, what, call);
}

inline cudaError_t check(cudaError_t e, int rank, std::string_view what, std::string_view call) {
  if (e == cudaSuccess) return e;
  throw transport_error(message(rank, what, call, std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"));
}

}  // namespace tutti::transport::nccl_detail

//! Checks an NCCL or CUDA call: TUTTI_NCCL_CHECK(rank, "allreduce", ncclAllReduce(...)). Evaluates
//! to the call's result (ncclInProgress included) and throws a tutti::error naming rank, `what`
//! and the function otherwise. Not for destructors or abort(): those ignore what they cannot act on.
#define TUTTI_NCCL_CHECK(rank, what, call) ::tutti::transport::nccl_detail::check((call), (rank), (what), #call)
