//! @file float16_isa_test.cpp  Every fp16/bf16 loop set this CPU runs (F16C/AVX2, AVX-512) gives the portable loops' bits.
//!
//! The portable loops are the reference (core/half_test.cpp and core/bfloat16_test.cpp check them
//! against a model of the formats); here each wider set is compared with them bit for bit:
//! decode on all 65,536 patterns, encode on random fp32 bits and on every rounding boundary of
//! every exponent, with scales applied. "The same bits" includes NaNs: both paths quiet a
//! signalling NaN and keep the payload's top bits, and fp16's decode quiets one too, where bf16's
//! (a shift) passes it unchanged (checked below as rules, not only as agreement).
//! The one exception is decode_add onto an accumulator that is already NaN when the decoded value
//! is NaN too: which payload survives an fp32 add of two NaNs depends on the operand order the
//! compiler picked (x86 keeps the first), so there only "a NaN" is required.
//! A set the CPU cannot run is skipped (and says so); ctest also runs this whole executable with
//! TUTTI_CODEC_ISA=portable (tests/codec/CMakeLists.txt), so the codecs' own tests pass through
//! both the portable and the dispatched loops on a CPU with F16C.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <tutti/codec/float16.hpp>
#include <tutti/core/error.hpp>

namespace {

using tutti::codec::float16_isa;
namespace fd = tutti::codec::float16_detail;

constexpr float16_isa wide_sets[] = {float16_isa::avx2, float16_isa::avx512};
constexpr float scales[] = {1.0f, 0.125f, 1.0f / 7.0f, 3.0f, 0x1p-20f};

bool runs(float16_isa isa) { return static_cast<int>(isa) <= static_cast<int>(fd::cpu_isa()); }

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from(std::uint32_t u) { return std::bit_cast<float>(u); }

const fd::codec_loops& of(const fd::loop_set& s, bool bf16) { return bf16 ? s.bf16 : s.fp16; }

//! Encodes x with both sets at every offset 0..2 of an unaligned wire and every length tail;
//! returns the first index (as text) where the 16-bit results differ, or "".
std::string encode_difference(const fd::codec_loops& ref, const fd::codec_loops& wide, const std::vector<float>& x,
                              float scale) {
  for (std::size_t offset = 0; offset < 3 && offset <= x.size(); ++offset) {
    const std::size_t n = x.size() - offset;  // lengths that leave different tails
    std::vector<std::byte> a(2 * n + 1), b(2 * n + 1);
    ref.encode(x.data() + offset, n, scale, a.data() + 1);  // +1: the wire is not aligned
    wide.encode(x.data() + offset, n, scale, b.data() + 1);
    for (std::size_t i = 0; i < n; ++i)
      if (std::memcmp(&a[1 + 2 * i], &b[1 + 2 * i], 2) != 0) {
        std::uint16_t ha, hb;
        std::memcpy(&ha, &a[1 + 2 * i], 2);
        std::memcpy(&hb, &b[1 + 2 * i], 2);
        char text[160];
        std::snprintf(text, sizeof text, "x=0x%08x scale=%a: portable 0x%04x, wide 0x%04x",
                      static_cast<unsigned>(bits(x[offset + i])), static_cast<double>(scale), ha, hb);
        return text;
      }
  }
  return "";
}

//! Every fp32 rounding boundary of a 16-bit format, for every sign and exponent: the dropped low
//! bits at each position s (16 for bf16; 13 for fp16 normals, and 14..24 more for its subnormal
//! results, where the rounding point moves up) just below, at and just above half, with random
//! kept bits above; plus the specials.
std::vector<float> boundaries() {
  std::mt19937 gen(21);
  std::vector<float> x;
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t e = 0; e < 256; ++e)
      for (unsigned s = 1; s <= 23; ++s)
        for (std::uint32_t low : {(1u << (s - 1)) - 1, 1u << (s - 1), (1u << (s - 1)) + 1, (1u << s) - 1, 0u})
          for (int k = 0; k < 2; ++k) {
            const std::uint32_t kept = (k ? gen() : 0u) & (0x7fffffu & ~((1u << s) - 1));
            x.push_back(from(sign | e << 23 | kept | low));
          }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, 65504.0f, 65519.996f, 65520.0f, 65536.0f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f,
                  0x3p-25f, 0x1p-14f, 0x1.ff8p-15f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f})
    x.push_back(v);
  for (std::uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0xffffffffu, 0x7fffe000u, 0xff800001u, 0x7f802000u})
    x.push_back(from(nan));
  return x;
}

std::vector<float> random_bits(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> x(n);
  for (float& v : x) v = from(static_cast<std::uint32_t>(gen()));
  return x;
}

