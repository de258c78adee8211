//! @file group_test.cpp  transport::nccl's group splitting: runs of sends and receives cut below
//! NCCL's per-group limit, never between a mirrored pair when a balanced cut exists.
#include <doctest/doctest.h>

#if TUTTI_HAVE_NCCL
#include <cstddef>
#include <map>
#include <random>
#include <vector>

#include <tutti/transport/nccl/group.hpp>

namespace {

using tutti::transport::nccl_detail::group_span;
using tutti::transport::nccl_detail::group_splitter;
using tutti::transport::nccl_detail::max_ops_per_group;
using tutti::transport::nccl_detail::p2p_op;

p2p_op send(int peer) { return {true, peer, nullptr, 4}; }
p2p_op recv(int peer) { return {false, peer, nullptr, 4}; }

//! Whether every peer has as many sends as receives in ops[g].
bool balanced(const std::vector<p2p_op>& ops, const group_span& g) {
  std::map<int, int> b;
  for (std::size_t i = g.first; i < g.first + g.count; ++i) b[ops[i].peer] += ops[i].is_send ? 1 : -1;
  for (const auto& [peer, v] : b)
    if (v != 0) return false;
  return true;
}

//! The rules every split keeps: in order, covering all, none empty or over the limit, and a group
//! that is not balanced is exactly `limit` long (no balanced cut existed within it) or the last.
void check_rules(const std::vector<p2p_op>& ops, const std::vector<group_span>& groups, std::size_t limit) {
  std::size_t next = 0;
  for (const auto& g : groups) {
    CHECK(g.first == next);
    CHECK(g.count >= 1);
    CHECK(g.count <= limit);
    if (!balanced(ops, g) && &g != &groups.back()) CHECK(g.count == limit);
    next = g.first + g.count;
  }
  CHECK(next == ops.size());
}

}  // namespace

TEST_CASE("group_splitter: the limit is NCCL's documented 2048 operations per group") {
  CHECK(max_ops_per_group == 2048);
}

TEST_CASE("group_splitter: empty and short runs") {
  group_splitter s;
  CHECK(s.split({}, 4).empty());
  const std::vector<p2p_op> one{send(1)};
  CHECK(s.split(one, 4) == std::vector<group_span>{{0, 1}});
  const std::vector<p2p_op> pair{recv(1), send(1), recv(2), send(2), send(3)};  // ends unbalanced
  CHECK(s.split(pair, 4) == std::vector<group_span>{{0, 5}});                 // under the limit: one group
}

TEST_CASE("group_splitter: alltoall over 1500 ranks is cut between pairs, below the limit") {
  const int n = 1500;
  std::vector<p2p_op> ops;
  for (int k = 0; k < n; ++k) {
    ops.push_back(recv(k));
    ops.push_back(send(k));
  }
  group_splitter s;
  const auto& groups = s.split(ops, n);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0] == group_span{0, 2048});
  CHECK(groups[1] == group_span{2048, 952});
  check_rules(ops, groups, max_ops_per_group);
  for (const auto& g : groups) CHECK(balanced(ops, g));
}

TEST_CASE("group_splitter: a peer left open makes the cut fall at the last balanced point") {
  // peer 1's send is balanced only by the run's last operation, 2200 operations later.
  std::vector<p2p_op> ops{recv(0), send(0), send(1)};
  for (int k = 0; k < 1100; ++k) {
    ops.push_back(recv(2));
    ops.push_back(send(2));
  }
  ops.push_back(recv(1));  // balances peer 1 only at the very end
  group_splitter s;
  const auto& groups = s.split(ops, 3);
  // Within the first 2048 the last balanced point is after the first pair (peer 1 stays open).
  CHECK(groups == std::vector<group_span>{{0, 2}, {2, 2048}, {2050, 154}});
  check_rules(ops, groups, max_ops_per_group);
}

TEST_CASE("group_splitter: a run with no balanced point is cut at the limit") {
  const std::vector<p2p_op> ops(5000, send(1));
  group_splitter s;
  CHECK(s.split(ops, 2) == std::vector<group_span>{{0, 2048}, {2048, 2048}, {4096, 904}});
}

