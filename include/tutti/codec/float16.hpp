//! @file float16.hpp  codec::fp16 and codec::bf16 — fp32 elements as 16-bit floats on the wire.
//!
//! Encode: x * scale, rounded to nearest even (core/half.hpp, core/bfloat16.hpp: the same
//! conversions the reductions use, checked over all 65,536 bit patterns). Decode widens exactly.
//! decode_add widens and adds in fp32: a receiver never keeps a 16-bit running sum. The loops are
//! chosen once per process from the CPU (F16C/AVX2, AVX-512) and TUTTI_CODEC_ISA
//! (codec/float16_dispatch.hpp); every choice gives the same bits.
//! One round trip of y = x * scale errs by at most half an ulp of the format:
//!   fp16: |y| * 2^-11 for |y| >= 2^-14 (normal), 2^-25 absolute below (subnormal), and overflow
//!         to infinity above 65504 (the caller scales: avg by 1/world);
//!   bf16: |y| * 2^-8 (fp32's exponent range: no overflow).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>

#include "tutti/codec/concepts.hpp"
#include "tutti/codec/float16_dispatch.hpp"
#include "tutti/core/bfloat16.hpp"
#include "tutti/core/half.hpp"

namespace tutti::codec {

namespace float16_detail {

//! fp16 and bf16 share their shape; Format picks one codec's loops from the set chosen at run time
//! (codec/float16_dispatch.hpp: F16C/AVX2 or AVX-512 where the CPU has them, the portable loops
//! otherwise and as the reference, all bit for bit the same).
template <codec_loops loop_set::*Format>
struct codec16 {
  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
    (active_loops().*Format).encode(in, n, scale, wire);
  }
  static void decode(const std::byte* wire, std::size_t n, float* out) noexcept {
    (active_loops().*Format).decode(wire, n, out);
  }
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept {
    (active_loops().*Format).decode_add(wire, n, acc);
  }
};

}  // namespace float16_detail

struct fp16 : float16_detail::codec16<&float16_detail::loop_set::fp16> {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "fp16";
  static constexpr bool lossless = false;
  [[nodiscard]] static constexpr bool accepts(dtype t) noexcept { return t == dtype::f32; }
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype, std::size_t count) noexcept { return count * 2; }
  //! Half an ulp of binary16 at y (normal), or of its subnormals' spacing 2^-24.
  [[nodiscard]] static float max_error(float y, float) noexcept {
    return std::max(std::fabs(y) * 0x1p-11f, 0x1p-25f);
  }
};

struct bf16 : float16_detail::codec16<&float16_detail::loop_set::bf16> {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "bf16";
  static constexpr bool lossless = false;
  [[nodiscard]] static constexpr bool accepts(dtype t) noexcept { return t == dtype::f32; }
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype, std::size_t count) noexcept { return count * 2; }
  //! Half an ulp of bfloat16 (8 significant bits) at y; fp32's subnormals keep their spacing 2^-149 * 2^16.
  [[nodiscard]] static float max_error(float y, float) noexcept {
    return std::max(std::fabs(y) * 0x1p-8f, 0x1p-134f);
  }
};

static_assert(lossy_codec_policy<fp16>);
static_assert(lossy_codec_policy<bf16>);

}  // namespace tutti::codec
