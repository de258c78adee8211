//! The stall inspector (communicator/stall_inspector.hpp): a rank that waits in a collective longer
//! than TUTTI_STALL_WARN logs which ranks are in it, which are missing and what those were last
//! seen doing; at TUTTI_TIMEOUT every rank fails with the one verdict the first rank to give up
//! wrote. Over shm (processes, each rank's stderr to its own file): a rank that skips a collective,
//! a rank stopped by SIGSTOP (alive but stuck), a rank that calls a different collective (a blocking
//! one: a mismatch at once; a different tensor to allreduce_async: a stall), and TUTTI_STALL_WARN=0.
//! Across hosts: tests/netns (scenario stall).
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tutti/communicator/activity_record.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/transport/first_loss.hpp>
#include <tutti/tutti.hpp>

#include "support/stop_for.hpp"

namespace {

using namespace tutti;
using shm_ring = communicator<transport::shm, algorithm::ring>;

//! A directory of this test's own, removed at the end (kept, and named, with TUTTI_TEST_KEEP_LOGS=1):
//! rank r's stderr goes to rank<r>.log there.
struct log_dir {
  std::filesystem::path path;
  log_dir() {
    char templ[] = "/tmp/tutti-stall-test.XXXXXX";
    REQUIRE(::mkdtemp(templ) != nullptr);
    path = templ;
  }
  ~log_dir() {
    if (config::raw("TUTTI_TEST_KEEP_LOGS") == "1") std::printf("logs kept in %s\n", path.c_str());
    else std::filesystem::remove_all(path);
  }
  [[nodiscard]] std::string of(int r) const {
    std::ifstream in(path / ("rank" + std::to_string(r) + ".log"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void redirect(int r) const {
    REQUIRE(std::freopen((path / ("rank" + std::to_string(r) + ".log")).c_str(), "w", stderr) != nullptr);
    std::setvbuf(stderr, nullptr, _IONBF, 0);
  }
};

//! The text between "the job stalled: " and "; here: " in a rank's error.
std::string verdict_in(const std::string& what) {
  const auto b = what.find("the job stalled: ");
  const auto e = what.find("; here: ");
  if (b == std::string::npos || e == std::string::npos || e < b) return {};
  return what.substr(b + 17, e - b - 17);
}

//! Every rank failed with the same non-empty verdict, which contains `want`; returns it.
std::string one_verdict(const std::vector<testing::fork_result>& results, const std::string& want) {
  std::set<std::string> verdicts;
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << ": " << results[r].error);
    CHECK(results[r].exit_code == 1);
    verdicts.insert(verdict_in(results[r].error));
  }
  if (verdicts.size() != 1)
    for (std::size_t r = 0; r < results.size(); ++r) MESSAGE("rank " << r << ": " << results[r].error);
  REQUIRE(verdicts.size() == 1);
  const std::string v = *verdicts.begin();
  CHECK_MESSAGE(v.find(want) != std::string::npos, v);
  return v;
}

using tutti_test::stop_for;  // alive but stuck for a while (support/stop_for.hpp)

struct stall_env {
  stall_env(const char* warn, const char* timeout) {
    ::setenv("TUTTI_STALL_WARN", warn, 1);
    ::setenv("TUTTI_TIMEOUT", timeout, 1);
  }
};

//! 3 ranks over shm, each one's stderr in `logs`: one allreduce of `v` together, then then(comm, rank, v).
template <class Then>
std::vector<testing::fork_result> three_ranks(const log_dir& logs, const char* warn, const char* timeout, Then then) {
  return testing::fork_ranks(3, [&](const rank_info& info) {
    logs.redirect(info.rank);
    const stall_env env(warn, timeout);
    shm_ring comm(std::make_unique<transport::shm>(info));
    std::vector<float> v(64, 1.0f);
    comm.allreduce(v, op::sum);
    then(comm, info.rank, v);
  });
}

//! Ranks 0 and 2 (those left waiting) each logged every one of `texts`.
void both_warned(const log_dir& logs, std::initializer_list<std::string> texts) {
  for (int r : {0, 2}) {
    const auto log = logs.of(r);
    INFO("rank " << r << "'s log: " << log);
    CHECK(log.find("[tutti " + std::to_string(r) + "] warn: stall: ") != std::string::npos);
    for (const auto& t : texts) CHECK(log.find(t) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("activity_record: encoded and decoded whole, tensor names with spaces included; other text is refused") {
  detail::activity_record r{detail::pack_call(7, 0, detail::call_state::inside), 1000, 0, 0, 2000, 1500, "layer 1.weight"};
  const auto back = detail::activity_record::decode(r.encode());
  REQUIRE(back);
  CHECK(back->call == r.call);
  CHECK(back->call_since == 1000);
  CHECK(back->posted == 2000);
  CHECK(back->tensor_since == 1500);
  CHECK(back->tensor == "layer 1.weight");
  CHECK_FALSE(detail::activity_record::decode(""));
  CHECK_FALSE(detail::activity_record::decode("a1 7 1000"));
  CHECK_FALSE(detail::activity_record::decode("b2 1 2 3 4 5 6 x"));
}

TEST_CASE("stall diagnosis: the ranks in the collective, the silent ones in it, and what each missing rank did") {
  using detail::pack_call, detail::call_state;
  const std::uint64_t ar7 = pack_call(7, 0, call_state::inside);
  const std::int64_t now = 100'000;
  const auto post = [&](std::uint64_t call, std::int64_t since, std::int64_t posted) {
    return detail::activity_record{call, since, 0, 0, posted, 0, ""}.encode();
  };
  std::vector<std::string> posts{
      post(ar7, 39'000, now - 100),                                   // 0: in it (self)
      post(ar7, 40'000, now - 30'000),                                // 1: in it, silent 30 s
      post(pack_call(6, 0, call_state::returned), 38'000, now - 50),  // 2: skipped it
      post(pack_call(6, 0, call_state::returned), 38'000, now - 80),  // 3: the same
      post(pack_call(7, 3, call_state::inside), 39'500, now - 20),    // 4: a broadcast instead
      "",                                                             // 5: never posted
      post(ar7, 39'000, now - 10),                                    // 6: in it
  };
  const auto text = detail::diagnose(0, false, ar7, 39'000, now, 4000, posts);
  CHECK(text ==
        "allreduce #7 has waited 61 s on rank 0; in it: ranks 0, 6; in it but silent (stopped, or its host "
        "unreachable): rank 1 (in allreduce #7 for 60 s, silent for 30 s (stopped, or its host unreachable)); "
        "missing: ranks 2, 3 (returned from allreduce #6 62 s ago, alive); rank 4 (in broadcast #7 for 60 s, alive); "
        "rank 5 (no record: it has not started its communicator, or the board is out of reach)");
  // Every rank there and alive: the collective itself is what is slow.
  const std::vector<std::string> all_in{post(ar7, 39'000, now), post(ar7, 39'000, now)};
  CHECK(detail::diagnose(1, false, ar7, 39'000, now, 4000, all_in).ends_with(
      "in it: ranks 0, 1; none is missing: the collective itself is slow or stuck (a link, or a peer's network)"));
  // Ranks done with it (returned from it, or in a later call) are not missing: behind a slow link
  // the near side still waits while the far side has moved on (seen in the fault campaign).
  const std::vector<std::string> ahead{post(ar7, 39'000, now), post(pack_call(7, 0, call_state::returned), 40'000, now),
                                       post(pack_call(8, 0, call_state::inside), 40'000, now)};
  CHECK(detail::diagnose(0, false, ar7, 39'000, now, 4000, ahead) ==
        "allreduce #7 has waited 61 s on rank 0; in it: rank 0; past it (their part done): rank 1 (returned from "
        "allreduce #7 60 s ago, alive); rank 2 (in allreduce #8 for 60 s, alive); none is missing: the collective "
        "itself is slow or stuck (a link, or a peer's network)");
}

TEST_CASE("stall inspector over shm: a rank that skips a collective is named by the others' warning and by one verdict") {
  const log_dir logs;
  auto results = three_ranks(logs, "1.5", "4", [](shm_ring& comm, int rank, std::vector<float>& v) {
    if (rank != 1) return comm.allreduce(v, op::sum);
    std::this_thread::sleep_for(std::chrono::seconds(5));  // busy elsewhere, past the others' deadline
    comm.barrier();
  });
  const auto v = one_verdict(results, "missing: rank 1 (returned from allreduce #1 ");
  CHECK(v.find("allreduce #2 has waited ") == 0);
  CHECK(v.find("in it: ranks 0, 2; missing: rank 1 (returned from allreduce #1 ") != std::string::npos);
  CHECK(v.find(", alive)") != std::string::npos);
  CHECK(results[1].error.find("barrier #2") != std::string::npos);  // rank 1 learns it in its next collective
  both_warned(logs, {"allreduce #2 has waited 1.", "in it: ranks 0, 2; missing: rank 1 (returned from allreduce #1 "});
  CHECK(logs.of(1).find("stall:") == std::string::npos);  // it waited in nothing
}

TEST_CASE("stall inspector over shm: a rank stopped by SIGSTOP is named silent, and every rank fails with one verdict") {
  const log_dir logs;
  auto results = three_ranks(logs, "2", "4", [](shm_ring& comm, int rank, std::vector<float>& v) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));  // its watchdog posts "returned" first
      stop_for(6);  // continued after the others gave up: its allreduce then fails too
    }
    comm.allreduce(v, op::sum);
  });
  const auto v = one_verdict(results, "missing: rank 1 (returned from allreduce #1 ");
  CHECK(v.find("silent for ") != std::string::npos);
  CHECK(v.find("(stopped, or its host unreachable)") != std::string::npos);
  both_warned(logs, {"allreduce #2 has waited 2.", "missing: rank 1 (returned from allreduce #1 ",
                     "(stopped, or its host unreachable)"});
}

TEST_CASE("a rank calling a different blocking collective is a mismatch on every rank at once, not a stall") {
  // The argument check meets in every collective's first messages, so a different call never waits:
  // every rank names both calls. (With TUTTI_CHECK=0 the calls' messages collide instead.)
  auto results = testing::fork_ranks(3, [&](const rank_info& info) {
    const stall_env env("1", "20");
    communicator<transport::shm, algorithm::automatic> comm(std::make_unique<transport::shm>(info));
    std::vector<float> v(64, 1.0f);
    comm.allreduce(v, op::sum);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (info.rank == 1) comm.broadcast(v, 1);
      else comm.allreduce(v, op::sum);
    } catch (const mismatch& e) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5)) throw error("late: " + std::string(e.what()));
      throw;
    }
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << ": " << results[r].error);
    CHECK(results[r].error.find("ranks disagree: rank 0 has allreduce #2, rank 1 has broadcast #2") != std::string::npos);
  }
}

TEST_CASE("stall inspector: a rank that gives allreduce_async a different tensor is warned about, then failed by name") {
  const log_dir logs;
  auto results = testing::fork_ranks(3, [&](const rank_info& info) {
    logs.redirect(info.rank);
    const stall_env env("1", "10");
    ::setenv("TUTTI_STALL_TIMEOUT", "3", 1);
    shm_ring comm(std::make_unique<transport::shm>(info));
    comm.start_fusion_engine();
    std::vector<float> w(32, 1.0f);
    comm.allreduce_async(info.rank == 1 ? "layer.v" : "layer.w", w, op::sum).wait();
  });
  for (int r : {0, 1, 2}) {
    INFO("rank " << r << ": " << results[static_cast<std::size_t>(r)].error);
    CHECK(results[static_cast<std::size_t>(r)].error.find(r == 1 ? "tensor 'layer.v' was enqueued by rank(s) 1 but rank(s) 0, 2 have not"
                                                                 : "tensor 'layer.w' was enqueued by rank(s) 0, 2 but rank(s) 1 have not") !=
          std::string::npos);
  }
  for (int r : {0, 2}) {
    const auto log = logs.of(r);
    INFO("rank " << r << "'s log: " << log);
    CHECK(log.find("warn: stall: tensor 'layer.w' (allreduce_async) was enqueued on rank " + std::to_string(r)) !=
          std::string::npos);
    CHECK(log.find("it is the oldest in flight on ranks 0, 2; elsewhere: rank 1 (oldest tensor 'layer.v' since ") !=
          std::string::npos);
  }
  const auto log1 = logs.of(1);
  INFO("rank 1's log: " << log1);
  CHECK(log1.find("it is the oldest in flight on rank 1; elsewhere: rank 0 (oldest tensor 'layer.w' since ") !=
        std::string::npos);
}

TEST_CASE("stall inspector: TUTTI_STALL_WARN=0 turns it off (no line, no verdict); a bad value is refused by name") {
  const log_dir logs;
  auto results = testing::fork_ranks(2, [&](const rank_info& info) {
    logs.redirect(info.rank);
    const stall_env env("0", "1.5");
    shm_ring comm(std::make_unique<transport::shm>(info));
    std::vector<float> v(8, 1.0f);
    if (info.rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      return;
    }
    comm.allreduce(v, op::sum);
  });
  CHECK(results[0].exit_code == 1);
  CHECK(results[0].error.find("TUTTI_TIMEOUT") != std::string::npos);
  CHECK(results[0].error.find("the job stalled") == std::string::npos);
  CHECK(logs.of(0).find("stall:") == std::string::npos);
  ::setenv("TUTTI_STALL_WARN", "soon", 1);
  CHECK_THROWS_WITH_AS((void)communicator_options::from_env(), doctest::Contains("TUTTI_STALL_WARN='soon'"),
                       invalid_argument);
  ::unsetenv("TUTTI_STALL_WARN");
}

namespace {
//! inproc with a job store that does not answer, as when the rank serving it (rank 0) is stopped
//! or its host is out of reach (transport/first_loss.hpp, the multi_node case).
struct silent_store_inproc : transport::inproc {
  using inproc::inproc;
  transport::loss_account first_loss(int peer, const std::string& what) {
    const auto silent = [] { throw timeout("tcp_store at 10.0.0.1:1 did not answer 'add' before the deadline"); };
    bootstrap::store_ops store;
    store.add = [silent](const std::string&, std::int64_t, deadline) -> std::int64_t { silent(); return 0; };
    store.set = [silent](const std::string&, bootstrap::store_bytes, deadline) { silent(); };
    store.get = [silent](const std::string&, deadline) -> bootstrap::store_bytes { silent(); return {}; };
    store.check = [silent](const std::string&, deadline) -> bool { silent(); return false; };
    store.server_rank = 0;
    return transport::first_loss(store, "lost", rank(), peer, what);
  }
};
}  // namespace

TEST_CASE("a peer seen lost while the job's store is silent is reported as the stall it is, not as a loss") {
  // Rank 1 leaves mid-collective (a neighbour that gave up at its own deadline, say) while the store
  // is silent: rank 2 cannot learn who was lost first, and says so, as a timeout, not peer_lost.
  auto shared = std::make_shared<transport::inproc::fabric>(3);
  std::string said;
  std::vector<std::thread> threads;
  std::vector<int> kinds(3, 0);  // 1 timeout, 2 peer_lost, 3 other
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      silent_store_inproc t(shared, r);
      communicator<silent_store_inproc, algorithm::ring> comm(t);
      std::vector<float> v(1 << 12, 1.0f);
      comm.allreduce(v, op::sum);
      if (r == 1) return;  // leaves: its transport goes, its peers see it vanish
      try {
        comm.allreduce(v, op::sum);
      } catch (const timeout& e) {
        kinds[static_cast<std::size_t>(r)] = 1;
        if (r == 2) said = e.what();
      } catch (const peer_lost&) {
        kinds[static_cast<std::size_t>(r)] = 2;
      } catch (const std::exception&) {
        kinds[static_cast<std::size_t>(r)] = 3;
      }
    });
  for (auto& t : threads) t.join();
  INFO(said);
  CHECK(kinds[2] == 1);
  CHECK(said.find("rank 2: allreduce #2: ") == 0);
  CHECK(said.find("the job stalled: the job's store, served by rank 0, did not answer (rank 0 "
                  "stopped, or its host unreachable) in 1000 ms, so who was lost first cannot be learnt; here: ") !=
        std::string::npos);
  CHECK(said.find("rank 1") != std::string::npos);  // what rank 2 saw: rank 1 gone
}
