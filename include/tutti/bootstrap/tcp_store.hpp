//! @file tcp_store.hpp  The rendezvous store across hosts: served by rank 0 over TCP, every connection authenticated.
//!
//! One class for every rank. The server rank (rank 0, is_server) binds, serves from one background
//! thread (server.hpp: a poll() loop over non-blocking sockets) and talks to its own server through
//! an ordinary client connection, so every rank runs the same client code. Clients connect with
//! capped exponential back-off and jitter until the deadline (the server may start after them).
//!
//! Wire format (frame.hpp, messages.hpp; written and read with core/wire.hpp): frames of a 12-byte
//! header ("tts", version 1, type, three zero bytes, u32 big-endian payload length) and a payload
//! bounded by max_frame_bytes (64 bytes before authentication), every integer big-endian. One request at a time per connection: set, get, wait, check, add,
//! close. get and wait are parked on the server until their keys exist or their deadline passes;
//! the client sends its remaining time, not a clock reading. barrier is add + wait, built here.
//!
//! Security model. Every connection first proves knowledge of the job key (job_key.hpp), both
//! ways, by HMAC-SHA256 challenge-response over fresh 32-byte nonces (auth.hpp): the server sends
//! Ns, the client answers HMAC(key, "tutti-store-v1" || Ns || Nc) and Nc, the server answers
//! HMAC(key, "tutti-store-v1 server" || Nc || Ns). The key never crosses the wire; a recorded
//! handshake cannot be replayed (the next connection gets another Ns); a client with another key
//! (another job on the same port, a stale rank) is refused and logged, and a server with another key
//! is detected by the client. So the key decides who may join the job and read or write its store.
//! It does not protect what happens after: frames are not encrypted nor individually MAC'd, so an
//! attacker who can read or inject packets on the network sees and could alter store values, and
//! the data path (shm, UCX) is not encrypted either. Run jobs on networks you trust.
//! Robustness: garbage, an oversized or unknown frame, a request before authenticating, or a
//! handshake that stalls past handshake_timeout closes that connection alone (logged with the peer's
//! address, never the key); the server keeps serving everyone else.
//!
//! Shutdown: close() (or the destructor) on the server rank waits, bounded by `timeout`, until
//! every client has closed its connection, so rank 0 finishing first does not break the others'
//! final barrier; then the server stops and parked clients see peer_lost(0, ...) at once.
#pragma once
#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/bootstrap/concepts.hpp"
#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store/client.hpp"
#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "tutti/bootstrap/tcp_store/server.hpp"
#include "tutti/bootstrap/tcp_store/silence.hpp"
#include "tutti/bootstrap/tcp_store/socket.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/deadline.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/log.hpp"

namespace tutti::bootstrap {

//! Where the store is served.
struct store_address {
  std::string host;         //!< name or numeric address (IPv6 without brackets)
  std::uint16_t port = 0;
  friend bool operator==(const store_address&, const store_address&) = default;
};

namespace detail {

inline std::uint16_t parse_port(std::string_view text, const std::string& variable, const std::string& value) {
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535)
    throw invalid_argument(variable + "='" + value + "': the port must be a number from 1 to 65535");
  return static_cast<std::uint16_t>(port);
}

}  // namespace detail

//! "host:port", "[IPv6]:port", or a bare IPv6 literal and port only with brackets;
//! invalid_argument naming `variable` and the value otherwise.
[[nodiscard]] inline store_address parse_store_address(const std::string& value,
                                                       const std::string& variable = "TUTTI_STORE_ADDR") {
  const auto bad = [&](const char* why) -> invalid_argument {
    return invalid_argument(variable + "='" + value + "' is not host:port or [IPv6]:port (" + why + ")");
  };
  std::string_view v = value;
  store_address out;
  if (v.starts_with('[')) {
    const auto close = v.find(']');
    if (close == std::string_view::npos) throw bad("no ']'");
    out.host = std::string(v.substr(1, close - 1));
    v.remove_prefix(close + 1);
    if (!v.starts_with(':')) throw bad("no ':port' after ']'");
    v.remove_prefix(1);
  } else {
    const auto colon = v.find(':');
    if (colon == std::string_view::npos) throw bad("no port");
    if (v.find(':', colon + 1) != std::string_view::npos) throw bad("an IPv6 address needs brackets");
    out.host = std::string(v.substr(0, colon));
    v.remove_prefix(colon + 1);
  }
  if (out.host.empty()) throw bad("empty host");
  out.port = detail::parse_port(v, variable, value);
  return out;
}

