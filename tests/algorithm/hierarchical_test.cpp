//! hierarchical on simulated nodes: every conformance suite per inner algorithm and node layout; uneven nodes refused. Codecs
//! on the inter-node level only.
#include <doctest/doctest.h>

#include <vector>

#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>

namespace {
using namespace tutti::testing;
using tutti::algorithm::hierarchical;
namespace alg = tutti::algorithm;

// hierarchical<ring, ring> over inproc with 3 ranks per simulated node (1-3 nodes; threads: node
// ids come from inproc::run).
using ring_threads = inproc_world<hierarchical<alg::ring, alg::ring>, blocked_nodes<3>>;
// hierarchical<ring, ring> over shm: 2 ranks per node (1-4 nodes, consecutive ranks together) and
// 3 per node dealt round-robin (2 and 3 nodes).
using ring_blocked = fork_world<hierarchical<alg::ring, alg::ring>, blocked_nodes<2>>;
using ring_interleaved = fork_world<hierarchical<alg::ring, alg::ring>, interleaved_nodes<3>>;
// hierarchical<direct, ring> over shm: direct inside each node (its one-sided group view), ring
// across nodes, in the same two layouts.
using direct_blocked = fork_world<hierarchical<alg::direct, alg::ring>, blocked_nodes<2>>;
using direct_interleaved = fork_world<hierarchical<alg::direct, alg::ring>, interleaved_nodes<3>>;
// hierarchical<halving_doubling, ring> over shm, 3 ranks per node dealt round-robin:
// halving_doubling's fold-in (3 ranks is not a power of two) inside the node-level groups.
using hd_interleaved = fork_world<hierarchical<alg::halving_doubling, alg::ring>, interleaved_nodes<3>>;
// hierarchical<tree, ring> over shm on nodes of 2 ranks: tree cannot reduce-scatter, so allreduce
// takes the reduce -> allreduce among local ranks 0 -> broadcast path; reduce, broadcast and
// barrier go through both levels.
using tree_blocked = fork_world<hierarchical<alg::tree, alg::ring>, blocked_nodes<2>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, ring_threads, ring_blocked, ring_interleaved, direct_blocked,
                          direct_interleaved, hd_interleaved, tree_blocked);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, ring_threads, ring_blocked, ring_interleaved, direct_interleaved);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, ring_threads, ring_blocked, ring_interleaved, direct_blocked,
                          direct_interleaved, hd_interleaved);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, ring_threads, ring_blocked, ring_interleaved, direct_blocked,
                          direct_interleaved, tree_blocked);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, ring_threads, ring_blocked, ring_interleaved, direct_blocked, tree_blocked);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, ring_threads, ring_blocked, ring_interleaved);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, ring_threads, ring_blocked, ring_interleaved, direct_blocked,
                          direct_interleaved, tree_blocked);

// ---- Nodes of 3 and 2 ranks: every rank gets the same invalid_argument, at once, on every
// collective — never a hang and never a wrong result. ----

using two_level = tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::ring>;

TEST_CASE("hierarchical refuses 3+2 ranks per node with the same error on every rank") {
  auto results = tutti::testing::fork_ranks(5, [](tutti::rank_info info) {
    info.node_id = info.rank < 3 ? "big" : "small";
    tutti::communicator<tutti::transport::shm, two_level> comm(std::make_unique<tutti::transport::shm>(info));
    std::vector<float> v(10, 1.0f);
    for (int attempt = 0; attempt < 2; ++attempt) {  // refused again, not hung, on the next call
      try {
        comm.allreduce(v, tutti::op::sum);
        throw std::runtime_error("allreduce over uneven nodes returned");
      } catch (const tutti::invalid_argument& e) {
        const std::string what = e.what();
        const std::string want = "algorithm::hierarchical: hierarchical algorithms need the same number of ranks on "
                                 "every node; node 0 has 3 (ranks 0 1 2); node 1 has 2 (ranks 3 4)";
        if (what.find(want) == std::string::npos) throw std::runtime_error("unexpected message: " + what);
        const std::string where = "rank " + std::to_string(info.rank) + ": allreduce #" + std::to_string(attempt + 1) + ": ";
        if (what.rfind(where, 0) != 0) throw std::runtime_error("message does not begin with '" + where + "': " + what);
      }
    }
    if (v != std::vector<float>(10, 1.0f)) throw std::runtime_error("the refused allreduce wrote the buffer");
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].error);
    CHECK(results[r].exit_code == 0);
  }
}

// Codecs on the inter-node level only (docs/compression.md): int8 cut at its 256-element granule
// on nodes of 3 dealt round-robin, fp16 through direct inside nodes, topk's residual per node.
namespace {
using int8_threads = inproc_world<hierarchical<alg::ring, alg::ring>, interleaved_nodes<3>, tutti::codec::int8>;
using fp16_direct = fork_world<hierarchical<alg::direct, alg::ring>, blocked_nodes<2>, tutti::codec::fp16>;
using topk_threads = inproc_world<hierarchical<alg::ring, alg::ring>, blocked_nodes<2>, tutti::codec::topk>;
using bf16_hd = inproc_world<hierarchical<alg::ring, alg::halving_doubling>, blocked_nodes<2>, tutti::codec::bf16>;
using onebit_threads = inproc_world<hierarchical<alg::ring, alg::ring>, interleaved_nodes<3>, tutti::codec::onebit>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, int8_threads, fp16_direct, bf16_hd);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance, topk_threads, onebit_threads);

TEST_CASE("algorithm_state keeps one state per type, so two stateful algorithms in one communicator never share") {
  // hierarchical<I, X>::state<T> is a different type for every (I, X): what tuned<A...> relies on.
  struct first_state { int value = 1; };
  struct second_state { double value = 2.5; };
  tutti::algorithm::algorithm_state states;
  int made = 0;
  auto& a = states.get<first_state>([&] { ++made; return std::make_shared<first_state>(); });
  auto& b = states.get<second_state>([&] { ++made; return std::make_shared<second_state>(); });
  CHECK(made == 2);  // before: one slot, so the second algorithm got the first one's state
  CHECK(a.value == 1);
  CHECK(b.value == 2.5);
  CHECK(static_cast<void*>(&a) != static_cast<void*>(&b));
  a.value = 7;
  CHECK(&states.get<first_state>([&] { ++made; return std::make_shared<first_state>(); }) == &a);
  CHECK(states.get<first_state>([&] { ++made; return std::make_shared<first_state>(); }).value == 7);
  CHECK(made == 2);
}
