//! @file store_test.cpp  bootstrap::inproc_store: set/get/wait/check across threads, deadlines, overwrite.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tutti/bootstrap/inproc_store.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace {

using namespace std::chrono_literals;
using store = tutti::bootstrap::inproc_store;
using clock_type = std::chrono::steady_clock;

store::bytes to_bytes(const std::string& s) { return store::bytes(s.begin(), s.end()); }
std::string to_string(const store::bytes& b) { return std::string(b.begin(), b.end()); }
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

//! The message of the tutti::timeout that fn throws ("" if it throws nothing).
template <class F> std::string timeout_message(F&& fn) {
  try {
    fn();
  } catch (const tutti::timeout& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("inproc_store: set then get in one thread, binary values kept byte for byte") {
  store s;
  s.set("a", to_bytes("hello"));
  CHECK(to_string(s.get("a", tutti::deadline::after(1s))) == "hello");
  const store::bytes binary = {0, 255, 0, 7, 128};
  s.set("bin", binary);
  CHECK(s.get("bin", tutti::deadline::after(1s)) == binary);
  s.set("empty", {});
  CHECK(s.get("empty", tutti::deadline::after(1s)).empty());
  CHECK(s.check("empty"));  // an empty value is still a set key
}

TEST_CASE("inproc_store: a getter waits for a key another thread sets 50 ms later") {
  store s;
  std::string got;
  double waited = 0;
  const auto t0 = clock_type::now();
  std::thread getter([&] {
    got = to_string(s.get("rank0/address", tutti::deadline::after(10s)));
    waited = seconds_since(t0);
  });
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    s.set("rank0/address", to_bytes("10.0.0.1:29500"));
  });
  setter.join();
  getter.join();
  CHECK(got == "10.0.0.1:29500");
  CHECK(waited >= 0.045);  // it really waited for the set...
  CHECK(waited < 5.0);     // ...and woke up when it happened, not at the deadline
}

TEST_CASE("inproc_store: wait on several keys set by several threads, in any order") {
  store s;
  const std::vector<std::string> keys = {"k0", "k1", "k2", "k3"};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    s.wait(keys, tutti::deadline::after(10s));
    done = true;
  });
  std::vector<std::thread> setters;
  for (int i = 3; i >= 0; --i) {
    setters.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * (4 - i)));
      s.set(keys[static_cast<std::size_t>(i)], to_bytes(std::to_string(i)));
    });
  }
  for (auto& t : setters) t.join();
  waiter.join();
  CHECK(done.load());
  for (int i = 0; i < 4; ++i) CHECK(to_string(s.get(keys[static_cast<std::size_t>(i)], tutti::deadline::after(1s))) == std::to_string(i));
  // Waiting on keys that already exist returns at once; so does an empty list.
  const auto t0 = clock_type::now();
  s.wait(keys, tutti::deadline::after(10s));
  s.wait({}, tutti::deadline::after(10s));
  CHECK(seconds_since(t0) < 1.0);
}

TEST_CASE("inproc_store: many ranks exchange addresses through the store") {
  constexpr int world = 5;
  store s;
  std::vector<std::vector<std::string>> seen(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      s.set("addr/" + std::to_string(r), to_bytes("host" + std::to_string(r)));
      for (int p = 0; p < world; ++p)
        seen[static_cast<std::size_t>(r)].push_back(to_string(s.get("addr/" + std::to_string(p), tutti::deadline::after(10s))));
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < world; ++r)
    for (int p = 0; p < world; ++p) CHECK(seen[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)] == "host" + std::to_string(p));
}

TEST_CASE("inproc_store: get of a missing key throws tutti::timeout naming the key, at the deadline") {
  store s;
  s.set("present", to_bytes("x"));
  const auto t0 = clock_type::now();
  const std::string msg = timeout_message([&] { (void)s.get("rank3/never", tutti::deadline::after(100ms)); });
  const double elapsed = seconds_since(t0);
  CHECK(msg.find("rank3/never") != std::string::npos);
  CHECK(elapsed >= 0.09);
  CHECK(elapsed < 2.0);
  // timeout is a tutti::error.
  CHECK_THROWS_AS((void)s.get("rank3/never", tutti::deadline::after(1ms)), tutti::error);
  // A deadline already in the past still answers for a key that is there.
  CHECK(to_string(s.get("present", tutti::deadline::after(-1s))) == "x");
}

TEST_CASE("inproc_store: wait names the first missing key") {
  store s;
  s.set("a", to_bytes("1"));
  s.set("c", to_bytes("3"));
  const std::string msg = timeout_message([&] { s.wait({"a", "b", "c", "d"}, tutti::deadline::after(50ms)); });
  CHECK(msg.find("'b'") != std::string::npos);
  CHECK(msg.find("'d'") == std::string::npos);
}

TEST_CASE("inproc_store: check never waits and sees sets from other threads") {
  store s;
  CHECK_FALSE(s.check("k"));
  std::thread t([&] { s.set("k", to_bytes("v")); });
  t.join();
  CHECK(s.check("k"));
  CHECK_FALSE(s.check("K"));  // keys are case-sensitive
  const store& cs = s;        // check() is const
  CHECK(cs.check("k"));
}

TEST_CASE("inproc_store: set overwrites an existing key") {
  store s;
  s.set("phase", to_bytes("one"));
  s.set("phase", to_bytes("two"));
  CHECK(to_string(s.get("phase", tutti::deadline::after(1s))) == "two");
  s.set("phase", to_bytes("three-longer"));
  CHECK(to_string(s.get("phase", tutti::deadline::after(1s))) == "three-longer");
  s.set("phase", to_bytes(""));
  CHECK(s.get("phase", tutti::deadline::after(1s)).empty());
}

TEST_CASE("inproc_store: add is atomic across threads and returns the new value") {
  store s;
  std::vector<std::thread> threads;
  std::atomic<int> saw_last{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (s.add("n", 1) == 4000) ++saw_last;
    });
  for (auto& t : threads) t.join();
  CHECK(to_string(s.get("n", tutti::deadline::after(1s))) == "4000");
  CHECK(saw_last == 1);  // exactly one caller saw the final value
  CHECK(s.add("n", -4000) == 0);
  s.set("text", to_bytes("abc"));
  CHECK_THROWS_AS(s.add("text", 1), tutti::invalid_argument);
}

TEST_CASE("inproc_store: barrier releases all callers together, and times out naming how many came") {
  store s;
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      s.barrier("b", 4, tutti::deadline::after(5s));
      ++passed;
    });
  std::this_thread::sleep_for(50ms);
  CHECK(passed == 0);  // three of four: nobody may pass yet
  s.barrier("b", 4, tutti::deadline::after(5s));
  for (auto& t : threads) t.join();
  CHECK(passed == 3);
  const auto message = timeout_message([&] { s.barrier("lonely", 2, tutti::deadline::after(20ms)); });
  CHECK(message.find("barrier 'lonely' saw 1 of 2 callers") != std::string::npos);
}
