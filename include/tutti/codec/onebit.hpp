//! @file onebit.hpp  codec::onebit — one sign bit per element and one fp32 scale per block of 256,
//! with error feedback (EF-SignSGD, 1-bit Adam's compressor).
//!
//! Wire, for each block of up to 256 elements of v = x * scale + residual: s = mean |v| of the
//! block (fp32), then one bit per element, set when v < 0 (LSB first). Decode: -s or +s. 36 bytes
//! per 1 KiB of fp32: 28x smaller. The scale keeps the block's L1 norm, so with error feedback the
//! signs carry the direction and the residual carries the rest into the next step.
//!
//! residual = v - decoded, computed in fp32: sent + residual equals v up to one fp32 rounding of
//! the subtraction (|error| <= 2^-24 |residual|; exact whenever |v| and s are within a factor of
//! two, by Sterbenz's lemma). Exactness is impossible in fp32 in general (v - s may need more than
//! 24 significant bits); the loss is ten million times below the quantisation error it carries.
//! Like topk, it is allreduced by gathering every rank's encoding and adding in fp32.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tutti/codec/concepts.hpp"

namespace tutti::codec {

struct onebit {
  using tutti_role = role::codec;
  static constexpr std::string_view name = "onebit";
  static constexpr bool lossless = false;
  static constexpr bool error_feedback = true;
  static constexpr std::size_t block_elements = 256;
  static constexpr std::size_t block_bytes = sizeof(float) + block_elements / 8;

  [[nodiscard]] static constexpr bool accepts(dtype t) noexcept { return t == dtype::f32; }
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype, std::size_t n) noexcept {
    return n / block_elements * block_bytes + (n % block_elements ? sizeof(float) + (n % block_elements + 7) / 8 : 0);
  }

  static void encode(const float* in, std::size_t n, float scale, float* residual, std::byte* wire) noexcept {
    for (std::size_t first = 0; first < n; first += block_elements) {
      const std::size_t m = std::min(block_elements, n - first);
      float* v = residual + first;
      float total = 0;
      for (std::size_t j = 0; j < m; ++j) {
        v[j] = in[first + j] * scale + v[j];
        total += std::fabs(v[j]);
      }
      const float s = total / static_cast<float>(m);
      std::byte* block = wire + first / block_elements * block_bytes;
      std::memcpy(block, &s, sizeof s);
      std::uint8_t bits[block_elements / 8] = {};
      for (std::size_t j = 0; j < m; ++j) {
        const bool negative = std::signbit(v[j]);
        bits[j / 8] = static_cast<std::uint8_t>(bits[j / 8] | (negative ? 1u << (j % 8) : 0u));
        v[j] -= negative ? -s : s;  // what this step did not send
      }
      std::memcpy(block + sizeof s, bits, (m + 7) / 8);
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
    for (std::size_t first = 0; first < n; first += block_elements) {
      const std::size_t m = std::min(block_elements, n - first);
      const std::byte* block = wire + first / block_elements * block_bytes;
      float s;
      std::memcpy(&s, block, sizeof s);
      std::uint8_t bits[block_elements / 8];
      std::memcpy(bits, block + sizeof s, (m + 7) / 8);
      for (std::size_t j = 0; j < m; ++j) store(out[first + j], (bits[j / 8] >> (j % 8)) & 1u ? -s : s);
    }
  }
};

static_assert(feedback_codec_policy<onebit>);

}  // namespace tutti::codec
