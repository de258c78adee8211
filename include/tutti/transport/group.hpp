//! @file group.hpp  transport::group<T> — a subset of a transport's ranks, renumbered 0..k-1.
//!
//! Hierarchical algorithms run one algorithm among the ranks of a node and another among the ranks
//! with the same local index on every node; each sees its group as a whole world. Messages keep
//! the parent's tags: a pair of ranks belongs to at most one of those groups, so two groups never
//! share a channel.
//!
//! A group is two-sided only (traits.one_sided = false): the parent's one-sided epochs and
//! staging buffers are numbered for the whole world, and two groups using them at once would
//! collide. So `direct` cannot run inside a group; ring, tree and halving_doubling can.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/policy.hpp"
#include "tutti/transport/concepts.hpp"

namespace tutti::transport {

template <class Parent>
class group {
 public:
  using tutti_role = role::transport;
  using request = typename Parent::request;
  static constexpr transport_traits traits{Parent::traits.intra_node, Parent::traits.device_memory, false};

  group() = default;
  //! `members[i]` is the parent rank of group rank i; the parent's own rank must be among them.
  group(Parent& parent, std::vector<int> members) : parent_(&parent), members_(std::move(members)) {
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (members_[i] == parent.rank()) rank_ = static_cast<int>(i);
    if (rank_ < 0)
      throw invalid_argument("rank " + std::to_string(parent.rank()) + ": transport::group does not contain this rank");
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
  [[nodiscard]] bool test(request& r) { return parent_->test(r); }
  void wait(request& r, deadline until) { parent_->wait(r, until); }
  void abort() noexcept { parent_->abort(); }

 private:
  int map(int peer) const {
    if (peer < 0 || peer >= world_size())
      throw invalid_argument("rank " + std::to_string(parent_->rank()) + ": transport::group peer " + std::to_string(peer) +
                             " outside [0, " + std::to_string(world_size()) + ")");
    return members_[static_cast<std::size_t>(peer)];
  }

  Parent* parent_ = nullptr;
  std::vector<int> members_;
  int rank_ = -1;
};

}  // namespace tutti::transport
