//! @file messages.hpp  tcp_store's messages: what each frame type carries, encoded and decoded (pure functions).
//!
//! Requests (client -> server; one outstanding per connection):
//!   set    key, value                 -> ok
//!   get    wait_ms (u64), key         -> value | error(timeout)   (the server parks it until set)
//!   wait   wait_ms, count (u32), keys -> ok | error(timeout)
//!   check  key                        -> flag (u8 0/1)
//!   add    delta (i64), key           -> counter (i64) | error(not_counter)
//!   close  (empty)                    -> the server closes the connection
//! A key or value is a u32 length and its bytes. wait_ms is relative (hosts' clocks differ).
//! Replies: ok (empty), value (bytes to the end), flag, counter, error (u8 code, text to the end).
//! Handshake: challenge (32-byte nonce), response (32-byte MAC, 32-byte nonce), proof (32-byte MAC).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tutti/bootstrap/tcp_store/frame.hpp"
#include "tutti/core/wire.hpp"

namespace tutti::bootstrap::tcp_wire {

inline constexpr std::size_t nonce_bytes = 32;
inline constexpr std::size_t mac_bytes = 32;
inline constexpr std::size_t max_key_bytes = 4096;
inline constexpr std::size_t max_wait_keys = 65536;
//! Nothing before authentication needs more: an unauthenticated peer cannot make the server buffer more.
inline constexpr std::size_t max_handshake_payload = nonce_bytes + mac_bytes;

using nonce = std::array<unsigned char, nonce_bytes>;
using mac = std::array<unsigned char, mac_bytes>;

enum class error_code : std::uint8_t {
  timeout = 1,      //!< a server-side wait passed its deadline
  not_counter = 2,  //!< add on a key that does not hold decimal text
  auth_failed = 3,  //!< the handshake's MAC did not verify
  bad_request = 4,  //!< a well-formed frame that makes no sense here
  refused = 5,      //!< a wait that cannot end: the server refused a client for a wrong job key
};

struct request {
  frame_type type{};
  std::vector<std::string> keys;      //!< one key, or wait's list
  std::vector<unsigned char> value;   //!< set
  std::int64_t delta = 0;             //!< add
  std::uint64_t wait_ms = 0;          //!< get, wait
};

//! A request, or why the frame is not one (static text).
using decoded_request = std::variant<request, const char*>;

//! Decodes with a throwing wire reader; a refusal comes back as one of a few static sentences
//! (the server's warning names the frame type; the fuzz target relies on no other outcome).
[[nodiscard]] inline decoded_request decode_request(frame_type type, std::span<const unsigned char> payload) {
  payload_reader in(payload, "tcp_store request");
  request r;
  r.type = type;
  auto key = [&] { r.keys.push_back(in.string("a key", max_key_bytes)); };
  try {
    switch (type) {
      case frame_type::set: {
        key();
        const auto v = in.prefixed("the value", payload.size());
        r.value.assign(v.begin(), v.end());
        break;
      }
      case frame_type::get:
        r.wait_ms = in.get<std::uint64_t>("wait_ms");
        key();
        break;
      case frame_type::wait: {
        r.wait_ms = in.get<std::uint64_t>("wait_ms");
        std::uint32_t n = 0;
        try {
          n = in.count("the key count", max_wait_keys, 4);  // each key is at least its u32 length
        } catch (const wire::malformed&) {
          return "wait lists more keys than its frame holds";
        }
        r.keys.reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) key();
        break;
      }
      case frame_type::check: key(); break;
      case frame_type::add:
        r.delta = in.get<std::int64_t>("delta");
        key();
        break;
      case frame_type::close: break;
      default: return "not a request frame type";
    }
  } catch (const wire::malformed&) {
    return "request fields run past the frame or exceed their limits";
  }
  if (!in.at_end()) return "trailing bytes after the request";
  return r;
}

