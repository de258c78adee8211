//! @file node_map.hpp  Which node each rank is on: learnt once, when the communicator is made, and
//! the part of it a sub-context's group spans.
//!
//! Topology at init, as NCCL does it: a collective never pays for learning it, and an algorithm
//! that asks (hierarchical, automatic over a node-aware transport) finds it ready on every rank.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tutti/bootstrap/node.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/tags.hpp"
#include "tutti/transport/exchange.hpp"

namespace tutti::algorithm {

//! The communicator's node map, or why it has none (context::nodes() says so to the algorithm
//! that asks).
struct node_source {
  std::optional<node_map> map;
  std::string missing;  //!< why `map` is empty
};

//! This rank's node id: the transport's when it knows one (shm and inproc: rank_info::node_id,
//! the launcher's or TUTTI_NODE_ID), else the environment's (hostname + boot id, or TUTTI_NODE_ID)
//! — only for transports without a node id of their own, such as ucx.
template <class Transport>
[[nodiscard]] std::string node_id_of(const Transport& t) {
  if constexpr (requires { std::string(t.node_id()); }) return std::string(t.node_id());
  else return node_id_from_env();
}

//! Builds the node map when the communicator is made. A transport that knows it from its own
//! bootstrap (transport::node_aware, multi_node) hands it over; otherwise every rank sends its node
//! id's hash to every other once (core/tags.hpp: node_map). So the communicator's constructor is
//! collective: every rank of the transport makes its communicator, as every rank runs every
//! collective. Nothing is exchanged alone (world 1) nor over a transport that carries device
//! memory only (transport::nccl): it cannot carry the hashes, and its map stays empty.
template <class Transport>
[[nodiscard]] node_source learn_nodes(Transport& t, deadline until) {
  node_source s;
  if constexpr (requires { t.nodes(); }) {
    s.map = t.nodes();
  } else if constexpr (Transport::traits.device_memory) {
    s.missing = "its transport carries device memory only, and does not know which node each rank is on";
  } else {
    std::vector<std::uint64_t> hashes(static_cast<std::size_t>(t.world_size()));
    hashes[static_cast<std::size_t>(t.rank())] = node_hash(node_id_of(t));
    if (t.world_size() > 1) {
      std::vector<typename Transport::request> pending;
      try {
        transport::exchange_with_all(t, tags::node_map, std::span(hashes), until, pending);
      } catch (const peer_lost& e) {
        throw peer_lost(e.peer(), on_rank(t.rank(), "tutti::communicator") + "while learning which node each rank is on: " +
                                      e.what());
      } catch (const timeout& e) {
        throw timeout(on_rank(t.rank(), "tutti::communicator") + "while learning which node each rank is on: " + e.what());
      }
    }
    s.map = node_map::from_hashes(hashes);
  }
  return s;
}

//! The node map of a group whose rank i is rank `members[i]` of `whole`'s ranks: nodes and local
//! indices renumbered among the group's ranks, in the order from_hashes gives.
[[nodiscard]] inline node_source part_of(const node_map& whole, std::span<const int> members) {
  std::vector<std::uint64_t> node(members.size());
  for (std::size_t i = 0; i < members.size(); ++i)
    node[i] = static_cast<std::uint64_t>(whole.node_of[static_cast<std::size_t>(members[i])]);
  return {node_map::from_hashes(node), {}};
}

}  // namespace tutti::algorithm
