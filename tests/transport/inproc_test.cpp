//! @file inproc_test.cpp  transport::inproc: matching, ordering, zero-byte messages, errors, peer loss, timeouts.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/transport/concepts.hpp"
#include "tutti/transport/first_loss.hpp"
#include "tutti/transport/inproc.hpp"
#include "tutti/bootstrap/inproc_store.hpp"

namespace {

using namespace std::chrono_literals;
using tutti::transport::inproc;
using clock_type = std::chrono::steady_clock;

static_assert(tutti::transport_policy<inproc>);
static_assert(inproc::traits.intra_node);
static_assert(!inproc::traits.one_sided);
static_assert(!inproc::traits.device_memory);

// Generous: only reached when something is broken, so a hang becomes a failure.
tutti::deadline soon() { return tutti::deadline::after(10s); }

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

//! Waits for a flag another rank raises; throws instead of hanging if it never comes.
void await(const std::atomic<bool>& flag) {
  const auto t0 = clock_type::now();
  while (!flag.load()) {
    if (seconds_since(t0) > 10) throw std::runtime_error("test: flag never raised");
    std::this_thread::yield();
  }
}

//! The message of each rank's exception, "" where the rank succeeded.
std::string what_of(const std::exception_ptr& p) {
  if (!p) return "";
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "(not a std::exception)";
  }
}

template <class E> bool holds(const std::exception_ptr& p) {
  if (!p) return false;
  try {
    std::rethrow_exception(p);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

//! Checks every rank finished without an exception, naming the ones that did not.
void check_all_ok(const std::vector<std::exception_ptr>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    CAPTURE(r);
    CHECK_MESSAGE(!errors[r], what_of(errors[r]));
  }
}

std::vector<std::int32_t> payload(int from, int to, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from * 1000000 + to * 10000 + static_cast<std::int32_t>(i);
  return v;
}

}  // namespace

TEST_CASE("inproc: traits and concept") {
  constexpr tutti::transport_traits t = inproc::traits;
  CHECK(t.intra_node == true);
  CHECK(t.one_sided == false);
  CHECK(t.device_memory == false);
  CHECK(std::string(inproc::name) == "inproc");
}

TEST_CASE("inproc: every pair exchanges tagged messages, world sizes 2 to 5") {
  for (int world = 2; world <= 5; ++world) {
    CAPTURE(world);
    constexpr std::size_t n = 1009;
    std::vector<int> wrong(static_cast<std::size_t>(world), -1);
    auto errors = inproc::run(world, [&](inproc& t) {
      const int me = t.rank();
      if (t.world_size() != world) throw std::runtime_error("world_size() is wrong");
      std::vector<std::vector<std::int32_t>> in(static_cast<std::size_t>(world), std::vector<std::int32_t>(n, -1));
      std::vector<std::vector<std::int32_t>> out;
      std::vector<inproc::request> reqs;
      for (int p = 0; p < world; ++p) out.push_back(payload(me, p, n));
      for (int p = 0; p < world; ++p) {
        if (p == me) continue;
        // Tags differ per direction, so a message can only match the receive meant for it.
        reqs.push_back(t.recv(p, static_cast<std::uint64_t>(100 + p * 10 + me), in[static_cast<std::size_t>(p)].data(), n * 4));
        reqs.push_back(t.send(p, static_cast<std::uint64_t>(100 + me * 10 + p), out[static_cast<std::size_t>(p)].data(), n * 4));
      }
      for (auto& r : reqs) t.wait(r, soon());
      int bad = 0;
      for (int p = 0; p < world; ++p)
        if (p != me && in[static_cast<std::size_t>(p)] != payload(p, me, n)) ++bad;
      wrong[static_cast<std::size_t>(me)] = bad;
    });
    check_all_ok(errors);
    for (int r = 0; r < world; ++r) CHECK(wrong[static_cast<std::size_t>(r)] == 0);
  }
}

TEST_CASE("inproc: a rank may send to itself") {
  auto errors = inproc::run(1, [](inproc& t) {
    const std::uint64_t x = 0x0123456789abcdefull;
    std::uint64_t y = 0;
    auto s = t.send(0, 9, &x, 8);
    auto r = t.recv(0, 9, &y, 8);
    t.wait(s, soon());
    t.wait(r, soon());
    if (y != x) throw std::runtime_error("self message corrupted");
  });
  check_all_ok(errors);
}

