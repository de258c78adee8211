//! transport::node_aware<shm, shm> over forked processes on simulated nodes: routing by node, the
//! node map handed to algorithms, hierarchical<direct, ring> running direct over the node transport,
//! and automatic choosing hierarchical for even nodes and the flat ring for uneven ones; lossy codecs
//! compressing the inter-node level only, as a multi-node job runs them; hierarchical's pipelined
//! allreduce (the network level on a worker thread), its results and its failures.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/feedback_conformance.hpp>
#include <tutti/testing/node_aware_world.hpp>
#include <tutti/algorithm/automatic.hpp>
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/onebit.hpp>

namespace {
using namespace tutti::testing;
using direct_in_nodes = tutti::algorithm::hierarchical<tutti::algorithm::direct, tutti::algorithm::ring>;
using hier_blocked = node_aware_world<direct_in_nodes, blocked_nodes<2>>;
using hier_interleaved = node_aware_world<direct_in_nodes, interleaved_nodes<3>>;
using auto_blocked = node_aware_world<tutti::algorithm::automatic, blocked_nodes<3>>;
using auto_uneven = node_aware_world<tutti::algorithm::automatic, uneven_nodes>;
// Codecs: hierarchical quantises across nodes only; automatic on uneven nodes runs the flat ring.
using int8_blocked = node_aware_world<direct_in_nodes, blocked_nodes<2>, tutti::codec::int8>;
using fp16_interleaved = node_aware_world<tutti::algorithm::automatic, interleaved_nodes<3>, tutti::codec::fp16>;
using bf16_uneven = node_aware_world<tutti::algorithm::automatic, uneven_nodes, tutti::codec::bf16>;
using onebit_blocked = node_aware_world<direct_in_nodes, blocked_nodes<2>, tutti::codec::onebit>;
// hierarchical's pipelined allreduce and allgather (the network level of each chunk on a worker
// thread): chunks of 4 KiB per local rank cut the suites' large counts into tens of chunks;
// lossless, a lossy codec and an error-feedback codec (each chunk's residual slice).
using pipelined_blocked = node_aware_world<direct_in_nodes, blocked_nodes<2>, tutti::codec::none, 4096>;
using pipelined_int8 = node_aware_world<direct_in_nodes, interleaved_nodes<3>, tutti::codec::int8, 4096>;
using pipelined_onebit = node_aware_world<direct_in_nodes, blocked_nodes<2>, tutti::codec::onebit, 4096>;

static_assert(std::is_same_v<tutti::algorithm::automatic::for_transport<shm_node_aware>, direct_in_nodes>,
              "automatic over a node-aware transport is hierarchical<direct, ring>");
}  // namespace

TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, hier_blocked, auto_uneven, pipelined_blocked);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, hier_interleaved);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, hier_blocked, pipelined_blocked);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, hier_interleaved, auto_uneven);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, hier_blocked);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, auto_blocked);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, hier_blocked, auto_uneven);
TEST_CASE_TEMPLATE_INVOKE(compressed_allreduce_conformance, int8_blocked, fp16_interleaved, bf16_uneven, pipelined_int8);
TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance, onebit_blocked, pipelined_onebit);

TEST_CASE("node_aware: messages to node peers go through the node transport, the rest through the network") {
  using namespace tutti;
  // 4 ranks on 2 nodes interleaved: rank r on node r % 2. Rank 0 sends to 2 (same node) and 1 (other).
  const std::vector<std::string> ids{"a", "b", "a", "b"};
  auto results = fork_ranks(4, [&](const rank_info& info) {
    auto t = make_shm_node_aware(info, ids);
    if (t->nodes().nodes() != 2 || t->local_rank() != info.rank / 2) throw error("wrong node map");
    int value = info.rank * 10, got = -1;
    const int same = (info.rank + 2) % 4, other = info.rank ^ 1;
    for (int peer : {same, other}) {
      auto s = t->send(peer, 7, &value, sizeof value);
      auto r = t->recv(peer, 7, &got, sizeof got);
      if (s.on_node != (peer == same) || r.on_node != (peer == same)) throw error("routed a message to the wrong side");
      t->wait(s, deadline::after(std::chrono::seconds(10)));
      t->wait(r, deadline::after(std::chrono::seconds(10)));
      if (got != peer * 10) throw error("rank " + std::to_string(info.rank) + " got " + std::to_string(got));
    }
  });
  for (std::size_t r = 0; r < results.size(); ++r) CHECK_MESSAGE(results[r].exit_code == 0, results[r].error);
}

