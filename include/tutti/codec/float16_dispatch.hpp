//! @file float16_dispatch.hpp  Which loops codec::fp16 and codec::bf16 run: chosen once per process from the CPU and TUTTI_CODEC_ISA.
//!
//! Every set of loops gives the same bits (tests/codec/float16_isa_test.cpp), so the choice is
//! speed only and ranks on different CPUs still agree. It is a table of function pointers filled
//! on first use (a function-local static: C++'s thread-safe one-time initialisation, then one
//! guard load and one indirect call per encode/decode call, never per element). Not GCC's
//! target_clones or an ifunc: the portable loops have no F16C instruction for a compiler to clone
//! them into (the wide loops are intrinsics, float16_x86.hpp), Clang 14 and non-ELF targets have
//! no ifunc for inline header functions, and a table can be asked for by name, which is how the
//! tests run every set on one CPU. The CPU is read with cpuid and xgetbv, not
//! __builtin_cpu_supports: Clang 14's does not know "f16c".
//!
//! TUTTI_CODEC_ISA (docs/compression.md): unset or `auto`, the widest the CPU runs; `portable`,
//! `avx2` or `avx512`, at most that one (a ceiling: `avx512` on an AVX2-only CPU runs AVX2). Any
//! other value stops the process at the first encode or decode with a message naming it (the codec
//! calls are noexcept; a typo must not pass for a choice).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/codec/float16_x86.hpp"
#include "tutti/core/bfloat16.hpp"
#include "tutti/core/config.hpp"
#include "tutti/core/did_you_mean.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/half.hpp"

#if TUTTI_FLOAT16_X86
#include <cpuid.h>
#endif

namespace tutti::codec {

//! The loop sets, narrowest first: a value is also a ceiling (TUTTI_CODEC_ISA).
enum class float16_isa { portable, avx2, avx512 };

[[nodiscard]] constexpr std::string_view name_of(float16_isa isa) noexcept {
  constexpr std::array<std::string_view, 3> names = {"portable", "avx2", "avx512"};
  return names[static_cast<std::size_t>(isa)];
}

namespace float16_detail {

//! One codec's three calls (the signatures of lossy_codec_policy).
struct codec_loops {
  void (*encode)(const float* in, std::size_t n, float scale, std::byte* wire) noexcept;
  void (*decode)(const std::byte* wire, std::size_t n, float* out) noexcept;
  void (*decode_add)(const std::byte* wire, std::size_t n, float* acc) noexcept;
};

struct loop_set {
  float16_isa isa;
  codec_loops fp16, bf16;
};

//! The reference: the portable loops of core/half.hpp and core/bfloat16.hpp in blocks that stay in L1.
template <void (*Widen)(const std::uint16_t*, float*, std::size_t),
          void (*Narrow)(const float*, std::uint16_t*, std::size_t)>
struct portable16 {
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
  static constexpr codec_loops loops = {&encode, &decode, &decode_add};
};

using portable_fp16 = portable16<half_to_float_n, float_to_half_n>;
using portable_bf16 = portable16<bfloat16_to_float_n, float_to_bfloat16_n>;

//! The widest set this CPU and its operating system run (the OS must save the wider registers).
[[nodiscard]] inline float16_isa cpu_isa() noexcept {
#if TUTTI_FLOAT16_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return float16_isa::portable;
  const bool avx = (c >> 28) & 1u, f16c = (c >> 29) & 1u, osxsave = (c >> 27) & 1u;
  if (!avx || !f16c || !osxsave) return float16_isa::portable;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));  // inline asm: no -mxsave needed
  const unsigned long long xcr0 = (static_cast<unsigned long long>(xcr0_high) << 32) | xcr0_low;
  if ((xcr0 & 0x6u) != 0x6u) return float16_isa::portable;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((b >> 5) & 1u)) return float16_isa::portable;  // AVX2
  const bool avx512f = (b >> 16) & 1u;
  return avx512f && (xcr0 & 0xe0u) == 0xe0u ? float16_isa::avx512 : float16_isa::avx2;  // opmask, ZMM state
#else
  return float16_isa::portable;
#endif
}

//! TUTTI_CODEC_ISA's value as a ceiling (auto: avx512, the widest); throws invalid_argument on any other word.
[[nodiscard]] inline float16_isa parse_isa(std::string_view value) {
  if (value.empty() || value == "auto") return float16_isa::avx512;
  for (float16_isa isa : {float16_isa::portable, float16_isa::avx2, float16_isa::avx512})
    if (value == name_of(isa)) return isa;
  std::string message = "TUTTI_CODEC_ISA='" + std::string(value) + "' is not one of auto, portable, avx2, avx512";
  const std::string guess = spelling::closest(value, {"auto", "portable", "avx2", "avx512"});
  if (!guess.empty()) message += " (did you mean '" + guess + "'?)";
  throw invalid_argument(message);
}

//! The loops of one set, whatever the CPU: the caller checks that the CPU runs it (cpu_isa()).
[[nodiscard]] inline loop_set loops_for(float16_isa isa) noexcept {
#if TUTTI_FLOAT16_X86
  if (isa == float16_isa::avx512)
    return {isa,
            {&avx512::fp16_encode, &avx512::fp16_decode<false>, &avx512::fp16_decode<true>},
            {&avx512::bf16_encode, &avx512::bf16_decode<false>, &avx512::bf16_decode<true>}};
  if (isa == float16_isa::avx2)
    return {isa,
            {&avx2::fp16_encode, &avx2::fp16_decode<false>, &avx2::fp16_decode<true>},
            {&avx2::bf16_encode, &avx2::bf16_decode<false>, &avx2::bf16_decode<true>}};
#endif
  (void)isa;
  return {float16_isa::portable, portable_fp16::loops, portable_bf16::loops};
}

//! The set every fp16/bf16 call runs, chosen on the first call.
[[nodiscard]] inline const loop_set& active_loops() noexcept {
  static const loop_set chosen = [] {
    float16_isa ceiling = float16_isa::avx512;
    try {
      ceiling = parse_isa(config::raw("TUTTI_CODEC_ISA").value_or(""));
    } catch (const std::exception& e) {  // noexcept callers: say why, then stop
      std::fprintf(stderr, "tutti: %s\n", e.what());
      std::abort();
    }
    const float16_isa cpu = cpu_isa();
    return loops_for(static_cast<int>(ceiling) < static_cast<int>(cpu) ? ceiling : cpu);
  }();
  return chosen;
}

}  // namespace float16_detail

//! The loop set codec::fp16 and codec::bf16 run in this process (what tutti-codec-bench prints).
[[nodiscard]] inline float16_isa float16_active_isa() noexcept { return float16_detail::active_loops().isa; }

}  // namespace tutti::codec
