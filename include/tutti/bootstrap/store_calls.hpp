//! @file store_calls.hpp  Store calls with a deadline where the store takes one, and the store's
//! operations type-erased for transports that keep talking to it after construction.
//!
//! The Store concept's set, check and add carry no deadline (an in-process store never waits);
//! tcp_store also offers them with one. A transport on a failure path (a peer is lost, maybe with
//! the store's server) must not wait a minute for a store that is gone: these helpers pass the
//! deadline to stores that take it and call the plain form on the others.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/core/deadline.hpp"

namespace tutti::bootstrap {

template <class S>
void bounded_set(S& s, const std::string& key, store_bytes value, deadline until) {
  if constexpr (requires { s.set(key, std::move(value), until); }) s.set(key, std::move(value), until);
  else s.set(key, std::move(value));
}

template <class S>
[[nodiscard]] std::int64_t bounded_add(S& s, const std::string& key, std::int64_t delta, deadline until) {
  if constexpr (requires { { s.add(key, delta, until) } -> std::same_as<std::int64_t>; }) return s.add(key, delta, until);
  else return s.add(key, delta);
}

template <class S>
[[nodiscard]] bool bounded_check(S& s, const std::string& key, deadline until) {
  if constexpr (requires { { s.check(key, until) } -> std::same_as<bool>; }) return s.check(key, until);
  else return s.check(key);
}

//! The rank whose process serves the store, where the store knows it (tcp_store); else -1.
template <class S>
[[nodiscard]] int server_rank_of(const S& s) {
  if constexpr (requires { { s.server_rank() } -> std::convertible_to<int>; }) return s.server_rank();
  else return -1;
}

//! A store's operations, every one bounded by the caller's deadline; the store must outlive it.
struct store_ops {
  std::function<void(const std::string&, store_bytes, deadline)> set;
  std::function<store_bytes(const std::string&, deadline)> get;
  std::function<std::int64_t(const std::string&, std::int64_t, deadline)> add;
  std::function<bool(const std::string&, deadline)> check;
  int server_rank = -1;  //!< whose process serves the store (-1: not known)

  template <class S>
  [[nodiscard]] static store_ops of(S& s) {
    return {[&s](const std::string& k, store_bytes v, deadline u) { bounded_set(s, k, std::move(v), u); },
            [&s](const std::string& k, deadline u) { return s.get(k, u); },
            [&s](const std::string& k, std::int64_t d, deadline u) { return bounded_add(s, k, d, u); },
            [&s](const std::string& k, deadline u) { return bounded_check(s, k, u); }, server_rank_of(s)};
  }
};

}  // namespace tutti::bootstrap
