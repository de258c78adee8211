//! @file int8.hpp  codec::int8 — fp32 elements as 8-bit integers with one fp32 scale per block.
//!
//! Wire: for every block of `block_elements` elements (the last may be shorter) one fp32 scale
//! s = max|x * scale| / 127 of the block, then the block's int8 values q = round(x * scale / s)
//! (nearest, ties away from zero), in [-127, 127]. Decode: q * s. A block of zeros has s = 0; a block
//! holding a NaN or an infinity has s = NaN, so all of it decodes to NaN.
//! One round trip errs by at most s / 2 = max|block| / 254 (plus fp32 rounding of the product,
//! and of y / s, a few 2^-23 of s): the error is relative to the block's largest element, not to x.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "tutti/codec/concepts.hpp"

namespace tutti::codec {

struct int8 {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "int8";
  static constexpr bool lossless = false;
  static constexpr std::size_t block_elements = 256;

  [[nodiscard]] static constexpr bool accepts(dtype t) noexcept { return t == dtype::f32; }
  [[nodiscard]] static constexpr std::size_t blocks(std::size_t count) noexcept {
    return (count + block_elements - 1) / block_elements;
  }
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype, std::size_t count) noexcept {
    return blocks(count) * sizeof(float) + count;
  }
  //! Half a quantisation step of the block (s / 2 = block_max / 254), with fp32's own rounding.
  [[nodiscard]] static float max_error(float, float block_max) noexcept {
    return block_max / 254.0f * (1.0f + 0x1p-12f);  // y / s is rounded once before round(): 127 * 2^-23 of s
  }

  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
    auto* values = reinterpret_cast<std::int8_t*>(wire + blocks(n) * sizeof(float));
    for (std::size_t b = 0, i = 0; i < n; ++b, i += block_elements) {
      const std::size_t m = std::min(block_elements, n - i);
      // Both loops vectorise (at -O3): the block's largest |y| is an integer max over the bit
      // patterns with the sign cleared (positive floats order as their bits do; a float max
      // reduction would need -ffast-math), and rounding is truncation of y + copysign(0.5, y)
      // (to nearest, ties away from zero), where std::round was a library call per element
      // (0.7 GB/s, bench/codecs). Not the add-and-subtract-1.5*2^23 trick: a user's -ffast-math
      // folds it to y (this header compiles with the user's flags) and it follows the FP rounding
      // mode; this form is right under both (checked in all four modes and under -Ofast).
      std::uint32_t top_bits = 0;
      for (std::size_t j = 0; j < m; ++j) {
        const float y = in[i + j] * scale;
        std::uint32_t bits;
        std::memcpy(&bits, &y, sizeof bits);
        bits &= 0x7fffffffu;
        top_bits = bits > top_bits ? bits : top_bits;
      }
      float s;
      if (top_bits >= 0x7f800000u) {
        // A NaN or an infinity: the block's scale is NaN and all of it decodes to NaN, so a broken
        // gradient is seen rather than quantised into something plausible.
        s = std::numeric_limits<float>::quiet_NaN();
        std::memset(values + i, 0, m);
      } else {
        float top;
        std::memcpy(&top, &top_bits, sizeof top);
        s = top / 127.0f;
        const float inv = s > 0 ? 1.0f / s : 0.0f;
        for (std::size_t j = 0; j < m; ++j) {
          const float y = in[i + j] * scale * inv;  // in [-127, 127] up to fp32's rounding: rounds inside
          values[i + j] = static_cast<std::int8_t>(static_cast<int>(y + std::copysign(0.5f, y)));
        }
      }
      std::memcpy(wire + b * sizeof(float), &s, sizeof s);
    }
  }
  static void decode(const std::byte* wire, std::size_t n, float* out) noexcept {
    apply(wire, n, out, [](float& o, float v) { o = v; });
  }
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept {
    apply(wire, n, acc, [](float& o, float v) { o += v; });
  }

 private:
  template <class F>
  static void apply(const std::byte* wire, std::size_t n, float* out, F&& store) noexcept {
    const auto* values = reinterpret_cast<const std::int8_t*>(wire + blocks(n) * sizeof(float));
    for (std::size_t b = 0, i = 0; i < n; ++b, i += block_elements) {
      const std::size_t m = std::min(block_elements, n - i);
      float s;
      std::memcpy(&s, wire + b * sizeof(float), sizeof s);
      for (std::size_t j = 0; j < m; ++j) store(out[i + j], static_cast<float>(values[i + j]) * s);
    }
  }
};

static_assert(lossy_codec_policy<int8>);

}  // namespace tutti::codec
