//! @file fork_world.hpp  Test setup: ranks are forked processes talking over transport::shm.
//!
//! Lets one test executable run a suite over real processes for every world size, without a
//! launcher. Each child builds its own rank_info (a job id unique to this run), runs the body and
//! leaves with _exit, so the parent's test framework state is never duplicated on exit.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <tutti/communicator.hpp>
#include <tutti/core/message.hpp>
#include <tutti/transport/shm.hpp>

#include <tutti/testing/node_layout.hpp>

namespace tutti::testing {

//! A job id nobody else on this host uses: pid, a counter and a random number.
inline std::string unique_job_id(const char* prefix) {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return std::string(prefix) + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(rd());
}

//! What each forked rank did: exit code and, for an exception, its message.
struct fork_result {
  int exit_code = 0;   //!< 0 success, 1 exception, 128+n killed by signal n
  std::string error;   //!< what() of the exception the rank threw
};

//! Forks `world` ranks, runs body(rank_info) in each, waits for all. Exceptions thrown by a rank are
//! reported through a pipe. Returns per-rank results (does not throw for rank failures).
template <class Body>
std::vector<fork_result> fork_ranks(int world, Body&& body, const std::string& job_id = unique_job_id("t")) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  std::fflush(nullptr);
  for (int r = 0; r < world; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      int code = 0;
      try {
        rank_info info;
        info.rank = r;
        info.world_size = world;
        info.local_rank = r;
        info.local_size = world;
        info.job_id = job_id;
        body(info);
      } catch (const std::exception& e) {
        const std::string what = e.what();
        [[maybe_unused]] auto n = ::write(fds[1], what.data(), what.size());
        code = 1;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    ::close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<fork_result> results(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    auto& res = results[static_cast<std::size_t>(r)];
    char buf[4096];
    for (ssize_t n; (n = ::read(pipes[static_cast<std::size_t>(r)], buf, sizeof buf)) > 0;) res.error.append(buf, static_cast<std::size_t>(n));
    ::close(pipes[static_cast<std::size_t>(r)]);
    int status = 0;
    ::waitpid(pids[static_cast<std::size_t>(r)], &status, 0);
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return results;
}

//! Throws tutti::error listing every rank of `results` that failed (exit code and message);
//! `world_name` begins the message ("fork_world of 4 ranks failed: ...").
inline void throw_if_any_failed(const std::vector<fork_result>& results, const std::string& world_name) {
  std::string failures;
  for (std::size_t r = 0; r < results.size(); ++r)
    if (results[r].exit_code != 0)
      failures += rank_text(r) + " exited " + std::to_string(results[r].exit_code) + ": " + results[r].error + "\n";
  if (!failures.empty())
    throw error(world_name + " of " + std::to_string(results.size()) + " ranks failed:\n" + failures);
}

//! Layout (node_layout.hpp) places the ranks on simulated nodes; one node by default.
template <class Algorithm, class Layout = one_node, class Codec = codec::none>
struct fork_world {
  using communicator_type = communicator<transport::shm, Algorithm, Codec>;
  static constexpr const char* name = "shm (forked processes)";
  static std::vector<int> world_sizes() { return Layout::world_sizes(); }

  //! Runs fn(comm) on `world` forked ranks; throws tutti::error listing the ranks that failed.
  template <class F>
  static void run(int world, F&& fn) {
    auto results = fork_ranks(world, [&](const rank_info& info) {
      rank_info placed = info;
      placed.node_id = Layout::node_of(info.rank, world);
      communicator_type comm(std::make_unique<transport::shm>(placed));
      fn(comm);
    });
    throw_if_any_failed(results, "fork_world");
  }
};

}  // namespace tutti::testing
