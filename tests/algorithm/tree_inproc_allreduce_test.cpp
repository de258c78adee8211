//! tree over inproc runs the allreduce conformance suite.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/tree.hpp>

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, tutti::testing::inproc_world<tutti::algorithm::tree>);
