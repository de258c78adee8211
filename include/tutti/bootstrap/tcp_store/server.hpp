//! @file server.hpp  tcp_store's server: one thread, one poll() loop, non-blocking sockets, no thread per client.
//!
//! Every connection starts in the handshake (auth.hpp) with a small frame limit and a time limit;
//! only then may it send requests. A get or wait whose keys are missing is parked on the server
//! until a set or add provides them or its own deadline passes, so clients never poll. Anything a
//! connection does wrong (garbage, an oversized or unknown frame, a request before authenticating,
//! a stalled handshake, a second request while one is parked) closes that connection alone, with a
//! warning naming the peer; everyone else keeps being served. A client refused for a wrong job key
//! is the exception that reaches the others: it is a rank that cannot join, so every wait parked
//! then or later is answered at once with an error saying so (store_service::refuse).
//!
//! This file is the serving: the thread, the poll loop, accepting, reading and sending frames, the
//! handshake, closing. What it serves lives apart: connection.hpp (what is kept per client),
//! service.hpp (answering requests, parked waits, refusals), key_value.hpp (the keys and values).
#pragma once
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store/auth.hpp"
#include "tutti/bootstrap/tcp_store/connection.hpp"
#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "tutti/bootstrap/tcp_store/service.hpp"
#include "tutti/bootstrap/tcp_store/socket.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"

namespace tutti::bootstrap::tcp_detail {

struct server_options {
  std::string bind_address;  //!< empty: every interface
  std::uint16_t port = 0;    //!< 0: ephemeral
  job_key key;
  std::size_t max_frame_bytes = 64u << 20;
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(5);
  int rank = 0;
};

class store_server {
  using clock = server_clock;

 public:
  //! Binds and listens before returning (so port() is known and clients may connect), then serves
  //! from a background thread.
  explicit store_server(server_options opt) : opt_(std::move(opt)) {
    if (opt_.key.empty())
      throw invalid_argument(tcp_net::rank_prefix(opt_.rank) + "tcp_store server needs a job key");
    listen_ = tcp_net::listen_on(opt_.bind_address, opt_.port, opt_.rank);
    const auto ss = tcp_net::local_address(listen_.get());
    port_ = tcp_net::port_of(ss);
    loopback_ = tcp_net::loopback_host(listen_.get(), ss);
    wake_ = tcp_net::unique_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wake_) throw transport_error(tcp_net::rank_prefix(opt_.rank) + "tcp_store: eventfd: " + tcp_net::errno_text(errno));
    thread_ = std::thread([this] { run(); });
  }
  store_server(const store_server&) = delete;
  store_server& operator=(const store_server&) = delete;
  ~store_server() { stop(); }

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  //! An address this host reaches the server at ("127.0.0.1" for a wildcard bind).
  [[nodiscard]] const std::string& loopback_host() const noexcept { return loopback_; }

  //! Authenticated connections open now.
  [[nodiscard]] std::size_t clients() const {
    std::lock_guard lock(mutex_);
    return authenticated_;
  }

  //! Waits until no authenticated connection is open (every client has closed) or `until`. After
  //! a client was refused for its key, first stays up refusal_linger (within `until`): ranks that
  //! connect late, once this rank has already failed, still learn why rather than find no server.
  bool wait_for_no_clients(deadline until) {
    std::unique_lock lock(mutex_);
    const auto linger = std::min(until.at(), linger_until_);
    changed_.wait_until(lock, linger, [&] { return !running_; });
    return changed_.wait_until(lock, until.at(), [&] { return authenticated_ == 0 || !running_; });
  }

  static constexpr std::chrono::seconds refusal_linger{2};

  //! Stops the thread and closes every socket; parked clients see their connection close.
  void stop() noexcept {
    if (!thread_.joinable()) return;
    stop_.store(true);
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto ignored = ::write(wake_.get(), &one, sizeof one);
    thread_.join();
  }

 private:
  void warn(const connection& c, const std::string& why) const {
    log(log_level::warn, opt_.rank, "tcp_store: closing the connection from " + c.peer + ": " + why);
  }

  // --- the loop -------------------------------------------------------------------------------

