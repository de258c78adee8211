//! ring over inproc runs the alltoall conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/ring.hpp>

TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, tutti::testing::inproc_world<tutti::algorithm::ring>);
