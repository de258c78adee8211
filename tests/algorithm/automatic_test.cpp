//! automatic resolves to direct over shm and, over inproc, to eager for calls its frames carry and
//! ring after eager's check for the rest: the conformance suites over both. Codecs: every codec, over
//! shm (direct) and over threads (eager's check, then ring's compressed schedule).
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/automatic.hpp>
#include <tutti/transport/inproc.hpp>

static_assert(std::is_same_v<tutti::algorithm::automatic::for_transport<tutti::transport::shm>, tutti::algorithm::direct>);
static_assert(std::is_same_v<tutti::algorithm::automatic::for_transport<tutti::transport::inproc>, tutti::algorithm::ring>);
static_assert(tutti::algorithm::automatic::checks_arguments<tutti::transport::inproc>);

// Over shm it is direct; over inproc (two-sided) eager where it finishes a call, else eager's
// check and then ring: the suites' counts cross eager::capacity (16 KiB; 1009 doubles fit, 100,003 not).
namespace {
using automatic_processes = tutti::testing::fork_world<tutti::algorithm::automatic>;
using automatic_threads = tutti::testing::inproc_world<tutti::algorithm::automatic>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, automatic_processes, automatic_threads);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, automatic_processes, automatic_threads);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, automatic_threads);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, automatic_threads);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, automatic_threads);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, automatic_threads);

// Codecs (docs/compression.md): automatic over shm is direct's two-sided codec schedule.
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::fp16>,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::int8>,
                          tutti::testing::inproc_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::bf16>);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::onebit>,
                          tutti::testing::inproc_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::topk>);
