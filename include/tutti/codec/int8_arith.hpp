//! @file int8_arith.hpp  codec::int8's per-element and per-block arithmetic, shared by the CPU codec and the CUDA kernels.
//!
//! A block of up to `block_elements` values y (already multiplied by the caller's scale) becomes
//! one fp32 scale s = max|y| / 127 and int8 values q = round(y / s) (nearest, ties away from zero);
//! it decodes to q * s. codec/int8.hpp documents the wire and the error bound. Every function is
//! TUTTI_HOST_DEVICE and written with core/host_device.hpp's helpers, so the GPU quantises bit for
//! bit as the CPU codec does, and straight-line, so the CPU loops calling them vectorise.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tutti/core/host_device.hpp"

namespace tutti::codec::int8_arith {

inline constexpr std::size_t block_elements = 256;  //!< elements sharing one fp32 scale

//! |y|'s bit pattern: non-negative floats order as their bits do, so the block's largest magnitude
//! is an integer max (which vectorises; a float max reduction would need -ffast-math) and an
//! infinity or a NaN sorts above every finite value.
[[nodiscard]] TUTTI_HOST_DEVICE inline std::uint32_t magnitude_bits(float y) noexcept {
  return detail::float_as_bits(y) & 0x7fffffffu;
}

//! The block's scale and the multiplier its values are quantised with.
struct block_scale {
  float scale;    //!< s, written to the wire; NaN for a block holding a NaN or an infinity
  float inverse;  //!< 1 / s, finite; 0 for an all-zero block
  bool finite;    //!< false: the block's values are all written as 0 and decode (times NaN) to NaN
};

//! The scale of a block whose largest magnitude_bits() is `max_bits`.
[[nodiscard]] TUTTI_HOST_DEVICE inline block_scale scale_of_block(std::uint32_t max_bits) noexcept {
  if (max_bits >= 0x7f800000u) {
    // A NaN or an infinity: the block decodes to NaN, so a broken gradient is seen rather than
    // quantised into something plausible.
    return {detail::bits_as_float(0x7fc00000u), 0.0f, false};
  }
  const float s = detail::div_rn(detail::bits_as_float(max_bits), 127.0f);
  float inverse = s > 0.0f ? detail::div_rn(1.0f, s) : 0.0f;
  // A block below about 2^-121 has a subnormal s whose reciprocal overflows to infinity, and
  // y * infinity would reach quantise()'s float->int conversion (undefined behaviour in C++,
  // saturating on the GPU; 0 * infinity is NaN). The largest finite float instead keeps
  // |y * inverse| <= 127 (y <= max < 127 * 2^-128 there), and the two processors agree.
  inverse = inverse > 0x1.fffffep127f ? 0x1.fffffep127f : inverse;
  return {s, inverse, true};
}

//! One value of a finite block: r = y * inverse rounded to nearest with ties away from zero by
//! truncating r + copysign(0.5, r). |r| <= 127 up to fp32's rounding (scale_of_block()'s clamp
//! included; tests/cuda checks every block maximum near it), so the conversion is in range. Not the
//! add-and-subtract-1.5*2^23 trick: a user's -ffast-math folds it away (this header compiles with
//! the user's flags) and it follows the FP rounding mode; truncation does neither. copysign is
//! written on the bits so that the CPU (a library call otherwise) and the GPU do the same thing.
//! No float clamp here: g++ turns a float select against a constant into a branch and the codec's
//! loop stops vectorising (7.1 -> 2.6 GB/s encode, bench/codecs).
[[nodiscard]] TUTTI_HOST_DEVICE inline std::int8_t quantise(float y, float inverse) noexcept {
  const float r = detail::mul_rn(y, inverse);
  const float half = detail::bits_as_float(0x3f000000u | (detail::float_as_bits(r) & 0x80000000u));
  return static_cast<std::int8_t>(static_cast<std::int32_t>(detail::add_rn(r, half)));
}

//! q * s: exact in fp32 except for the product's one rounding.
[[nodiscard]] TUTTI_HOST_DEVICE inline float dequantise(std::int8_t q, float scale) noexcept {
  return detail::mul_rn(static_cast<float>(q), scale);
}

}  // namespace tutti::codec::int8_arith
