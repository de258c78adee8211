//! hierarchical<tree, ring> over shm on simulated nodes of 2 ranks: tree cannot reduce-scatter, so
//! allreduce takes the reduce -> allreduce among local ranks 0 -> broadcast path; reduce,
//! broadcast and barrier go through both levels.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>

namespace {
using tree_in_nodes = tutti::algorithm::hierarchical<tutti::algorithm::tree, tutti::algorithm::ring>;
using world = tutti::testing::fork_world<tree_in_nodes, tutti::testing::blocked_nodes<2>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, world);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, world);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, world);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, world);