TEST_CASE("inproc: messages with one tag between one pair arrive in posting order") {
  constexpr int messages = 20;
  for (bool recv_first : {true, false}) {
    CAPTURE(recv_first);
    std::atomic<bool> posted{false};
    std::vector<std::vector<std::uint8_t>> got(messages);
    auto errors = inproc::run(2, [&](inproc& t) {
      // Message i is i + 1 bytes of value i: out of order would be a size mismatch or wrong bytes.
      if (t.rank() == 0) {
        if (recv_first) await(posted);
        std::vector<std::vector<std::uint8_t>> out;
        for (int i = 0; i < messages; ++i) out.emplace_back(static_cast<std::size_t>(i + 1), static_cast<std::uint8_t>(i));
        std::vector<inproc::request> reqs;
        for (int i = 0; i < messages; ++i) reqs.push_back(t.send(1, 7, out[static_cast<std::size_t>(i)].data(), out[static_cast<std::size_t>(i)].size()));
        if (!recv_first) posted = true;
        for (auto& r : reqs) t.wait(r, soon());
      } else {
        if (!recv_first) await(posted);
        std::vector<inproc::request> reqs;
        for (int i = 0; i < messages; ++i) {
          got[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(i + 1), 0xff);
          reqs.push_back(t.recv(0, 7, got[static_cast<std::size_t>(i)].data(), got[static_cast<std::size_t>(i)].size()));
        }
        if (recv_first) posted = true;
        for (auto& r : reqs) t.wait(r, soon());
      }
    });
    check_all_ok(errors);
    for (int i = 0; i < messages; ++i) {
      CAPTURE(i);
      CHECK(got[static_cast<std::size_t>(i)] == std::vector<std::uint8_t>(static_cast<std::size_t>(i + 1), static_cast<std::uint8_t>(i)));
    }
  }
}

TEST_CASE("inproc: messages with different tags can be received out of order") {
  std::uint32_t first = 0, second = 0, third = 0;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 0) {
      const std::uint32_t a = 111, b = 222, c = 333;
      auto ra = t.send(1, 1, &a, 4);
      auto rb = t.send(1, 2, &b, 4);
      auto rc = t.send(1, 3, &c, 4);
      t.wait(rc, soon());
      t.wait(rb, soon());
      t.wait(ra, soon());
    } else {
      // Take tag 3 and complete it before tag 1 is even posted.
      auto r3 = t.recv(0, 3, &first, 4);
      t.wait(r3, soon());
      auto r1 = t.recv(0, 1, &second, 4);
      t.wait(r1, soon());
      auto r2 = t.recv(0, 2, &third, 4);
      t.wait(r2, soon());
    }
  });
  check_all_ok(errors);
  CHECK(first == 333);
  CHECK(second == 111);
  CHECK(third == 222);
}

TEST_CASE("inproc: the receive may be posted before or after the send") {
  for (bool recv_first : {true, false}) {
    CAPTURE(recv_first);
    std::atomic<bool> posted{false};
    std::vector<double> got(7, 0.0);
    auto errors = inproc::run(2, [&](inproc& t) {
      if (t.rank() == 0) {
        const std::vector<double> out = {1.5, -2.5, 3.25, 0.0, 1e300, -1e-300, 42.0};
        if (recv_first) await(posted);
        auto r = t.send(1, 5, out.data(), out.size() * sizeof(double));
        if (!recv_first) posted = true;
        t.wait(r, soon());
      } else {
        if (!recv_first) await(posted);
        auto r = t.recv(0, 5, got.data(), got.size() * sizeof(double));
        if (recv_first) posted = true;
        t.wait(r, soon());
      }
    });
    check_all_ok(errors);
    CHECK(got == std::vector<double>{1.5, -2.5, 3.25, 0.0, 1e300, -1e-300, 42.0});
  }
}

