//! @file teardown_watch_test.cpp  The bound on destroying a UCX worker (transport/ucx/teardown_watch.hpp):
//! UCX's TCP transport spins on a send to a peer that stopped listening; past its patience the
//! watch shuts the stalled connection down so that spin ends, and touches nothing else.
//! Connections here are loopback pairs whose reader never reads: the sender's queue fills and the
//! kernel probes the closed window with a growing backoff, as it retransmits to a host that is gone.
//! (The whole case, a link taken down mid-collective: tests/netns/faults.sh, kind `down`.)
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include <tutti/transport/ucx/teardown_watch.hpp>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using tutti::transport::ucx_detail::open_socket_inodes;
using tutti::transport::ucx_detail::teardown_watch;

//! A loopback TCP connection: `out` writes, `in` reads (or, for a stalled one, never does).
struct connection {
  int out = -1, in = -1;
  connection() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener, 1) == 0);
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    out = ::socket(AF_INET, SOCK_STREAM, 0);
    const int small = 4096;  // full in a few sends
    ::setsockopt(out, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    REQUIRE(::connect(out, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    in = ::accept(listener, nullptr, nullptr);
    REQUIRE(in >= 0);
    ::setsockopt(in, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ::close(listener);
  }
  ~connection() {
    ::close(out);
    ::close(in);
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  //! Sends without blocking until the kernel takes no more (the reader reads nothing).
  //! Small sends are taken while the kernel still moves bytes to the reader's buffer, so it is
  //! full once even one byte has been refused three times over 150 ms.
  void fill() const {
    const char chunk[1024] = {};
    const auto until = clock_type::now() + 5s;
    for (int refused = 0; refused < 3;) {
      REQUIRE(clock_type::now() < until);
      if (::send(out, chunk, refused ? 1 : sizeof chunk, MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
        refused = 0;
        continue;
      }
      REQUIRE(errno == EAGAIN);
      ++refused;
      std::this_thread::sleep_for(50ms);
    }
  }
};

//! UCX's ucs_socket_send retries a non-blocking send while the kernel says "again"; here the
//! sender always has more to send, so the queue stays full whatever the reader's kernel still
//! takes. For at most `limit`; returns the errno that ended it (EAGAIN: the limit did).
int spin_send(int fd, std::chrono::milliseconds limit) {
  const char fin[9] = {};
  const auto until = clock_type::now() + limit;
  while (clock_type::now() < until) {
    if (::send(fd, fin, sizeof fin, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN) return errno;
    std::this_thread::sleep_for(1ms);
  }
  return EAGAIN;
}

}  // namespace

TEST_CASE("teardown_watch: past its patience, a stalled connection is shut down and the spin on it ends; a healthy one is untouched") {
  const auto spared = open_socket_inodes();
  connection stalled, healthy;
  stalled.fill();
  const auto began = clock_type::now();
  teardown_watch watch(0, spared, 100ms);
  const int ended_by = spin_send(stalled.out, 20s);
  const double took = std::chrono::duration<double>(clock_type::now() - began).count();
  CHECK(ended_by == EPIPE);
  CHECK(took >= 0.1);  // not before the patience
  CHECK(took < 5.0);   // measured: the first zero-window probe's backoff, under a second
  const auto counted = clock_type::now() + 2s;
  while (watch.shut() == 0 && clock_type::now() < counted) std::this_thread::sleep_for(5ms);
  CHECK(watch.shut() == 1);
  char byte = 7, got = 0;
  CHECK(::send(healthy.out, &byte, 1, MSG_NOSIGNAL) == 1);
  CHECK(::recv(healthy.in, &got, 1, 0) == 1);
  CHECK(got == 7);
}

TEST_CASE("teardown_watch: connections open before the worker are spared, stalled or not") {
  connection stalled;
  stalled.fill();
  const auto spared = open_socket_inodes();
  teardown_watch watch(0, spared, 50ms);
  CHECK(spin_send(stalled.out, 1500ms) == EAGAIN);  // still stalled, still open
  CHECK(watch.shut() == 0);
}

TEST_CASE("teardown_watch: a destroy that returns within its patience costs no wait") {
  const auto began = clock_type::now();
  {
    const teardown_watch watch(0, open_socket_inodes(), 10s);
  }
  CHECK(clock_type::now() - began < 1s);
}
