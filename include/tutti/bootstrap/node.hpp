//! @file node.hpp  Which ranks share a node, and where each rank sits in the node grid.
//!
//! A node is identified by hostname plus the kernel's boot id (two containers with the same
//! hostname on different machines differ; a rebooted machine is a new node). TUTTI_NODE_ID
//! overrides it, so several "nodes" can be simulated on one host. Ranks exchange a 64-bit hash of
//! the id; node_grid turns every rank's hash into the intra-node and inter-node groups that
//! hierarchical algorithms use.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"

namespace tutti {

//! TUTTI_NODE_ID if set (and non-empty), else "<hostname>/<boot id>".
[[nodiscard]] inline std::string node_id_from_env() {
  if (auto v = config::raw("TUTTI_NODE_ID"); v && !v->empty()) return std::string(*v);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '?';
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(host) + "/" + boot;
}

//! FNV-1a: ranks compare node ids as 64-bit hashes (a fixed-size message).
[[nodiscard]] inline std::uint64_t node_hash(std::string_view id) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

//! Which node every rank is on, uneven nodes allowed: what a node-aware transport routes by.
//! Nodes are numbered by their lowest rank and ranks within a node by rank, so every rank that
//! sees the same hashes computes the same map.
struct node_map {
  std::vector<int> node_of;                //!< node_of[r]: the node of global rank r
  std::vector<int> local_of;               //!< local_of[r]: r's index among its node's ranks
  std::vector<std::vector<int>> members;   //!< members[k]: global ranks of node k, by local index
  std::vector<std::string> names;          //!< names[k]: node k's host name (from_ids); empty from hashes

  //! From every rank's node id (node_id_from_env()): the map, with each node named by the id's
  //! host part ("h1/3f2c..." -> "h1"; a TUTTI_NODE_ID without '/' is its own name).
  [[nodiscard]] static node_map from_ids(std::span<const std::string> ids) {
    std::vector<std::uint64_t> hashes;
    for (const auto& id : ids) hashes.push_back(node_hash(id));
    node_map m = from_hashes(hashes);
    for (const auto& ranks : m.members) {
      const std::string& id = ids[static_cast<std::size_t>(ranks.front())];
      m.names.push_back(id.substr(0, id.find('/')));
    }
    return m;
  }

  [[nodiscard]] static node_map from_hashes(std::span<const std::uint64_t> hash) {
    node_map m;
    std::vector<std::uint64_t> order;  // distinct hashes by first appearance
    for (int r = 0; r < static_cast<int>(hash.size()); ++r) {
      const auto h = hash[static_cast<std::size_t>(r)];
      auto it = std::find(order.begin(), order.end(), h);
      if (it == order.end()) {
        order.push_back(h);
        m.members.emplace_back();
        it = order.end() - 1;
      }
      auto& node = m.members[static_cast<std::size_t>(it - order.begin())];
      m.node_of.push_back(static_cast<int>(it - order.begin()));
      m.local_of.push_back(static_cast<int>(node.size()));
      node.push_back(r);
    }
    return m;
  }
  [[nodiscard]] int nodes() const noexcept { return static_cast<int>(members.size()); }
  [[nodiscard]] int world_size() const noexcept { return static_cast<int>(node_of.size()); }
  [[nodiscard]] bool same_node(int a, int b) const noexcept {
    return node_of[static_cast<std::size_t>(a)] == node_of[static_cast<std::size_t>(b)];
  }
  //! Every node holds the same number of ranks (what hierarchical algorithms need).
  [[nodiscard]] bool even() const noexcept {
    for (const auto& m : members)
      if (m.size() != members[0].size()) return false;
    return true;
  }
  //! "h0: ranks 0 1; h1: rank 2" (nodes without names: "node 0: ...").
  [[nodiscard]] std::string describe() const {
    std::string text;
    for (std::size_t k = 0; k < members.size(); ++k) {
      if (k) text += "; ";
      text += k < names.size() ? names[k] : "node " + std::to_string(k);
      text += members[k].size() == 1 ? ": rank" : ": ranks";
      for (int r : members[k]) {  // appended piece by piece: GCC 12 warns (-Wrestrict) on " " + to_string
        text += ' ';
        text += std::to_string(r);
      }
    }
    return text;
  }
};

//! The job's ranks arranged as nodes x local ranks. Nodes are numbered by their lowest rank and
//! ranks within a node by rank, so every rank computes the same grid from the same hashes.
struct node_grid {
  int nodes = 1;
  int local_size = 1;
  int node = 0;         //!< this rank's node
  int local_rank = 0;   //!< this rank's index within its node
  std::vector<int> intra;  //!< global ranks of this rank's node, by local rank
  std::vector<int> inter;  //!< global ranks with this rank's local index, by node
  std::vector<int> rank_at;  //!< rank_at[node * local_size + local]: the global rank there

  static node_grid from_hashes(std::span<const std::uint64_t> hash, int me) {
    return from_map(node_map::from_hashes(hash), me);
  }

  //! Every node must hold the same number of ranks: the inter-node groups pair local index i of
  //! every node. Throws invalid_argument (the same text on every rank) naming the nodes otherwise.
  static node_grid from_map(const node_map& map, int me) {
    const auto& members = map.members;
    node_grid g;
    g.nodes = map.nodes();
    g.local_size = static_cast<int>(members[0].size());
    if (!map.even()) {
      std::string text;
      for (std::size_t k = 0; k < members.size(); ++k) {
        text += k ? "; node " : "node ";
        text += std::to_string(k);
        text += " has ";
        text += std::to_string(members[k].size());
        text += " (ranks";
        for (int r : members[k]) {  // appended piece by piece: GCC 12 warns (-Wrestrict) on " " + to_string
          text += ' ';
          text += std::to_string(r);
        }
        text += ")";
      }
      throw invalid_argument("hierarchical algorithms need the same number of ranks on every node; " + text +
                             ". Use a flat algorithm, or set TUTTI_NODE_ID to group ranks evenly");
    }
    for (int k = 0; k < g.nodes; ++k) {
      const auto& m = members[static_cast<std::size_t>(k)];
      for (int l = 0; l < g.local_size; ++l) g.rank_at.push_back(m[static_cast<std::size_t>(l)]);
    }
    g.node = map.node_of[static_cast<std::size_t>(me)];
    g.local_rank = map.local_of[static_cast<std::size_t>(me)];
    g.intra = members[static_cast<std::size_t>(g.node)];
    for (int k = 0; k < g.nodes; ++k) g.inter.push_back(g.at(k, g.local_rank));
    return g;
  }

  //! Node k holds ranks k * local_size ... (k + 1) * local_size - 1 (what launchers do by default):
  //! then a node's ranks' blocks of an allgather are one contiguous range of its output.
  [[nodiscard]] bool consecutive() const noexcept {
    for (std::size_t i = 0; i < rank_at.size(); ++i)
      if (rank_at[i] != static_cast<int>(i)) return false;
    return true;
  }

  [[nodiscard]] int at(int node_index, int local) const noexcept {
    return rank_at[static_cast<std::size_t>(node_index * local_size + local)];
  }
};

}  // namespace tutti
