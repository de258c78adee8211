//! @file concepts.hpp  The Codec concept: what a buffer becomes on the wire.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/policy.hpp"

namespace tutti {

/// A Codec knows the encoded size of `count` elements of a dtype and whether it is lossless.
template <class C>
concept codec_policy = std::same_as<typename C::tutti_role, role::codec> && requires(dtype t, std::size_t n) {
  { C::name } -> std::convertible_to<std::string_view>;
  { C::lossless } -> std::convertible_to<bool>;
  { C::encoded_bytes(t, n) } -> std::convertible_to<std::size_t>;
};

/// A lossy element codec (fp16, bf16, int8): fp32 elements to wire bytes and back, in
/// type-erased, vectorised loops. `accepts(t)` says which dtypes it may carry (f32 today);
/// encode multiplies by `scale` first (1/world for avg: fp16 would overflow on the sum);
/// decode_add accumulates in fp32, never in the wire format. `max_error(x, block_max)` is the
/// bound of one encode/decode round trip of x (block_max: the largest |x| of its block), which
/// the tests check element by element; docs/compression.md derives each.
template <class C>
concept lossy_codec_policy =
    codec_policy<C> && !C::lossless &&
    requires(dtype t, const float* in, std::size_t n, float scale, std::byte* wire, const std::byte* cwire, float* out) {
      { C::accepts(t) } -> std::convertible_to<bool>;
      C::encode(in, n, scale, wire);
      C::decode(cwire, n, out);
      C::decode_add(cwire, n, out);
      { C::max_error(1.0f, 1.0f) } -> std::convertible_to<float>;
    };

/// A lossy codec with error feedback (topk, onebit): it encodes v = in * scale + residual and
/// leaves in `residual` what it did not send (v - decode(wire)), so the next step sends it. The
/// residual belongs to the caller (tutti::error_feedback, one per tensor). Sums of its encodings are
/// not what it encodes well (a sum of top-k vectors is not k-sparse; a sum of signs is not a sign),
/// so schedules gather every rank's encoding and add them in fp32 (algorithm/compressed.hpp).
template <class C>
concept feedback_codec_policy =
    codec_policy<C> && !C::lossless && requires { requires C::error_feedback; } &&
    requires(dtype t, const float* in, std::size_t n, float scale, float* residual, std::byte* wire,
             const std::byte* cwire, float* out) {
      { C::accepts(t) } -> std::convertible_to<bool>;
      C::encode(in, n, scale, residual, wire);
      C::decode(cwire, n, out);
      C::decode_add(cwire, n, out);
    };

//! Why a lossy codec C cannot carry an allreduce of dtype t with op o, or "" when it can: the one
//! wording the communicator (before any data moves) and the schedules (algorithm/compressed.hpp)
//! both use, without the "rank r: allreduce #s: " that each prefixes.
template <class C>
[[nodiscard]] std::string lossy_refusal(dtype t, op o) {
  if (!C::accepts(t))
    return "codec " + std::string(C::name) + " carries float32 only; got dtype " + std::string(name_of(t)) +
           " (use a communicator with codec::none for it)";
  if (o != op::sum && o != op::avg)
    return "codec " + std::string(C::name) + " carries sum and avg only; got op " + std::string(name_of(o)) +
           " with dtype " + std::string(name_of(t));
  return {};
}

//! Elements per independently scaled block of a lossy codec (int8: 256), 1 when every element
//! stands alone (fp16, bf16). Schedules cut buffers at multiples of it, so a block never straddles
//! two messages and its scale is that of the same elements on every rank (the written bounds use it).
template <class C>
[[nodiscard]] constexpr std::size_t codec_granule() noexcept {
  if constexpr (requires { C::block_elements; }) return C::block_elements;
  else return 1;
}

}  // namespace tutti