//! The store's address from the environment: TUTTI_STORE_ADDR=host:port (or [v6]:port), else
//! torchrun's MASTER_ADDR and MASTER_PORT (both, or neither), else nullopt.
[[nodiscard]] inline std::optional<store_address> store_address_from_env() {
  if (auto v = config::raw("TUTTI_STORE_ADDR")) return parse_store_address(*v);
  const auto addr = config::raw("MASTER_ADDR");
  const auto port = config::raw("MASTER_PORT");
  if (!addr && !port) return std::nullopt;
  if (!addr) throw invalid_argument("MASTER_PORT='" + *port + "' is set but MASTER_ADDR is not; set both");
  if (!port) throw invalid_argument("MASTER_ADDR='" + *addr + "' is set but MASTER_PORT is not; set both");
  store_address out;
  out.host = *addr;
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  if (out.host.empty()) throw invalid_argument("MASTER_ADDR='" + *addr + "' is not a host");
  out.port = detail::parse_port(*port, "MASTER_PORT", *port);
  return out;
}

struct tcp_store_options {
  std::string host;            //!< where clients connect (the server rank ignores it and uses loopback)
  std::uint16_t port = 0;      //!< 0 on the server rank: the kernel picks one (see tcp_store::port())
  bool is_server = false;      //!< this rank serves the store
  std::string bind_address;    //!< server: empty = every interface (IPv6 dual stack, else 0.0.0.0)
  job_key key;                 //!< required: every connection proves it knows this
  std::chrono::nanoseconds timeout = config::timeout();  //!< connect, each operation, the server's close
  std::size_t max_frame_bytes = std::size_t{64} << 20;  //!< largest value (plus a few bytes) a frame may carry
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(5);  //!< server: an unauthenticated connection's time
  int rank = -1;               //!< for messages and logs
  int server_rank = -1;        //!< the rank whose process serves the store, if known (for messages)

  //! Address from store_address_from_env(), key from job_key_from_env(), TUTTI_TIMEOUT, and
  //! TUTTI_STORE_MAX_FRAME (a byte size). Missing address or key is an invalid_argument saying
  //! what to set.
  [[nodiscard]] static tcp_store_options from_env(int rank, bool is_server) {
    tcp_store_options o;
    o.rank = rank;
    o.is_server = is_server;
    const auto where = store_address_from_env();
    if (!where)
      throw invalid_argument(tcp_net::rank_prefix(rank) +
                             "tcp_store needs an address: set TUTTI_STORE_ADDR=host:port (or MASTER_ADDR and MASTER_PORT)");
    o.host = where->host;
    o.port = where->port;
    auto key = job_key_from_env();
    if (!key)
      throw invalid_argument(tcp_net::rank_prefix(rank) +
                             "tcp_store needs a job key: set TUTTI_JOB_KEY (16+ bytes of text, the same on every rank) "
                             "or TUTTI_JOB_KEY_FILE; tutti-run sets one for you");
    o.key = std::move(*key);
    o.max_frame_bytes = config::bytes("TUTTI_STORE_MAX_FRAME", o.max_frame_bytes, 4096, std::size_t{1} << 31);
    return o;
  }
};

//! The TCP store; see the top of this file.
class tcp_store {
 public:
  explicit tcp_store(tcp_store_options opt) : opt_(std::move(opt)) {
    const auto prefix = tcp_net::rank_prefix(opt_.rank);
    if (opt_.key.empty())
      throw invalid_argument(prefix + "tcp_store needs a job key (TUTTI_JOB_KEY or TUTTI_JOB_KEY_FILE)");
    if (opt_.max_frame_bytes < 64 || opt_.max_frame_bytes > (std::size_t{1} << 31))
      throw invalid_argument(prefix + "tcp_store max_frame_bytes=" + std::to_string(opt_.max_frame_bytes) +
                             " is outside [64, 2^31]");
    if (opt_.is_server) {
      server_ = std::make_unique<tcp_detail::store_server>(tcp_detail::server_options{
          opt_.bind_address, opt_.port, opt_.key, opt_.max_frame_bytes, opt_.handshake_timeout,
          opt_.rank < 0 ? 0 : opt_.rank});
      connect_host_ = server_->loopback_host();
      port_ = server_->port();
      log(log_level::info, opt_.rank,
          "tcp_store: serving on " + tcp_net::host_port(opt_.bind_address.empty() ? "*" : opt_.bind_address, port_));
    } else {
      if (opt_.host.empty() || opt_.port == 0)
        throw invalid_argument(prefix + "tcp_store client needs the server's host and port (got " +
                               tcp_net::host_port(opt_.host, opt_.port) + ")");
      connect_host_ = opt_.host;
      port_ = opt_.port;
    }
    // Connect now: a wrong key or an unreachable server is reported at construction.
    idle_.push_back(connect(op_deadline()));
    reached_ = true;  // from now on a refused connection is the server gone (connect_with_retry)
  }

