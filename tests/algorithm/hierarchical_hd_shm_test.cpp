//! hierarchical<halving_doubling, ring> over shm, 3 ranks per simulated node dealt round-robin:
//! halving_doubling's fold-in (3 ranks is not a power of two) inside the node-level groups.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

namespace {
using hd_in_nodes = tutti::algorithm::hierarchical<tutti::algorithm::halving_doubling, tutti::algorithm::ring>;
using world = tutti::testing::fork_world<hd_in_nodes, tutti::testing::interleaved_nodes<3>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, world);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, world);
