//! automatic resolves to direct over shm and to ring over inproc; over shm it runs the allreduce
//! conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/automatic.hpp>
#include <tutti/transport/inproc.hpp>

static_assert(std::is_same_v<tutti::algorithm::automatic::for_transport<tutti::transport::shm>, tutti::algorithm::direct>);
static_assert(std::is_same_v<tutti::algorithm::automatic::for_transport<tutti::transport::inproc>, tutti::algorithm::ring>);

// Over inproc it is ring, whose own suite runs in ring_inproc_*; here the shm resolution.
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, tutti::testing::fork_world<tutti::algorithm::automatic>);
