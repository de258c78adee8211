//! tree over shm (forked processes, world sizes 1-9) runs the reduce conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/tree.hpp>

TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, tutti::testing::fork_world<tutti::algorithm::tree>);