TEST_CASE("group_splitter: random runs keep the rules, and reuse leaves no state behind") {
  std::mt19937 rng(12);
  group_splitter s;
  for (int trial = 0; trial < 300; ++trial) {
    const int world = 1 + static_cast<int>(rng() % 9);
    const std::size_t limit = 1 + rng() % 12;
    std::vector<p2p_op> ops;
    const std::size_t len = rng() % 60;
    for (std::size_t i = 0; i < len; ++i) {
      const int peer = static_cast<int>(rng() % static_cast<unsigned>(world));
      if (rng() % 3 == 0) {
        ops.push_back(recv(peer));
        ops.push_back(send(peer));
      } else {
        ops.push_back(rng() % 2 ? send(peer) : recv(peer));
      }
    }
    INFO("trial " << trial << ", world " << world << ", limit " << limit << ", " << ops.size() << " ops");
    const auto groups = s.split(ops, world, limit);
    check_rules(ops, groups, limit);
    CHECK(s.split(ops, world, limit) == groups);  // the same answer again: no leftover balance
  }
}

namespace {

//! Whether every rank gets through its groups when each posts alltoall's mirrored run ([recv p,
//! send p] for p = r, r+1, ...) split at `limit`: on the stream a rank's group starts once its
//! previous group has completed, and completes once every partner has started the group that
//! holds the matching operation (a group completes only when all its operations have).
bool mirrored_alltoall_completes(int n, std::size_t limit) {
  group_splitter s;
  std::vector<std::vector<std::size_t>> group_of(static_cast<std::size_t>(n));  // [rank][op index]
  for (int r = 0; r < n; ++r) {
    std::vector<p2p_op> ops;
    for (int k = 0; k < n; ++k) {
      ops.push_back(recv((r + k) % n));
      ops.push_back(send((r + k) % n));
    }
    const auto& groups = s.split(ops, n, limit);
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t i = 0; i < groups[g].count; ++i) group_of[static_cast<std::size_t>(r)].push_back(g);
  }
  // Rank r's operation with peer p is at 2 * ((p - r) mod n) + is_send.
  const auto group = [&](int r, int p, bool is_send) {
    return group_of[static_cast<std::size_t>(r)][2 * static_cast<std::size_t>((p - r + n) % n) + (is_send ? 1 : 0)];
  };
  std::vector<std::size_t> done(static_cast<std::size_t>(n), 0);  // groups completed per rank
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const std::size_t g = done[static_cast<std::size_t>(r)];
      if (g > group_of[static_cast<std::size_t>(r)].back()) continue;
      bool ready = true;
      for (int p = 0; p < n && ready; ++p)
        for (const bool is_send : {false, true})
          if (group(r, p, is_send) == g && group(p, r, !is_send) > done[static_cast<std::size_t>(p)]) ready = false;
      if (ready) {
        ++done[static_cast<std::size_t>(r)];
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r)
    if (done[static_cast<std::size_t>(r)] <= group_of[static_cast<std::size_t>(r)].back()) return false;
  return true;
}

}  // namespace

TEST_CASE("group_splitter: a local cut of mirrored runs waits in a cycle, one group per run does not") {
  // Six ranks cut at 6 operations (3 peers) is 1025 ranks cut at 2048 in small: rank a's first
  // group holds b when b - a < 3 (mod 6), b's holds a only when a - b < 3, so 0 waits for 1,
  // 1 for 2, ..., 5 for 0. Hence transport::nccl posts a run as one group (post_groups).
  CHECK_FALSE(mirrored_alltoall_completes(6, 6));
  CHECK_FALSE(mirrored_alltoall_completes(9, 10));
  CHECK(mirrored_alltoall_completes(6, 12));  // the run's length: what the transport passes
  CHECK(mirrored_alltoall_completes(9, 18));
  CHECK(mirrored_alltoall_completes(3, 6));   // within the limit: one group anyway
}

#else
TEST_CASE("group_splitter: not built (NCCL not found: tutti::nccl missing)") {}
#endif
