//! @file store_test_options.hpp  What tcp_store_test.cpp and tcp_store_security_test.cpp share: two
//! job keys, options for a server on loopback and its clients, bytes from text and back, and the
//! message of an expected exception.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store.hpp"

namespace tutti_test {

inline constexpr const char* key_a = "job-a-secret-0123456789abcdef";
inline constexpr const char* key_b = "job-b-secret-fedcba9876543210";

inline tutti::bootstrap::store_bytes to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string to_string(const tutti::bootstrap::store_bytes& b) { return {b.begin(), b.end()}; }

//! A server rank's options: every operation 5 s, an unauthenticated connection 300 ms.
inline tutti::bootstrap::tcp_store_options server_options(const char* key = key_a, int rank = 0,
                                                          std::string bind = "127.0.0.1", std::uint16_t port = 0) {
  using namespace std::chrono_literals;
  tutti::bootstrap::tcp_store_options o;
  o.is_server = true;
  o.bind_address = std::move(bind);
  o.port = port;
  o.key = tutti::bootstrap::job_key(key);
  o.timeout = 5s;
  o.handshake_timeout = 300ms;
  o.rank = rank;
  return o;
}

inline tutti::bootstrap::tcp_store_options client_options(std::uint16_t port, const char* key = key_a, int rank = 1,
                                                          std::string host = "127.0.0.1") {
  using namespace std::chrono_literals;
  tutti::bootstrap::tcp_store_options o;
  o.host = std::move(host);
  o.port = port;
  o.key = tutti::bootstrap::job_key(key);
  o.timeout = 5s;
  o.rank = rank;
  return o;
}

//! The message of the exception of type E that fn throws ("" if none).
template <class E, class F>
std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace tutti_test
