//! @file ucx_world.hpp  Test setup: ranks are forked processes talking over transport::ucx, forced
//! onto UCX's TCP transport over loopback (the network path, on one host).
//!
//! Rank 0 serves a bootstrap::tcp_store on a port the parent picked (bound to port 0, read, closed:
//! the parent never starts a thread, so forking stays safe); the other ranks connect, retrying
//! until it is up. Each rank sets UCX_TLS=tcp and UCX_NET_DEVICES=lo before UCX reads its
//! configuration, which happens in the child only.
#pragma once
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <tutti/bootstrap/job_key.hpp>
#include <tutti/bootstrap/tcp_store.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/ucx.hpp>

#include <tutti/testing/fork_world.hpp>

namespace tutti::testing {

//! A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
inline std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_loopback_port: socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("free_loopback_port: bind to 127.0.0.1:0 failed");
  return ntohs(a.sin_port);
}

//! Makes UCX, once it reads its configuration in this process, use TCP over loopback only.
inline void use_ucx_tcp_loopback() {
  ::setenv("UCX_TLS", "tcp", 1);
  ::setenv("UCX_NET_DEVICES", "lo", 1);
}

//! This rank's end of the job's store: rank 0 serves it on `port`, the others connect there.
inline std::unique_ptr<bootstrap::tcp_store> loopback_store(int rank, std::uint16_t port) {
  bootstrap::tcp_store_options o;
  o.is_server = rank == 0;
  o.bind_address = "127.0.0.1";
  o.host = "127.0.0.1";
  o.port = port;
  o.key = bootstrap::job_key("tutti-ucx-test-key-0123456789");
  o.rank = rank;
  o.server_rank = 0;
  o.timeout = std::chrono::seconds(20);
  return std::make_unique<bootstrap::tcp_store>(std::move(o));
}

//! Runs body(rank_info, store) on `world` forked ranks set up as above; results as fork_ranks.
template <class Body>
std::vector<fork_result> fork_ucx_ranks(int world, Body&& body) {
  const std::uint16_t port = free_loopback_port();
  return fork_ranks(world, [&](const rank_info& info) {
    use_ucx_tcp_loopback();
    auto store = loopback_store(info.rank, port);
    body(info, *store);  // whatever body builds over the store is gone before the store closes
  });
}

//! Conformance World over UCX (see conformance.hpp), world sizes 1-9 like the shm worlds: over
//! TCP on loopback the suites take about 30 s on 2 cores (measured), within the test's budget.
template <class Algorithm>
struct ucx_world {
  using communicator_type = communicator<transport::ucx, Algorithm>;
  static constexpr const char* name = "ucx (forked processes, tcp over loopback)";
  static std::vector<int> world_sizes() { return {1, 2, 3, 4, 5, 6, 7, 8, 9}; }

  //! Runs fn(comm) on `world` forked ranks; throws tutti::error listing the ranks that failed.
  template <class F>
  static void run(int world, F&& fn) {
    auto results = fork_ucx_ranks(world, [&](const rank_info& info, bootstrap::tcp_store& store) {
      communicator_type comm(std::make_unique<transport::ucx>(info.rank, world, store));
      fn(comm);
    });
    throw_if_any_failed(results, "ucx_world");
  }
};

}  // namespace tutti::testing
