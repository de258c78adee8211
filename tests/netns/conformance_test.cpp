//! The conformance suite over transport::multi_node (shm inside a host, UCX between hosts), in
//! processes on two "hosts" (network namespaces) started by launch.sh as torchrun or mpirun would.
//! Each rank checks its own results; launch.sh fails the test if any rank fails.
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/launched_world.hpp>
#include <tutti/algorithm/automatic.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/eager.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned.hpp>
#include <tutti/transport/multi_node.hpp>

#include "support/tuned_tables.hpp"

namespace {
template <class Algorithm>
using across = tutti::testing::launched_world<Algorithm, tutti::transport::multi_node>;
using ring_world = across<tutti::algorithm::ring>;
using hd_world = across<tutti::algorithm::halving_doubling>;
using tree_world = across<tutti::algorithm::tree>;
using nodes_world = across<tutti::algorithm::hierarchical<tutti::algorithm::direct, tutti::algorithm::ring>>;
using nodes_tree_world = across<tutti::algorithm::hierarchical<tutti::algorithm::direct, tutti::algorithm::tree>>;
using automatic_world = across<tutti::algorithm::automatic>;
using eager_world = across<tutti::algorithm::eager>;
// tuned over the candidates above, with a table that switches among them at 64 B, 4 KiB and 64 KiB
// (tests/support/tuned_tables.hpp): on 2 hosts of 2 ranks, hierarchical among them.
using tuned_world = across<tutti::algorithm::tuned<tutti::algorithm::ring, tutti::algorithm::halving_doubling,
                                                   tutti::algorithm::tree,
                                                   tutti::algorithm::hierarchical<tutti::algorithm::direct, tutti::algorithm::ring>>>;
[[maybe_unused]] const bool tuned_served = tutti::testing::serve_switching_table<tuned_world>();
}  // namespace

// Every algorithm that runs on two-sided transports, each with every collective it has
// (docs/algorithms.md's matrix), and the node-aware compositions.

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, ring_world, hd_world, tree_world, nodes_world, nodes_tree_world,
                          automatic_world, eager_world, tuned_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, ring_world, hd_world, nodes_world, tuned_world);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, ring_world, hd_world, nodes_world, eager_world, tuned_world);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, ring_world, hd_world, tree_world, nodes_world, nodes_tree_world,
                          automatic_world, tuned_world);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, ring_world, hd_world, tree_world, nodes_world, nodes_tree_world,
                          tuned_world);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, ring_world, hd_world, nodes_world, tuned_world);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, ring_world, hd_world, tree_world, nodes_world, nodes_tree_world,
                          eager_world, tuned_world);
