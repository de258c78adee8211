//! @file job_key_launch_test.cpp  The key tutti-run makes reaches the ranks through their environment
//! only: it is in no process's command line (/proc/<pid>/cmdline of the launcher and the ranks), not
//! in the launcher's own environment, and in none of the ranks' output, logs (TUTTI_LOG=debug) or
//! the texts of the store's errors (a timeout, a wrong-key refusal on both sides).
//!
//! The ranks are this test program again (/proc/self/exe), running the skipped test case below
//! (--no-skip), so they use the real tcp_store from the real environment tutti-run gives them.
#include <doctest/doctest.h>

#if TUTTI_HAVE_NET
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

#include "support/launch_self.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

//! The value of `name` in a NUL-separated environment block ("" when absent).
std::string env_value(const std::string& block, const std::string& name) {
  std::size_t at = 0;
  while (at < block.size()) {
    const auto end = std::min(block.find('\0', at), block.size());
    const std::string_view entry(block.data() + at, end - at);
    if (entry.starts_with(name + "=")) return std::string(entry.substr(name.size() + 1));
    at = end + 1;
  }
  return "";
}

//! The parent pid of `pid` (from /proc/<pid>/stat; -1 when it is gone).
pid_t parent_of(pid_t pid) {
  const auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

bool wait_for(const std::string& path, pid_t launcher, clock_type::time_point until) {
  while (clock_type::now() < until) {
    if (fs::exists(path)) return true;
    if (::waitpid(launcher, nullptr, WNOHANG) == launcher) return false;  // the job ended early
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

// One rank of the job the test below starts (skipped unless run with --no-skip, as it is there).
TEST_CASE("job key rank: use the store from tutti-run's environment, provoke its errors, wait to be scanned" *
          doctest::skip()) {
  const char* dir = std::getenv("TUTTI_KEY_TEST_DIR");
  REQUIRE(dir != nullptr);
  const int rank = std::atoi(std::getenv("TUTTI_RANK"));
  const int world = std::atoi(std::getenv("TUTTI_WORLD_SIZE"));
  auto options = tutti::bootstrap::tcp_store_options::from_env(rank, rank == 0);
  tutti::bootstrap::tcp_store store(options);
  store.set("rank/" + std::to_string(rank), tutti::bootstrap::store_bytes{1});
  store.barrier("up", world, tutti::deadline::after(20s));
  try {  // a timeout: its text goes to stderr, which tutti-run passes on
    (void)store.get("never/set", tutti::deadline::after(200ms));
  } catch (const tutti::error& e) {
    std::fprintf(stderr, "rank %d timeout error: %s\n", rank, e.what());
  }
  // Ready to be scanned: say so with this pid, then wait (bounded) until the test has looked.
  std::ofstream(std::string(dir) + "/ready." + std::to_string(rank)) << ::getpid() << "\n";
  const auto until = clock_type::now() + 20s;
  while (!fs::exists(std::string(dir) + "/scanned") && clock_type::now() < until) std::this_thread::sleep_for(10ms);
  store.barrier("scanned", world, tutti::deadline::after(20s));
  if (rank == 1) {  // a client with the key changed: refused, and rank 0's server logs why
    std::string wrong(reinterpret_cast<const char*>(options.key.bytes().data()), options.key.size());
    std::reverse(wrong.begin(), wrong.end());
    auto bad = options;
    bad.key = tutti::bootstrap::job_key(wrong);
    OPENSSL_cleanse(wrong.data(), wrong.size());
    try {
      tutti::bootstrap::tcp_store refused(bad);
    } catch (const tutti::error& e) {
      std::fprintf(stderr, "rank %d wrong-key error: %s\n", rank, e.what());
    }
  }
}

TEST_CASE("job key: under tutti-run the key is in the ranks' environment only, never in argv, output, logs or errors") {
#ifndef TUTTI_TEST_RUN_PATH
  MESSAGE("skipped: tutti-run is not built in this tree (TUTTI_BUILD_TOOLS=OFF)");
#else
  const std::string dir = "/tmp/tutti-key-launch-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const pid_t launcher = tutti_test::launch_self(
      {TUTTI_TEST_RUN_PATH, {"-n", "2"}, "job key rank:*",
       {{"TUTTI_KEY_TEST_DIR", dir},
        {"TUTTI_LOG", "debug"},  // every log line the store writes, to look through
        // tutti-run makes the key and the address
        {"TUTTI_JOB_KEY", std::nullopt}, {"TUTTI_JOB_KEY_FILE", std::nullopt}, {"TUTTI_STORE_ADDR", std::nullopt},
        {"MASTER_ADDR", std::nullopt}, {"MASTER_PORT", std::nullopt}},
       dir + "/out", dir + "/err"});
  REQUIRE(launcher >= 0);
  const auto until = clock_type::now() + 60s;
  bool ready = true;
  for (int r = 0; r < 2; ++r) ready = ready && wait_for(dir + "/ready." + std::to_string(r), launcher, until);
  std::string key;
  if (ready) {
    std::vector<pid_t> ranks;
    for (int r = 0; r < 2; ++r) ranks.push_back(std::atoi(read_file(dir + "/ready." + std::to_string(r)).c_str()));
    // Only this job's processes: the launcher we forked and its two children, checked as such.
    for (const pid_t p : ranks) CHECK(parent_of(p) == launcher);
    key = env_value(read_file("/proc/" + std::to_string(ranks[0]) + "/environ"), "TUTTI_JOB_KEY");
    CHECK(key.size() == 64);  // 32 random bytes in hex
    CHECK(env_value(read_file("/proc/" + std::to_string(ranks[1]) + "/environ"), "TUTTI_JOB_KEY") == key);
    if (key.size() == 64) {
      for (const pid_t p : {launcher, ranks[0], ranks[1]}) {
        CAPTURE(p);
        const auto cmdline = read_file("/proc/" + std::to_string(p) + "/cmdline");
        CHECK(!cmdline.empty());
        CHECK(cmdline.find(key) == std::string::npos);
        CHECK(cmdline.find(key.substr(0, 16)) == std::string::npos);  // nor a part of it
        struct stat st {};  // the environment that holds it: readable by its owner only
        REQUIRE(::stat(("/proc/" + std::to_string(p) + "/environ").c_str(), &st) == 0);
        CHECK((st.st_mode & 077) == 0);
      }
      // The launcher keeps it in its memory for the ranks' environments, not in its own.
      CHECK(read_file("/proc/" + std::to_string(launcher) + "/environ").find(key) == std::string::npos);
    }
  }
  std::ofstream(dir + "/scanned") << "done\n";
  const int status = tutti_test::wait_bounded(launcher, until);
  const auto out = read_file(dir + "/out"), err = read_file(dir + "/err");
  INFO("stdout:\n" << out << "\nstderr:\n" << err);
  REQUIRE(ready);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The errors and logs did happen (so their texts were looked at) ...
  CHECK(err.find("rank 0 timeout error: rank 0: tcp_store: key 'never/set'") != std::string::npos);
  CHECK(err.find("rank 1 timeout error: rank 1: tcp_store: key 'never/set'") != std::string::npos);
  CHECK(err.find("rank 1 wrong-key error: rank 1: authentication with the tcp_store at 127.0.0.1:") !=
        std::string::npos);
  CHECK(err.find("warn: tcp_store: closing the connection from ") != std::string::npos);
  CHECK(err.find("authentication failed") != std::string::npos);
  CHECK(err.find("debug: tcp_store: ") != std::string::npos);
  // ... and none holds the key, whole or in part.
  REQUIRE(key.size() == 64);
  for (const auto* text : {&out, &err}) {
    CHECK(text->find(key) == std::string::npos);
    CHECK(text->find(key.substr(0, 16)) == std::string::npos);
    CHECK(text->find(key.substr(48)) == std::string::npos);
  }
  fs::remove_all(dir);
#endif
}

#else

TEST_CASE("job key launch: not built (OpenSSL's libcrypto not found, so tutti::net is missing)") {
  MESSAGE("skipped: tutti::net (OpenSSL libcrypto) is not available");
}

#endif
