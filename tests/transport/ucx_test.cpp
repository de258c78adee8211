//! @file ucx_test.cpp  transport::ucx over forked processes, UCX forced onto TCP over loopback:
//! point-to-point, the collective conformance suites, errors (tags, sizes, a killed rank, timeouts,
//! abort) and leaks over repeated construction.
#include <doctest/doctest.h>

#if TUTTI_HAVE_UCX && TUTTI_HAVE_NET
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/bootstrap/inproc_store.hpp>
#include <tutti/transport/ucx.hpp>
#include <ucs/config/global_opts.h>

#include <tutti/testing/conformance.hpp>
#include "support/ucx_world.hpp"

namespace {

using namespace std::chrono_literals;
using tutti::deadline;
using tutti::rank_info;
using tutti::bootstrap::tcp_store;
using tutti::testing::fork_result;
using tutti::testing::fork_ucx_ranks;
using tutti::transport::ucx;
using clock_type = std::chrono::steady_clock;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

//! Runs body(info, store) -> report on `world` ranks; returns every rank's report (or, for a rank
//! that threw something else, "unexpected: " and its message; for a killed rank, "").
std::vector<std::string> reports(int world, const std::function<std::string(const rank_info&, tcp_store&)>& body) {
  auto results = fork_ucx_ranks(world, [&](const rank_info& info, tcp_store& store) {
    std::string report;
    try {
      report = body(info, store);
    } catch (const std::exception& e) {
      report = std::string("unexpected: ") + e.what();
    }
    throw std::runtime_error(report);  // the only way out of a forked rank with text
  });
  std::vector<std::string> out;
  for (auto& r : results) out.push_back(r.exit_code == 1 ? r.error : "exit " + std::to_string(r.exit_code));
  return out;
}

//! The kind and message of what fn throws ("nothing" if it returns).
template <class F>
std::string outcome(F&& fn) {
  try {
    fn();
  } catch (const tutti::peer_lost& e) {
    return "peer_lost(" + std::to_string(e.peer()) + "): " + e.what();
  } catch (const tutti::timeout& e) {
    return std::string("timeout: ") + e.what();
  } catch (const tutti::invalid_argument& e) {
    return std::string("invalid_argument: ") + e.what();
  } catch (const tutti::transport_error& e) {
    return std::string("transport_error: ") + e.what();
  }
  return "nothing";
}

unsigned char pattern(int src, int dst, std::size_t size, int rep, std::size_t i) {
  return static_cast<unsigned char>(src * 131 + dst * 31 + rep * 17 + size + i * 7);
}

//! Ping-pong of one byte with `peer`, so both endpoints are wired up before a test breaks them.
void ping(ucx& t, int peer) {
  unsigned char out = 1, in = 0;
  auto r = t.recv(peer, 99, &in, 1);
  auto s = t.send(peer, 99, &out, 1);
  t.wait(s, deadline::after(10s));
  t.wait(r, deadline::after(10s));
}

//! After a ping with rank 2, waits (30 s at most) for a byte rank 2 never sends: how that ended
//! ("peer_lost(2): ...") and when (" after S").
std::string wait_on_rank_2(ucx& t) {
  ping(t, 2);
  unsigned char b = 0;
  auto r = t.recv(2, 7, &b, 1);
  const auto waited = clock_type::now();
  const std::string report = outcome([&] { t.wait(r, deadline::after(30s)); });
  return report + " after " + std::to_string(seconds_since(waited));
}

std::size_t count_entries(const char* dir) {
  std::size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

}  // namespace

TEST_CASE("ucx: point-to-point between every pair, 0 B to 8 MiB + 1, many in flight, in posting order") {
  static constexpr int world = 3;
  const auto out = reports(world, [](const rank_info& info, tcp_store& store) -> std::string {
    ucx t(info.rank, world, store, "p2p");
    const int me = info.rank;
    const std::vector<std::size_t> sizes = {0, 1, 7, (64 << 10) + 3, (8 << 20) + 1};
    std::string bad;
    for (int round = 0; round < 2; ++round) {
      // Half the ranks post their receives first, half their sends, swapped in the second round:
      // every pair sees both orders, and receives posted before or after the data arrived.
      const bool recv_first = ((me + round) % 2) == 0;
      struct slot {
        int peer;
        std::size_t size;
        int rep;
        std::vector<unsigned char> data;
      };
      std::vector<slot> ins, outs;
      ins.reserve(64);
      outs.reserve(64);
      std::vector<ucx::request> reqs;
      // Several messages with the same tag and size: only posting order tells them apart.
      const auto reps = [](std::size_t size) { return size > (1 << 20) ? 1 : 3; };
      const auto tag = [&](std::size_t si) { return static_cast<std::uint64_t>(round * 10 + si + 1); };
      auto post_recvs = [&] {
        for (int p = 0; p < world; ++p)
          for (std::size_t si = 0; si < sizes.size(); ++si)
            for (int rep = 0; rep < reps(sizes[si]) && p != me; ++rep) {
              ins.push_back({p, sizes[si], rep, std::vector<unsigned char>(sizes[si], 0)});
              reqs.push_back(t.recv(p, tag(si), ins.back().data.data(), sizes[si]));
            }
      };
      auto post_sends = [&] {
        for (int p = 0; p < world; ++p)
          for (std::size_t si = 0; si < sizes.size(); ++si)
            for (int rep = 0; rep < reps(sizes[si]) && p != me; ++rep) {
              outs.push_back({p, sizes[si], rep, std::vector<unsigned char>(sizes[si])});
              for (std::size_t i = 0; i < sizes[si]; ++i) outs.back().data[i] = pattern(me, p, sizes[si], rep, i);
              reqs.push_back(t.send(p, tag(si), outs.back().data.data(), sizes[si]));
            }
      };
      if (recv_first) {
        post_recvs();
        post_sends();
      } else {
        post_sends();
        post_recvs();
      }
      const auto until = deadline::after(30s);
      for (auto& r : reqs) t.wait(r, until);
      for (const auto& s : ins)
        for (std::size_t i = 0; i < s.size; ++i)
          if (s.data[i] != pattern(s.peer, me, s.size, s.rep, i)) {
            bad += "round " + std::to_string(round) + ": message " + std::to_string(s.rep) + " of " +
                   std::to_string(s.size) + " bytes from rank " + std::to_string(s.peer) + " wrong at byte " +
                   std::to_string(i) + "; ";
            break;
          }
    }
    return bad.empty() ? "ok" : bad;
  });
  for (int r = 0; r < world; ++r) {
    INFO("rank ", r, ": ", out[r]);
    CHECK(out[r] == "ok");
  }
}

// The suites over UCX, world sizes 1-9. One algorithm per collective suffices (they are checked
// over shm and inproc too): what is under test here is the transport underneath.
namespace {
using ucx_ring = tutti::testing::ucx_world<tutti::algorithm::ring>;
using ucx_halving_doubling = tutti::testing::ucx_world<tutti::algorithm::halving_doubling>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, ucx_ring, ucx_halving_doubling);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, ucx_ring);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, ucx_ring);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, ucx_ring);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, ucx_ring);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, ucx_ring);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, ucx_ring);

