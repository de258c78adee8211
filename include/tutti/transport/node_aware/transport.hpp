//! @file transport.hpp  transport::node_aware<Intra, Inter> — each peer by the fastest path to it:
//! the node's own transport (shared memory) for ranks on this node, the network for the rest.
//!
//! NCCL splits peers the same way (P2P/SHM inside a node, NET across). The node map comes from the
//! bootstrap (every rank's node id, exchanged once), so routing is a table look-up per message and
//! algorithms get the same map through their context (context::nodes()) instead of rebuilding it.
//!
//! Intra is built over the node's ranks only, numbered by local index (rank r is local_of[r] there);
//! Inter spans the whole job, numbered by global rank, and carries only messages to other nodes.
//! The composite is two-sided: a node's one-sided machinery (direct's mapped memory) is reached
//! through node_transport(), which hierarchical<direct, ...> uses for its intra-node level.
//!
//! Progress: a wait on one side keeps driving the other, so a rank blocked on a network receive
//! still pushes the shared-memory sends its node peers wait for (otherwise: a cycle of waits).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/node.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/detail/operation.hpp"

namespace tutti::transport {

template <class Intra, class Inter>
class node_aware {
  static_assert(transport_policy<Intra>, "tutti::transport::node_aware<Intra, Inter>: Intra is not a tutti Transport");
  static_assert(transport_policy<Inter>, "tutti::transport::node_aware<Intra, Inter>: Inter is not a tutti Transport");

 public:
  using tutti_role = role::transport;
  using node_transport_type = Intra;
  using network_transport_type = Inter;
  static constexpr transport_traits traits{.intra_node = false, .device_memory = false, .one_sided = false};
  static constexpr const char* name = "node_aware";

  //! A posted operation on one side; `on_node` says which, so the composite never looks inside the
  //! parts' request types (default-constructed: an empty network request, already complete). The
  //! operation record says what it is, for a deadline's message: which peer was waited on.
  struct request : detail::operation {
    typename Intra::request near;
    typename Inter::request far;
    bool on_node = false;
  };

  //! `map`: every rank's node (the same on every rank); `intra`: this node's transport, over
  //! map.members[my node] numbered by local index; `inter`: the job-wide transport.
  node_aware(node_map map, int rank, std::unique_ptr<Intra> intra, std::unique_ptr<Inter> inter)
      : map_(std::move(map)), rank_(rank), intra_(std::move(intra)), inter_(std::move(inter)) {
    const std::string me = on_rank(rank) + "transport::node_aware: ";
    if (!intra_ || !inter_) throw invalid_argument(me + "null intra-node or network transport");
    if (rank < 0 || rank >= map_.world_size())
      throw invalid_argument(me + "rank outside the node map's " + std::to_string(map_.world_size()) + " ranks");
    const auto& node = map_.members[static_cast<std::size_t>(map_.node_of[static_cast<std::size_t>(rank)])];
    if (inter_->world_size() != map_.world_size() || inter_->rank() != rank)
      throw invalid_argument(me + "the network transport is rank " + std::to_string(inter_->rank()) + " of " +
                             std::to_string(inter_->world_size()) + "; expected rank " + std::to_string(rank) + " of " +
                             std::to_string(map_.world_size()));
    if (intra_->world_size() != static_cast<int>(node.size()) || intra_->rank() != local_rank())
      throw invalid_argument(me + "the intra-node transport is rank " + std::to_string(intra_->rank()) + " of " +
                             std::to_string(intra_->world_size()) + "; this node has " + std::to_string(node.size()) +
                             " ranks and this rank is local rank " + std::to_string(local_rank()));
    if constexpr (names_job_ranks) intra_->name_ranks(node);  // its messages then say job ranks only
  }

  node_aware(const node_aware&) = delete;
  node_aware& operator=(const node_aware&) = delete;

