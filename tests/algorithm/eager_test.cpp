//! eager over inproc (threads) and over shm (forked processes, world sizes 1-9) runs every
//! conformance suite: the one-round schedules at the sizes its frames carry, the check and ring
//! above them (the suites' counts cross eager::inline_bytes). Lossy codecs: the check, then ring's
//! compressed schedule, within its bound.
#include <tutti/algorithm/eager.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>

namespace {
using threads = tutti::testing::inproc_world<tutti::algorithm::eager>;
using processes = tutti::testing::fork_world<tutti::algorithm::eager>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads, processes);

namespace {
template <class Codec>
using codec_threads = tutti::testing::inproc_world<tutti::algorithm::eager, tutti::testing::one_node, Codec>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, codec_threads<tutti::codec::fp16>,
                          codec_threads<tutti::codec::bf16>, codec_threads<tutti::codec::int8>);
