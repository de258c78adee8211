//! halving_doubling over inproc runs the barrier conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/halving_doubling.hpp>

TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, tutti::testing::inproc_world<tutti::algorithm::halving_doubling>);