TEST_CASE("node_aware: a peer on another node that dies is reported as peer_lost naming it") {
  using namespace tutti;
  const std::vector<std::string> ids{"a", "b"};
  auto results = fork_ranks(2, [&](const rank_info& info) {
    auto t = make_shm_node_aware(info, ids);
    if (info.rank == 1) ::_exit(0);  // leaves without a word
    int got = 0;
    auto r = t->recv(1, 3, &got, sizeof got);
    try {
      t->wait(r, deadline::after(std::chrono::seconds(10)));
    } catch (const peer_lost& e) {
      if (e.peer() != 1) throw error("peer_lost names rank " + std::to_string(e.peer()));
      return;
    }
    throw error("no peer_lost");
  });
  CHECK_MESSAGE(results[0].exit_code == 0, results[0].error);
}

TEST_CASE("node_aware: a deadline names the operation and the peer waited on") {
  using namespace tutti;
  const std::vector<std::string> ids{"a", "b"};
  auto results = fork_ranks(2, [&](const rank_info& info) {
    auto t = make_shm_node_aware(info, ids);
    if (info.rank == 1) {  // alive but silent past rank 0's deadline
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return;
    }
    int got = 0;
    auto r = t->recv(1, 3, &got, sizeof got);
    try {
      t->wait(r, deadline::after(std::chrono::milliseconds(300)));
    } catch (const timeout& e) {
      const std::string what = e.what();
      if (what.find("rank 0: transport::node_aware: network receive of 4 bytes from rank 1 with tag 3 did not "
                    "complete before the deadline (TUTTI_TIMEOUT): waited on rank 1") == std::string::npos)
        throw error("the timeout does not name the operation and its peer: " + what);
      return;
    }
    throw error("no timeout");
  });
  for (std::size_t r = 0; r < results.size(); ++r) CHECK_MESSAGE(results[r].exit_code == 0, results[r].error);
}

TEST_CASE("communicator: a collective that some ranks never call times out naming every rank that did not") {
  using namespace tutti;
  // 4 ranks on 2 nodes; ranks 2 and 3 never call the allreduce (they only outlive the deadline).
  const std::vector<std::string> ids{"a", "a", "b", "b"};
  auto results = fork_ranks(4, [&](const rank_info& info) {
    ::setenv("TUTTI_TIMEOUT", "1", 1);
    communicator<shm_node_aware, algorithm::ring> comm(make_shm_node_aware(info, ids));
    if (info.rank >= 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      return;
    }
    std::vector<float> v(16, 1.0f);
    try {
      comm.allreduce(v, op::sum);
    } catch (const timeout& e) {
      const std::string what = e.what();
      if (what.find("allreduce #1") == std::string::npos ||
          what.find("nothing had arrived from ranks 2, 3") == std::string::npos)
        throw error("the timeout does not name ranks 2 and 3: " + what);
      return;
    }
    throw error("no timeout");
  });
  for (std::size_t r = 0; r < results.size(); ++r) CHECK_MESSAGE(results[r].exit_code == 0, results[r].error);
}

