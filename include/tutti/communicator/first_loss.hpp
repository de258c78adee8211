//! @file first_loss.hpp  Which rank a communicator names when a collective lost a peer.
#pragma once
#include <concepts>
#include <string>
#include <utility>

#include "tutti/core/error.hpp"

namespace tutti::detail {

//! Which rank was lost first. A rank that sees a peer die aborts, and the ranks waiting on it
//! then see *it* vanish: without help each would blame its own neighbour. A transport that can
//! record the first loss job-wide (multi_node, through its store) says who it really was.
template <class Transport>
std::pair<int, std::string> first_loss(Transport& transport, const peer_lost& e) {
  if constexpr (requires(Transport& t, int p, const std::string& w) {
                  { t.first_loss(p, w) } -> std::same_as<std::pair<int, std::string>>;
                })
    return transport.first_loss(e.peer(), e.what());
  else
    return {e.peer(), e.what()};
}

}  // namespace tutti::detail
