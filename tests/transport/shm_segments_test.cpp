//! @file shm_segments_test.cpp  What transport::shm leaves in /dev/shm (docs/reliability.md, issue 23):
//! each rank's segment is 0600 and its user's while the job starts, its name is gone as soon as
//! every peer has mapped it (while the ranks still run), and a rank SIGKILLed in the start-up
//! window, before that, leaves nothing once tutti-run has finished the job.
//! (shm_test.cpp has the SIGKILL mid-allreduce, the refused duplicate job id and quick leavers.)
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tutti/testing/fork_world.hpp>

#include "support/launch_self.hpp"

namespace {

using namespace std::chrono_literals;
using tutti::testing::fork_ranks;
using tutti::testing::unique_job_id;
using shm = tutti::transport::shm;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::vector<std::string> shm_names(const std::string& job) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind("tutti-" + job + ".", 0) == 0) out.push_back(e.path().string());
  return out;
}

//! Waits (bounded) for `path` to exist.
bool wait_for(const std::string& path, std::chrono::milliseconds limit) {
  const auto until = clock_type::now() + limit;
  while (!fs::exists(path))
    if (clock_type::now() >= until) return false;
    else std::this_thread::sleep_for(5ms);
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("shm segments: 0600 and this user's while the job starts; unlinked once every rank mapped them, ranks still running") {
  const std::string job = unique_job_id("shmseg");
  const std::string dir = "/tmp/tutti-shmseg-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const mode_t old_umask = ::umask(0);  // the most permissive umask: the mode must not depend on it
  std::vector<tutti::testing::fork_result> results;
  std::thread job_thread([&] {
    results = fork_ranks(3, [&dir](const tutti::rank_info& info) {
      if (info.rank == 2)  // late: ranks 0 and 1 wait for it, holding their names, while the test looks
        if (!wait_for(dir + "/looked", 20s)) throw std::runtime_error("the test never looked at the segments");
      shm t(info);  // returns once every peer has mapped this rank's segment
      std::ofstream(dir + "/started." + std::to_string(info.rank)) << "yes\n";
      if (!wait_for(dir + "/done", 20s)) throw std::runtime_error("the test never finished looking");
      // The memory is still shared after the names went: a message still travels.
      int v = info.rank;
      if (info.rank == 0) {
        auto r = t.send(1, 1, &v, sizeof v);
        t.wait(r, tutti::deadline::after(20s));
      }
      if (info.rank == 1) {
        auto r = t.recv(0, 1, &v, sizeof v);
        t.wait(r, tutti::deadline::after(20s));
        if (v != 0) throw std::runtime_error("wrong value after unlink");
      }
    }, job);
  });
  // Ranks 0 and 1 have created their segments and wait for rank 2.
  const auto until = clock_type::now() + 20s;
  while (shm_names(job).size() < 2 && clock_type::now() < until) std::this_thread::sleep_for(5ms);
  const auto names = shm_names(job);
  CHECK(names.size() == 2);
  for (const auto& name : names) {
    CAPTURE(name);
    struct stat st {};
    REQUIRE(::stat(name.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_uid == ::getuid());
    CHECK(::access(name.c_str(), F_OK) == 0);
  }
  std::ofstream(dir + "/looked") << "yes\n";
  // Every rank has built its transport (and is still running, waiting for "done"): no name is left.
  bool started = true;
  for (int r = 0; r < 3; ++r) started = started && wait_for(dir + "/started." + std::to_string(r), 20s);
  CHECK(started);
  CHECK(shm_names(job).empty());
  std::ofstream(dir + "/done") << "yes\n";
  job_thread.join();
  ::umask(old_umask);
  for (const auto& r : results) {
    INFO(r.error);
    CHECK(r.exit_code == 0);
  }
  CHECK(shm_names(job).empty());
  fs::remove_all(dir);
}

// One rank of the tutti-run job below (skipped unless run with --no-skip, as it is there): rank 0
// starts its transport and is SIGKILLed while it waits for rank 1, which never comes, so its
// segment's name is still there when it dies.
TEST_CASE("shm segments rank: SIGKILLed during start-up" * doctest::skip()) {
  const char* dir = std::getenv("TUTTI_SHMSEG_TEST_DIR");
  REQUIRE(dir != nullptr);
  auto info = tutti::rank_info_from_env();
  if (info.rank != 0) {
    ::pause();  // never joins; tutti-run stops it once rank 0 is killed (bounded by the test's alarm)
    return;
  }
  const std::string name = "/dev/shm/tutti-" + info.job_id + ".0";
  std::thread killer([&] {
    if (wait_for(name, 20s)) std::ofstream(std::string(dir) + "/seen") << name << "\n";
    ::raise(SIGKILL);
  });
  tutti::transport::shm_options o;
  o.bootstrap_timeout = 30s;
  shm t(info, o);  // never returns: rank 1 never comes, and the killer strikes first
  killer.join();
}

TEST_CASE("shm segments: a rank SIGKILLed during start-up leaves nothing once tutti-run has finished the job") {
#ifndef TUTTI_TEST_RUN_PATH
  MESSAGE("skipped: tutti-run is not built in this tree (TUTTI_BUILD_TOOLS=OFF)");
#else
  const std::string job = unique_job_id("shmsegkill");
  const std::string dir = "/tmp/tutti-shmsegkill-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const pid_t launcher = tutti_test::launch_self(
      {TUTTI_TEST_RUN_PATH, {"-n", "2", "--job-id", job, "--linger", "0", "--grace", "1"}, "shm segments rank:*",
       {{"TUTTI_SHMSEG_TEST_DIR", dir}}, dir + "/err", dir + "/err"});
  REQUIRE(launcher >= 0);
  const int status = tutti_test::wait_bounded(launcher, clock_type::now() + 60s);
  const auto err = read_file(dir + "/err");
  INFO("tutti-run's output:\n" << err);
  CHECK(fs::exists(dir + "/seen"));  // rank 0's segment existed when it was killed
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);  // a rank was killed: the job failed
  CHECK(err.find("rank 0") != std::string::npos);
  CHECK(err.find("tutti-run: removed 1 leftover shared-memory segment of job " + job) != std::string::npos);
  CHECK(shm_names(job).empty());
  for (const auto& name : shm_names(job)) fs::remove(name);  // never left for another test
  fs::remove_all(dir);
#endif
}
