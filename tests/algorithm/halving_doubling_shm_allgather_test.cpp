//! halving_doubling over shm (forked processes, world sizes 1-9) runs the allgather conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/halving_doubling.hpp>

TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, tutti::testing::fork_world<tutti::algorithm::halving_doubling>);
