//! hierarchical<ring, ring> over inproc with 3 ranks per simulated node (1-3 nodes) runs the
//! barrier conformance suite (threads: node ids come from inproc::run).
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

namespace {
using two_level = tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::ring>;
}
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, tutti::testing::inproc_world<two_level, tutti::testing::blocked_nodes<3>>);
