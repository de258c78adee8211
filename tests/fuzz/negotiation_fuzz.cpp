//! @file negotiation_fuzz.cpp  libFuzzer target: the fusion negotiation's decoders (core/wire.hpp's reader) on arbitrary bytes.
//!
//! A rank decodes what another rank sent; a bug there (or a torn message) must be a transport_error,
//! never a read past the input, an overflow or an allocation sized by a hostile count (run.sh's
//! -rss_limit_mb catches the last). Asserted besides the sanitizers' checks:
//!  - decoding either succeeds or throws tutti::transport_error, nothing else;
//!  - what decodes re-encodes to bytes that decode to the same message (encode is a fixed point).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/fusion/negotiation/messages.hpp"
#include "require.hpp"

namespace {

using tutti_fuzz::require;

template <class Decode>
void check(std::span<const std::byte> in, Decode decode) {
  try {
    const auto message = decode(in);
    const auto once = tutti::fusion::encode(message);
    const auto twice = tutti::fusion::encode(decode(once));
    require(once == twice);
  } catch (const tutti::transport_error&) {
  } catch (...) {
    require(false);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = std::as_bytes(std::span<const std::uint8_t>(data, size));
  check(in, [](std::span<const std::byte> b) { return tutti::fusion::decode_report(b); });
  check(in, [](std::span<const std::byte> b) { return tutti::fusion::decode_response(b); });
  return 0;
}
