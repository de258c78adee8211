//! @file node_aware_world.hpp  Test setup: forked processes over transport::node_aware<shm, shm>,
//! on nodes simulated by a Layout (node_layout.hpp).
//!
//! The composite's routing, node map and hierarchical's use of its node transport are what is under
//! test; the network half is a job-wide shm here so the suite runs without a network. The same
//! composite over UCX between network namespaces is tested in tests/netns.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <tutti/communicator.hpp>
#include <tutti/transport/node_aware.hpp>
#include <tutti/transport/shm.hpp>

#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/node_layout.hpp>

namespace tutti::testing {

using shm_node_aware = transport::node_aware<transport::shm, transport::shm>;

//! What every rank of a node_aware job builds: the node map from every rank's node id, a shm among
//! the node's ranks (its own job id per node), and a job-wide shm.
inline std::unique_ptr<shm_node_aware> make_shm_node_aware(const rank_info& info, const std::vector<std::string>& node_ids) {
  node_map map = node_map::from_ids(node_ids);
  const auto me = static_cast<std::size_t>(info.rank);
  rank_info near = info;
  near.rank = map.local_of[me];
  near.world_size = static_cast<int>(map.members[static_cast<std::size_t>(map.node_of[me])].size());
  near.local_rank = near.rank;
  near.local_size = near.world_size;
  near.job_id = info.job_id + "-n" + std::to_string(map.node_of[me]);
  near.node_id = node_ids[me];
  rank_info far = info;
  far.job_id = info.job_id + "-x";
  far.node_id = node_ids[me];
  auto intra = std::make_unique<transport::shm>(near);
  auto inter = std::make_unique<transport::shm>(far);
  return std::make_unique<shm_node_aware>(std::move(map), info.rank, std::move(intra), std::move(inter));
}

//! ChunkBytes: the communicators' TUTTI_CHUNK_BYTES when not 0 (small values cut the suites' counts
//! into many pipeline chunks: hierarchical's pipelined allreduce).
template <class Algorithm, class Layout = one_node, class Codec = codec::none, std::size_t ChunkBytes = 0>
struct node_aware_world {
  using communicator_type = communicator<shm_node_aware, Algorithm, Codec>;
  static constexpr const char* name = "node_aware<shm, shm> (forked processes)";
  static std::vector<int> world_sizes() { return Layout::world_sizes(); }

  template <class F>
  static void run(int world, F&& fn) {
    const auto ids = node_ids(world, &Layout::node_of);
    auto results = fork_ranks(world, [&](const rank_info& info) {
      communicator_options options = communicator_options::from_env();
      if (ChunkBytes) options.chunk_bytes = ChunkBytes;
      communicator_type comm(make_shm_node_aware(info, ids), options);
      fn(comm);
    });
    throw_if_any_failed(results, "node_aware_world");
  }
};

//! Uneven nodes: 2 ranks on node 0, 1 on node 1, ... (rank r on node r * 2 / 3): world sizes 2-9.
struct uneven_nodes {
  static constexpr const char* name = "uneven nodes";
  static std::vector<int> world_sizes() { return {2, 3, 5, 7, 9}; }
  static std::string node_of(int rank, int) { return "node" + std::to_string(rank * 2 / 3); }
};

}  // namespace tutti::testing
