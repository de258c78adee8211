//! @file int8.hpp  codec::int8 — fp32 elements as 8-bit integers with one fp32 scale per block.
//!
//! Wire: for every block of `block_elements` elements (the last may be shorter) one fp32 scale
//! s = max|x * scale| / 127 of the block, then the block's int8 values q = round(x * scale / s)
//! (nearest, ties away from zero), in [-127, 127]. Decode: q * s. A block of zeros has s = 0; a block
//! holding a NaN or an infinity has s = NaN, so all of it decodes to NaN. The arithmetic lives in
//! codec/int8_arith.hpp, shared with the CUDA kernels (include/tutti/cuda/).
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
#include "tutti/codec/int8_arith.hpp"

namespace tutti::codec {

struct int8 {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "int8";
  static constexpr bool lossless = false;
  static constexpr std::size_t block_elements = int8_arith::block_elements;

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
    namespace arith = int8_arith;
    auto* values = reinterpret_cast<std::int8_t*>(wire + blocks(n) * sizeof(float));
    for (std::size_t b = 0, i = 0; i < n; ++b, i += block_elements) {
      const std::size_t m = std::min(block_elements, n - i);
      // Both loops vectorise (at -O3; bench/codecs): the block's largest |y| is an integer max over
      // the bit patterns, and quantise() is straight-line (codec/int8_arith.hpp says why each step
      // is written as it is; tutti's CUDA kernels call the same functions).
      std::uint32_t top_bits = 0;
      for (std::size_t j = 0; j < m; ++j) {
        const std::uint32_t bits = arith::magnitude_bits(in[i + j] * scale);
        top_bits = bits > top_bits ? bits : top_bits;
      }
      const arith::block_scale s = arith::scale_of_block(top_bits);
      if (!s.finite) {
        std::memset(values + i, 0, m);
      } else {
        for (std::size_t j = 0; j < m; ++j) values[i + j] = arith::quantise(in[i + j] * scale, s.inverse);
      }
      std::memcpy(wire + b * sizeof(float), &s.scale, sizeof s.scale);
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
      for (std::size_t j = 0; j < m; ++j) store(out[i + j], int8_arith::dequantise(values[i + j], s));
    }
  }
};

static_assert(lossy_codec_policy<int8>);

}  // namespace tutti::codec