//! All 65,536 patterns (and a few more, so the last vector is a tail).
std::vector<std::uint16_t> every_pattern() {
  std::vector<std::uint16_t> p(65536 + 13);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint16_t>(i);
  return p;
}

}  // namespace

TEST_CASE("float16 isa: decode and decode_add of all 65,536 patterns give the portable bits") {
  const auto portable = fd::loops_for(float16_isa::portable);
  const auto patterns = every_pattern();
  const std::size_t n = patterns.size();
  std::vector<std::byte> wire(2 * n + 1);
  std::memcpy(wire.data() + 1, patterns.data(), 2 * n);  // unaligned, as the wire may be
  std::vector<float> acc0 = random_bits(n, 3);
  for (float& a : acc0)
    if (std::isnan(a)) a = 1.0f;  // NaN + NaN keeps either payload (file comment); tested apart below
  for (float16_isa isa : wide_sets) {
    if (!runs(isa)) {
      MESSAGE("skipped: this CPU does not run " << tutti::codec::name_of(isa));
      continue;
    }
    const auto wide = fd::loops_for(isa);
    CHECK(wide.isa == isa);
    for (bool bf16 : {false, true}) {
      CAPTURE(tutti::codec::name_of(isa));
      CAPTURE(bf16);
      std::vector<float> a(n), b(n);
      of(portable, bf16).decode(wire.data() + 1, n, a.data());
      of(wide, bf16).decode(wire.data() + 1, n, b.data());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < n; ++i) differ += bits(a[i]) != bits(b[i]);
      CHECK(differ == 0);
      // The NaN rule both follow. fp16: quiet bit set, payload and sign kept (vcvtph2ps's rule);
      // bf16: a shift, no float operation, so every NaN passes bit for bit, signalling ones too.
      std::size_t bad_nan = 0;
      for (std::size_t i = 0; i < 65536; ++i) {
        const std::uint32_t h = patterns[i];
        const bool nan = bf16 ? (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) : (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
        if (!nan) continue;
        const std::uint32_t want = bf16 ? h << 16
                                        : ((h & 0x8000u) << 16) | 0x7f800000u | 0x00400000u | ((h & 0x3ffu) << 13);
        bad_nan += bits(b[i]) != want;
      }
      CHECK(bad_nan == 0);
      // decode_add onto random finite values, at lengths that leave every tail.
      for (std::size_t m : {n, n - 1, n - 7, std::size_t{15}, std::size_t{3}}) {
        std::vector<float> sa(acc0.begin(), acc0.begin() + static_cast<std::ptrdiff_t>(m)), sb = sa;
        of(portable, bf16).decode_add(wire.data() + 1, m, sa.data());
        of(wide, bf16).decode_add(wire.data() + 1, m, sb.data());
        differ = 0;
        for (std::size_t i = 0; i < m; ++i) differ += bits(sa[i]) != bits(sb[i]);
        CHECK(differ == 0);
      }
      // A NaN accumulator stays NaN whatever is added.
      std::vector<float> nan_acc(n, std::numeric_limits<float>::quiet_NaN());
      of(wide, bf16).decode_add(wire.data() + 1, n, nan_acc.data());
      std::size_t not_nan = 0;
      for (float v : nan_acc) not_nan += !std::isnan(v);
      CHECK(not_nan == 0);
    }
  }
}

TEST_CASE("float16 isa: encode gives the portable bits on random fp32 and on every rounding boundary, scaled") {
  const auto portable = fd::loops_for(float16_isa::portable);
  const auto edges = boundaries();
  const auto random = random_bits(1 << 20, 7);
  for (float16_isa isa : wide_sets) {
    if (!runs(isa)) {
      MESSAGE("skipped: this CPU does not run " << tutti::codec::name_of(isa));
      continue;
    }
    const auto wide = fd::loops_for(isa);
    for (bool bf16 : {false, true}) {
      CAPTURE(tutti::codec::name_of(isa));
      CAPTURE(bf16);
      for (float scale : scales) {
        CHECK_MESSAGE(encode_difference(of(portable, bf16), of(wide, bf16), edges, scale) == "", "boundaries");
        CHECK_MESSAGE(encode_difference(of(portable, bf16), of(wide, bf16), random, scale) == "", "random bits");
      }
      for (std::size_t n = 0; n <= 40; ++n) {  // every tail length, and calls shorter than one vector
        const std::vector<float> x(edges.end() - static_cast<std::ptrdiff_t>(n) - 20, edges.end() - 20);
        CHECK(encode_difference(of(portable, bf16), of(wide, bf16), x, 0.125f) == "");
      }
    }
  }
}

