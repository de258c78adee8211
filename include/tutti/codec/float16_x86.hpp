//! @file float16_x86.hpp  F16C/AVX2 and AVX-512 loops for codec::fp16 and codec::bf16, bit for bit the portable ones.
//!
//! The library is compiled for baseline x86-64, so these functions carry their instruction set in
//! `__attribute__((target(...)))` and only run after float16_dispatch.hpp has seen the CPU report
//! it. Each is the portable loop of codec/float16.hpp (core/half.hpp, core/bfloat16.hpp) done wider:
//!   fp16: vcvtps2ph with its rounding in the immediate (nearest even, whatever MXCSR says: the
//!         portable conversion ignores the rounding mode too), vcvtph2ps back. Both quiet a
//!         signalling NaN and keep its payload's top bits, as the portable code was written to;
//!         tests/codec/float16_isa_test.cpp checks every 16-bit pattern and the edge cases.
//!   bf16: no conversion instruction fits: AVX-512 BF16's vcvtneps2bf16 flushes fp32 subnormals to
//!         zero (1e-39f gives 0x0000 where round-to-nearest-even gives 0x000a, measured on a Xeon
//!         with avx512_bf16), so the portable integer rounding is done on 8 or 16 lanes.
//! The scale is one IEEE multiply per element on either path (no add follows it, so no FMA can
//! form), and the tails (< one vector) take the portable scalar conversions.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TUTTI_FLOAT16_X86 1
#else
#define TUTTI_FLOAT16_X86 0
#endif

#if TUTTI_FLOAT16_X86
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tutti/core/bfloat16.hpp"
#include "tutti/core/half.hpp"

// AVX2 + F16C: Haswell (2013) and Piledriver on. AVX-512F alone covers what the wide loops use
// (vcvtps2ph zmm, vpmovdw, compare into a mask).
#define TUTTI_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define TUTTI_TARGET_AVX512 __attribute__((target("avx512f,avx2,f16c")))

namespace tutti::codec::float16_detail {

//! The portable conversions for the last few elements of a call.
struct fp16_scalar {
  static std::uint16_t narrow(float y) noexcept { return float_to_half_bits(y); }
  static float widen(std::uint16_t h) noexcept { return half_bits_to_float(h); }
};
struct bf16_scalar {
  static std::uint16_t narrow(float y) noexcept { return float_to_bfloat16_bits(y); }
  static float widen(std::uint16_t h) noexcept { return bfloat16_bits_to_float(h); }
};

template <class Scalar>
inline void encode_tail(const float* in, std::size_t i, std::size_t n, float scale, std::byte* wire) noexcept {
  for (; i < n; ++i) {
    const std::uint16_t h = Scalar::narrow(in[i] * scale);
    std::memcpy(wire + 2 * i, &h, 2);
  }
}
template <class Scalar, bool Add>
inline void decode_tail(const std::byte* wire, std::size_t i, std::size_t n, float* out) noexcept {
  for (; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, wire + 2 * i, 2);
    if constexpr (Add) out[i] += Scalar::widen(h);
    else out[i] = Scalar::widen(h);
  }
}

// ---- AVX2 (+F16C): 8 lanes ---------------------------------------------------------------------
namespace avx2 {

//! The portable bf16 rounding (core/bfloat16.hpp) on 8 floats' bits; the results fit 16 bits.
TUTTI_TARGET_AVX2 inline __m256i bf16_round(__m256i u) noexcept {
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
  // |u| fits 31 bits, so the signed compare is the unsigned one.
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                            _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, nan, is_nan);
}

TUTTI_TARGET_AVX2 inline void fp16_encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(in + i), s), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(wire + 2 * i), h);
  }
  encode_tail<fp16_scalar>(in, i, n, scale, wire);
}

template <bool Add>
TUTTI_TARGET_AVX2 inline void fp16_decode(const std::byte* wire, std::size_t n, float* out) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wire + 2 * i)));
    if constexpr (Add) f = _mm256_add_ps(_mm256_loadu_ps(out + i), f);
    _mm256_storeu_ps(out + i, f);
  }
  decode_tail<fp16_scalar, Add>(wire, i, n, out);
}

TUTTI_TARGET_AVX2 inline void bf16_encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16_round(_mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(in + i), s)));
    const __m256i b = bf16_round(_mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(in + i + 8), s)));
    // packus works per 128-bit lane (a0-3 b0-3 a4-7 b4-7); the permute puts the quarters in order.
    const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(wire + 2 * i), h);
  }
  encode_tail<bf16_scalar>(in, i, n, scale, wire);
}

template <bool Add>
TUTTI_TARGET_AVX2 inline void bf16_decode(const std::byte* wire, std::size_t n, float* out) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wire + 2 * i)));
    __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    if constexpr (Add) f = _mm256_add_ps(_mm256_loadu_ps(out + i), f);
    _mm256_storeu_ps(out + i, f);
  }
  decode_tail<bf16_scalar, Add>(wire, i, n, out);
}

}  // namespace avx2

// ---- AVX-512F: 16 lanes ------------------------------------------------------------------------
// g++ 12's own AVX-512 intrinsics warn "'__Y' may be used uninitialized" once inlined
// (GCC bug 105593: `__m512i __Y = __Y;` in _mm512_undefined_epi32); the warning is about the
// compiler's header, not this code, so it is silenced here and only here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace avx512 {

TUTTI_TARGET_AVX512 inline __m512i bf16_round(__m512i u) noexcept {
  const __m512i hi = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i nan = _mm512_or_si512(hi, _mm512_set1_epi32(0x0040));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                   _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(is_nan, rounded, nan);
}

TUTTI_TARGET_AVX512 inline void fp16_encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_mul_ps(_mm512_loadu_ps(in + i), s), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(wire + 2 * i), h);
  }
  encode_tail<fp16_scalar>(in, i, n, scale, wire);
}

template <bool Add>
TUTTI_TARGET_AVX512 inline void fp16_decode(const std::byte* wire, std::size_t n, float* out) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wire + 2 * i)));
    if constexpr (Add) f = _mm512_add_ps(_mm512_loadu_ps(out + i), f);
    _mm512_storeu_ps(out + i, f);
  }
  decode_tail<fp16_scalar, Add>(wire, i, n, out);
}

TUTTI_TARGET_AVX512 inline void bf16_encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i r = bf16_round(_mm512_castps_si512(_mm512_mul_ps(_mm512_loadu_ps(in + i), s)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(wire + 2 * i), _mm512_cvtepi32_epi16(r));  // vpmovdw: < 2^16 each
  }
  encode_tail<bf16_scalar>(in, i, n, scale, wire);
}

template <bool Add>
TUTTI_TARGET_AVX512 inline void bf16_decode(const std::byte* wire, std::size_t n, float* out) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wire + 2 * i)));
    __m512 f = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    if constexpr (Add) f = _mm512_add_ps(_mm512_loadu_ps(out + i), f);
    _mm512_storeu_ps(out + i, f);
  }
  decode_tail<bf16_scalar, Add>(wire, i, n, out);
}

}  // namespace avx512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace tutti::codec::float16_detail

#undef TUTTI_TARGET_AVX2
#undef TUTTI_TARGET_AVX512
#endif  // TUTTI_FLOAT16_X86
