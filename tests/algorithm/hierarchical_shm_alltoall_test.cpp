//! hierarchical<ring, ring> over shm, ranks on simulated nodes: 2 per node (1-4 nodes, consecutive
//! ranks together) and 3 per node dealt round-robin (2 and 3 nodes), runs the alltoall conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

namespace {
using two_level = tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::ring>;
}
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, tutti::testing::fork_world<two_level, tutti::testing::blocked_nodes<2>>,
                          tutti::testing::fork_world<two_level, tutti::testing::interleaved_nodes<3>>);