TEST_CASE("inproc: zero-byte messages complete, with or without a buffer") {
  int after = 0;
  auto errors = inproc::run(3, [&](inproc& t) {
    if (t.rank() == 0) {
      auto a = t.send(1, 0, nullptr, 0);
      char c = 'x';
      auto b = t.send(2, 0, &c, 0);
      t.wait(a, soon());
      t.wait(b, soon());
    } else {
      char sentinel = 's';
      auto r = t.recv(0, 0, t.rank() == 1 ? nullptr : &sentinel, 0);
      t.wait(r, soon());
      if (sentinel != 's') throw std::runtime_error("zero-byte receive wrote its buffer");
      // A message after the empty one still matches normally.
      if (t.rank() == 1) {
        auto r2 = t.recv(2, 4, &after, sizeof after);
        t.wait(r2, soon());
      }
    }
    if (t.rank() == 2) {
      const int v = 77;
      auto s = t.send(1, 4, &v, sizeof v);
      t.wait(s, soon());
    }
  });
  check_all_ok(errors);
  CHECK(after == 77);
}

TEST_CASE("inproc: test() polls until the operation completes; completed requests stay complete") {
  std::atomic<bool> polled_incomplete{false};
  int polls_false = 0;
  bool completed = false, still_true = false;
  std::uint64_t got = 0;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 0) {
      await(polled_incomplete);  // send only after the receiver has seen test() == false
      std::this_thread::sleep_for(20ms);
      const std::uint64_t v = 0xfeedfacecafebeefull;
      auto s = t.send(1, 3, &v, 8);
      while (!t.test(s)) std::this_thread::yield();
    } else {
      auto r = t.recv(0, 3, &got, 8);
      const auto t0 = clock_type::now();
      while (!t.test(r)) {
        ++polls_false;
        polled_incomplete = true;
        if (seconds_since(t0) > 10) throw std::runtime_error("test() never became true");
        std::this_thread::yield();
      }
      completed = true;
      still_true = t.test(r);           // testing again is fine and still true
      t.wait(r, tutti::deadline::after(-1s));  // and waiting returns at once, even past the deadline
    }
  });
  check_all_ok(errors);
  CHECK(polls_false > 0);
  CHECK(completed);
  CHECK(still_true);
  CHECK(got == 0xfeedfacecafebeefull);
}

TEST_CASE("inproc: a default-constructed request is complete") {
  auto errors = inproc::run(1, [](inproc& t) {
    inproc::request r;
    if (!t.test(r)) throw std::runtime_error("test(default request) is false");
    const auto t0 = clock_type::now();
    t.wait(r, tutti::deadline::after(-1s));  // a deadline in the past: must not throw timeout
    if (seconds_since(t0) > 1) throw std::runtime_error("wait(default request) blocked");
  });
  check_all_ok(errors);
  CHECK(std::is_default_constructible_v<inproc::request>);
}

TEST_CASE("inproc: a size mismatch fails both sides with transport_error naming both sizes") {
  for (bool recv_first : {true, false}) {
    CAPTURE(recv_first);
    std::atomic<bool> posted{false};
    auto errors = inproc::run(2, [&](inproc& t) {
      std::uint8_t buf[16] = {};
      if (t.rank() == 0) {
        if (recv_first) await(posted);
        auto s = t.send(1, 11, buf, 8);
        if (!recv_first) posted = true;
        t.wait(s, soon());
      } else {
        if (!recv_first) await(posted);
        auto r = t.recv(0, 11, buf, 16);
        if (recv_first) posted = true;
        t.wait(r, soon());
      }
    });
    for (int r = 0; r < 2; ++r) {
      CAPTURE(r);
      const std::string msg = what_of(errors[static_cast<std::size_t>(r)]);
      CAPTURE(msg);
      CHECK(holds<tutti::transport_error>(errors[static_cast<std::size_t>(r)]));
      CHECK(msg.find("8 bytes") != std::string::npos);
      CHECK(msg.find("16 bytes") != std::string::npos);
    }
  }
}

