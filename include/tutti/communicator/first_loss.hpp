//! @file first_loss.hpp  Which rank a communicator names when a collective lost a peer.
#pragma once
#include <concepts>
#include <string>

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

}  // namespace tutti::detail
