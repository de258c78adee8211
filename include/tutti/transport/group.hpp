//! @file group.hpp  transport::group<T> — a subset of a transport's ranks, renumbered 0..k-1.
//!
//! Hierarchical algorithms run one algorithm among the ranks of a node and another among the ranks
//! with the same local index on every node; each sees its group as a whole world. Messages keep
//! the parent's tags: a pair of ranks belongs to at most one of those groups, so two groups never
//! share a channel.
//!
//! A group is two-sided (traits.one_sided = false): the parent's one-sided epochs, signals and
//! staging buffers belong to each rank, not to a group, and two groups using them would collide.
//! `one_sided_group<T>` adds the one-sided interface for the one group per rank that may use it
//! (hierarchical gives it to Intra only, so `direct` can run inside the node): every rank of that
//! group takes the same one-sided steps, so the parent's epoch counters stay equal across it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::transport {

template <class Parent>
class group {
 public:
  using tutti_role = role::transport;
  using request = typename Parent::request;
  static constexpr const char* name = "group";
  static constexpr transport_traits traits{Parent::traits.intra_node, Parent::traits.device_memory, false};

  group() = default;
  //! `members[i]` is the parent rank of group rank i; the parent's own rank must be among them.
  group(Parent& parent, std::vector<int> members) : parent_(&parent), members_(std::move(members)) {
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (members_[i] == parent.rank()) rank_ = static_cast<int>(i);
    if (rank_ < 0)
      throw invalid_argument(on_rank(parent.rank()) + "transport::group does not contain this rank");
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return static_cast<int>(members_.size()); }
  [[nodiscard]] int parent_rank(int r) const noexcept { return members_[static_cast<std::size_t>(r)]; }
  [[nodiscard]] Parent& parent() const noexcept { return *parent_; }

  [[nodiscard]] request send(int peer, std::uint64_t tag, const void* data, std::size_t bytes) {
    return parent_->send(map(peer), tag, data, bytes);
  }
  [[nodiscard]] request recv(int peer, std::uint64_t tag, void* data, std::size_t bytes) {
    return parent_->recv(map(peer), tag, data, bytes);
  }
  [[nodiscard]] request recv_up_to(int peer, std::uint64_t tag, void* data, std::size_t capacity, std::size_t* arrived)
    requires sized_receive_transport<Parent>
  {
    return parent_->recv_up_to(map(peer), tag, data, capacity, arrived);
  }
  [[nodiscard]] bool test(request& r) {
    try {
      return parent_->test(r);
    } catch (const peer_lost& e) {
      rethrow_named(e);
    }
  }
  void wait(request& r, deadline until) {
    try {
      parent_->wait(r, until);
    } catch (const peer_lost& e) {
      rethrow_named(e);
    }
  }
  void abort() noexcept { parent_->abort(); }

  //! When the parent numbers its ranks differently from the job (a node-aware transport's node
  //! transport numbers them by local index), `job_ranks[p]` is the job's rank of parent rank p:
  //! a peer_lost from the parent then names the job's rank, as every other error does.
  void name_parent_ranks(std::vector<int> job_ranks) { job_ranks_ = std::move(job_ranks); }

 protected:
  [[noreturn]] void rethrow_named(const peer_lost& e) const {
    const int p = e.peer();
    if (job_ranks_.empty() || p < 0 || p >= static_cast<int>(job_ranks_.size())) throw;
    const int job_rank = job_ranks_[static_cast<std::size_t>(p)];
    // A parent that names job ranks in its text (transport::shm under node_aware: name_ranks)
    // needs only the number translated; another one's text keeps its local numbers, marked so.
    if constexpr (requires(Parent& t, std::vector<int> names) { t.name_ranks(names); }) throw peer_lost(job_rank, e.what());
    throw peer_lost(job_rank, rank_text(job_ranks_[static_cast<std::size_t>(parent_->rank())]) +
                                  ": rank " + std::to_string(job_rank) + " on this node is lost; the node transport, "
                                  "which numbers this node's ranks by local index, said: " + e.what());
  }