TEST_CASE("inproc: recv_up_to takes a shorter message and says its size, posted before or after the send") {
  static_assert(tutti::sized_receive_transport<inproc>);
  for (bool recv_first : {true, false}) {
    CAPTURE(recv_first);
    std::atomic<bool> posted[3] = {false, false, false};  // one hand-over per message
    std::size_t arrived[3] = {99, 99, 99};
    std::uint8_t got[3][16] = {};
    auto errors = inproc::run(2, [&](inproc& t) {
      const std::size_t sent[3] = {5, 16, 17};
      std::uint8_t buf[17];
      for (int k = 0; k < 3; ++k) {
        if (t.rank() == 0) {
          std::fill(std::begin(buf), std::end(buf), static_cast<std::uint8_t>(k + 1));
          if (recv_first) await(posted[k]);
          auto s = t.send(1, 11 + k, buf, sent[k]);
          if (!recv_first) posted[k] = true;
          t.wait(s, soon());
        } else {
          if (!recv_first) await(posted[k]);
          auto r = t.recv_up_to(0, 11 + k, got[k], 16, &arrived[k]);
          if (recv_first) posted[k] = true;
          t.wait(r, soon());
        }
      }
    });
    CHECK(arrived[0] == 5);
    CHECK(got[0][4] == 1);
    CHECK(got[0][5] == 0);
    CHECK(arrived[1] == 16);
    CHECK(got[1][15] == 2);
    CHECK(arrived[2] == 99);  // too long: refused on both sides, naming both sizes
    for (int r = 0; r < 2; ++r) {
      const std::string msg = what_of(errors[static_cast<std::size_t>(r)]);
      CAPTURE(msg);
      CHECK(msg.find("17 bytes") != std::string::npos);
      CHECK(msg.find("16 bytes") != std::string::npos);
    }
  }
}

TEST_CASE("inproc: receiving from a rank that returned without sending gives peer_lost quickly") {
  double elapsed = -1;
  int lost_peer = -1;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 0) return;  // leaves without sending
    std::uint32_t x = 0;
    auto r = t.recv(0, 1, &x, 4);
    const auto t0 = clock_type::now();
    try {
      t.wait(r, tutti::deadline::after(30s));
    } catch (const tutti::peer_lost& e) {
      elapsed = seconds_since(t0);
      lost_peer = e.peer();
      throw;
    }
  });
  CHECK_FALSE(errors[0]);
  CHECK(holds<tutti::peer_lost>(errors[1]));
  CHECK(lost_peer == 0);
  CHECK(elapsed >= 0);
  CHECK(elapsed < 2.0);
  CHECK(what_of(errors[1]).find("rank 0") != std::string::npos);
}

TEST_CASE("inproc: test() polling on a lost peer throws peer_lost too") {
  int lost_peer = -1;
  double elapsed = -1;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 1) return;  // leaves without sending
    std::uint32_t x = 0;
    auto r = t.recv(1, 1, &x, 4);
    const auto t0 = clock_type::now();
    try {
      while (!t.test(r)) {
        if (seconds_since(t0) > 10) throw std::runtime_error("test() never reported the lost peer");
        std::this_thread::yield();
      }
    } catch (const tutti::peer_lost& e) {
      lost_peer = e.peer();
      elapsed = seconds_since(t0);
      throw;
    }
  });
  CHECK(holds<tutti::peer_lost>(errors[0]));
  CHECK_FALSE(errors[1]);
  CHECK(lost_peer == 1);
  CHECK(elapsed < 2.0);
}

TEST_CASE("inproc: sends a rank never waited on are withdrawn when it leaves; the peer gets peer_lost") {
  // The buffer outlives the run, so only the transport decides whether the bytes may still be read.
  const std::uint64_t abandoned = 0x1122334455667788ull;
  std::uint64_t got = 0;
  bool lost_first = false, lost_second = false;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 0) {
      (void)t.send(1, 1, &abandoned, 8);  // posted, never waited on
      return;
    }
    std::uint64_t probe = 0;
    auto until_gone = t.recv(0, 2, &probe, 8);  // completes only by peer_lost, once rank 0 has left
    try {
      t.wait(until_gone, tutti::deadline::after(30s));
    } catch (const tutti::peer_lost&) {
      lost_first = true;
    }
    auto r = t.recv(0, 1, &got, 8);
    try {
      t.wait(r, tutti::deadline::after(30s));
    } catch (const tutti::peer_lost&) {
      lost_second = true;
    }
  });
  check_all_ok(errors);
  CHECK(lost_first);
  CHECK(lost_second);
  CHECK(got == 0);
}

