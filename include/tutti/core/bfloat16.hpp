//! @file bfloat16.hpp  bfloat16 (top half of an IEEE binary32) storage type with round-to-nearest-even conversion.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tutti/core/host_device.hpp"

namespace tutti {

// bfloat16 shares float's exponent range, so widening is a shift and narrowing only has to round
// the 16 dropped mantissa bits; subnormals, overflow and zero all fall out of the same integer add.
// Written branch-free so the bulk loops vectorise on any target, and TUTTI_HOST_DEVICE so that
// tutti's CUDA kernels round with these very functions.

[[nodiscard]] TUTTI_HOST_DEVICE inline float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  return detail::bits_as_float(static_cast<std::uint32_t>(b) << 16);
}

[[nodiscard]] TUTTI_HOST_DEVICE inline std::uint16_t float_to_bfloat16_bits(float f) noexcept {
  const std::uint32_t u = detail::float_as_bits(f);
  // Round to nearest even: add just under half an ulp plus the kept lsb. A carry into the exponent
  // is the right answer for finite values (including max float -> inf)...
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  // ...but for a NaN it could wrap the payload into inf or flip the sign, so NaNs are truncated
  // instead and get the quiet bit, which also guarantees a nonzero mantissa.
  const std::uint32_t nan = (u >> 16) | 0x0040u;
  const bool is_nan = (u & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(is_nan ? nan : rounded);
}

// The scalar functions are branch-free and inline, so these loops vectorise. The fixed-size
// inner block is for plain -O2: g++'s "very cheap" cost model there rejects a loop that would
// need a scalar epilogue but takes a constant-trip one. The remainder (< 16) loop counts up to
// n % block rather than from i to n, which keeps -Waggressive-loop-optimizations from misfiring.
inline void bfloat16_to_float_n(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  constexpr std::size_t block = 16;
  const std::size_t full = n - n % block;
  for (std::size_t i = 0; i < full; i += block)
    for (std::size_t j = 0; j < block; ++j) out[i + j] = bfloat16_bits_to_float(in[i + j]);
  for (std::size_t j = 0; j < n % block; ++j) out[full + j] = bfloat16_bits_to_float(in[full + j]);
}

inline void float_to_bfloat16_n(const float* in, std::uint16_t* out, std::size_t n) noexcept {
  constexpr std::size_t block = 16;
  const std::size_t full = n - n % block;
  for (std::size_t i = 0; i < full; i += block)
    for (std::size_t j = 0; j < block; ++j) out[i + j] = float_to_bfloat16_bits(in[i + j]);
  for (std::size_t j = 0; j < n % block; ++j) out[full + j] = float_to_bfloat16_bits(in[full + j]);
}

struct bfloat16 {
  std::uint16_t bits;  //!< raw bfloat16 pattern (the high 16 bits of the float)
  bfloat16() = default;  // trivial, so arrays of bfloat16 are trivially copyable and memcpy-able
  explicit bfloat16(float f) noexcept : bits(float_to_bfloat16_bits(f)) {}
  operator float() const noexcept { return bfloat16_bits_to_float(bits); }  // implicit widening, like float->double
  static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 h{};
    h.bits = b;
    return h;
  }
  // Compares values, not bits, so it has IEEE semantics: NaN != NaN, +0 == -0.
  friend bool operator==(bfloat16 a, bfloat16 b) noexcept { return float(a) == float(b); }
};
static_assert(sizeof(bfloat16) == 2);

}  // namespace tutti
