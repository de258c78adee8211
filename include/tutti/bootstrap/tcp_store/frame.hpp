//! @file frame.hpp  tcp_store's frames: a fixed 12-byte header and a bounded payload; the parser is a pure function.
//!
//! Header: "tts" (3 bytes) | version 1 (1) | type (1) | three zero bytes (reserved) | payload length
//! (u32, big-endian). All integers on the wire are big-endian. parse_frame() looks only at the
//! bytes it is given and never allocates, so it can be fuzzed (tests/fuzz/store_frame_fuzz.cpp) and
//! a peer can never make the server read or keep more than the limit it passes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::bootstrap::tcp_wire {

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
  const std::size_t length = (std::size_t{in[8]} << 24) | (std::size_t{in[9]} << 16) |
                             (std::size_t{in[10]} << 8) | std::size_t{in[11]};
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

//! Builds one frame: header first, fields appended, length patched by finish().
class frame_builder {
 public:
  explicit frame_builder(frame_type type) {
    bytes_.reserve(64);
    bytes_.insert(bytes_.end(), magic.begin(), magic.end());
    bytes_.push_back(version);
    bytes_.push_back(static_cast<unsigned char>(type));
    bytes_.insert(bytes_.end(), 7, 0);  // reserved + length
  }
  frame_builder& u8(std::uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  frame_builder& u32(std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) bytes_.push_back(static_cast<unsigned char>(v >> s));
    return *this;
  }
  frame_builder& u64(std::uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) bytes_.push_back(static_cast<unsigned char>(v >> s));
    return *this;
  }
  //! u32 length, then the bytes.
  frame_builder& field(std::span<const unsigned char> b) {
    u32(static_cast<std::uint32_t>(b.size()));
    return raw(b);
  }
  frame_builder& field(std::string_view s) {
    return field(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(s.data()), s.size()));
  }
  frame_builder& raw(std::span<const unsigned char> b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  [[nodiscard]] std::vector<unsigned char> finish() && {
    const auto length = static_cast<std::uint32_t>(bytes_.size() - header_bytes);
    for (int i = 0; i < 4; ++i) bytes_[8 + static_cast<std::size_t>(i)] = static_cast<unsigned char>(length >> (24 - 8 * i));
    return std::move(bytes_);
  }

 private:
  std::vector<unsigned char> bytes_;
};

//! Reads fields from a payload; every read is bounds-checked and a failed one poisons the reader.
class payload_reader {
 public:
  explicit payload_reader(std::span<const unsigned char> p) noexcept : p_(p) {}
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] bool at_end() const noexcept { return ok_ && pos_ == p_.size(); }
  [[nodiscard]] std::size_t left() const noexcept { return ok_ ? p_.size() - pos_ : 0; }

  std::uint8_t u8() noexcept { return static_cast<std::uint8_t>(take_int(1)); }
  std::uint32_t u32() noexcept { return static_cast<std::uint32_t>(take_int(4)); }
  std::uint64_t u64() noexcept { return take_int(8); }
  //! A u32-length-prefixed field of at most `limit` bytes.
  std::span<const unsigned char> field(std::size_t limit) noexcept {
    const std::size_t n = u32();
    if (!ok_ || n > limit || n > p_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto out = p_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  std::span<const unsigned char> rest() noexcept {
    if (!ok_) return {};
    auto out = p_.subspan(pos_);
    pos_ = p_.size();
    return out;
  }
  std::span<const unsigned char> exactly(std::size_t n) noexcept {
    if (!ok_ || n > p_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto out = p_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::uint64_t take_int(std::size_t n) noexcept {
    if (!ok_ || n > p_.size() - pos_) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p_[pos_ + i];
    pos_ += n;
    return v;
  }

  std::span<const unsigned char> p_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace tutti::bootstrap::tcp_wire
