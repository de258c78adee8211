//! transport::shm between real processes: matching, fragmentation, failures, isolation, cleanup.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include <tutti/algorithm/ring.hpp>
#include <tutti/testing/fork_world.hpp>

namespace {

using tutti::testing::fork_ranks;
using tutti::testing::unique_job_id;
using shm = tutti::transport::shm;
using comm_t = tutti::communicator<shm, tutti::algorithm::ring>;

tutti::deadline soon() { return tutti::deadline::after(std::chrono::seconds(20)); }

int shm_entries(const std::string& job) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind("tutti-" + job + ".", 0) == 0) ++n;
  return n;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("shm: tagged messages between processes arrive whole and in order, across ring wrap-around") {
  const std::string job = unique_job_id("shmtest");
  auto results = fork_ranks(2, [](const tutti::rank_info& info) {
    tutti::transport::shm_options o;
    o.slots = 4;
    o.slot_bytes = 4096;  // a 1 MB message wraps the 16 KiB ring many times
    shm t(info, o);
    std::vector<std::uint32_t> big(250007);
    if (info.rank == 0) {
      for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint32_t>(i * 2654435761u);
      std::uint32_t small = 42;
      auto a = t.send(1, 7, &small, sizeof small);
      auto z = t.send(1, 8, nullptr, 0);  // zero bytes still travel, in order
      auto b = t.send(1, 9, big.data(), big.size() * 4);
      t.wait(a, soon());
      t.wait(z, soon());
      t.wait(b, soon());
    } else {
      std::uint32_t small = 0;
      auto a = t.recv(0, 7, &small, sizeof small);
      auto z = t.recv(0, 8, nullptr, 0);
      auto b = t.recv(0, 9, big.data(), big.size() * 4);
      t.wait(a, soon());
      t.wait(z, soon());
      t.wait(b, soon());
      if (small != 42) throw std::runtime_error("small message wrong");
      for (std::size_t i = 0; i < big.size(); ++i)
        if (big[i] != static_cast<std::uint32_t>(i * 2654435761u)) throw std::runtime_error("big message wrong at " + std::to_string(i));
    }
  }, job);
  for (auto& r : results) {
    INFO(r.error);
    CHECK(r.exit_code == 0);
  }
  CHECK(shm_entries(job) == 0);
}

TEST_CASE("shm: a receive whose size differs from the send is a transport_error naming both sizes") {
  auto results = fork_ranks(2, [](const tutti::rank_info& info) {
    shm t(info);
    std::vector<char> buf(16);
    if (info.rank == 0) {
      auto s = t.send(1, 3, buf.data(), 8);
      t.wait(s, soon());
    } else {
      auto r = t.recv(0, 3, buf.data(), 16);
      t.wait(r, soon());
    }
  });
  CHECK(results[0].exit_code == 0);  // the send completed eagerly
  CHECK(results[1].exit_code == 1);
  CHECK(contains(results[1].error, "expected 16 bytes"));
  CHECK(contains(results[1].error, "sent 8 bytes"));
}

TEST_CASE("shm: recv_up_to takes a shorter message, across fragments and ring wrap-around, and says its size") {
  static_assert(tutti::sized_receive_transport<shm>);
  auto results = fork_ranks(2, [](const tutti::rank_info& info) {
    shm t(info);
    // Shorter than the buffer: empty, one byte, several fragments; then exactly its size; then too long.
    const std::vector<std::size_t> sent = {0, 1, 300000, 4096, 4097};
    std::vector<unsigned char> buf(300001);
    for (std::size_t k = 0; k < sent.size(); ++k) {
      if (info.rank == 0) {
        std::fill(buf.begin(), buf.end(), static_cast<unsigned char>(k + 1));
        auto s = t.send(1, 7, buf.data(), sent[k]);
        t.wait(s, soon());
      } else {
        std::fill(buf.begin(), buf.end(), 0);
        std::size_t arrived = 12345;
        const std::size_t capacity = k < 3 ? buf.size() : 4096;
        auto r = t.recv_up_to(0, 7, buf.data(), capacity, &arrived);
        t.wait(r, soon());
        if (arrived != sent[k]) throw std::runtime_error("arrived " + std::to_string(arrived) + " of " + std::to_string(sent[k]));
        for (std::size_t i = 0; i < buf.size(); ++i)
          if (buf[i] != (i < sent[k] ? k + 1 : 0)) throw std::runtime_error("byte " + std::to_string(i) + " wrong");
      }
    }
  });
  CHECK(results[0].exit_code == 0);
  CHECK(results[1].exit_code == 1);  // only the last, too long
  CHECK(contains(results[1].error, "expected 4096 bytes"));
  CHECK(contains(results[1].error, "sent 4097 bytes"));
}

