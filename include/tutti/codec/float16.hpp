//! @file float16.hpp  codec::fp16 and codec::bf16 — fp32 elements as 16-bit floats on the wire.
//!
//! Encode: x * scale, rounded to nearest even (core/half.hpp, core/bfloat16.hpp: the same
//! conversions the reductions use, checked over all 65,536 bit patterns). Decode widens exactly.
//! decode_add widens and adds in fp32: a receiver never keeps a 16-bit running sum.
//! One round trip of y = x * scale errs by at most half an ulp of the format:
//!   fp16: |y| * 2^-11 for |y| >= 2^-14 (normal), 2^-25 absolute below (subnormal), and overflow
//!         to infinity above 65504 (the caller scales: avg by 1/world);
//!   bf16: |y| * 2^-8 (fp32's exponent range: no overflow).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tutti/codec/concepts.hpp"
#include "tutti/core/bfloat16.hpp"
#include "tutti/core/half.hpp"

namespace tutti::codec {

namespace float16_detail {

//! The shared body of fp16 and bf16: only the two conversions differ.
template <void (*Widen)(const std::uint16_t*, float*, std::size_t),
          void (*Narrow)(const float*, std::uint16_t*, std::size_t)>
struct codec16 {
  static constexpr std::size_t block = 512;  // temporaries stay in L1; each stage vectorises alone

  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
    alignas(64) float scaled[block];
    alignas(64) std::uint16_t bits[block];
    for (std::size_t i = 0; i < n; i += block) {
      const std::size_t m = std::min(block, n - i);
      for (std::size_t j = 0; j < m; ++j) scaled[j] = in[i + j] * scale;
      Narrow(scaled, bits, m);
      std::memcpy(wire + i * 2, bits, m * 2);  // the wire may be unaligned
    }
  }
  static void decode(const std::byte* wire, std::size_t n, float* out) noexcept {
    alignas(64) std::uint16_t bits[block];
    for (std::size_t i = 0; i < n; i += block) {
      const std::size_t m = std::min(block, n - i);
      std::memcpy(bits, wire + i * 2, m * 2);
      Widen(bits, out + i, m);
    }
  }
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept {
    alignas(64) std::uint16_t bits[block];
    alignas(64) float wide[block];
    for (std::size_t i = 0; i < n; i += block) {
      const std::size_t m = std::min(block, n - i);
      std::memcpy(bits, wire + i * 2, m * 2);
      Widen(bits, wide, m);
      for (std::size_t j = 0; j < m; ++j) acc[i + j] += wide[j];
    }
  }
};

}  // namespace float16_detail

struct fp16 : float16_detail::codec16<half_to_float_n, float_to_half_n> {
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

struct bf16 : float16_detail::codec16<bfloat16_to_float_n, float_to_bfloat16_n> {
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