  //! The node's transport goes first. A rank that leaves while its node peers still wait on it is
  //! then seen at once (shared memory raises its "gone" flag): they fail and abort, which releases
  //! this rank from the network transport's shutdown barrier. The other order held the node peers
  //! for the whole TUTTI_TIMEOUT, each side waiting on the other (issue 18).
  ~node_aware() { intra_.reset(); }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return map_.world_size(); }
  [[nodiscard]] int local_rank() const noexcept { return map_.local_of[static_cast<std::size_t>(rank_)]; }
  [[nodiscard]] const node_map& nodes() const noexcept { return map_; }
  [[nodiscard]] std::string node_id() const {
    if constexpr (requires { intra_->node_id(); }) return std::string(intra_->node_id());
    else return "node" + std::to_string(map_.node_of[static_cast<std::size_t>(rank_)]);
  }
  [[nodiscard]] Intra& node_transport() noexcept { return *intra_; }
  [[nodiscard]] Inter& network_transport() noexcept { return *inter_; }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    request r{{true, peer, tag, bytes}, {}, {}, near(peer)};
    if (r.on_node) r.near = intra_->send(local(peer), tag, data, bytes);
    else r.far = inter_->send(peer, tag, data, bytes);
    return r;
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    request r{{false, peer, tag, bytes}, {}, {}, near(peer)};
    if (r.on_node) r.near = intra_->recv(local(peer), tag, data, bytes);
    else r.far = inter_->recv(peer, tag, data, bytes);
    return r;
  }

  //! recv taking a shorter message too, where both sides can (concepts.hpp).
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived)
    requires sized_receive_transport<Intra> && sized_receive_transport<Inter>
  {
    request r{{false, peer, tag, capacity}, {}, {}, near(peer)};
    if (r.on_node) r.near = intra_->recv_up_to(local(peer), tag, data, capacity, arrived);
    else r.far = inter_->recv_up_to(peer, tag, data, capacity, arrived);
    return r;
  }

  [[nodiscard]] bool test(request& r) {
    if (r.on_node) {
      if (near_test(r.near)) return true;
      drive(*inter_);
    } else {
      if (inter_->test(r.far)) return true;
      drive(*intra_);
    }
    return false;
  }

  //! Polls both sides until `r` completes; each side reports its own peer loss, this the deadline.
  void wait(request& r, deadline until) {
    backoff b(spin_rounds_);
    while (!test(r)) {
      if (b.check_clock() && until.passed())
        throw timeout(on_rank(rank_, "transport::node_aware") + (r.on_node ? "shared-memory " : "network ") +
                      detail::op_text_with_tag(r) + " did not complete before the deadline (TUTTI_TIMEOUT): waited on " +
                      rank_text(r.peer));
      b.pause();
    }
  }

  void abort() noexcept {
    intra_->abort();
    inter_->abort();
  }

 private:
  [[nodiscard]] bool near(int peer) const {
    if (peer < 0 || peer >= world_size())
      throw invalid_argument(on_rank(rank_) + "transport::node_aware peer " + std::to_string(peer) +
                             " outside [0, " + std::to_string(world_size()) + ")");
    return map_.same_node(peer, rank_);
  }
  [[nodiscard]] int local(int peer) const noexcept { return map_.local_of[static_cast<std::size_t>(peer)]; }

  //! Whether Intra can write job ranks in its messages (transport::shm can: name_ranks).
  static constexpr bool names_job_ranks = requires(Intra& t, std::vector<int> names) { t.name_ranks(names); };

  //! Intra numbers the node's ranks by local index: a loss it reports names the job's rank. Its
  //! text already does when it names job ranks; another Intra's text is kept, its numbers marked local.
  bool near_test(typename Intra::request& r) {
    try {
      return intra_->test(r);
    } catch (const peer_lost& e) {
      const auto& node = map_.members[static_cast<std::size_t>(map_.node_of[static_cast<std::size_t>(rank_)])];
      const int lost = e.peer() >= 0 && e.peer() < static_cast<int>(node.size()) ? node[static_cast<std::size_t>(e.peer())]
                                                                                 : e.peer();
      if constexpr (names_job_ranks) throw peer_lost(lost, e.what());
      throw peer_lost(lost, on_rank(rank_) + rank_text(lost) +
                                " on this node is lost; the node transport, which numbers this node's ranks by local "
                                "index, said: " + e.what());
    }
  }

  //! Moves the other side's queued operations along without waiting on any of them.
  template <class T>
  static void drive(T& t) {
    if constexpr (requires { t.progress(); }) t.progress();
  }

  node_map map_;
  int rank_;
  //! Polls of both sides a wait makes before yielding the core: none when the job's ranks
  //! outnumber the cores (each yield hands it to a peer that may be the one waited on); else as
  //! many as the transports' own waits spin, since a yield per poll cost a rank alone on its core
  //! a system call per round for nothing.
  unsigned spin_rounds_ = outnumbered_cores(map_.world_size()) ? 0 : backoff::default_spin_rounds;
  std::unique_ptr<Intra> intra_;
  std::unique_ptr<Inter> inter_;
};

}  // namespace tutti::transport