[[nodiscard]] inline std::vector<unsigned char> encode_request(const request& r) {
  frame_builder f(r.type);
  switch (r.type) {
    case frame_type::set: f.field(r.keys.at(0)).field(r.value); break;
    case frame_type::get: f.u64(r.wait_ms).field(r.keys.at(0)); break;
    case frame_type::wait:
      f.u64(r.wait_ms).u32(static_cast<std::uint32_t>(r.keys.size()));
      for (const auto& k : r.keys) f.field(k);
      break;
    case frame_type::check: f.field(r.keys.at(0)); break;
    case frame_type::add: f.u64(static_cast<std::uint64_t>(r.delta)).field(r.keys.at(0)); break;
    default: break;  // close
  }
  return std::move(f).finish();
}

struct reply {
  frame_type type{};
  std::vector<unsigned char> value;  //!< value
  bool flag = false;                 //!< flag
  std::int64_t counter = 0;          //!< counter
  error_code code{};                 //!< error
  std::string text;                  //!< error
};

[[nodiscard]] inline std::optional<reply> decode_reply(frame_type type, std::span<const unsigned char> payload) {
  payload_reader in(payload, "tcp_store reply");
  reply r;
  r.type = type;
  try {
    switch (type) {
      case frame_type::ok: break;
      case frame_type::value: {
        const auto v = in.rest();
        r.value.assign(v.begin(), v.end());
        break;
      }
      case frame_type::flag: {
        const auto b = in.get<std::uint8_t>("the flag");
        if (b > 1) return std::nullopt;
        r.flag = b == 1;
        break;
      }
      case frame_type::counter: r.counter = in.get<std::int64_t>("the counter"); break;
      case frame_type::error: {
        const auto c = in.get<std::uint8_t>("the error code");
        if (c < 1 || c > 5) return std::nullopt;
        r.code = static_cast<error_code>(c);
        const auto t = in.rest();
        r.text.assign(reinterpret_cast<const char*>(t.data()), t.size());
        break;
      }
      default: return std::nullopt;
    }
  } catch (const wire::malformed&) {
    return std::nullopt;
  }
  if (!in.at_end()) return std::nullopt;
  return r;
}

[[nodiscard]] inline std::vector<unsigned char> encode_error(error_code code, std::string_view text) {
  return std::move(frame_builder(frame_type::error)
                       .u8(static_cast<std::uint8_t>(code))
                       .raw({reinterpret_cast<const unsigned char*>(text.data()), text.size()}))
      .finish();
}

// --- handshake ------------------------------------------------------------------------------

struct response_message {
  mac client_mac{};
  nonce client_nonce{};
};

//! Copies n bytes from `in` into an array (the caller has checked the size).
template <std::size_t N>
[[nodiscard]] std::array<unsigned char, N> copy_fixed(std::span<const unsigned char> in) {
  std::array<unsigned char, N> out{};
  std::copy_n(in.begin(), N, out.begin());
  return out;
}

//! A payload of exactly N bytes, copied into an array; anything else is nullopt.
template <std::size_t N>
[[nodiscard]] std::optional<std::array<unsigned char, N>> decode_fixed(std::span<const unsigned char> payload) {
  if (payload.size() != N) return std::nullopt;
  return copy_fixed<N>(payload);
}

[[nodiscard]] inline std::optional<nonce> decode_challenge(std::span<const unsigned char> payload) {
  return decode_fixed<nonce_bytes>(payload);
}
[[nodiscard]] inline std::optional<mac> decode_proof(std::span<const unsigned char> payload) {
  return decode_fixed<mac_bytes>(payload);
}
[[nodiscard]] inline std::optional<response_message> decode_response(std::span<const unsigned char> payload) {
  if (payload.size() != mac_bytes + nonce_bytes) return std::nullopt;
  return response_message{copy_fixed<mac_bytes>(payload), copy_fixed<nonce_bytes>(payload.subspan(mac_bytes))};
}

[[nodiscard]] inline std::vector<unsigned char> encode_response(const response_message& m) {
  return std::move(frame_builder(frame_type::response).raw(m.client_mac).raw(m.client_nonce)).finish();
}

}  // namespace tutti::bootstrap::tcp_wire
