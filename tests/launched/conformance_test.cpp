//! The whole conformance suite, ring and direct over shm, in processes started by tutti-run
//! (see CMakeLists.txt: run with 2, 3 and 4 ranks). Each rank checks its own results; tutti-run
//! fails the test if any rank fails.
#include "support/conformance.hpp"
#include "support/launched_world.hpp"
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/ring.hpp>

using ring_world = tutti::testing::launched_world<tutti::algorithm::ring>;
using direct_world = tutti::testing::launched_world<tutti::algorithm::direct>;

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, ring_world, direct_world);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, ring_world, direct_world);