TEST_CASE("ucx: tags from 2^40 and worlds from 2^24 ranks are refused, naming rank, value and limit") {
  const auto out = reports(1, [](const rank_info&, tcp_store& store) -> std::string {
    std::string report;
    {
      ucx t(0, 1, store, "tags");
      unsigned char b = 0, c = 1;
      report += outcome([&] { (void)t.send(0, std::uint64_t{1} << 40, &b, 1); }) + "\n";
      report += outcome([&] { (void)t.recv(0, ~std::uint64_t{0}, &b, 1); }) + "\n";
      // The largest tag works (self endpoint).
      auto r = t.recv(0, (std::uint64_t{1} << 40) - 1, &b, 1);
      auto s = t.send(0, (std::uint64_t{1} << 40) - 1, &c, 1);
      t.wait(s, deadline::after(10s));
      t.wait(r, deadline::after(10s));
    }
    tutti::bootstrap::inproc_store local;
    report += outcome([&] { ucx t(3, 1 << 24, local, "huge"); }) + "\n";
    return report;
  });
  INFO(out[0]);
  CHECK(contains(out[0], "invalid_argument: rank 0: transport::ucx send to rank 0: tag 1099511627776 is not below 2^40"));
  CHECK(contains(out[0], "invalid_argument: rank 0: transport::ucx recv from rank 0: tag 18446744073709551615"));
  CHECK(contains(out[0], "invalid_argument: rank 3: transport::ucx: world_size 16777216 is outside [1, 2^24"));
  CHECK_FALSE(contains(out[0], "unexpected"));
}