  tcp_store(const tcp_store&) = delete;
  tcp_store& operator=(const tcp_store&) = delete;

  ~tcp_store() {
    try {
      close(op_deadline());
    } catch (...) {  // destructors do not throw; close() logs what went wrong
    }
  }

  //! The port the server listens on (server rank: the one it bound).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] bool is_server() const noexcept { return server_ != nullptr; }

  void set(const std::string& key, store_bytes value) { set(key, std::move(value), op_deadline()); }

  //! set, check and add with the caller's deadline (connecting included) instead of the options'
  //! timeout: for a caller on a failure path, where the server may be gone with the rank that
  //! failed and a minute of retrying would hold up every survivor.
  void set(const std::string& key, store_bytes value, deadline until) {
    tcp_wire::request r{tcp_wire::frame_type::set, {key}, std::move(value), 0, 0};
    check_sizes(r);
    (void)call(r, until, "set('" + key + "')");
  }

  [[nodiscard]] store_bytes get(const std::string& key, deadline until) {
    tcp_wire::request r{tcp_wire::frame_type::get, {key}, {}, 0, wait_ms(until)};
    check_sizes(r);
    return call(r, until, "get('" + key + "')").value;
  }

  void wait(const std::vector<std::string>& keys, deadline until) {
    if (keys.empty()) return;
    tcp_wire::request r{tcp_wire::frame_type::wait, keys, {}, 0, wait_ms(until)};
    check_sizes(r);
    (void)call(r, until, "wait('" + keys.front() + "'" + (keys.size() > 1 ? ", ...)" : ")"));
  }

  //! Exists now? Asks the server; never waits for the key.
  [[nodiscard]] bool check(const std::string& key) { return check(key, op_deadline()); }
  [[nodiscard]] bool check(const std::string& key, deadline until) {
    tcp_wire::request r{tcp_wire::frame_type::check, {key}, {}, 0, 0};
    check_sizes(r);
    return call(r, until, "check('" + key + "')").flag;
  }

  std::int64_t add(const std::string& key, std::int64_t delta) { return add(key, delta, op_deadline()); }
  std::int64_t add(const std::string& key, std::int64_t delta, deadline until) {
    tcp_wire::request r{tcp_wire::frame_type::add, {key}, {}, delta, 0};
    check_sizes(r);
    return call(r, until, "add('" + key + "')").counter;
  }

  //! The rank whose process serves this store (-1: not known): a store that stops answering
  //! means that process is gone. job_store's stores are served by rank 0.
  [[nodiscard]] int server_rank() const noexcept { return opt_.server_rank; }

  //! Returns once `count` callers entered barrier(key, ...): each adds one to the counter `key`
  //! and the last opens `key + "/open"`, which the others wait for on the server.
  void barrier(const std::string& key, int count, deadline until) {
    if (count < 1)
      throw invalid_argument(tcp_net::rank_prefix(opt_.rank) + "tcp_store: barrier '" + key + "' count=" +
                             std::to_string(count) + " must be at least 1");
    if (add(key, 1) == count) set(key + "/open", store_bytes{1});
    try {
      wait({key + "/open"}, until);
    } catch (const timeout&) {
      std::string seen = "?";
      try {
        seen = std::to_string(add(key, 0));
      } catch (const error&) {
      }
      throw timeout(tcp_net::rank_prefix(opt_.rank) + "tcp_store: barrier '" + key + "' saw " + seen + " of " +
                    std::to_string(count) + " callers before the deadline");
    }
  }

