//! The whole conformance suite, ring and direct over shm, in processes started by tutti-run
//! (see CMakeLists.txt: run with 2, 3 and 4 ranks), and hierarchical<ring, ring> over nodes that
//! tutti-run --ranks-per-node simulates through TUTTI_NODE_ID. Each rank checks its own results;
//! tutti-run fails the test if any rank fails.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/launched_world.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

using ring_world = tutti::testing::launched_world<tutti::algorithm::ring>;
using direct_world = tutti::testing::launched_world<tutti::algorithm::direct>;
using nodes_world =
    tutti::testing::launched_world<tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::ring>>;

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, ring_world, direct_world);

// Run only under --ranks-per-node (CMakeLists.txt selects these with --test-case=*hierarchical*).
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, nodes_world);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, nodes_world);

TEST_CASE("hierarchical: the simulated node ids reach the transport (2 ranks per node)") {
  auto comm = nodes_world::communicator_type::from_env();
  CHECK(comm.transport().node_id() == "sim" + std::to_string(comm.rank() / 2));
}