TEST_CASE("ucx: a message of another size than the receive posted fails on the receiving rank with both sizes") {
  const auto out = reports(2, [](const rank_info& info, tcp_store& store) -> std::string {
    ucx t(info.rank, 2, store, "sizes");
    const auto until = deadline::after(10s);
    // Eager (1000 B), rendezvous (1 MiB) and shorter-than-posted (10 B into 100).
    const std::vector<std::size_t> sent = {1000, 1 << 20, 10}, posted = {10, 1000, 100};
    std::vector<unsigned char> buf(1 << 20, 7);
    std::string report;
    for (std::size_t k = 0; k < sent.size(); ++k) {
      if (info.rank == 0) {
        auto s = t.send(1, 1 + k, buf.data(), sent[k]);
        report += outcome([&] { t.wait(s, until); }) + "\n";
      } else {
        if (k == 0) std::this_thread::sleep_for(100ms);  // let the first one arrive before the receive
        auto r = t.recv(0, 1 + k, buf.data(), posted[k]);
        report += outcome([&] { t.wait(r, until); }) + "\n";
      }
    }
    ping(t, 1 - info.rank);  // the transport still works
    return report;
  });
  INFO(out[0], "\n", out[1]);
  CHECK_FALSE(contains(out[0] + out[1], "unexpected"));
  const std::string stem = "transport_error: rank 1: transport::ucx receive from rank 0 with tag ";
  CHECK(contains(out[1], stem + "1 posted 10 bytes but rank 0 sent 1000 bytes"));
  CHECK(contains(out[1], stem + "2 posted 1000 bytes but rank 0 sent 1048576 bytes"));
  CHECK(contains(out[1], stem + "3 posted 100 bytes but rank 0 sent 10 bytes"));
}

TEST_CASE("ucx: recv_up_to takes a message of any size up to its buffer and says the size; a longer one fails") {
  static_assert(tutti::sized_receive_transport<ucx>);
  const auto out = reports(2, [](const rank_info& info, tcp_store& store) -> std::string {
    ucx t(info.rank, 2, store, "up-to");
    const auto until = deadline::after(10s);
    // Arrived before the receive (10 B), exactly the capacity, empty, rendezvous-sized, too long.
    const std::vector<std::size_t> sent = {10, 100, 0, 1 << 20, 101}, capacity = {100, 100, 100, (1 << 20) + 5, 100};
    std::vector<unsigned char> buf((1 << 20) + 5, 0);
    std::string report;
    for (std::size_t k = 0; k < sent.size(); ++k) {
      if (info.rank == 0) {
        std::fill(buf.begin(), buf.end(), static_cast<unsigned char>(k + 1));
        auto s = t.send(1, 1 + k, buf.data(), sent[k]);
        report += outcome([&] { t.wait(s, until); }) + "\n";
      } else {
        if (k == 0) std::this_thread::sleep_for(100ms);  // let the first one arrive before the receive
        std::fill(buf.begin(), buf.end(), 0);
        std::size_t arrived = 12345;
        auto r = t.recv_up_to(0, 1 + k, buf.data(), capacity[k], &arrived);
        report += outcome([&] { t.wait(r, until); });
        const bool whole = std::all_of(buf.begin(), buf.begin() + static_cast<long>(std::min(sent[k], capacity[k])),
                                       [&](unsigned char b) { return b == k + 1; });
        report += " arrived " + std::to_string(arrived) + (whole ? " whole" : " WRONG") + "\n";
      }
    }
    ping(t, 1 - info.rank);  // the transport still works
    return report;
  });
  INFO(out[0], "\n", out[1]);
  CHECK_FALSE(contains(out[0] + out[1], "unexpected"));
  CHECK(contains(out[1], "nothing arrived 10 whole\nnothing arrived 100 whole\nnothing arrived 0 whole\n"
                         "nothing arrived 1048576 whole\n"));
  CHECK(contains(out[1], "transport_error: rank 1: transport::ucx receive from rank 0 with tag 5 posted 100 bytes but rank 0 "
                         "sent 101 bytes"));
}

