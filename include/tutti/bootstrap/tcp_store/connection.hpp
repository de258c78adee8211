//! @file connection.hpp  One client connection as the tcp_store server keeps it: socket, handshake, buffers.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "tutti/bootstrap/tcp_store/socket.hpp"

namespace tutti::bootstrap::tcp_detail {

using server_clock = std::chrono::steady_clock;
using connection_id = std::uint64_t;  //!< in the order connections were accepted

struct connection {
  connection_id id = 0;
  tcp_net::unique_fd fd;
  std::string peer;  //!< "address:port", for logs
  bool authenticated = false;
  bool dead = false;
  tcp_wire::nonce server_nonce{};
  server_clock::time_point handshake_until;
  std::vector<unsigned char> in;
  std::vector<unsigned char> out;
  std::size_t out_pos = 0;

  //! Appends a frame to the output (sent by the server's flush, now or on POLLOUT).
  void queue(const std::vector<unsigned char>& frame) {
    if (out_pos == out.size()) {
      out.clear();
      out_pos = 0;
    }
    out.insert(out.end(), frame.begin(), frame.end());
  }
  [[nodiscard]] bool has_output() const noexcept { return out_pos < out.size(); }
};

}  // namespace tutti::bootstrap::tcp_detail
