//! What TUTTI_LOG shows a user: at info one line per communicator (rank/world, transport,
//! algorithm, codec, fusion, node); at debug one line per collective with its kind, count, dtype,
//! op, algorithm and duration; a warning when from_env() finds no launcher; one rank prefix per
//! line; what algorithm::automatic resolved to and the nodes in plain words. stderr is redirected
//! to a file while each case runs (forked ranks write to the same file).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <tutti/testing/node_aware_world.hpp>
#include <tutti/tutti.hpp>

namespace {

//! Runs fn with stderr going to a temporary file and the log level set; returns what was written.
template <class F>
std::string captured_stderr(tutti::log_level level, F&& fn) {
  char path[] = "/tmp/tutti-log-test.XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  tutti::set_log_level(level);
  try {
    fn();
  } catch (...) {
    tutti::set_log_level(tutti::log_level::warn);
    std::fflush(stderr);
    ::dup2(saved, 2);
    throw;
  }
  tutti::set_log_level(tutti::log_level::warn);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

std::vector<std::string> lines_matching(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, re)) out.push_back(line);
  return out;
}

using comm_t = tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring>;

}  // namespace

TEST_CASE("logging: info names each communicator once; debug times each collective; one rank prefix") {
  const std::string text = captured_stderr(tutti::log_level::debug, [] {
    tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) {
      comm_t comm(t);
      std::vector<float> v(1000, 1.0f);
      comm.allreduce(v, tutti::op::sum);
      std::vector<std::int64_t> w(7, 2);
      comm.broadcast(w, 1);
    });
  });
  CAPTURE(text);
  const auto made = lines_matching(
      text, R"(^\[tutti [01]\] info: communicator: rank [01] of 2; transport inproc \(made by the caller\); )"
            R"(algorithm ring; codec none; fusion none; node )");
  CHECK(made.size() == 2);
  const auto reduced =
      lines_matching(text, R"(^\[tutti [01]\] debug: allreduce #1: 1000 float, op sum, algorithm ring: [0-9.]+ ms$)");
  CHECK(reduced.size() == 2);
  const auto broadcast =
      lines_matching(text, R"(^\[tutti [01]\] debug: broadcast #2: 7 int64, root 1, algorithm ring: [0-9.]+ ms$)");
  CHECK(broadcast.size() == 2);
  // Every line carries one rank prefix, and none repeats "rank N:" after it.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    CHECK_MESSAGE(std::regex_search(line, std::regex(R"(^\[tutti [0-9?]+\] (warn|info|debug|trace): )")), line);
    CHECK_MESSAGE(line.find("rank 0: ") == std::string::npos, line);
  }
}

TEST_CASE("logging: nothing below warn by default, and the warn level stays quiet for a healthy job") {
  const std::string text = captured_stderr(tutti::log_level::warn, [] {
    tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) {
      comm_t comm(t);
      std::vector<float> v(10, 1.0f);
      comm.allreduce(v, tutti::op::sum);
    });
  });
  CHECK(text.empty());
}

TEST_CASE("logging: from_env() without any launcher warns that the process runs alone") {
  for (const char* v : {"TUTTI_RANK", "TUTTI_WORLD_SIZE", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"})
    if (std::getenv(v)) {
      MESSAGE("skipped: " << v << " is set (this test needs a process that no launcher started)");
      return;
    }
  const std::string text = captured_stderr(tutti::log_level::warn, [] {
    auto comm = tutti::communicator<tutti::transport::shm, tutti::algorithm::ring>::from_env();
    CHECK(comm.size() == 1);
  });
  CHECK_MESSAGE(text.find("[tutti 0] warn: no launcher's variables found") != std::string::npos, text);
  CHECK_MESSAGE(text.find("runs alone, as rank 0 of 1; start it with tutti-run -n N") != std::string::npos, text);
}

TEST_CASE("logging: info says what algorithm::automatic resolved to, and the node layout in words") {
  using auto_comm = tutti::communicator<tutti::transport::inproc, tutti::algorithm::automatic>;
  const std::string flat = captured_stderr(tutti::log_level::info, [] {
    tutti::transport::inproc::run(2, [](tutti::transport::inproc& t) { auto_comm comm(t); });
  });
  CAPTURE(flat);
  CHECK(lines_matching(flat, R"(; algorithm automatic \(ring\); codec none;)").size() == 2);

  // Over a node-aware transport: hierarchical<direct, ring> on even nodes of several ranks, the flat
  // ring otherwise (one rank per node: hierarchical's node level would only copy).
  // A user saw "2 node(s) of 2 2 rank(s)" here.
  using node_comm = tutti::communicator<tutti::testing::shm_node_aware, tutti::algorithm::automatic>;
  const auto announced = [](std::vector<std::string> ids) {
    return captured_stderr(tutti::log_level::info, [&] {
      const int world = static_cast<int>(ids.size());
      auto results = tutti::testing::fork_ranks(
          world, [&](const tutti::rank_info& info) { node_comm comm(tutti::testing::make_shm_node_aware(info, ids)); });
      tutti::testing::throw_if_any_failed(results, "node_aware<shm, shm>");
    });
  };
  const std::string even = announced({"a", "a", "b", "b"});
  CAPTURE(even);
  CHECK(lines_matching(even, R"(; algorithm automatic \(hierarchical<direct, ring>\); .*; 2 nodes of 2 ranks each; )").size() == 4);
  const std::string single = announced({"a", "b"});
  CAPTURE(single);
  CHECK(lines_matching(single, R"(; algorithm automatic \(ring: one rank per node\); )").size() == 2);
  const std::string uneven = announced({"a", "a", "b"});
  CAPTURE(uneven);
  CHECK(lines_matching(uneven, R"(; algorithm automatic \(ring: the nodes hold different numbers of ranks\); .*; )"
                               R"(2 nodes of 2 and 1 ranks; )").size() == 3);
}
