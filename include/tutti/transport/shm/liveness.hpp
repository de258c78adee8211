//! @file liveness.hpp  transport::shm's view of whether a peer is still there.
//!
//! A peer that leaves raises the "gone" flag in its segment's header (abort(), which the
//! destructor calls); a peer that dies cannot, so each peer's process is also watched through a
//! pidfd, which becomes readable when it exits. Waits ask often, so the pidfd is polled at most
//! every 2 ms per peer; the flag is read every time (one atomic load).
#pragma once
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <vector>

#include "tutti/transport/shm/layout.hpp"

namespace tutti::transport::shm_detail {

class liveness {
 public:
  explicit liveness(int world_size)
      : pidfds_(static_cast<std::size_t>(world_size), -1), next_check_(static_cast<std::size_t>(world_size)) {}
  liveness(const liveness&) = delete;
  liveness& operator=(const liveness&) = delete;
  ~liveness() {
    for (int fd : pidfds_)
      if (fd >= 0) ::close(fd);
  }

  //! Starts watching `peer`'s process (from its segment header, at start-up).
  void watch(int peer, pid_t pid) { pidfds_[static_cast<std::size_t>(peer)] = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

  //! Whether `peer` left (its flag in `h`, its header as mapped here; null before start-up) or
  //! died (its pidfd is readable; checked at most every 2 ms).
  bool gone(int peer, const segment_header* h) {
    if (h && h->gone.load(std::memory_order_acquire)) return true;
    const auto now = std::chrono::steady_clock::now();
    auto& next = next_check_[static_cast<std::size_t>(peer)];
    if (now < next) return false;
    next = now + std::chrono::milliseconds(2);
    const int fd = pidfds_[static_cast<std::size_t>(peer)];
    if (fd >= 0) {
      pollfd pfd{fd, POLLIN, 0};
      return ::poll(&pfd, 1, 0) > 0;
    }
    return h && ::kill(h->pid, 0) != 0 && errno == ESRCH;  // kernels without pidfd_open
  }

  //! Raises this rank's own flag (`own`: its header; null before start-up): peers waiting on it
  //! then get peer_lost within milliseconds.
  static void leave(segment_header* own) noexcept {
    if (own) own->gone.store(1, std::memory_order_release);
  }

 private:
  std::vector<int> pidfds_;  //!< readable once the peer process has died
  std::vector<std::chrono::steady_clock::time_point> next_check_;
};

}  // namespace tutti::transport::shm_detail
