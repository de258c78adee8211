//! @file concepts.hpp  The Codec concept: what a buffer becomes on the wire.
#pragma once
#include <concepts>
#include <cstddef>
#include <string_view>

#include "tutti/core/dtype.hpp"
#include "tutti/core/policy.hpp"

namespace tutti {

/// A Codec knows the encoded size of `count` elements of a dtype and whether it is lossless.
/// Lossy codecs (fp16, int8, top-k, ...) additionally encode a chunk and decode-and-reduce into a
/// higher-precision accumulator; they are not built yet (see README).
template <class C>
concept codec_policy = std::same_as<typename C::tutti_role, role::codec> && requires(dtype t, std::size_t n) {
  { C::name } -> std::convertible_to<std::string_view>;
  { C::lossless } -> std::convertible_to<bool>;
  { C::encoded_bytes(t, n) } -> std::convertible_to<std::size_t>;
};

}  // namespace tutti