TEST_CASE("inproc: every rank waiting on a lost peer hears of it, for sends as well as receives") {
  std::vector<int> lost(4, -1);
  std::vector<double> elapsed(4, -1);
  auto errors = inproc::run(4, [&](inproc& t) {
    if (t.rank() == 2) {
      std::this_thread::sleep_for(20ms);
      return;
    }
    std::uint32_t x = 0;
    // Ranks 0 and 1 receive from rank 2; rank 3 sends to it.
    auto r = t.rank() == 3 ? t.send(2, 1, &x, 4) : t.recv(2, 1, &x, 4);
    const auto t0 = clock_type::now();
    try {
      t.wait(r, tutti::deadline::after(30s));
    } catch (const tutti::peer_lost& e) {
      lost[static_cast<std::size_t>(t.rank())] = e.peer();
      elapsed[static_cast<std::size_t>(t.rank())] = seconds_since(t0);
      throw;
    }
  });
  CHECK_FALSE(errors[2]);
  for (int r : {0, 1, 3}) {
    CAPTURE(r);
    CHECK(holds<tutti::peer_lost>(errors[static_cast<std::size_t>(r)]));
    CHECK(lost[static_cast<std::size_t>(r)] == 2);
    CHECK(elapsed[static_cast<std::size_t>(r)] < 2.0);
  }
}

TEST_CASE("inproc: a rank that throws is reported by run() and its peers see peer_lost") {
  auto errors = inproc::run(2, [](inproc& t) {
    if (t.rank() == 0) throw std::logic_error("rank 0 failed");
    int x = 0;
    auto r = t.recv(0, 1, &x, sizeof x);
    t.wait(r, tutti::deadline::after(30s));
  });
  REQUIRE(errors.size() == 2);
  CHECK(holds<std::logic_error>(errors[0]));
  CHECK(what_of(errors[0]) == "rank 0 failed");
  CHECK(holds<tutti::peer_lost>(errors[1]));
}

TEST_CASE("inproc: a receive nobody answers times out at the deadline while the peer is alive") {
  std::atomic<bool> release{false}, sent{false};
  double elapsed = -1;
  std::string message;
  std::uint32_t late = 0, stale = 0xdeadbeef, stale_after_late_send = 0;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() == 1) {
      await(release);  // alive, but silent until rank 0 has timed out
      const std::uint32_t v = 1234;
      auto s = t.send(0, 8, &v, 4);
      sent = true;
      t.wait(s, soon());
      return;
    }
    auto r = t.recv(1, 8, &stale, 4);
    const auto t0 = clock_type::now();
    try {
      t.wait(r, tutti::deadline::after(200ms));
    } catch (const tutti::timeout& e) {
      elapsed = seconds_since(t0);
      message = e.what();
    }
    release = true;
    // The timed-out receive was withdrawn: the late message must not land in its buffer, and it
    // waits for (then matches) a new receive.
    await(sent);
    std::this_thread::sleep_for(30ms);
    stale_after_late_send = stale;
    auto again = t.recv(1, 8, &late, 4);
    t.wait(again, soon());
  });
  check_all_ok(errors);
  CHECK(elapsed >= 0.15);
  CHECK(elapsed < 2.0);
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK(late == 1234);
  CHECK(stale_after_late_send == 0xdeadbeef);
  CHECK(stale == 0xdeadbeef);
}

TEST_CASE("inproc: a peer index out of range is invalid_argument naming it") {
  std::vector<std::string> messages;
  auto errors = inproc::run(3, [&](inproc& t) {
    if (t.rank() != 0) return;
    int x = 0;
    for (int bad : {-1, 3, 100}) {
      for (bool send : {true, false}) {
        try {
          if (send) (void)t.send(bad, 0, &x, sizeof x);
          else (void)t.recv(bad, 0, &x, sizeof x);
          messages.push_back("no exception");
        } catch (const tutti::invalid_argument& e) {
          messages.push_back(std::string("ok:") + std::to_string(bad) + ":" + e.what());
        }
      }
    }
  });
  check_all_ok(errors);
  REQUIRE(messages.size() == 6);
  for (const auto& m : messages) {
    CAPTURE(m);
    REQUIRE(m.rfind("ok:", 0) == 0);
    const std::string bad = m.substr(3, m.find(':', 3) - 3);
    CHECK(m.find("peer " + bad) != std::string::npos);
  }
}

TEST_CASE("inproc: construction and run() check their arguments") {
  auto f = std::make_shared<inproc::fabric>(2);
  CHECK_THROWS_AS(inproc(f, 2), tutti::invalid_argument);
  CHECK_THROWS_AS(inproc(f, -1), tutti::invalid_argument);
  CHECK_THROWS_AS(inproc(nullptr, 0), tutti::invalid_argument);
  CHECK_THROWS_AS(inproc::run(0, [](inproc&) {}), tutti::invalid_argument);
  inproc ok(f, 1);
  CHECK(ok.rank() == 1);
  CHECK(ok.world_size() == 2);
}

