//! @file half.hpp  IEEE 754 binary16 storage type with round-to-nearest-even conversion.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tutti/core/host_device.hpp"

namespace tutti {

// Both directions are written as straight-line code with selects (no branches, no tables, no
// _Float16 / F16C) so that the bulk loops below vectorise with baseline SSE2 and the result
// never depends on the CPU. The few float operations used are exact (power-of-two scaling,
// small-integer conversions, truncation), so neither the FP rounding mode nor FTZ/DAZ can change
// a result. The two scalar conversions are TUTTI_HOST_DEVICE: tutti's CUDA kernels call these very
// functions, so the host tests below check the GPU's rounding too (core/host_device.hpp).

namespace detail {
// Bitwise select. A ternary would do on integers, but g++ sinks the (possibly trapping, under the
// default -ftrapping-math) float arithmetic of the unused side into a branch, and a loop with a
// branch is not vectorised; consuming both sides unconditionally keeps the loop straight-line.
[[nodiscard]] TUTTI_HOST_DEVICE constexpr std::uint32_t half_select(bool c, std::uint32_t if_true,
                                                  std::uint32_t if_false) noexcept {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (if_true & m) | (if_false & ~m);
}
}  // namespace detail

[[nodiscard]] TUTTI_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t hw = h;
  const std::uint32_t sign = (hw & 0x8000u) << 16;
  const std::uint32_t em = hw & 0x7fffu;  // exponent and mantissa fields together
  // Normal: shift the fields into place and rebias the exponent from 15 to 127.
  const std::uint32_t normal = (em << 13) + (112u << 23);
  // Inf/NaN: all-ones exponent, payload kept. Signalling NaNs come out quiet, as IEEE 754
  // conversions (and F16C's vcvtph2ps) deliver them, so results match the hardware bit for bit.
  const std::uint32_t inf_nan = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x00400000u : 0u);
  // Subnormal: the value is mantissa * 2^-24; the int->float conversion and the scaling are exact
  // and land in the normal float range, so no normalisation loop is needed.
  const std::uint32_t sub =
      detail::float_as_bits(detail::mul_rn(static_cast<float>(static_cast<std::int32_t>(em)), 0x1p-24f));
  std::uint32_t r = detail::half_select(em < 0x0400u, sub, normal);
  r = detail::half_select(em >= 0x7c00u, inf_nan, r);
  return detail::bits_as_float(r | sign);
}

[[nodiscard]] TUTTI_HOST_DEVICE inline std::uint16_t float_to_half_bits(float f) noexcept {
  const std::uint32_t u = detail::float_as_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  // Signed is enough (the sign bit is cleared) and saves the vectoriser the unsigned-compare
  // bias dance on SSE2.
  const std::int32_t a = static_cast<std::int32_t>(u & 0x7fffffffu);
  const std::uint32_t au = static_cast<std::uint32_t>(a);

  // Results that are normal halves (|f| >= 2^-14): rebias, then round the 13 dropped bits to
  // nearest-even by adding 0xfff plus the kept lsb. A carry out of the mantissa correctly bumps
  // the exponent, and 65520 <= |f| < 65536 carries all the way to 0x7c00 (inf) as IEEE requires.
  // Wraps for small inputs, but those take the subnormal result below.
  const std::uint32_t normal = (au - (112u << 23) + 0x0fffu + ((au >> 13) & 1u)) >> 13;

  // Results that are subnormal halves or zero (|f| < 2^-14): the half mantissa is |f| * 2^24
  // rounded to an integer. Scaling by 2^24 is exact, truncation is rounding-mode independent and
  // the fraction y - t is exact, so the tie test below is exact too. Larger inputs are clamped
  // to 2^-14 first, so the float->int conversion can never overflow (which would be UB).
  // (Clamping rather than zeroing: with a constant on one side g++ turns this back into a branch.)
  const std::uint32_t a_sub = a < (113 << 23) ? au : (113u << 23);
  const float y = detail::mul_rn(detail::bits_as_float(a_sub), 0x1p24f);  // in [0, 1024]
  const std::int32_t t = static_cast<std::int32_t>(y);
  const float frac = detail::sub_rn(y, static_cast<float>(t));
  const std::int32_t up = frac > 0.5f ? 1 : frac == 0.5f ? (t & 1) : 0;
  const std::uint32_t sub = static_cast<std::uint32_t>(t + up);  // 0x400 when it rounds up to 2^-14

  // NaN: quiet it, keep the top 9 payload bits; the quiet bit alone keeps it from becoming inf.
  const std::uint32_t nan = 0x7e00u | ((au >> 13) & 0x03ffu);

  std::uint32_t r = detail::half_select(a < (113 << 23), sub, normal);
  r = detail::half_select(a >= (143 << 23), 0x7c00u, r);  // |f| >= 65536 (including inf) overflows
  r = detail::half_select(a > 0x7f800000, nan, r);
  return static_cast<std::uint16_t>(r | sign);
}

// The scalar functions are branch-free and inline, so these loops vectorise. The fixed-size
// inner block is for plain -O2: g++'s "very cheap" cost model there rejects a loop that would
// need a scalar epilogue but takes a constant-trip one. The remainder (< 16) loop counts up to
// n % block rather than from i to n, which keeps -Waggressive-loop-optimizations from misfiring.
inline void half_to_float_n(const std::uint16_t* in, float* out, std::size_t n) noexcept {
  constexpr std::size_t block = 16;
  const std::size_t full = n - n % block;
  for (std::size_t i = 0; i < full; i += block)
    for (std::size_t j = 0; j < block; ++j) out[i + j] = half_bits_to_float(in[i + j]);
  for (std::size_t j = 0; j < n % block; ++j) out[full + j] = half_bits_to_float(in[full + j]);
}

inline void float_to_half_n(const float* in, std::uint16_t* out, std::size_t n) noexcept {
  constexpr std::size_t block = 16;
  const std::size_t full = n - n % block;
  for (std::size_t i = 0; i < full; i += block)
    for (std::size_t j = 0; j < block; ++j) out[i + j] = float_to_half_bits(in[i + j]);
  for (std::size_t j = 0; j < n % block; ++j) out[full + j] = float_to_half_bits(in[full + j]);
}

struct half {
  std::uint16_t bits;  //!< raw binary16 pattern
  half() = default;    // trivial, so arrays of half are trivially copyable and memcpy-able
  explicit half(float f) noexcept : bits(float_to_half_bits(f)) {}
  operator float() const noexcept { return half_bits_to_float(bits); }  // implicit widening, like float->double
  static constexpr half from_bits(std::uint16_t b) noexcept {
    half h{};
    h.bits = b;
    return h;
  }
  // Compares values, not bits, so it has IEEE semantics: NaN != NaN, +0 == -0.
  friend bool operator==(half a, half b) noexcept { return float(a) == float(b); }
};
static_assert(sizeof(half) == 2);

}  // namespace tutti
