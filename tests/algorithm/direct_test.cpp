//! direct over shm (forked processes, world sizes 1-9) runs every conformance suite. Codecs:
//! fp16, bf16 and int8 within their bounds, topk and onebit with error feedback.
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/direct.hpp>

namespace {
using processes = tutti::testing::fork_world<tutti::algorithm::direct>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, processes);

// Codecs (docs/compression.md): direct runs the two-sided schedule after its argument epoch.
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::direct, tutti::testing::one_node, tutti::codec::bf16>,
                          tutti::testing::fork_world<tutti::algorithm::direct, tutti::testing::one_node, tutti::codec::int8>,
                          tutti::testing::fork_world<tutti::algorithm::direct, tutti::testing::one_node, tutti::codec::fp16>);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::direct, tutti::testing::one_node, tutti::codec::topk>,
                          tutti::testing::fork_world<tutti::algorithm::direct, tutti::testing::one_node, tutti::codec::onebit>);