TEST_CASE("float16 isa: the edge cases round as IEEE says, on every set") {
  struct want {
    float x;
    std::uint16_t fp16, bf16;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const want cases[] = {
      {0.0f, 0x0000, 0x0000},
      {-0.0f, 0x8000, 0x8000},
      {1.0f + 0x1p-11f, 0x3c00, 0x3f80},       // fp16 tie: to even (down)
      {1.0f + 0x3p-11f, 0x3c02, 0x3f80},       // fp16 tie: to even (up)
      {1.0f + 0x1p-8f, 0x3c04, 0x3f80},        // bf16 tie: to even (down)
      {1.0f + 0x3p-8f, 0x3c0c, 0x3f82},        // bf16 tie: to even (up)
      {65504.0f, 0x7bff, 0x4780},              // fp16's largest
      {65519.996f, 0x7bff, 0x4780},            // just below the overflow tie
      {65520.0f, 0x7c00, 0x4780},              // the tie overflows to inf
      {-inf, 0xfc00, 0xff80},
      {0x1p-24f, 0x0001, 0x3380},              // fp16's smallest subnormal
      {0x1p-25f, 0x0000, 0x3300},              // half of it: a tie, to even (zero)
      {0x3p-25f, 0x0002, 0x33c0},              // 1.5 of it: a tie, to even (2)
      {-0x1.ff8p-15f, 0x83ff, 0xb880},         // fp16's largest subnormal, negative
      {std::numeric_limits<float>::max(), 0x7c00, 0x7f80},  // bf16 overflows by rounding
      {from(0x000ae398u), 0x0000, 0x000b},     // an fp32 subnormal: bf16 rounds it (vcvtneps2bf16 gives 0)
      {from(0x7f800001u), 0x7e00, 0x7fc0},     // signalling NaN: quieted (by the scale multiply first)
      {from(0xffffffffu), 0xffff, 0xffff},     // NaN payload that would carry into the sign if rounded
  };
  for (float16_isa isa : {float16_isa::portable, float16_isa::avx2, float16_isa::avx512}) {
    if (!runs(isa)) continue;
    const auto set = fd::loops_for(isa);
    for (const want& w : cases) {
      CAPTURE(tutti::codec::name_of(isa));
      CAPTURE(bits(w.x));
      std::vector<float> x(37, w.x);  // one full vector or two and a tail, on every set
      std::vector<std::uint16_t> h16(37), b16(37);
      set.fp16.encode(x.data(), x.size(), 1.0f, reinterpret_cast<std::byte*>(h16.data()));
      set.bf16.encode(x.data(), x.size(), 1.0f, reinterpret_cast<std::byte*>(b16.data()));
      CHECK(h16.front() == w.fp16);
      CHECK(h16.back() == w.fp16);
      CHECK(b16.front() == w.bf16);
      CHECK(b16.back() == w.bf16);
    }
  }
}

TEST_CASE("float16 isa: the codecs run the set TUTTI_CODEC_ISA and the CPU allow; a typo is refused by name") {
  const char* env = std::getenv("TUTTI_CODEC_ISA");
  const float16_isa ceiling = fd::parse_isa(env ? env : "");
  const float16_isa cpu = fd::cpu_isa();
  const float16_isa active = tutti::codec::float16_active_isa();
  MESSAGE("TUTTI_CODEC_ISA=" << std::string(env ? env : "(unset)") << ", CPU runs " << tutti::codec::name_of(cpu)
                             << ", codecs run " << tutti::codec::name_of(active));
  CHECK(active == (static_cast<int>(ceiling) < static_cast<int>(cpu) ? ceiling : cpu));
  if (env && std::string(env) == "portable") CHECK(active == float16_isa::portable);
  // The codec's own calls go through it and give the portable bits.
  const auto x = random_bits(1000, 11);
  std::vector<std::byte> a(2000), b(2000);
  tutti::codec::fp16::encode(x.data(), x.size(), 0.25f, a.data());
  fd::loops_for(float16_isa::portable).fp16.encode(x.data(), x.size(), 0.25f, b.data());
  CHECK(a == b);

  CHECK(fd::parse_isa("") == float16_isa::avx512);
  CHECK(fd::parse_isa("auto") == float16_isa::avx512);
  CHECK(fd::parse_isa("portable") == float16_isa::portable);
  CHECK(fd::parse_isa("avx2") == float16_isa::avx2);
  CHECK_THROWS_WITH_AS((void)fd::parse_isa("portble"),
                       "TUTTI_CODEC_ISA='portble' is not one of auto, portable, avx2, avx512 (did you mean 'portable'?)",
                       tutti::invalid_argument);
  CHECK_THROWS_AS((void)fd::parse_isa("sse2"), tutti::invalid_argument);
}
