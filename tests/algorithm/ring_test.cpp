//! ring over inproc (threads) and over shm (forked processes, world sizes 1-9) runs every conformance suite. Codecs:
//! fp16, bf16 and int8 within their bounds, topk and onebit with error feedback, over threads.
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/ring.hpp>

namespace {
using threads = tutti::testing::inproc_world<tutti::algorithm::ring>;
using processes = tutti::testing::fork_world<tutti::algorithm::ring>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads, processes);

// Codecs (docs/compression.md): the owner schedule's bound and the error-feedback identity.
namespace {
template <class Codec>
using codec_threads = tutti::testing::inproc_world<tutti::algorithm::ring, tutti::testing::one_node, Codec>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, codec_threads<tutti::codec::fp16>,
                          codec_threads<tutti::codec::bf16>, codec_threads<tutti::codec::int8>);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance, codec_threads<tutti::codec::topk>,
                          codec_threads<tutti::codec::onebit>);
