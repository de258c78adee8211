//! @file client.hpp  One authenticated connection to a tcp_store server: handshake, then request/reply.
#pragma once
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store/auth.hpp"
#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "tutti/bootstrap/tcp_store/socket.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap::tcp_detail {

class store_connection {
 public:
  //! Connects (retrying until `until`) and authenticates both ways. A wrong key is an
  //! invalid_argument that says so (and never shows the key).
  //! `reached_before`, `server_rank`: see tcp_net::connect_with_retry (a refused connection to a
  //! server this client has talked to is that server lost).
  store_connection(const std::string& host, std::uint16_t port, const job_key& key, std::size_t max_frame_bytes,
                   deadline until, int rank, bool reached_before = false, int server_rank = 0)
      : where_(tcp_net::host_port(host, port)), rank_(rank), max_frame_(max_frame_bytes) {
    fd_ = tcp_net::connect_with_retry(host, port, until, rank, reached_before, server_rank < 0 ? 0 : server_rank);
    authenticate(key, until);
  }

  //! Sends a request and returns its reply. `what` says what is waited for, for errors. After an
  //! error the connection is unusable (broken() says so).
  //! The reply is awaited until `travel` past `until` (a parked request is answered at `until`).
  tcp_wire::reply call(const std::vector<unsigned char>& frame, deadline until, const std::string& what,
                       std::chrono::milliseconds travel) {
    broken_ = true;  // until the reply is in: a throw below leaves the stream out of step
    send_all(frame, until, what);
    auto [type, payload] = receive(deadline(until.at() + travel), max_frame_, what, /*handshake=*/false);
    auto r = tcp_wire::decode_reply(type, payload);
    if (!r)
      throw transport_error(prefix() + "tcp_store at " + where_ + " sent a malformed '" + tcp_wire::type_name(type) +
                            "' reply to " + what);
    broken_ = false;
    return std::move(*r);
  }

  //! Says goodbye, so the server counts this client as gone (best effort, never throws).
  void close_politely() noexcept {
    if (!fd_) return;
    try {
      const auto bye = tcp_wire::encode_request(tcp_wire::request{tcp_wire::frame_type::close, {}, {}, 0, 0});
      [[maybe_unused]] const auto ignored = ::send(fd_.get(), bye.data(), bye.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    } catch (...) {
    }
    fd_.reset();
  }

  [[nodiscard]] bool broken() const noexcept { return broken_; }
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  [[nodiscard]] std::string prefix() const { return tcp_net::rank_prefix(rank_); }

  [[noreturn]] void auth_failed(const std::string& detail) const {
    throw invalid_argument(prefix() + "authentication with the tcp_store at " + where_ + " failed: " + detail +
                           " (wrong TUTTI_JOB_KEY? another job on that port?)");
  }

  void authenticate(const job_key& key, deadline until) {
    const std::string what = "the handshake";
    // The server sends its challenge as it accepts, before it has seen anything of ours: a
    // connection closed before that is a server gone or going (its rank killed), not a refusal.
    auto [t1, p1] = receive(until, tcp_wire::max_handshake_payload, what, true, /*closed_means_refused=*/false);
    const auto server_nonce = tcp_wire::decode_challenge(p1);
    if (t1 != tcp_wire::frame_type::challenge || !server_nonce)
      auth_failed("the server did not start with a challenge (not a tutti store?)");
    tcp_wire::response_message m;
    m.client_nonce = tcp_auth::fresh_nonce();
    m.client_mac = tcp_auth::client_mac(key, *server_nonce, m.client_nonce);
    send_all(tcp_wire::encode_response(m), until, what);
    auto [t2, p2] = receive(until, tcp_wire::max_handshake_payload, what, true);
    if (t2 == tcp_wire::frame_type::error) auth_failed("the server refused our key");
    const auto proof = tcp_wire::decode_proof(p2);
    if (t2 != tcp_wire::frame_type::proof || !proof) auth_failed("the server answered with no proof");
    if (!tcp_auth::same_mac(*proof, tcp_auth::server_mac(key, *server_nonce, m.client_nonce)))
      auth_failed("the server did not prove that it knows the job key");
  }

  [[noreturn]] void lost(const std::string& what, const std::string& why) const {
    throw peer_lost(0, prefix() + "lost the tcp_store server (rank 0) at " + where_ + " during " + what + ": " + why);
  }

  void send_all(const std::vector<unsigned char>& bytes, deadline until, const std::string& what) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_.get(), POLLOUT, 0};
        if (::poll(&p, 1, tcp_net::ms_left(until, 1000)) == 0 && until.passed())
          throw timeout(prefix() + "tcp_store at " + where_ + " did not take " + what + " before the deadline");
        continue;
      }
      lost(what, tcp_net::errno_text(errno));
    }
  }

  //! The next frame (type and a copy of its payload). During the handshake, once the server has
  //! seen our answer, the server closing on us means it refused us; otherwise the server is gone.
  std::pair<tcp_wire::frame_type, std::vector<unsigned char>> receive(deadline until, std::size_t limit,
                                                                      const std::string& what, bool handshake,
                                                                      bool closed_means_refused = true) {
    for (;;) {
      const auto r = tcp_wire::parse_frame(in_, limit);
      if (r.what == tcp_wire::parse_result::status::frame) {
        std::pair<tcp_wire::frame_type, std::vector<unsigned char>> out{r.type, {r.payload.begin(), r.payload.end()}};
        in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(r.consumed));
        return out;
      }
      if (r.what == tcp_wire::parse_result::status::malformed) {
        if (handshake) auth_failed(std::string("the server sent a malformed frame: ") + std::string(r.reason));
        throw transport_error(prefix() + "tcp_store at " + where_ + " sent a malformed frame during " + what + ": " +
                              std::string(r.reason));
      }
      pollfd p{fd_.get(), POLLIN, 0};
      const int rc = ::poll(&p, 1, tcp_net::ms_left(until, 1000));
      if (rc < 0 && errno != EINTR) throw transport_error(prefix() + "tcp_store: poll: " + tcp_net::errno_text(errno));
      if (rc <= 0) {
        if (until.passed())
          throw timeout(prefix() + "tcp_store at " + where_ + " did not answer " + what + " before the deadline");
        continue;
      }
      unsigned char buf[64 * 1024];
      const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n > 0) {
        in_.insert(in_.end(), buf, buf + n);
        continue;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      const std::string why = n == 0 ? "the server closed the connection" : tcp_net::errno_text(errno);
      if (handshake && closed_means_refused) auth_failed(why);
      lost(what, why);
    }
  }

  tcp_net::unique_fd fd_;
  std::vector<unsigned char> in_;
  std::string where_;
  int rank_;
  std::size_t max_frame_;
  bool broken_ = false;
};

}  // namespace tutti::bootstrap::tcp_detail
