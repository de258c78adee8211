//! @file store_attack.hpp  Bad clients for a tcp_store server: slow loris, oversized, garbage, idle.
//!
//! Shared by tests/bootstrap/tcp_store_security_test.cpp (which asserts that good clients keep
//! being served and that every bad one is closed) and bench/store/store_under_attack.cpp (which
//! measures the good clients' latency beside them). One thread drives every bad connection with
//! poll(); nothing here knows the job key, so none of them can authenticate:
//!   slow_loris  a well-formed handshake response, one byte every 100 ms (never done in time)
//!   oversized   a frame header declaring 1 GiB, then nothing
//!   garbage     an HTTP request line
//!   idle        connects and sends nothing
//! None completes a handshake with a wrong MAC: that is a refused *rank*, which by design ends the
//! job's pending waits (server.hpp, store_service::refuse), not a slow client.
#pragma once
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

namespace tutti_test {

enum class bad_kind : int { slow_loris = 0, oversized = 1, garbage = 2, idle = 3 };
inline constexpr std::array<std::string_view, 4> bad_kind_names = {"slow loris", "oversized", "garbage", "idle"};

struct attack_report {
  int connected = 0;                  //!< connections the kernel accepted
  int closed_by_server = 0;           //!< of those, how many the server closed (EOF or reset)
  std::array<int, 4> closed_of{};     //!< the same, per bad_kind
  double last_close_seconds = 0;      //!< when the last of them was closed, from the start
};

//! `count` bad connections to 127.0.0.1:port, kinds in turn, driven until the server has closed
//! them all or `give_up` passed. With `reconnect`, a closed one is replaced (a steady attack of
//! `count` connections) until stop() — then the report counts every connection made.
class store_attack {
  using clock = std::chrono::steady_clock;

 public:
  store_attack(std::uint16_t port, int count, std::chrono::milliseconds give_up, bool reconnect = false)
      : port_(port), give_up_(give_up), reconnect_(reconnect) {
    start_ = clock::now();
    conns_.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) open(conns_[static_cast<std::size_t>(i)], static_cast<bad_kind>(i % 4));
    thread_ = std::thread([this] { drive(); });
  }
  store_attack(const store_attack&) = delete;
  store_attack& operator=(const store_attack&) = delete;
  ~store_attack() { (void)finish(); }

  void stop() { stop_ = true; }
  //! Waits for the driving thread (bounded by give_up) and says what happened.
  attack_report finish() {
    if (thread_.joinable()) thread_.join();
    for (auto& c : conns_)
      if (c.fd >= 0) ::close(c.fd), c.fd = -1;
    return report_;
  }

 private:
  struct bad_conn {
    int fd = -1;
    bad_kind kind{};
    std::size_t sent = 0;
    clock::time_point next_byte{};
  };

  //! (Re)opens slot `c` as a new connection of `kind` (left closed, fd -1, when connect fails).
  void open(bad_conn& c, bad_kind kind) {
    c = bad_conn{};
    c.kind = kind;
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
      return;  // not counted: connected counts what the server had to deal with
    }
    ++report_.connected;
    const auto bytes = payload(kind);
    if (kind == bad_kind::oversized || kind == bad_kind::garbage)
      (void)::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    c.next_byte = clock::now();
  }

  //! What a kind sends: slow loris the 76 bytes of a handshake response (header and 64 payload bytes).
  static std::vector<unsigned char> payload(bad_kind kind) {
    switch (kind) {
      case bad_kind::slow_loris: {
        std::vector<unsigned char> v = {'t', 't', 's', 1, 2, 0, 0, 0, 0, 0, 0, 64};
        v.resize(12 + 64, 0x5a);
        return v;
      }
      case bad_kind::oversized: return {'t', 't', 's', 1, 2, 0, 0, 0, 0x40, 0, 0, 0};  // 1 GiB
      case bad_kind::garbage: {
        constexpr std::string_view http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        return {http.begin(), http.end()};
      }
      case bad_kind::idle: return {};
    }
    return {};
  }

  void closed(bad_conn& c) {
    ::close(c.fd);
    c.fd = -1;
    ++report_.closed_by_server;
    ++report_.closed_of[static_cast<int>(c.kind)];
    report_.last_close_seconds = std::chrono::duration<double>(clock::now() - start_).count();
  }

  void drive() {
    const auto until = start_ + give_up_;
    std::vector<pollfd> fds;
    while (clock::now() < until && !stop_) {
      fds.clear();
      for (const auto& c : conns_) fds.push_back({c.fd, static_cast<short>(c.fd >= 0 ? POLLIN : 0), 0});
      if (::poll(fds.data(), fds.size(), 20) < 0 && errno != EINTR) break;  // 20 ms: slow loris's pace is 100
      const auto now = clock::now();
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        if (c.fd < 0) continue;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          unsigned char buf[256];
          const ssize_t got = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);  // the challenge, then EOF
          if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            closed(c);
            if (reconnect_ && !stop_) open(c, c.kind);  // the same slot: N connections at any time
            continue;
          }
        }
        if (c.kind == bad_kind::slow_loris && now >= c.next_byte) {
          static const auto bytes = payload(bad_kind::slow_loris);
          if (c.sent < bytes.size() && ::send(c.fd, &bytes[c.sent], 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++c.sent;
          c.next_byte = now + std::chrono::milliseconds(100);
        }
      }
      if (!reconnect_ && report_.closed_by_server == report_.connected) break;
    }
  }

  std::uint16_t port_;
  std::chrono::milliseconds give_up_;
  bool reconnect_;
  clock::time_point start_;
  std::vector<bad_conn> conns_;
  attack_report report_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  //!< last: started once everything above exists
};

}  // namespace tutti_test