namespace {

//! Three ranks run allreduce in a loop until `victim` is SIGKILLed, 10 ms after its third one
//! (most likely in the middle of the next). Reports "peer=<p> seconds=<time of the failing call> what".
std::vector<std::string> kill_during_allreduce(int victim) {
  static constexpr int world = 3;
  return reports(world, [victim](const rank_info& info, tcp_store& store) -> std::string {
    ::setenv("TUTTI_TIMEOUT", "60", 1);  // a loss must be reported long before this
    tutti::communicator<ucx, tutti::algorithm::ring> comm(std::make_unique<ucx>(info.rank, world, store, "kill"));
    std::vector<float> v(1 << 18, 1.0f);
    for (int i = 0; i < 10000; ++i) {
      if (info.rank == victim && i == 3)
        std::thread([] { std::this_thread::sleep_for(10ms); ::raise(SIGKILL); }).detach();
      const auto t0 = clock_type::now();
      try {
        comm.allreduce(v, tutti::op::sum);
      } catch (const tutti::peer_lost& e) {
        return "peer=" + std::to_string(e.peer()) + " seconds=" + std::to_string(seconds_since(t0)) + " " + e.what();
      }
    }
    return "no error";
  });
}

double reported_seconds(const std::string& report) { return std::stod(report.substr(report.find("seconds=") + 8)); }

}  // namespace

TEST_CASE("ucx: a rank killed mid-collective is reported as peer_lost naming it, well before the timeout") {
  const auto t0 = clock_type::now();
  SUBCASE("a rank that is not the store's server: every survivor names it") {
    const auto out = kill_during_allreduce(2);
    CHECK(out[2] == "exit " + std::to_string(128 + SIGKILL));
    for (int r = 0; r < 2; ++r) {
      INFO("rank ", r, ": ", out[r]);
      REQUIRE(contains(out[r], "peer=2 seconds="));
      CHECK(reported_seconds(out[r]) < 5.0);
      CHECK(contains(out[r], "allreduce"));
      CHECK(contains(out[r], "rank 2"));
    }
  }
  SUBCASE("rank 0, which serves the store: its neighbour names it, nobody waits on the dead store") {
    const auto out = kill_during_allreduce(0);
    CHECK(out[0] == "exit " + std::to_string(128 + SIGKILL));
    INFO("rank 1: ", out[1], "\nrank 2: ", out[2]);
    CHECK(contains(out[1], "peer=0 seconds="));  // rank 1 receives from rank 0 in the ring
    // Rank 2 sees rank 0 die, or only rank 1 abort; then the store that records the first loss
    // died with rank 0, and the store's silence names its server (before: rank 2 blamed rank 1).
    CHECK(contains(out[2], "peer=0 seconds="));
    for (int r = 1; r < 3; ++r) CHECK(reported_seconds(out[r]) < 5.0);
  }
  CHECK(seconds_since(t0) < 10.0);  // including the survivors' shutdown
}

