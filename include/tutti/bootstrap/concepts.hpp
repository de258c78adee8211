//! @file concepts.hpp  The Store concept: the key-value rendezvous every bootstrap path goes through.
//!
//! Ranks that know nothing of each other yet meet in a store: they publish what peers need (a UCX
//! worker address, a node id, an interface list) under agreed keys and wait for each other's.
//! `inproc_store` (threads of one process) satisfies it today; a TCP store served by rank 0, with
//! an authenticated handshake, is the next implementation (issue 8, not built yet).
#pragma once
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/core/deadline.hpp"

namespace tutti::bootstrap {

using store_bytes = std::vector<unsigned char>;

/// A Store holds byte values under string keys, shared by every rank of a job.
///  - `set(key, value)` creates or overwrites the key.
///  - `get(key, until)` waits until the key exists and returns its value; throws tutti::timeout
///    naming the key at the deadline.
///  - `wait(keys, until)` waits until every key exists (timeout names the first missing one).
///  - `check(key)` says whether the key exists now; it never waits.
///  - `add(key, delta)` adds to a counter atomically (the key holds decimal text, absent = 0) and
///    returns the new value.
///  - `barrier(key, count, until)` returns once `count` callers have entered barrier(key, ...);
///    each key serves one barrier.
template <class S>
concept store = requires(S& s, const std::string& key, store_bytes value, const std::vector<std::string>& keys,
                         deadline until, std::int64_t delta, int count) {
  s.set(key, std::move(value));
  { s.get(key, until) } -> std::same_as<store_bytes>;
  s.wait(keys, until);
  { s.check(key) } -> std::same_as<bool>;
  { s.add(key, delta) } -> std::same_as<std::int64_t>;
  s.barrier(key, count, until);
};

//! Instantiated where tutti takes a store, so a class that misses the concept gets one sentence.
template <class S>
constexpr bool check_store() {
  static_assert(store<S>,
                "tutti requires a Store satisfying tutti::bootstrap::store (set, get, wait, check, add, barrier; "
                "see tutti/bootstrap/concepts.hpp)");
  return true;
}

}  // namespace tutti::bootstrap