  int map(int peer) const {
    if (peer < 0 || peer >= world_size())
      throw invalid_argument(on_rank(parent_->rank()) + "transport::group peer " + std::to_string(peer) +
                             " outside [0, " + std::to_string(world_size()) + ")");
    return members_[static_cast<std::size_t>(peer)];
  }

  Parent* parent_ = nullptr;
  std::vector<int> members_;
  std::vector<int> job_ranks_;  //!< empty: the parent's ranks are the job's
  int rank_ = -1;
};

//! A group that also forwards the parent's one-sided interface (see the file comment for when
//! that is safe). Offsets stay relative to each rank's segment, so they need no translation.
template <class Parent>
class one_sided_group : public group<Parent> {
  // A static_assert rather than a constraint: the type may be named (std::conditional_t) for any
  // transport, and is only ever made for one-sided ones.
  static_assert(one_sided_transport<Parent>, "tutti::transport::one_sided_group needs a one-sided parent transport");
  using base = group<Parent>;

 public:
  static constexpr transport_traits traits{Parent::traits.intra_node, Parent::traits.device_memory, true};
  static constexpr std::size_t not_registered = Parent::not_registered;
  static constexpr std::size_t max_payload = Parent::max_payload;

  using base::base;

  [[nodiscard]] std::byte* segment_base(int r) const { return this->parent().segment_base(this->map(r)); }
  [[nodiscard]] std::byte* stage(int r, unsigned parity) const { return this->parent().stage(this->map(r), parity); }
  [[nodiscard]] std::size_t stage_bytes() const { return this->parent().stage_bytes(); }
  [[nodiscard]] std::size_t registered_offset(const void* p, std::size_t bytes) const {
    return this->parent().registered_offset(p, bytes);
  }
  [[nodiscard]] std::uint64_t next_epoch() { return this->parent().next_epoch(); }
  void signal(unsigned slot, std::uint64_t value, std::uint64_t offset = 0, const void* payload = nullptr,
              std::size_t payload_bytes = 0) {
    this->parent().signal(slot, value, offset, payload, payload_bytes);
  }
  [[nodiscard]] const std::byte* payload(int r, std::uint64_t value) const {
    return this->parent().payload(this->map(r), value);
  }
  std::uint64_t wait_signal(int r, unsigned slot, std::uint64_t value, deadline until) {
    try {
      return this->parent().wait_signal(this->map(r), slot, value, until);
    } catch (const peer_lost& e) {
      this->rethrow_named(e);
    }
  }
};

//! The transport that carries traffic among the ranks of one node, and how its ranks are numbered.
//! A node-aware transport (one declaring `node_transport_type` and `node_transport()`, e.g.
//! transport::node_aware<shm, ucx>) has its own, whose ranks are the node's local indices; for any
//! other transport it is the transport itself, numbered by global rank.
template <class T>
struct node_level {
  using type = T;
  static constexpr bool separate = false;
  static T& of(T& t) noexcept { return t; }
};
template <class T>
  requires requires(T& t) {
    typename T::node_transport_type;
    t.node_transport();
  }
struct node_level<T> {
  using type = typename T::node_transport_type;
  static constexpr bool separate = true;
  static type& of(T& t) noexcept { return t.node_transport(); }
};

//! The transport that carries a node-aware transport's traffic to other nodes (one declaring
//! `network_transport_type` and `network_transport()`), numbered by global rank; `separate` is
//! false for any other transport. Where it is separate, the node level and the network level are
//! two objects that one thread each may drive at the same time (the network part from a thread
//! other than the one that made it, one thread at a time: UCX's worker is made
//! UCS_THREAD_MODE_SERIALIZED for this): hierarchical's pipeline runs the network level of one
//! chunk on a second thread while the caller's reduces the next inside the node.
template <class T>
struct network_level {
  static constexpr bool separate = false;
};
template <class T>
  requires requires(T& t) {
    typename T::network_transport_type;
    t.network_transport();
  }
struct network_level<T> {
  using type = typename T::network_transport_type;
  static constexpr bool separate = true;
  static type& of(T& t) noexcept { return t.network_transport(); }
};

}  // namespace tutti::transport
