//! @file teardown_watch.hpp  A bound on destroying a UCX worker whose TCP peer stopped listening.
//!
//! UCX's TCP transport (1.13 and still today: uct_tcp_ep_destroy -> uct_tcp_cm_send_event ->
//! ucs_socket_send) tells a connected peer "nothing more from me" with a send that it retries
//! until the kernel takes it. When the peer's host is unreachable (its link down) or its process
//! stopped, the socket's send queue stays full and that retry spins until the kernel gives up on
//! the connection: some 15 minutes of retransmissions (tcp_retries2) for a host that is gone,
//! never for a stopped process. ucp_worker_destroy, and with it the rank's abort or destructor,
//! then does not return (the fault campaign's `down` kind: one run in about thirty).
//!
//! teardown_watch bounds it. While a worker is destroyed, a watcher thread waits `patience` (a
//! destroy takes milliseconds); past it, every TCP connection made since the worker was created
//! whose send queue is not empty and whose kernel is backing off (retransmitting to a peer that
//! does not acknowledge, or probing its closed window) is shut down, again every 200 ms until the
//! destroy returns. The spinning send then fails (EPIPE), UCX drops the endpoint and the destroy
//! ends. The descriptor stays UCX's: shutdown() does not close it. Only connections stalled at a
//! moment tutti's own teardown has overrun are touched; connections that existed before the worker
//! (the store's first one, the application's own) never are. Linux only (/proc, TCP_INFO);
//! elsewhere the watch does nothing.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tutti/core/log.hpp"

#ifdef __linux__
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace tutti::transport::ucx_detail {

//! Calls fn(fd, inode) for every socket this process has open now (/proc/self/fd).
template <class F>
void for_each_socket(F&& fn) {
#ifdef __linux__
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    unsigned long inode = 0;
    if (n > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) fn(std::atoi(e->d_name), inode);
  }
  ::closedir(dir);
#else
  (void)fn;
#endif
}

//! The socket inodes this process has open now: what a watch leaves alone.
[[nodiscard]] inline std::set<unsigned long> open_socket_inodes() {
  std::set<unsigned long> inodes;
  for_each_socket([&](int, unsigned long inode) { inodes.insert(inode); });
  return inodes;
}

//! Shuts down this process's TCP connections that are stalled (see the file's comment) and not
//! in `spared`; returns the peers' addresses ("10.1.2.3:4567"), one per connection shut down.
[[nodiscard]] inline std::vector<std::string> shut_stalled_connections(const std::set<unsigned long>& spared) {
  std::vector<std::string> peers;
#ifdef __linux__
  for_each_socket([&](int fd, unsigned long inode) {
    if (spared.count(inode)) return;
    int protocol = 0, queued = 0;
    socklen_t len = sizeof protocol;
    if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 || protocol != IPPROTO_TCP) return;
    tcp_info info{};
    len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_backoff == 0) return;
    if (::ioctl(fd, SIOCOUTQ, &queued) != 0 || queued <= 0) return;
    sockaddr_storage peer{};
    len = sizeof peer;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
      if (peer.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(peer);
        ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
        port = ntohs(a.sin_port);
      } else if (peer.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(peer);
        ::inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host);
        port = ntohs(a.sin6_port);
      }
    }
    if (::shutdown(fd, SHUT_RDWR) == 0) peers.push_back(std::string(host) + ":" + std::to_string(port));
  });
#else
  (void)spared;
#endif
  return peers;
}

//! Alive around a worker's destruction: see the file's comment.
class teardown_watch {
 public:
  static constexpr std::chrono::milliseconds default_patience{1000};

  teardown_watch(int rank, const std::set<unsigned long>& spared, std::chrono::milliseconds patience = default_patience)
      : rank_(rank), spared_(spared), patience_(patience) {
    try {
      watcher_ = std::thread([this] { watch(); });
    } catch (const std::system_error&) {  // no thread: the destroy goes on unwatched, as before
    }
  }
  teardown_watch(const teardown_watch&) = delete;
  teardown_watch& operator=(const teardown_watch&) = delete;

  ~teardown_watch() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (watcher_.joinable()) watcher_.join();
  }

  //! How many connections this watch shut down (read after the destroy returned).
  [[nodiscard]] std::size_t shut() const {
    std::lock_guard lock(mutex_);
    return shut_;
  }

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, patience_, [&] { return done_; })) return;
    do {
      lock.unlock();
      const auto peers = shut_stalled_connections(spared_);
      lock.lock();
      if (!peers.empty()) {
        shut_ += peers.size();
        std::string list;
        for (const auto& p : peers) list += (list.empty() ? "" : ", ") + p;
        log(log_level::warn, rank_,
            "transport::ucx: destroying the UCX worker was still sending to an unresponsive peer after " +
                std::to_string(patience_.count()) + " ms (UCX's TCP transport retries that send without a deadline): "
                "shut down " + std::to_string(peers.size()) + " stalled TCP connection(s), to " + list);
      }
    } while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [&] { return done_; }));
  }

  int rank_;
  const std::set<unsigned long>& spared_;
  std::chrono::milliseconds patience_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::size_t shut_ = 0;
  std::thread watcher_;  // last: started once everything it reads is built
};

}  // namespace tutti::transport::ucx_detail
