//! @file first_loss.hpp  Which rank a communicator names when a collective lost a peer.
#pragma once
#include <concepts>
#include <exception>
#include <string>

#include "tutti/communicator/stall_inspector.hpp"
#include "tutti/core/error.hpp"
#include "tutti/transport/first_loss.hpp"

namespace tutti::detail {

//! Which rank was lost first. A rank that sees a peer die aborts, and the ranks waiting on it
//! then see *it* vanish: without help each would blame its own neighbour. A transport that can
//! record the first loss job-wide (multi_node, through its store) says who it really was, and
//! whether its store was silent (transport/first_loss.hpp: then the loss is reported as a stall).
template <class Transport>
transport::loss_account first_loss(Transport& transport, const peer_lost& e) {
  if constexpr (requires(Transport& t, int p, const std::string& w) {
                  { t.first_loss(p, w) } -> std::same_as<transport::loss_account>;
                })
    return transport.first_loss(e.peer(), e.what());
  else
    return {e.peer(), e.what()};
}

//! What a call that lost a peer fails with, `prefix` (rank and call) before its text: `peer_lost`
//! naming the rank lost first, or — when the store that records it was silent, so nobody can say
//! who that was — a `timeout` in the stall's words. The communicator's collectives, its fusion
//! engine and its point-to-point all tell a loss this way. Call it before this rank aborts: its
//! abort is what the peers see next.
template <class Transport>
std::exception_ptr loss_error(Transport& transport, const peer_lost& e, const std::string& prefix) {
  const auto loss = first_loss(transport, e);
  if (loss.store == transport::store_answer::silent)
    return std::make_exception_ptr(timeout(prefix + stalled_prefix + loss.what));
  return std::make_exception_ptr(peer_lost(loss.peer, prefix + loss.what));
}

}  // namespace tutti::detail
