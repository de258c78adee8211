//! @file store_frame_fuzz.cpp  libFuzzer target: tcp_store's frame parser and message decoders on arbitrary bytes.
//!
//! What a hostile or broken peer can send the server or a client goes through exactly these pure
//! functions (frame.hpp, messages.hpp). Besides the sanitizers' checks (no read past the input, no
//! overflow, no leak), two properties are asserted:
//!  - a frame's declared length is honoured: it is consumed whole and never beyond the limit;
//!  - decoding is exact: a request or reply that decodes re-encodes to the very bytes it came from,
//!    so no two byte strings mean the same request and nothing trailing is silently ignored.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "require.hpp"

namespace wire = tutti::bootstrap::tcp_wire;

namespace {

using tutti_fuzz::require;

std::vector<unsigned char> encode_reply(const wire::reply& r) {
  wire::frame_builder f(r.type);
  switch (r.type) {
    case wire::frame_type::value: f.raw(r.value); break;
    case wire::frame_type::flag: f.u8(r.flag ? 1 : 0); break;
    case wire::frame_type::counter: f.u64(static_cast<std::uint64_t>(r.counter)); break;
    case wire::frame_type::error: return wire::encode_error(r.code, r.text);
    default: break;
  }
  return std::move(f).finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const unsigned char> in(data, size);
  // The first byte picks the limit, so both the handshake limit and larger ones are exercised.
  const std::size_t limit = size > 0 && (data[0] & 1) ? wire::max_handshake_payload : 4096;
  while (!in.empty()) {
    const auto r = wire::parse_frame(in, limit);
    if (r.what != wire::parse_result::status::frame) break;
    require(r.consumed == wire::header_bytes + r.payload.size());
    require(r.payload.size() <= limit && r.consumed <= in.size());
    const std::span<const unsigned char> whole = in.first(r.consumed);
    auto request = wire::decode_request(r.type, r.payload);
    if (auto* q = std::get_if<wire::request>(&request)) {
      const auto again = wire::encode_request(*q);
      require(again.size() == whole.size() && std::memcmp(again.data(), whole.data(), whole.size()) == 0);
    }
    if (auto reply = wire::decode_reply(r.type, r.payload)) {
      const auto again = encode_reply(*reply);
      require(again.size() == whole.size() && std::memcmp(again.data(), whole.data(), whole.size()) == 0);
    }
    if (auto m = wire::decode_response(r.payload)) {
      auto again = wire::encode_response(*m);
      require(std::memcmp(again.data() + wire::header_bytes, r.payload.data(), r.payload.size()) == 0);
    }
    (void)wire::decode_challenge(r.payload);
    (void)wire::decode_proof(r.payload);
    in = in.subspan(r.consumed);
  }
  return 0;
}
