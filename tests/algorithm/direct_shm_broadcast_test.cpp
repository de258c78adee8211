//! direct over shm (forked processes, world sizes 1-9) runs the broadcast conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/direct.hpp>

TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, tutti::testing::fork_world<tutti::algorithm::direct>);