TEST_CASE("node_aware: a lost peer on this node is named by job ranks only, never the node transport's local ones") {
  using namespace tutti;
  // Ranks 1 and 3 share node b, where the node transport numbers them 0 and 1. Rank 1 leaves while
  // rank 3 waits for it; a user saw "rank 3: rank 1 on this node is lost (the node transport numbers
  // it local rank 0): rank 1: receive of 4 bytes from rank 0: rank 0 is gone" — ranks 1 and 0 of
  // the last part being node b's local numbers.
  const std::vector<std::string> ids{"a", "b", "a", "b"};
  auto results = fork_ranks(4, [&](const rank_info& info) {
    auto t = make_shm_node_aware(info, ids);
    if (info.rank == 1) ::_exit(0);
    if (info.rank != 3) return;
    int got = 0;
    auto r = t->recv(1, 3, &got, sizeof got);
    try {
      t->wait(r, deadline::after(std::chrono::seconds(10)));
    } catch (const peer_lost& e) {
      if (e.peer() != 1) throw error("peer_lost names rank " + std::to_string(e.peer()));
      const std::string what = e.what();
      const std::regex rank_number(R"(rank (\d+))");
      for (std::sregex_iterator m(what.begin(), what.end(), rank_number), end; m != end; ++m)
        if ((*m)[1] != "1" && (*m)[1] != "3") throw error("a rank number that is not rank 1's or 3's: " + what);
      if (what.find("local rank") != std::string::npos) throw error("a local rank in the text: " + what);
      if (what.find("receive of 4 bytes from rank 1") == std::string::npos) throw error("the operation is not named: " + what);
      return;
    }
    throw error("no peer_lost");
  });
  for (int r : {0, 2, 3}) CHECK_MESSAGE(results[static_cast<std::size_t>(r)].exit_code == 0, results[static_cast<std::size_t>(r)].error);
}

namespace {
//! The names of this process's threads (/proc/self/task/*/comm).
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}
}  // namespace

// The pipeline is what ran (the suites above would pass with the phases in turn too): the worker
// thread exists after a pipelined allreduce, not before, and the result is exact.
TEST_CASE("hierarchical: a large allreduce over node_aware pipelines on a worker thread, exactly") {
  using namespace tutti;
  const std::vector<std::string> ids{"a", "a", "b", "b"};
  auto results = fork_ranks(4, [&](const rank_info& info) {
    communicator_options o = communicator_options::from_env();
    o.chunk_bytes = 4096;
    communicator<shm_node_aware, direct_in_nodes> comm(make_shm_node_aware(info, ids), o);
    auto has_worker = [] {
      const auto names = thread_names();
      return std::find(names.begin(), names.end(), "tutti-inter") != names.end();
    };
    std::vector<float> v(1000, 1.0f);  // 500 per local rank: one chunk, no pipeline
    comm.allreduce(v, op::sum);
    if (has_worker()) throw error("a one-chunk allreduce started the pipeline's worker");
    std::vector<std::int32_t> w(100003);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int32_t>(i % 1000) * (info.rank + 1);
    comm.allreduce(w, op::sum);
    if (!has_worker()) throw error("no tutti-inter thread after a 100,003-element allreduce in 4 KiB chunks");
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i] != static_cast<std::int32_t>(i % 1000) * 10)
        throw error("element " + std::to_string(i) + " is " + std::to_string(w[i]));
  });
  for (std::size_t r = 0; r < results.size(); ++r) CHECK_MESSAGE(results[r].exit_code == 0, results[r].error);
}

// A rank lost in the middle of the pipeline: its node peer sees it on the node level (this
// thread), the rank with its local index on the other node on the network level (the worker's):
// both name it, the worker's error reaches the caller, and nobody waits for the deadline.
TEST_CASE("hierarchical: a rank lost during the pipeline is named by the ranks that wait on it, in either level") {
  using namespace tutti;
  const std::vector<std::string> ids{"a", "a", "b", "b"};
  auto results = fork_ranks(4, [&](const rank_info& info) {
    ::setenv("TUTTI_TIMEOUT", "20", 1);
    communicator_options o = communicator_options::from_env();
    o.chunk_bytes = 4096;
    communicator<shm_node_aware, direct_in_nodes> comm(make_shm_node_aware(info, ids), o);
    if (info.rank == 3) ::_exit(0);  // leaves without a word
    std::vector<float> v(1 << 20, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.allreduce(v, op::sum);
    } catch (const peer_lost& e) {
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (took > 10) throw error("peer_lost after " + std::to_string(took) + " s: " + e.what());
      if (info.rank != 0 && e.peer() != 3) throw error("peer_lost names rank " + std::to_string(e.peer()) + ": " + e.what());
      return;
    }
    throw error("no peer_lost");
  });
  for (std::size_t r = 0; r < 3; ++r) CHECK_MESSAGE(results[r].exit_code == 0, results[r].error);
}
