//! @file inproc_store.hpp  A key-value rendezvous store shared by the ranks (threads) of one process.
#pragma once
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap {

//! set/get/wait with deadlines. Values are bytes; a key is written once per job by convention,
//! but set() overwrites so a store can be reused between phases.
class inproc_store {
 public:
  using bytes = store_bytes;

  void set(const std::string& key, bytes value) {
    {
      std::lock_guard lock(mutex_);
      values_[key] = std::move(value);
    }
    changed_.notify_all();
  }

  //! Waits until every key exists; throws tutti::timeout naming the first missing key.
  void wait(const std::vector<std::string>& keys, deadline until) {
    std::unique_lock lock(mutex_);
    for (const auto& key : keys) {
      if (!changed_.wait_until(lock, until.at(), [&] { return values_.count(key) != 0; }))
        throw timeout("store: key '" + key + "' was not set before the deadline");
    }
  }

  //! Waits for the key, then returns its value.
  [[nodiscard]] bytes get(const std::string& key, deadline until) {
    wait({key}, until);
    std::lock_guard lock(mutex_);
    return values_.at(key);
  }

  //! True when the key exists now (never waits).
  [[nodiscard]] bool check(const std::string& key) const {
    std::lock_guard lock(mutex_);
    return values_.count(key) != 0;
  }

  //! Adds `delta` to the counter under `key` (decimal text; absent counts as 0) and returns the
  //! new value. A key holding something that is not a counter is an invalid_argument naming it.
  std::int64_t add(const std::string& key, std::int64_t delta) {
    std::int64_t value = 0;
    {
      std::lock_guard lock(mutex_);
      auto& text = values_[key];
      if (!text.empty()) {
        const auto* first = reinterpret_cast<const char*>(text.data());
        auto [end, ec] = std::from_chars(first, first + text.size(), value);
        if (ec != std::errc{} || end != first + text.size())
          throw invalid_argument("store: key '" + key + "' does not hold a counter");
      }
      value += delta;
      const std::string out = std::to_string(value);
      text.assign(out.begin(), out.end());
    }
    changed_.notify_all();
    return value;
  }

  //! Returns once `count` callers have entered barrier(key, ...): each adds itself to the counter
  //! `key`, and the last one opens `key + "/open"`, which everyone waits for.
  void barrier(const std::string& key, int count, deadline until) {
    if (add(key, 1) == count) set(key + "/open", bytes{1});
    try {
      wait({key + "/open"}, until);
    } catch (const timeout&) {
      std::lock_guard lock(mutex_);
      const auto& text = values_[key];
      throw timeout("store: barrier '" + key + "' saw " + std::string(text.begin(), text.end()) + " of " +
                    std::to_string(count) + " callers before the deadline");
    }
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, bytes> values_;
};

static_assert(store<inproc_store>, "bootstrap::inproc_store must satisfy tutti::bootstrap::store");

}  // namespace tutti::bootstrap