  void run() noexcept {
    try {
      loop();
    } catch (const std::exception& e) {
      log(log_level::warn, opt_.rank, std::string("tcp_store: the server stopped: ") + e.what());
    }
    conns_.clear();
    listen_.reset();
    std::lock_guard lock(mutex_);
    authenticated_ = 0;
    running_ = false;
    changed_.notify_all();
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    while (!stop_.load()) {
      fds.clear();
      ids.clear();
      fds.push_back({wake_.get(), POLLIN, 0});
      fds.push_back({listen_.get(), POLLIN, 0});
      auto next = service_.next_deadline(clock::now() + std::chrono::seconds(1));
      for (auto& [id, c] : conns_) {
        short events = POLLIN;
        if (c.has_output()) events |= POLLOUT;
        fds.push_back({c.fd.get(), events, 0});
        ids.push_back(id);
        if (!c.authenticated) next = std::min(next, c.handshake_until);
      }
      const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(next - clock::now()).count();
      const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait_ms, 0, 1000)));
      if (ready < 0 && errno != EINTR) throw transport_error("poll: " + tcp_net::errno_text(errno));
      if (stop_.load()) break;
      if (ready > 0) {
        if (fds[1].revents & POLLIN) accept_all();
        for (std::size_t i = 2; i < fds.size(); ++i) {
          if (fds[i].revents == 0) continue;
          auto it = conns_.find(ids[i - 2]);
          if (it == conns_.end()) continue;
          auto& c = it->second;
          if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) receive(c);
          if (!c.dead && (fds[i].revents & POLLOUT)) flush(c);
        }
      }
      expire();
      reap();
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      tcp_net::unique_fd fd(::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                                      SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          log(log_level::warn, opt_.rank, "tcp_store: accept: " + tcp_net::errno_text(errno));
        return;
      }
      tcp_net::set_nodelay(fd.get());
      connection c;
      c.fd = std::move(fd);
      c.peer = tcp_net::host_port(tcp_net::numeric_host(reinterpret_cast<sockaddr*>(&ss), len),
                                  tcp_net::port_of(ss));
      c.handshake_until = clock::now() + opt_.handshake_timeout;
      c.server_nonce = tcp_auth::fresh_nonce();
      c.queue(std::move(tcp_wire::frame_builder(tcp_wire::frame_type::challenge).raw(c.server_nonce)).finish());
      log(log_level::debug, opt_.rank, "tcp_store: connection from " + c.peer);
      c.id = next_id_++;
      auto& placed = conns_[c.id] = std::move(c);
      flush(placed);
    }
  }

  void receive(connection& c) {
    // A bounded number of reads per turn, so one busy client cannot starve the others.
    for (int round = 0; round < 16 && !c.dead; ++round) {
      unsigned char buf[64 * 1024];
      const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
      if (n > 0) {
        c.in.insert(c.in.end(), buf, buf + n);
        process(c);
        if (static_cast<std::size_t>(n) < sizeof buf) return;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || !c.in.empty() || !c.authenticated) {
        if (!c.authenticated) warn(c, "it left during the handshake");
        else if (!c.in.empty()) warn(c, "it left in the middle of a frame");
        else warn(c, "recv: " + tcp_net::errno_text(errno));
      } else {
        log(log_level::debug, opt_.rank, "tcp_store: " + c.peer + " disconnected");
      }
      close(c);
      return;
    }
  }

  //! Handles every complete frame in c.in.
  void process(connection& c) {
    std::size_t used = 0;
    while (!c.dead) {
      const std::span<const unsigned char> rest(c.in.data() + used, c.in.size() - used);
      const auto limit = c.authenticated ? opt_.max_frame_bytes : tcp_wire::max_handshake_payload;
      const auto r = tcp_wire::parse_frame(rest, limit);
      if (r.what == tcp_wire::parse_result::status::need_more) break;
      if (r.what == tcp_wire::parse_result::status::malformed) {
        std::string why = "malformed frame: " + std::string(r.reason);
        if (r.declared)
          why += " (" + std::to_string(r.declared) + " bytes declared, limit " + std::to_string(limit) +
                 (c.authenticated ? ")" : " before authentication)");
        warn(c, why);
        close(c);
        return;
      }
      used += r.consumed;
      if (!c.authenticated) handshake(c, r);
      else handle(c, r);
    }
    if (!c.dead) c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(used));
  }

  void handshake(connection& c, const tcp_wire::parse_result& f) {
    if (f.type != tcp_wire::frame_type::response) {
      warn(c, std::string("unauthenticated '") + tcp_wire::type_name(f.type) + "' frame before the handshake");
      close(c);
      return;
    }
    const auto m = tcp_wire::decode_response(f.payload);
    if (!m) {
      warn(c, "malformed handshake response");
      close(c);
      return;
    }
    if (!tcp_auth::same_mac(m->client_mac, tcp_auth::client_mac(opt_.key, c.server_nonce, m->client_nonce))) {
      warn(c, "authentication failed (a client with another TUTTI_JOB_KEY: another job, or a stale rank?)");
      {
        std::lock_guard lock(mutex_);
        linger_until_ = clock::now() + refusal_linger;
      }
      std::vector<outgoing> out;
      service_.refuse(c.peer, out);
      deliver(out);
      // Tell it why before closing, so its error says so rather than "connection closed".
      const auto e = tcp_wire::encode_error(tcp_wire::error_code::auth_failed, "authentication failed");
      [[maybe_unused]] const auto ignored = ::send(c.fd.get(), e.data(), e.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(c);
      return;
    }
    c.queue(std::move(tcp_wire::frame_builder(tcp_wire::frame_type::proof)
                           .raw(tcp_auth::server_mac(opt_.key, c.server_nonce, m->client_nonce)))
                 .finish());
    c.authenticated = true;
    {
      std::lock_guard lock(mutex_);
      ++authenticated_;
    }
    changed_.notify_all();
    log(log_level::debug, opt_.rank, "tcp_store: " + c.peer + " authenticated");
    flush(c);
  }

  void handle(connection& c, const tcp_wire::parse_result& f) {
    if (const parked* p = service_.parked_of(c.id)) {
      warn(c, std::string("a '") + tcp_wire::type_name(f.type) + "' request while its " + tcp_wire::type_name(p->type) +
                  " was still waiting (one request at a time)");
      close(c);
      return;
    }
    auto decoded = tcp_wire::decode_request(f.type, f.payload);
    if (auto* why = std::get_if<const char*>(&decoded)) {
      warn(c, std::string("bad '") + tcp_wire::type_name(f.type) + "' frame: " + *why);
      close(c);
      return;
    }
    auto& r = std::get<tcp_wire::request>(decoded);
    if (r.type == tcp_wire::frame_type::close) {
      log(log_level::debug, opt_.rank, "tcp_store: " + c.peer + " closed its connection");
      close(c);
      return;
    }
    std::vector<outgoing> out;
    service_.handle(c.id, std::move(r), clock::now(), out);
    deliver(out);
  }

  //! Queues and sends each frame the service produced (to a connection still open).
  void deliver(const std::vector<outgoing>& out) {
    for (const auto& o : out) {
      const auto it = conns_.find(o.to);
      if (it == conns_.end() || it->second.dead) continue;
      it->second.queue(o.frame);
      flush(it->second);
    }
  }

  //! Handshakes that took too long are closed; parked requests past their deadline are answered.
  void expire() {
    const auto now = clock::now();
    for (auto& [id, c] : conns_) {
      if (c.dead || c.authenticated || now < c.handshake_until) continue;
      char s[32];
      std::snprintf(s, sizeof s, "%.1f", std::chrono::duration<double>(opt_.handshake_timeout).count());
      warn(c, std::string("no complete handshake within ") + s + " s");
      close(c);
    }
    std::vector<outgoing> out;
    service_.expire(now, out);
    deliver(out);
  }

  void flush(connection& c) {
    while (!c.dead && c.has_output()) {
      const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;  // POLLOUT resumes it
      } else {
        log(log_level::debug, opt_.rank, "tcp_store: send to " + c.peer + ": " + tcp_net::errno_text(errno));
        close(c);
      }
    }
  }

  void close(connection& c) {
    if (c.dead) return;
    c.dead = true;
    service_.forget(c.id);
    c.fd.reset();
    if (c.authenticated) {
      std::lock_guard lock(mutex_);
      --authenticated_;
    }
    changed_.notify_all();
  }

  void reap() {
    std::erase_if(conns_, [](const auto& kv) { return kv.second.dead; });
  }

  server_options opt_;
  tcp_net::unique_fd listen_;
  tcp_net::unique_fd wake_;
  std::uint16_t port_ = 0;
  std::string loopback_;
  std::atomic<bool> stop_{false};

  // Owned by the server thread.
  std::map<std::uint64_t, connection> conns_;
  std::uint64_t next_id_ = 0;
  store_service service_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t authenticated_ = 0;  //!< guarded by mutex_
  clock::time_point linger_until_{};  //!< guarded by mutex_: close() serves until then (a refusal)
  bool running_ = true;            //!< guarded by mutex_

  std::thread thread_;  //!< last: started once everything above exists
};

}  // namespace tutti::bootstrap::tcp_detail
