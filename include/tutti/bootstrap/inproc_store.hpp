//! @file inproc_store.hpp  A key-value rendezvous store shared by the ranks (threads) of one process.
#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap {

//! set/get/wait with deadlines. Values are bytes; a key is written once per job by convention,
//! but set() overwrites so a store can be reused between phases.
class inproc_store {
 public:
  using bytes = std::vector<unsigned char>;

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

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, bytes> values_;
};

}  // namespace tutti::bootstrap
