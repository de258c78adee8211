//! @file service.hpp  What tcp_store answers: requests against the key-value table, parked waits, refusals; no sockets.
//!
//! The server (server.hpp) reads a request off a connection and hands it here with the
//! connection's id; the service answers it at once or parks it (a get or wait whose keys are
//! missing) and says which frames go to which connections. A set or add answers every parked
//! request it completes; a deadline answers one with a timeout; a client refused for a wrong job
//! key makes every parked and later wait end with why (refuse).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tutti/bootstrap/tcp_store/connection.hpp"
#include "tutti/bootstrap/tcp_store/key_value.hpp"
#include "tutti/bootstrap/tcp_store/messages.hpp"

namespace tutti::bootstrap::tcp_detail {

//! A get or wait whose keys were missing: answered when they are set, or at `until`.
struct parked {
  tcp_wire::frame_type type{};
  std::vector<std::string> keys;
  server_clock::time_point until;
};

//! A frame the service asks the server to send.
struct outgoing {
  connection_id to = 0;
  std::vector<unsigned char> frame;
};

class store_service {
 public:
  //! Handles request `r` of connection `from` (never close: the server ends the connection itself),
  //! appending the frames to send to `out`.
  void handle(connection_id from, tcp_wire::request r, server_clock::time_point now, std::vector<outgoing>& out) {
    using tcp_wire::frame_type;
    switch (r.type) {
      case frame_type::set:
        kv_.set(r.keys[0], std::move(r.value));
        out.push_back({from, std::move(tcp_wire::frame_builder(frame_type::ok)).finish()});
        wake(from, out);
        break;
      case frame_type::get:
      case frame_type::wait:
        if (kv_.missing(r.keys) == nullptr) {
          out.push_back({from, answer(r.type, r.keys)});
        } else if (kv_.refusing()) {
          out.push_back({from, tcp_wire::encode_error(tcp_wire::error_code::refused, kv_.refused_text(r.keys))});
        } else {
          // Far-future waits are capped (a u64 of milliseconds would overflow the clock).
          const auto ms = std::min<std::uint64_t>(r.wait_ms, std::uint64_t{30} * 24 * 3600 * 1000);
          parked_[from] = parked{r.type, std::move(r.keys), now + std::chrono::milliseconds(ms)};
        }
        break;
      case frame_type::check:
        out.push_back({from, std::move(tcp_wire::frame_builder(frame_type::flag).u8(kv_.has(r.keys[0]) ? 1 : 0)).finish()});
        break;
      case frame_type::add: {
        const auto v = kv_.add(r.keys[0], r.delta);
        if (!v) {
          out.push_back({from, tcp_wire::encode_error(tcp_wire::error_code::not_counter,
                                                      "key '" + r.keys[0] + "' does not hold a counter")});
          break;
        }
        out.push_back({from, std::move(tcp_wire::frame_builder(frame_type::counter).u64(static_cast<std::uint64_t>(*v))).finish()});
        wake(from, out);
        break;
      }
      default: break;
    }
  }

  //! The request connection `id` has parked, if any (a connection has one request at a time).
  [[nodiscard]] const parked* parked_of(connection_id id) const {
    const auto it = parked_.find(id);
    return it == parked_.end() ? nullptr : &it->second;
  }
  //! Connection `id` is gone: its parked request, if any, with it.
  void forget(connection_id id) { parked_.erase(id); }

  //! A client at `peer` failed the handshake: a tutti client with another TUTTI_JOB_KEY, almost
  //! always a rank of this job started with the wrong key (a port scanner never gets that far). That
  //! rank cannot join, so keys it would set never appear: every parked wait, and every later one, is
  //! answered now with why, instead of each rank learning nothing until its deadline.
  void refuse(const std::string& peer, std::vector<outgoing>& out) {
    kv_.refuse_for(peer);
    for (auto& [id, p] : parked_)
      out.push_back({id, tcp_wire::encode_error(tcp_wire::error_code::refused, kv_.refused_text(p.keys))});
    parked_.clear();
  }

  //! Parked requests past their deadline are answered with a timeout.
  void expire(server_clock::time_point now, std::vector<outgoing>& out) {
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (now < it->second.until) {
        ++it;
        continue;
      }
      const std::string* key = kv_.missing(it->second.keys);
      out.push_back({it->first, tcp_wire::encode_error(tcp_wire::error_code::timeout,
                                                       "key '" + (key ? *key : std::string("?")) +
                                                           "' was not set before the deadline")});
      it = parked_.erase(it);
    }
  }

  //! The earliest deadline of a parked request, or `limit` when none is sooner.
  [[nodiscard]] server_clock::time_point next_deadline(server_clock::time_point limit) const {
    for (const auto& [id, p] : parked_) limit = std::min(limit, p.until);
    return limit;
  }

 private:
  [[nodiscard]] std::vector<unsigned char> answer(tcp_wire::frame_type type, const std::vector<std::string>& keys) const {
    if (type == tcp_wire::frame_type::get)
      return std::move(tcp_wire::frame_builder(tcp_wire::frame_type::value).raw(kv_.at(keys[0]))).finish();
    return std::move(tcp_wire::frame_builder(tcp_wire::frame_type::ok)).finish();
  }

  //! After a set or add by `from`: answers every parked request whose keys now all exist.
  void wake(connection_id from, std::vector<outgoing>& out) {
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->first == from || kv_.missing(it->second.keys)) {
        ++it;
        continue;
      }
      out.push_back({it->first, answer(it->second.type, it->second.keys)});
      it = parked_.erase(it);
    }
  }

  key_value_table kv_;
  std::map<connection_id, parked> parked_;  //!< by connection, in id order (as they connected)
};

}  // namespace tutti::bootstrap::tcp_detail
