//! @file multi_node.hpp  transport::multi_node — shared memory inside each host, UCX between hosts, set up from the launcher.
//!
//! node_aware<shm, ucx> plus the bootstrap that makes one from the environment (from_env()):
//!  1. the job's store (bootstrap/job_store.hpp: TUTTI_STORE_ADDR or MASTER_ADDR/PORT, PMIx, or a
//!     job of one), one per process, this transport taking its own key scope in it;
//!  2. every rank's node id (TUTTI_NODE_ID, else hostname and boot id) and rank 0's job id through
//!     the store: the node map, and one shm job per node named <job>-<scope>-n<node>;
//!  3. the network every host can reach the others on (bootstrap/network_agreement.hpp: shared
//!     subnets, probed; TUTTI_NET_IFACE narrows it), handed to UCX as UCX_NET_DEVICES unless the user set that;
//!  4. UCX endpoints to every rank (worker addresses through the store).
//! The store is kept until the transports that need it for their shutdown are gone: it is a base
//! class declared before node_aware, so it is built before and destroyed after it.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/interface_filter.hpp"
#include "tutti/bootstrap/interfaces.hpp"
#include "tutti/bootstrap/network_agreement.hpp"
#include "tutti/bootstrap/job_store.hpp"
#include "tutti/bootstrap/node.hpp"
#include "tutti/bootstrap/rank_info.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/log.hpp"
#include "tutti/transport/activity_board.hpp"
#include "tutti/transport/first_loss.hpp"
#include "tutti/transport/node_aware.hpp"
#include "tutti/transport/shm.hpp"
#include "tutti/transport/ucx.hpp"

namespace tutti::transport {

namespace multi_node_detail {

//! What the transports borrow: the store and this transport's key scope in it.
struct job_scope {
  std::shared_ptr<bootstrap::tcp_store> store;
  std::string scope;
};

//! The parts node_aware is made of, built before it (they need the store, not the composite).
struct parts {
  node_map map;
  std::unique_ptr<shm> intra;
  std::unique_ptr<ucx> inter;
  std::string network;  //!< the network the hosts agreed on, in words (network_choice::describe)
};

inline parts build(const rank_info& info, bootstrap::tcp_store& store, const std::string& scope) {
  const deadline until = deadline::after(config::timeout());
  const int rank = info.rank, world = info.world_size;

  // 2. The node map and the per-node shm job.
  const auto node_ids = bootstrap::store_all_gather(store, scope + "/node", rank, world, info.node_id, until);
  parts p;
  p.map = node_map::from_ids(node_ids);
  if (rank == 0) store.set(scope + "/job", bootstrap::store_bytes(info.job_id.begin(), info.job_id.end()));
  const auto job_bytes = store.get(scope + "/job", until);
  const std::string job(job_bytes.begin(), job_bytes.end());
  const int node = p.map.node_of[static_cast<std::size_t>(rank)];
  rank_info on_node;
  on_node.rank = p.map.local_of[static_cast<std::size_t>(rank)];
  on_node.world_size = static_cast<int>(p.map.members[static_cast<std::size_t>(node)].size());
  on_node.local_rank = on_node.rank;
  on_node.local_size = on_node.world_size;
  on_node.job_id = job + "-" + scope.substr(scope.rfind('/') + 1) + "-n" + std::to_string(node);
  on_node.launcher = info.launcher;
  on_node.node_id = info.node_id;
  p.intra = std::make_unique<shm>(on_node);

  // 3. The network, then 4. UCX over it.
  const auto filter = bootstrap::interface_filter::from_env();
  const auto choice =
      bootstrap::agree_on_network(store, rank, world, info.node_id, filter, until, scope + "/net");
  bootstrap::apply_to_ucx(choice, info.node_id, rank);
  p.network = choice.describe();
  p.inter = std::make_unique<ucx>(rank, world, store, scope + "/ucx");
  return p;
}

}  // namespace multi_node_detail

class multi_node : private multi_node_detail::job_scope, public node_aware<shm, ucx> {
 public:
  static constexpr const char* name = "multi_node";

  //! Joins the job the launcher describes (see the top of this file).
  [[nodiscard]] static std::unique_ptr<multi_node> from_env() {
    const auto info = rank_info_from_env();
    return std::make_unique<multi_node>(info, bootstrap::job_store(info), bootstrap::next_scope());
  }

  //! Over an existing store; `scope` must be the same on every rank and unused in that store.
  multi_node(const rank_info& info, std::shared_ptr<bootstrap::tcp_store> store, std::string key_scope)
      : multi_node(info, store, key_scope, multi_node_detail::build(info, *store, key_scope)) {}

  //! The network between the hosts, in words: its subnet and each host's interface and address
  //! there (what TUTTI_NET_IFACE / Determined's dtrain_network_interface chose among).
  [[nodiscard]] const std::string& network() const noexcept { return network_; }

  //! The store this transport's ranks share (for user keys, e.g. a checkpoint path).
  [[nodiscard]] bootstrap::tcp_store& store() noexcept { return *job_scope::store; }

  //! Where the communicator's stall inspector posts and reads: this transport's scope in the store.
  [[nodiscard]] transport::activity_board& activity_board() noexcept { return board_; }

  //! The job's first lost rank, for the communicator's error (communicator.hpp): see first_loss.hpp.
  //! Recorded where the network transport looks for it while it waits (ucx/liveness.hpp, Loss),
  //! so that a loss seen in a node's shared memory also ends the network waits elsewhere.
  [[nodiscard]] loss_account first_loss(int peer, const std::string& what) {
    return network_transport().first_loss(peer, what);
  }

 private:
  multi_node(const rank_info& info, std::shared_ptr<bootstrap::tcp_store> store, std::string key_scope,
             multi_node_detail::parts p)
      : multi_node_detail::job_scope{std::move(store), std::move(key_scope)},
        node_aware<shm, ucx>(std::move(p.map), info.rank, std::move(p.intra), std::move(p.inter)),
        network_(std::move(p.network)),
        board_(bootstrap::store_ops::of(*job_scope::store), job_scope::scope + "/activity", info.rank, info.world_size) {}

  std::string network_;
  store_activity_board board_;
};

}  // namespace tutti::transport
