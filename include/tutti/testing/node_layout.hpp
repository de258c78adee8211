//! @file node_layout.hpp  How test worlds place ranks on (simulated) nodes.
//!
//! A layout gives the world sizes a suite runs at and each rank's node id; worlds pass the id to
//! the transport (rank_info::node_id for shm, inproc::run's node_ids), which is where hierarchical
//! algorithms read it. One node is the default.
#pragma once
#include <string>
#include <vector>

namespace tutti::testing {

//! Every rank on one node, world sizes 1-9.
struct one_node {
  static constexpr const char* name = "one node";
  static std::vector<int> world_sizes() { return {1, 2, 3, 4, 5, 6, 7, 8, 9}; }
  static std::string node_of(int, int) { return "node0"; }
};

//! K ranks per node, consecutive ranks together (ranks 0..K-1 on node 0): 1, 2, ... nodes up to 9 ranks.
template <int K>
struct blocked_nodes {
  static constexpr const char* name = "blocked nodes";
  static std::vector<int> world_sizes() {
    std::vector<int> w;
    for (int n = K; n <= 9; n += K) w.push_back(n);
    return w;
  }
  static std::string node_of(int rank, int) { return "node" + std::to_string(rank / K); }
};

//! K ranks per node, nodes dealt round-robin (rank r on node r % nodes): groups are not contiguous.
template <int K>
struct interleaved_nodes {
  static constexpr const char* name = "interleaved nodes";
  static std::vector<int> world_sizes() { return blocked_nodes<K>::world_sizes(); }
  static std::string node_of(int rank, int world) { return "node" + std::to_string(rank % (world / K)); }
};

inline std::vector<std::string> node_ids(int world, std::string (*node_of)(int, int)) {
  std::vector<std::string> ids;
  for (int r = 0; r < world; ++r) ids.push_back(node_of(r, world));
  return ids;
}

}  // namespace tutti::testing
