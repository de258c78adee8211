//! @file frame.hpp  tcp_store's frames: a fixed 12-byte header and a bounded payload; the parser is a pure function.
//!
//! Header: "tts" (3 bytes) | version 1 (1) | type (1) | three zero bytes (reserved) | payload length
//! (u32, big-endian). All integers on the wire are big-endian (written and read by core/wire.hpp;
//! tests/bootstrap/tcp_store_test.cpp pins the bytes). parse_frame() looks only at the bytes it is
//! given and never allocates, so it can be fuzzed (tests/fuzz/store_frame_fuzz.cpp) and a peer can
//! never make the server read or keep more than the limit it passes.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/core/wire.hpp"

namespace tutti::bootstrap::tcp_wire {

//! The store's byte order: big-endian ("network order"), as version 1 of the protocol has it.
inline constexpr std::endian byte_order = std::endian::big;

inline constexpr std::array<unsigned char, 3> magic = {'t', 't', 's'};
inline constexpr unsigned char version = 1;
inline constexpr std::size_t header_bytes = 12;

enum class frame_type : std::uint8_t {
  // handshake (before anything else on a connection)
  challenge = 1,  //!< server -> client: 32-byte server nonce
  response = 2,   //!< client -> server: 32-byte MAC + 32-byte client nonce
  proof = 3,      //!< server -> client: 32-byte MAC over the client's nonce
  // requests (client -> server), one outstanding per connection
  set = 16,
  get = 17,
  wait = 18,
  check = 19,
  add = 20,
  close = 21,
  // replies (server -> client)
  ok = 32,
  value = 33,
  flag = 34,
  counter = 35,
  error = 36,
};

[[nodiscard]] constexpr bool known_type(std::uint8_t t) noexcept {
  return (t >= 1 && t <= 3) || (t >= 16 && t <= 21) || (t >= 32 && t <= 36);
}

[[nodiscard]] inline const char* type_name(frame_type t) noexcept {
  switch (t) {
    case frame_type::challenge: return "challenge";
    case frame_type::response: return "response";
    case frame_type::proof: return "proof";
    case frame_type::set: return "set";
    case frame_type::get: return "get";
    case frame_type::wait: return "wait";
    case frame_type::check: return "check";
    case frame_type::add: return "add";
    case frame_type::close: return "close";
    case frame_type::ok: return "ok";
    case frame_type::value: return "value";
    case frame_type::flag: return "flag";
    case frame_type::counter: return "counter";
    case frame_type::error: return "error";
  }
  return "unknown";
}

//! What parse_frame found at the start of a buffer.
struct parse_result {
  enum class status { need_more, frame, malformed };
  status what = status::need_more;
  frame_type type{};                      //!< when what == frame
  std::span<const unsigned char> payload; //!< when what == frame: points into the input
  std::size_t consumed = 0;               //!< when what == frame: header + payload bytes
  std::string_view reason;                //!< when what == malformed (static text)
  std::size_t declared = 0;               //!< when malformed for size: the length the header claimed
};

//! Looks for one frame at the start of `in`. A payload longer than `max_payload` is malformed as
//! soon as the header arrives (the peer is not waited for, nor its bytes kept).
[[nodiscard]] inline parse_result parse_frame(std::span<const unsigned char> in, std::size_t max_payload) noexcept {
  parse_result r;
  // Check what has arrived of the header already, so garbage is refused after its first byte.
  const std::size_t have = in.size() < header_bytes ? in.size() : header_bytes;
  for (std::size_t i = 0; i < have && i < magic.size(); ++i)
    if (in[i] != magic[i]) {
      r.what = parse_result::status::malformed;
      r.reason = "bad magic (not a tutti store client, or another protocol)";
      return r;
    }
  if (have > 3 && in[3] != version) {
    r.what = parse_result::status::malformed;
    r.reason = "unsupported protocol version";
    return r;
  }
  if (have > 4 && !known_type(in[4])) {
    r.what = parse_result::status::malformed;
    r.reason = "unknown frame type";
    return r;
  }
  for (std::size_t i = 5; i < have && i < 8; ++i)
    if (in[i] != 0) {
      r.what = parse_result::status::malformed;
      r.reason = "reserved header bytes are not zero";
      return r;
    }
  if (in.size() < header_bytes) return r;  // need_more
  const std::size_t length = wire::load<byte_order, std::uint32_t>(in.data() + 8);
  if (length > max_payload) {
    r.what = parse_result::status::malformed;
    r.reason = "frame larger than the limit";
    r.declared = length;
    return r;
  }
  if (in.size() - header_bytes < length) return r;  // need_more
  r.what = parse_result::status::frame;
  r.type = static_cast<frame_type>(in[4]);
  r.payload = in.subspan(header_bytes, length);
  r.consumed = header_bytes + length;
  return r;
}

//! Builds one frame: header first, fields appended (wire::writer, big-endian), length patched by finish().
class frame_builder {
 public:
  explicit frame_builder(frame_type type) : w_(64) {
    w_.raw(std::span<const unsigned char>(magic)).put(version).put(static_cast<std::uint8_t>(type));
    w_.put(std::uint8_t{0}).put(std::uint8_t{0}).put(std::uint8_t{0}).put(std::uint32_t{0});  // reserved, length
  }
  frame_builder& u8(std::uint8_t v) {
    w_.put(v);
    return *this;
  }
  frame_builder& u32(std::uint32_t v) {
    w_.put(v);
    return *this;
  }
  frame_builder& u64(std::uint64_t v) {
    w_.put(v);
    return *this;
  }
  //! u32 length, then the bytes.
  frame_builder& field(std::span<const unsigned char> b) {
    w_.prefixed(b);
    return *this;
  }
  frame_builder& field(std::string_view s) {
    w_.prefixed(s);
    return *this;
  }
  frame_builder& raw(std::span<const unsigned char> b) {
    w_.raw(b);
    return *this;
  }
  [[nodiscard]] std::vector<unsigned char> finish() && {
    const std::size_t length = w_.size() - header_bytes;
    if (length > std::numeric_limits<std::uint32_t>::max())
      throw invalid_argument("tcp_store: a frame of " + std::to_string(length) + " bytes does not fit its u32 length");
    w_.patch(8, static_cast<std::uint32_t>(length));
    return std::move(w_).take();
  }

 private:
  wire::writer<byte_order, unsigned char> w_;
};

//! Reads a payload's fields (big-endian); every read is bounds-checked and throws wire::malformed.
using payload_reader = wire::reader<byte_order, unsigned char>;

}  // namespace tutti::bootstrap::tcp_wire
