//! hierarchical<direct, ring> over shm: direct inside each simulated node (its one-sided group
//! view), ring across nodes; 2 ranks per node (1-4 nodes) and 3 per node interleaved (2, 3 nodes).
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

namespace {
using direct_in_nodes = tutti::algorithm::hierarchical<tutti::algorithm::direct, tutti::algorithm::ring>;
using blocked = tutti::testing::fork_world<direct_in_nodes, tutti::testing::blocked_nodes<2>>;
using interleaved = tutti::testing::fork_world<direct_in_nodes, tutti::testing::interleaved_nodes<3>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, blocked, interleaved);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, blocked, interleaved);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, blocked, interleaved);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, blocked);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, blocked, interleaved);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, interleaved);