TEST_CASE("ucx: a rank that leaves while the others wait on it is named by them within about a second, and is gone as fast") {
  // Rank 2 destroys its transport right after joining (a program that returns from main or throws):
  // its endpoints close cleanly, so nothing breaks. Before, ranks 0 and 1 waited for it until
  // their deadline (30 s here) and rank 2 sat in its shutdown barrier as long.
  const auto t0 = clock_type::now();
  const auto out = reports(3, [](const rank_info& info, tcp_store& store) -> std::string {
    auto options = tutti::transport::ucx_options::from_env();
    options.timeout = 30s;
    auto t = std::make_unique<ucx>(info.rank, 3, store, "leave", options);
    if (info.rank == 2) {
      ping(*t, 0);
      ping(*t, 1);
      const auto left = clock_type::now();
      t.reset();
      return "left in " + std::to_string(seconds_since(left));
    }
    return wait_on_rank_2(*t);
  });
  INFO(out[0], "\n", out[1], "\n", out[2]);
  for (int r = 0; r < 2; ++r) {
    CHECK(contains(out[r], "peer_lost(2): rank " + std::to_string(r) + ": transport::ucx receive of 1 bytes from rank 2"));
    CHECK(std::stod(out[r].substr(out[r].rfind(" after ") + 7)) < 2.5);
  }
  // The first to look finds the announcement; rank 2 is then released and exits, which the other
  // may see first as a broken connection: either way it names rank 2 in time.
  CHECK(contains(out[0] + out[1], "rank 2 left the job (peer lost): its transport was closed"));
  REQUIRE(contains(out[2], "left in "));
  CHECK(std::stod(out[2].substr(8)) < 3.0);
  CHECK(seconds_since(t0) < 10.0);
}

TEST_CASE("ucx: a wait on a peer whose loss UCX has not noticed ends once the job records a loss, naming the rank lost") {
  // The fault campaign's `kill`: a receive from a SIGKILLed rank stayed pending for 6 s (a matched
  // rendezvous UCX cannot cancel); its neighbour saw the loss and recorded it (first_loss). Here rank 2
  // stays alive but silent, and rank 0 records it lost: rank 1's receive from rank 2 must end
  // within about a second, naming rank 2 and the record, not at its deadline.
  const auto out = reports(3, [](const rank_info& info, tcp_store& store) -> std::string {
    auto options = tutti::transport::ucx_options::from_env();
    options.timeout = 30s;
    auto t = std::make_unique<ucx>(info.rank, 3, store, "record", options);
    if (info.rank == 2) {
      ping(*t, 1);
      std::this_thread::sleep_for(3s);  // silent while rank 1 waits
      return "slept";
    }
    if (info.rank == 0) {
      std::this_thread::sleep_for(300ms);
      const auto account = t->first_loss(2, "rank 2 vanished (seen by rank 0)");
      return "recorded " + std::to_string(account.peer);
    }
    return wait_on_rank_2(*t);
  });
  INFO(out[0], "\n", out[1], "\n", out[2]);
  CHECK(out[0] == "recorded 2");
  CHECK(contains(out[1], "peer_lost(2): rank 1: transport::ucx receive of 1 bytes from rank 2 with tag 7: the job lost "
                         "rank 2 (recorded by the rank that saw it first: rank 2 vanished (seen by rank 0)); this "
                         "operation cannot complete"));
  REQUIRE(contains(out[1], " after "));
  CHECK(std::stod(out[1].substr(out[1].rfind(" after ") + 7)) < 2.0);
}

