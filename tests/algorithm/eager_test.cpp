//! eager over inproc (threads) and over shm (forked processes, world sizes 1-9: powers of two and
//! not, so with and without the extra ranks' hand-over) runs every conformance suite: recursive
//! doubling (and reduce_scatter/alltoall's direct blocks) at the sizes its frames carry, the check
//! and ring above them (the suites' counts cross eager::capacity: 1009 doubles fit, 100,003 not;
//! allgather's 1009 floats fit up to 4 ranks). Lossy codecs: the check, then ring's compressed
//! schedule, within its bound.
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

#include <tutti/communicator/communicator.hpp>
#include <tutti/transport/inproc.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

// On floats whose sums round (random values), every rank must hold the same bits and the result
// must equal the reference within n - 1 roundings. Recursive doubling gives both partners of a
// round the same pair to add (IEEE addition is commutative) and hands the extra ranks the finished
// result; a schedule summing in each rank's own order (an all-to-all's arrival order, say) or an
// extra rank adding its own data twice fails here.
TEST_CASE("eager: allreduce of inexact floats gives every rank the same bits, world sizes 2-9") {
  using comm_t = tutti::communicator<tutti::transport::inproc, tutti::algorithm::eager>;
  for (int world = 2; world <= 9; ++world) {
    CAPTURE(world);
    constexpr std::size_t count = 1009;
    std::vector<std::vector<float>> inputs(static_cast<std::size_t>(world)), outputs(inputs.size());
    std::mt19937 gen(static_cast<unsigned>(world));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& in : inputs) {
      in.resize(count);
      for (float& x : in) x = u(gen) * 1e3f;
    }
    auto errors = tutti::transport::inproc::run(world, [&](tutti::transport::inproc& t) {
      comm_t comm(t);
      const auto r = static_cast<std::size_t>(comm.rank());
      outputs[r].resize(count);
      comm.allreduce(inputs[r], outputs[r], tutti::op::sum);
    });
    for (auto& e : errors) REQUIRE_FALSE(e);
    for (int r = 1; r < world; ++r)
      CHECK(std::memcmp(outputs[0].data(), outputs[static_cast<std::size_t>(r)].data(), count * sizeof(float)) == 0);
    for (std::size_t i = 0; i < count; ++i) {
      double exact = 0, magnitude = 0;
      for (const auto& in : inputs) exact += in[i], magnitude += std::abs(in[i]);
      CHECK(std::abs(outputs[0][i] - exact) <= magnitude * world * 6e-8);  // (n - 1) roundings of 2^-24
    }
  }
}

// With the check turned off (TUTTI_CHECK=0) nothing compares the calls: a frame whose data is not
// what this rank's call expects is still an error on every rank, naming the peer and the size.
TEST_CASE("eager: unchecked calls of different counts fail naming the peer and its frame's size") {
  using comm_t = tutti::communicator<tutti::transport::inproc, tutti::algorithm::eager>;
  std::vector<std::string> messages(2);
  auto errors = tutti::transport::inproc::run(2, [&](tutti::transport::inproc& t) {
    tutti::communicator_options o;
    o.check = false;
    comm_t comm(t, o);
    std::vector<float> v(comm.rank() == 0 ? 8 : 9, 1.0f);
    try {
      comm.allreduce(v, tutti::op::sum);
    } catch (const tutti::invalid_argument& e) {
      messages[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (auto& e : errors) REQUIRE_FALSE(e);
  CHECK(messages[0].find("rank 1's frame held 36 bytes of data") != std::string::npos);
  CHECK(messages[1].find("rank 0's frame held 32 bytes of data") != std::string::npos);
}
