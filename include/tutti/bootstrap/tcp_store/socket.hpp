//! @file socket.hpp  tcp_store's sockets: an owning fd, name resolution, listening, and connecting with back-off.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"

namespace tutti::bootstrap::tcp_net {

//! Owns one file descriptor; closes it once.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }
  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

[[nodiscard]] inline std::string errno_text(int e) { return std::strerror(e); }

//! "host:port", with brackets around an IPv6 literal ("[::1]:29500").
[[nodiscard]] inline std::string host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

[[nodiscard]] inline std::string rank_prefix(int rank) {
  return rank < 0 ? std::string() : on_rank(rank);
}

//! Milliseconds left before `until`, clamped to [0, cap] (poll takes an int).
[[nodiscard]] inline int ms_left(deadline until, int cap = 1 << 30) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until.at() - deadline::clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, cap));
}

struct addrinfo_deleter {
  void operator()(addrinfo* a) const noexcept { ::freeaddrinfo(a); }
};
using addrinfo_list = std::unique_ptr<addrinfo, addrinfo_deleter>;

//! getaddrinfo for TCP. A name that does not exist is an invalid_argument naming it; a temporary
//! failure (EAI_AGAIN: the resolver is not answering yet) returns null so the caller may retry.
[[nodiscard]] inline addrinfo_list resolve(const std::string& host, std::uint16_t port, bool passive, int rank,
                                           std::string* temporary_error = nullptr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) | (host.empty() ? 0 : AI_ADDRCONFIG);
  addrinfo* out = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out);
  if (rc == EAI_AGAIN) {
    if (temporary_error) *temporary_error = ::gai_strerror(rc);
    return nullptr;
  }
  if (rc != 0 || out == nullptr)
    throw invalid_argument(rank_prefix(rank) + "tcp_store: cannot resolve host '" + host + "': " +
                           (rc == EAI_SYSTEM ? errno_text(errno) : std::string(::gai_strerror(rc))));
  return addrinfo_list(out);
}

//! The numeric address and port of a socket's own end (getsockname).
[[nodiscard]] inline sockaddr_storage local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    throw transport_error("tcp_store: getsockname: " + errno_text(errno));
  return ss;
}

[[nodiscard]] inline std::uint16_t port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
}

//! The numeric host of an address ("127.0.0.1", "::1").
[[nodiscard]] inline std::string numeric_host(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST] = "?";
  ::getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

//! An address this host reaches a listener bound at `ss` on: the bound address, or loopback for a
//! wildcard bind ("::" is dual stack unless IPV6_V6ONLY).
[[nodiscard]] inline std::string loopback_host(int fd, const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(ss);
    if (IN6_IS_ADDR_UNSPECIFIED(&a6.sin6_addr)) {
      int v6only = 0;
      socklen_t len = sizeof v6only;
      ::getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len);
      return v6only ? "::1" : "127.0.0.1";
    }
    return numeric_host(reinterpret_cast<const sockaddr*>(&ss), sizeof(sockaddr_in6));
  }
  const auto& a4 = reinterpret_cast<const sockaddr_in&>(ss);
  if (a4.sin_addr.s_addr == htonl(INADDR_ANY)) return "127.0.0.1";
  return numeric_host(reinterpret_cast<const sockaddr*>(&ss), sizeof(sockaddr_in));
}

inline void set_nodelay(int fd) noexcept {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small request/reply frames
}

//! A non-blocking listening socket on `bind_address` (empty: every interface, IPv6 dual stack when
//! the host has IPv6, else 0.0.0.0) and `port` (0: the kernel picks one; local_address() tells).
[[nodiscard]] inline unique_fd listen_on(const std::string& bind_address, std::uint16_t port, int rank) {
  std::string last_error = "no address to bind";
  auto try_bind = [&](int family, const sockaddr* sa, socklen_t len, bool dual_stack) -> unique_fd {
    unique_fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
    if (!fd) {
      last_error = "socket: " + errno_text(errno);
      return {};
    }
    int one = 1, zero = 0;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // restart while old connections linger
    if (dual_stack) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (::bind(fd.get(), sa, len) != 0) {
      last_error = "bind " + numeric_host(sa, len) + ": " + errno_text(errno);
      return {};
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      last_error = "listen: " + errno_text(errno);
      return {};
    }
    return fd;
  };
  if (bind_address.empty()) {
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    any6.sin6_addr = in6addr_any;
    any6.sin6_port = htons(port);
    if (auto fd = try_bind(AF_INET6, reinterpret_cast<sockaddr*>(&any6), sizeof any6, true)) return fd;
    sockaddr_in any4{};
    any4.sin_family = AF_INET;
    any4.sin_addr.s_addr = htonl(INADDR_ANY);
    any4.sin_port = htons(port);
    if (auto fd = try_bind(AF_INET, reinterpret_cast<sockaddr*>(&any4), sizeof any4, false)) return fd;
  } else {
    const auto list = resolve(bind_address, port, true, rank);
    for (const addrinfo* a = list.get(); a; a = a->ai_next)
      if (auto fd = try_bind(a->ai_family, a->ai_addr, a->ai_addrlen, false)) return fd;
  }
  throw transport_error(rank_prefix(rank) + "tcp_store: cannot listen on " +
                        host_port(bind_address.empty() ? "*" : bind_address, port) + ": " + last_error);
}