  //! Closes this rank's connections. On the server rank, then waits until every client has closed
  //! its own (so a final barrier of the others still has its server), at most until `until`, and
  //! stops the server. Later operations throw.
  void close(deadline until) {
    std::unique_ptr<tcp_detail::store_server> server;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      for (auto& c : idle_) c->close_politely();
      idle_.clear();
      server = std::move(server_);
    }
    if (!server) return;
    if (!server->wait_for_no_clients(until))
      log(log_level::warn, opt_.rank,
          "tcp_store: stopping the server with " + std::to_string(server->clients()) +
              " client(s) still connected at the deadline");
    server->stop();
  }

 private:
  using connection_ptr = std::unique_ptr<tcp_detail::store_connection>;

  [[nodiscard]] deadline op_deadline() const { return deadline::after(opt_.timeout); }

  //! How long past its deadline a reply is still awaited: a parked get or wait is answered by the
  //! server at that deadline, anything else at once.
  static constexpr std::chrono::milliseconds reply_travel_parked{2000};
  static constexpr std::chrono::milliseconds reply_travel{250};

  [[nodiscard]] static std::uint64_t wait_ms(deadline until) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until.at() - deadline::clock::now()).count();
    return left > 0 ? static_cast<std::uint64_t>(left) : 0;
  }

  void check_sizes(const tcp_wire::request& r) const {
    std::size_t total = 12 + r.value.size();
    for (const auto& k : r.keys) {
      if (k.size() > tcp_wire::max_key_bytes)
        throw invalid_argument(tcp_net::rank_prefix(opt_.rank) + "tcp_store: a key of " + std::to_string(k.size()) +
                               " bytes is longer than the limit of " + std::to_string(tcp_wire::max_key_bytes));
      total += 4 + k.size();
    }
    if (total > opt_.max_frame_bytes)
      throw invalid_argument(tcp_net::rank_prefix(opt_.rank) + "tcp_store: a request of " + std::to_string(total) +
                             " bytes exceeds max_frame_bytes=" + std::to_string(opt_.max_frame_bytes) +
                             " (TUTTI_STORE_MAX_FRAME)");
  }

  [[nodiscard]] connection_ptr connect(deadline until) const {
    return std::make_unique<tcp_detail::store_connection>(connect_host_, port_, opt_.key, opt_.max_frame_bytes, until,
                                                          opt_.rank, reached_, opt_.server_rank);
  }

  //! An idle connection, or a new one: threads sharing this store each get their own, so one
  //! thread's parked get never blocks another's set.
  connection_ptr acquire(deadline until) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) throw error(tcp_net::rank_prefix(opt_.rank) + "tcp_store used after close()");
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    return connect(until);
  }

  void release(connection_ptr c) {
    std::lock_guard lock(mutex_);
    if (closed_) c->close_politely();
    else idle_.push_back(std::move(c));
  }

  tcp_wire::reply call(const tcp_wire::request& r, deadline until, const std::string& what) {
    if (const auto why = silence_.refusal(until))
      throw timeout(tcp_net::rank_prefix(opt_.rank) + "tcp_store at " + tcp_net::host_port(connect_host_, port_) +
                    " was not asked: " + *why);
    // A parked get or wait is answered at its deadline: its reply may take a while to travel.
    const bool parked = r.type == tcp_wire::frame_type::get || r.type == tcp_wire::frame_type::wait;
    connection_ptr c;
    tcp_wire::reply reply;
    try {
      c = acquire(until);
      reply = c->call(tcp_wire::encode_request(r), until, what, parked ? reply_travel_parked : reply_travel);
    } catch (const timeout& e) {  // not reached, or no answer: the server's silence (silence.hpp)
      if (c) c->close_politely();  // out of step with the server: never reused
      silence_.heard_nothing(e.what());
      throw;
    } catch (...) {
      if (c) c->close_politely();
      throw;
    }
    silence_.answered();
    release(std::move(c));
    if (reply.type == tcp_wire::frame_type::error) {
      const auto text = tcp_net::rank_prefix(opt_.rank) + "tcp_store: " + reply.text;
      if (reply.code == tcp_wire::error_code::timeout) throw timeout(text);
      if (reply.code == tcp_wire::error_code::not_counter || reply.code == tcp_wire::error_code::refused)
        throw invalid_argument(text);  // refused: a misconfigured rank, which retrying cannot mend
      throw transport_error(text);
    }
    const auto expected = r.type == tcp_wire::frame_type::get     ? tcp_wire::frame_type::value
                          : r.type == tcp_wire::frame_type::check ? tcp_wire::frame_type::flag
                          : r.type == tcp_wire::frame_type::add   ? tcp_wire::frame_type::counter
                                                                  : tcp_wire::frame_type::ok;
    if (reply.type != expected)
      throw transport_error(tcp_net::rank_prefix(opt_.rank) + "tcp_store answered " + what + " with a '" +
                            tcp_wire::type_name(reply.type) + "' frame");
    return reply;
  }

  tcp_store_options opt_;
  std::unique_ptr<tcp_detail::store_server> server_;  //!< server rank only
  std::string connect_host_;
  std::uint16_t port_ = 0;
  bool reached_ = false;  //!< the constructor's connection succeeded (set before any other thread sees the store)
  std::mutex mutex_;
  std::vector<connection_ptr> idle_;
  bool closed_ = false;
  tcp_detail::server_silence silence_;
};

static_assert(store<tcp_store>, "bootstrap::tcp_store must satisfy tutti::bootstrap::store");

}  // namespace tutti::bootstrap
