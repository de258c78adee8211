//! direct over shm (forked processes, world sizes 1-9) runs the reduce_scatter conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/direct.hpp>

TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, tutti::testing::fork_world<tutti::algorithm::direct>);