TEST_CASE("shm: a rank killed with SIGKILL mid-allreduce makes every survivor raise peer_lost naming it, quickly") {
  const std::string job = unique_job_id("shmkill");
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  const int world = 4, victim = 2;
  for (int r = 0; r < world; ++r) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string report = "no error";
      try {
        tutti::rank_info info;
        info.rank = r, info.world_size = world, info.local_rank = r, info.local_size = world, info.job_id = job;
        comm_t comm(std::make_unique<shm>(info));
        std::vector<float> v(4 << 20, 1.0f);
        for (int i = 0; i < 100000; ++i) comm.allreduce(v, tutti::op::max);  // runs until the kill
      } catch (const tutti::peer_lost& e) {
        report = "peer_lost " + std::to_string(e.peer()) + ": " + e.what();
      } catch (const std::exception& e) {
        report = std::string("other: ") + e.what();
      }
      [[maybe_unused]] auto n = ::write(fds[1], report.data(), report.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // well inside the allreduce loop
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(pids[victim], SIGKILL);
  std::vector<std::string> reports(world);
  for (int r = 0; r < world; ++r) {
    char buf[2048];
    for (ssize_t n; (n = ::read(pipes[r], buf, sizeof buf)) > 0;) reports[r].append(buf, static_cast<std::size_t>(n));
    ::close(pipes[r]);
    ::waitpid(pids[r], nullptr, 0);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  CHECK(seconds < 5.0);  // TUTTI_TIMEOUT is 300 s by default: this is detection, not a timeout
  int named_victim = 0;
  for (int r = 0; r < world; ++r) {
    if (r == victim) continue;
    INFO("rank ", r, ": ", reports[r]);
    CHECK(contains(reports[r], "peer_lost"));
    // each survivor learns of the victim directly, or of a survivor that gave up on it
    named_victim += contains(reports[r], "peer_lost " + std::to_string(victim));
  }
  CHECK(named_victim >= 1);
  CHECK(shm_entries(job) == 0);  // segments were unlinked once the job had started
}

TEST_CASE("shm: two jobs on one host do not see each other's segments") {
  std::vector<tutti::testing::fork_result> a, b;
  auto job = [](std::vector<tutti::testing::fork_result>& out, float value) {
    out = fork_ranks(3, [value](const tutti::rank_info& info) {
      comm_t comm(std::make_unique<shm>(info));
      for (int i = 0; i < 50; ++i) {
        std::vector<float> v(10000, value);
        comm.allreduce(v, tutti::op::sum);
        if (v[9999] != 3 * value) throw std::runtime_error("cross-talk between jobs");
      }
    });
  };
  std::thread ta(job, std::ref(a), 1.0f), tb(job, std::ref(b), 100.0f);
  ta.join();
  tb.join();
  for (auto* res : {&a, &b})
    for (auto& r : *res) {
      INFO(r.error);
      CHECK(r.exit_code == 0);
    }
}

TEST_CASE("shm: a job id outside the naming rule (bootstrap/job_name.hpp) is refused; a suffixed one is taken") {
  tutti::rank_info info;
  info.job_id = "a.b";  // '.' ends the job part of a segment name
  try {
    shm t(info);
    FAIL("job id 'a.b' was accepted");
  } catch (const tutti::invalid_argument& e) {
    CHECK(contains(e.what(), "rank 0: job id 'a.b' may only hold letters, digits, '-' and '_'"));
  }
  info.job_id.clear();
  CHECK_THROWS_AS(shm{info}, tutti::invalid_argument);
  // Longer than a launcher's 64 characters, as multi_node's per-node jobs are: still a segment name.
  info.job_id = unique_job_id("shmlong") + "-" + std::string(80, 'x');
  shm t(info);
  CHECK(t.world_size() == 1);
}

TEST_CASE("shm: a job id already in use is refused with a clear error, not joined") {
  const std::string job = unique_job_id("shmdup");
  // Rank 0 of a 2-rank job waits for a rank 1 that never comes, holding its segment name.
  std::thread holder([&] {
    auto r = fork_ranks(2, [](const tutti::rank_info& info) {
      if (info.rank == 1) return;  // never joins
      tutti::transport::shm_options o;
      o.bootstrap_timeout = std::chrono::milliseconds(1500);
      shm t(info, o);
    }, job);
    CHECK(r[0].exit_code == 1);
    CHECK(contains(r[0].error, "rank 1 did not create its segment"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // While it waits its segment exists, private to this user.
  struct stat st {};
  REQUIRE(::stat(("/dev/shm/tutti-" + job + ".0").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto dup = fork_ranks(1, [](const tutti::rank_info& info) {
    tutti::rank_info again = info;
    again.world_size = 2;
    again.local_size = 2;
    shm t(again);  // rank 0 of the same job id: its name is taken
  }, job);
  CHECK(dup[0].exit_code == 1);
  CHECK(contains(dup[0].error, "already exists"));
  holder.join();
  CHECK(shm_entries(job) == 0);  // the timed-out rank removed its segment
}

TEST_CASE("shm: from_env reads the tutti-run variables") {
  auto results = fork_ranks(1, [](const tutti::rank_info&) {
    ::setenv("TUTTI_RANK", "0", 1);
    ::setenv("TUTTI_WORLD_SIZE", "1", 1);
    ::setenv("TUTTI_JOB_ID", unique_job_id("shmenv").c_str(), 1);
    auto comm = comm_t::from_env();
    std::vector<int> v(3, 5);
    comm.allreduce(v, tutti::op::sum);
    if (comm.size() != 1 || v[2] != 5) throw std::runtime_error("from_env world wrong");
  });
  INFO(results[0].error);
  CHECK(results[0].exit_code == 0);
}

TEST_CASE("shm: ranks that build a transport and leave at once are not reported dead to slower peers") {
  // Construction is collective: it returns once every peer has mapped this rank's segment. A rank
  // may then leave straight away (no collective at all); peers still starting up must not take
  // that for a death during startup. Repeated, because who finishes first varies.
  for (int round = 0; round < 20; ++round) {
    const std::string job = unique_job_id("shmquick");
    auto results = fork_ranks(5, [](const tutti::rank_info& info) { shm t(info); }, job);
    for (std::size_t r = 0; r < results.size(); ++r) {
      INFO("round ", round, " rank ", r, ": ", results[r].error);
      CHECK(results[r].exit_code == 0);
    }
    CHECK(shm_entries(job) == 0);
  }
}
