//! halving_doubling over inproc (threads) and shm (forked processes, world sizes 1-9) runs every conformance suite. Codecs:
//! int8, bf16 and topk over threads, fp16 and onebit over processes.
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/halving_doubling.hpp>

namespace {
using threads = tutti::testing::inproc_world<tutti::algorithm::halving_doubling>;
using processes = tutti::testing::fork_world<tutti::algorithm::halving_doubling>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads, processes);

// Codecs (docs/compression.md): XOR partners on powers of two, ring order otherwise.
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance,
                          tutti::testing::inproc_world<tutti::algorithm::halving_doubling, tutti::testing::one_node, tutti::codec::int8>,
                          tutti::testing::inproc_world<tutti::algorithm::halving_doubling, tutti::testing::one_node, tutti::codec::bf16>,
                          tutti::testing::fork_world<tutti::algorithm::halving_doubling, tutti::testing::one_node, tutti::codec::fp16>);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance,
                          tutti::testing::inproc_world<tutti::algorithm::halving_doubling, tutti::testing::one_node, tutti::codec::topk>,
                          tutti::testing::fork_world<tutti::algorithm::halving_doubling, tutti::testing::one_node, tutti::codec::onebit>);