TEST_CASE("inproc: more than max_outstanding pending requests is a transport_error") {
  std::string message;
  auto errors = inproc::run(2, [&](inproc& t) {
    if (t.rank() != 0) return;
    static std::uint8_t sink[inproc::max_outstanding + 1];
    std::vector<inproc::request> reqs;
    for (std::size_t i = 0; i < inproc::max_outstanding; ++i) reqs.push_back(t.send(1, i, &sink[i], 1));
    try {
      (void)t.send(1, 99999, &sink[inproc::max_outstanding], 1);
    } catch (const tutti::transport_error& e) {
      message = e.what();
    }
  });
  check_all_ok(errors);
  CHECK(message.find(std::to_string(inproc::max_outstanding)) != std::string::npos);
}

TEST_CASE("first_loss: the first record names the culprit; a store gone names its server as lost, a silent one says so") {
  using tutti::bootstrap::store_bytes;
  using tutti::deadline;
  using tutti::transport::store_answer;
  tutti::bootstrap::inproc_store store;
  auto ops = tutti::bootstrap::store_ops::of(store);
  // Rank 1 sees rank 3 die first; rank 2 then sees only rank 1 abort, and is told of rank 3.
  const auto first = tutti::transport::first_loss(ops, "job/lost", 1, 3, "rank 3 vanished");
  CHECK(first.peer == 3);
  CHECK(first.store == store_answer::answered);
  const auto second = tutti::transport::first_loss(ops, "job/lost", 2, 1, "rank 1 vanished");
  CHECK(second.peer == 3);
  CHECK(second.what.find("rank 3 was lost first (rank 3 vanished); here that showed as: rank 1 vanished") !=
        std::string::npos);
  CHECK(second.store == store_answer::answered);

  // A store whose connection closed (its server died with rank 0): rank 0 is named as lost, not the neighbour.
  const auto failing = [](auto raise) {
    tutti::bootstrap::store_ops s;
    s.add = [raise](const std::string&, std::int64_t, deadline) -> std::int64_t { raise(); return 0; };
    s.set = [raise](const std::string&, store_bytes, deadline) { raise(); };
    s.get = [raise](const std::string&, deadline) -> store_bytes { raise(); return {}; };
    s.check = [raise](const std::string&, deadline) -> bool { raise(); return false; };
    s.server_rank = 0;
    return s;
  };
  auto gone = failing([] { throw tutti::peer_lost(0, "lost the tcp_store server (rank 0)"); });
  const auto blamed = tutti::transport::first_loss(gone, "job/lost", 2, 1, "rank 1 vanished");
  CHECK(blamed.store == store_answer::gone);
  CHECK(blamed.peer == 0);
  CHECK(blamed.what.find("rank 0, whose process serves the job's store, is lost: the store closed or refused its "
                         "connections; here that showed as: rank 1 vanished") != std::string::npos);

  // A store that does not answer (rank 0 stopped, or its host out of reach): nobody is said to be
  // lost; the text says the store was silent, and what this rank saw.
  auto silent = failing([] { throw tutti::timeout("tcp_store did not answer"); });
  const auto stalled = tutti::transport::first_loss(silent, "job/lost", 3, 1, "rank 1 is lost (Endpoint timeout)");
  CHECK(stalled.store == store_answer::silent);
  CHECK(stalled.peer == 0);
  CHECK(stalled.what.find("the job's store, served by rank 0, did not answer (rank 0 stopped, or its host "
                          "unreachable) in 1000 ms, so who was lost first cannot be learnt; here: rank 1 is lost "
                          "(Endpoint timeout)") == 0);

  // Unknown server, or the server is this rank: the peer seen is named, with how the store took it.
  gone.server_rank = -1;
  CHECK(tutti::transport::first_loss(gone, "job/lost", 2, 1, "x").peer == 1);
  silent.server_rank = 3;
  const auto own = tutti::transport::first_loss(silent, "job/lost", 3, 1, "x");
  CHECK(own.peer == 1);
  CHECK(own.what == "x");
  CHECK(own.store == store_answer::silent);
}
