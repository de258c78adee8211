//! automatic resolves to direct over shm and to ring over inproc; over shm it runs the allreduce and Codecs:
//! every codec, over shm (direct) and over threads (ring).
//! broadcast conformance suites.
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

// Over inproc it is ring, whose own suites run in ring_test.cpp; here the shm resolution.
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, tutti::testing::fork_world<tutti::algorithm::automatic>);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, tutti::testing::fork_world<tutti::algorithm::automatic>);

// Codecs (docs/compression.md): automatic over shm is direct's two-sided codec schedule.
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::fp16>,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::int8>,
                          tutti::testing::inproc_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::bf16>);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance,
                          tutti::testing::fork_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::onebit>,
                          tutti::testing::inproc_world<tutti::algorithm::automatic, tutti::testing::one_node, tutti::codec::topk>);