//! One non-blocking connect to one address, waiting at most until `until`. Empty fd on failure
//! (with `error` set, and `refused` when the host answered that nothing listens on the port); the
//! socket returned is non-blocking.
[[nodiscard]] inline unique_fd connect_once(const addrinfo& a, deadline until, std::string& error, bool& refused) {
  unique_fd fd(::socket(a.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd) {
    error = "socket: " + errno_text(errno);
    return {};
  }
  if (::connect(fd.get(), a.ai_addr, a.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      refused = errno == ECONNREFUSED;
      error = errno_text(errno);
      return {};
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int rc;
    while ((rc = ::poll(&p, 1, ms_left(until))) < 0 && errno == EINTR) {
    }
    if (rc == 0) {
      error = "connect timed out";
      return {};
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (rc < 0 || so_error != 0) {
      refused = rc >= 0 && so_error == ECONNREFUSED;
      error = errno_text(rc < 0 ? errno : so_error);
      return {};
    }
  }
  set_nodelay(fd.get());
  return fd;
}

//! Connects to host:port, retrying with capped exponential back-off and jitter (the server may
//! start after its clients) until `until`; then a tutti::timeout saying what was tried for how long.
//! `reached_before`: this client has talked to the server already. Then a refused connection (its
//! host answers, nothing listens on the port) means the server's process is gone, not "not yet
//! started": tutti::peer_lost naming `server_rank` at once, instead of retrying until the deadline.
[[nodiscard]] inline unique_fd connect_with_retry(const std::string& host, std::uint16_t port, deadline until,
                                                  int rank, bool reached_before = false, int server_rank = 0) {
  using namespace std::chrono;
  const auto started = steady_clock::now();
  std::minstd_rand jitter(std::random_device{}());
  auto delay = milliseconds(10);
  constexpr auto max_delay = milliseconds(1000);
  std::string error = "no attempt made before the deadline";
  int attempts = 0;
  do {
    ++attempts;
    bool refused = false;
    if (auto list = resolve(host, port, false, rank, &error)) {
      for (const addrinfo* a = list.get(); a; a = a->ai_next)
        if (auto fd = connect_once(*a, until, error, refused)) return fd;
    }
    if (refused && reached_before)
      throw peer_lost(server_rank, rank_prefix(rank) + "lost the tcp_store server (rank " + std::to_string(server_rank) +
                                       ") at " + host_port(host, port) + ": its port refuses connections (" + error +
                                       "): the server's process is gone");
    // Sleep between half and all of the current delay, so ranks started together spread out.
    const auto sleep = milliseconds(delay.count() / 2 + static_cast<long long>(jitter() % static_cast<std::uint64_t>(delay.count() / 2 + 1)));
    const auto left = duration_cast<milliseconds>(until.at() - steady_clock::now());
    if (left <= milliseconds(0)) break;
    std::this_thread::sleep_for(std::min(sleep, left));
    delay = std::min(delay * 2, max_delay);
  } while (!until.passed());
  char tried[32];
  std::snprintf(tried, sizeof tried, "%.1f", duration<double>(steady_clock::now() - started).count());
  throw timeout(rank_prefix(rank) + "could not reach the tcp_store at " + host_port(host, port) + ": tried for " +
                tried + " s (" + std::to_string(attempts) + " attempts; last error: " + error +
                "). Is rank 0 running, and are TUTTI_STORE_ADDR / MASTER_ADDR and the port right?");
}

}  // namespace tutti::bootstrap::tcp_net