TEST_CASE("ucx: UCX's own lines about broken connections stay off the terminal; its other lines do not") {
  tutti::transport::ucx_detail::install_log_filter();
  char path[] = "/tmp/tutti-ucx-log-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);  // UCX writes to stdout unless UCX_LOG_FILE says otherwise
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  ucs_error("connect(fd=42, dest_addr=10.9.8.7:1234) failed: Connection refused; try to increase net.core.somaxconn");
  ucs_error("tutti test: an unrelated UCX error line");
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  std::string text(4096, '\0');
  text.resize(static_cast<std::size_t>(::pread(fd, text.data(), text.size(), 0)));
  ::close(fd);
  ::unlink(path);
  INFO(text);
  CHECK_FALSE(contains(text, "somaxconn"));
  CHECK(contains(text, "an unrelated UCX error line"));
  CHECK(tutti::transport::ucx_detail::connection_noise("ucp_ep.c: error 'Connection reset by remote peer' will not be handled"));
  CHECK_FALSE(tutti::transport::ucx_detail::connection_noise("failed to register memory"));
}

TEST_CASE("ucx: waits that pass their deadline throw timeout naming rank, peer, tag, bytes and direction") {
  const auto out = reports(2, [](const rank_info& info, tcp_store& store) -> std::string {
    ucx t(info.rank, 2, store, "timeout");
    ping(t, 1 - info.rank);
    std::vector<unsigned char> buf(8 << 20);
    const auto t0 = clock_type::now();
    std::string report;
    if (info.rank == 1) {
      auto r = t.recv(0, 5, buf.data(), 64);  // rank 0 never sends it
      report = outcome([&] { t.wait(r, deadline::after(1s)); });
    } else {
      auto s = t.send(1, 6, buf.data(), buf.size());  // too large to go eagerly; rank 1 never receives it
      report = outcome([&] { t.wait(s, deadline::after(1s)); });
    }
    report += " after " + std::to_string(seconds_since(t0));
    // Stay until the other's deadline has surely passed too: a rank that leaves first would be
    // reported to it as having left (peer_lost), which is right, but not what this test checks.
    std::this_thread::sleep_for(1s);
    return report;
  });
  INFO(out[0], "\n", out[1]);
  CHECK(contains(out[1], "timeout: rank 1: transport::ucx receive of 64 bytes from rank 0 with tag 5 did not complete "
                         "before the deadline (TUTTI_TIMEOUT)"));
  CHECK(contains(out[0], "timeout: rank 0: transport::ucx send of 8388608 bytes to rank 1 with tag 6 did not complete "
                         "before the deadline (TUTTI_TIMEOUT)"));
  for (const auto& o : out) CHECK(std::stod(o.substr(o.find(" after ") + 7)) < 3.0);
}

TEST_CASE("ucx: abort() on one rank makes its peer's pending receive fail with peer_lost at once") {
  const auto out = reports(2, [](const rank_info& info, tcp_store& store) -> std::string {
    ucx t(info.rank, 2, store, "abort");
    ping(t, 1 - info.rank);
    if (info.rank == 1) {
      t.abort();
      unsigned char b = 0;
      const std::string after = outcome([&] { (void)t.send(0, 1, &b, 1); });
      std::this_thread::sleep_for(3s);  // still alive: the peer must learn of the abort, not of an exit
      return after;
    }
    std::vector<unsigned char> buf(100);
    const auto t0 = clock_type::now();
    auto r = t.recv(1, 1, buf.data(), buf.size());
    std::string report = outcome([&] { t.wait(r, deadline::after(30s)); });
    report += " after " + std::to_string(seconds_since(t0));
    // Once the peer is known lost, a new receive from it fails at once too.
    auto again = t.recv(1, 2, buf.data(), buf.size());
    const auto t1 = clock_type::now();
    report += "\nagain: " + outcome([&] { t.wait(again, deadline::after(30s)); });
    report += " after " + std::to_string(seconds_since(t1));
    return report;
  });
  INFO(out[0], "\n", out[1]);
  CHECK(contains(out[1], "transport_error: rank 1: transport::ucx send to rank 0: the transport was aborted"));
  CHECK(contains(out[0], "peer_lost(1): rank 0: transport::ucx receive of 100 bytes from rank 1 with tag 1: rank 1 is lost"));
  CHECK(contains(out[0], "again: peer_lost(1): rank 0: transport::ucx receive of 100 bytes from rank 1 with tag 2"));
  const auto first = out[0].find(" after "), second = out[0].rfind(" after ");
  REQUIRE(first != std::string::npos);
  CHECK(std::stod(out[0].substr(first + 7)) < 2.0);
  CHECK(std::stod(out[0].substr(second + 7)) < 1.0);
}

