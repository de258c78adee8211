//! tutti::background_worker: tasks run in posting order on one thread, wait() rethrows a failure,
//! and a lingering worker (the torch backend's) runs what is posted while it looks and after it sleeps.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <tutti/core/background_worker.hpp>

TEST_CASE("background_worker: posting order, one thread, a failure rethrown by wait; with and without linger") {
  for (const auto linger : {std::chrono::microseconds(0), std::chrono::microseconds(200)}) {
    INFO("linger " << linger.count() << " us");
    tutti::background_worker w("test-worker", linger);
    std::vector<int> order;
    std::thread::id ran_on;
    std::uint64_t last = 0;
    for (int i = 0; i < 500; ++i) {
      last = w.post([&, i] {
        if (i == 0) ran_on = std::this_thread::get_id();
        CHECK(std::this_thread::get_id() == ran_on);
        order.push_back(i);
      });
      if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));  // past the linger: asleep
    }
    w.wait(last);
    REQUIRE(order.size() == 500);
    for (int i = 0; i < 500; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
    const auto failing = w.post([] { throw std::runtime_error("task failed"); });
    CHECK_THROWS_WITH_AS(w.wait(failing), "task failed", std::runtime_error);
    w.reset();
    int after = 0;
    w.wait(w.post([&] { after = 1; }));
    CHECK(after == 1);
  }
}