TEST_CASE("ucx: building and destroying the transport 20 times leaks no file descriptors or threads") {
  const auto out = reports(2, [](const rank_info& info, tcp_store& store) -> std::string {
    std::size_t fds_first = 0, threads_first = 0;
    for (int i = 0; i < 20; ++i) {
      {
        ucx t(info.rank, 2, store, "leak/" + std::to_string(i));
        ping(t, 1 - info.rank);
      }
      if (i == 0) {  // after the first round: UCX's process-wide state (async thread, ucm) exists
        fds_first = count_entries("/proc/self/fd");
        threads_first = count_entries("/proc/self/task");
      }
    }
    const std::size_t fds = count_entries("/proc/self/fd"), threads = count_entries("/proc/self/task");
    if (fds > fds_first || threads > threads_first)
      return "fds " + std::to_string(fds_first) + " -> " + std::to_string(fds) + ", threads " +
             std::to_string(threads_first) + " -> " + std::to_string(threads);
    return "ok";
  });
  for (const auto& o : out) {
    INFO(o);
    CHECK(o == "ok");
  }
}

#else
TEST_CASE("ucx: not built (UCX or OpenSSL not found: tutti::ucx / tutti::net missing)") {}
#endif

TEST_CASE("ucx: TUTTI_UCX_RNDV_THRESH reaches UCX only where tutti chose the network and the user set no UCX_RNDV_THRESH") {
  const auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) ::setenv(name, v->c_str(), 1);
    else ::unsetenv(name);
  };
  const auto devices = saved("UCX_NET_DEVICES"), user = saved("UCX_RNDV_THRESH"), ours = saved("TUTTI_UCX_RNDV_THRESH");
  ::unsetenv("TUTTI_UCX_RNDV_THRESH");
  CHECK(tutti::transport::ucx_options::from_env().rndv_thresh == "inf");
  ::setenv("TUTTI_UCX_RNDV_THRESH", "auto", 1);
  CHECK(tutti::transport::ucx_options::from_env().rndv_thresh == "auto");
  // A value UCX cannot parse shows whether tutti handed it over: only with the network tutti's.
  ::unsetenv("UCX_RNDV_THRESH");
  ::setenv("UCX_NET_DEVICES", "lo", 1);  // the user's: UCX's settings are left alone
  CHECK_NOTHROW(tutti::transport::ucx_detail::worker(0, 1, "not-a-size"));
  tutti::bootstrap::network_choice loopback;
  loopback.subnet = "127.0.0.0/8";
  loopback.on["here"] = tutti::bootstrap::net_interface{"lo", "127.0.0.1", 8, true};
  ::unsetenv("UCX_NET_DEVICES");
  tutti::bootstrap::apply_to_ucx(loopback, "here", 1);  // now tutti's choice
  CHECK_THROWS_WITH_AS(tutti::transport::ucx_detail::worker(0, 1, "not-a-size"),
                       doctest::Contains("RNDV_THRESH=not-a-size, from TUTTI_UCX_RNDV_THRESH"), tutti::error);
  CHECK_NOTHROW(tutti::transport::ucx_detail::worker(0, 1, "inf"));
  ::setenv("UCX_RNDV_THRESH", "auto", 1);  // the user set UCX's own variable: tutti's is not applied
  CHECK_NOTHROW(tutti::transport::ucx_detail::worker(0, 1, "not-a-size"));
  restore("UCX_NET_DEVICES", devices);
  restore("UCX_RNDV_THRESH", user);
  restore("TUTTI_UCX_RNDV_THRESH", ours);
}
