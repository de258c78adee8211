//! @file half_test.cpp  tutti::half checked against an independent ldexp / nearest-value model of binary16.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/core/half.hpp"

namespace {

// ---- The format under test. bfloat16_test.cpp has the same body with these lines changed. ----
constexpr int kExpBits = 5;
constexpr int kManBits = 10;
std::uint16_t to_bits(float f) { return tutti::float_to_half_bits(f); }
float from_bits(std::uint16_t b) { return tutti::half_bits_to_float(b); }
void from_bits_n(const std::uint16_t* in, float* out, std::size_t n) { tutti::half_to_float_n(in, out, n); }
void to_bits_n(const float* in, std::uint16_t* out, std::size_t n) { tutti::float_to_half_n(in, out, n); }
// Biased float exponents where binary16 rounding is interesting: from below half the smallest
// subnormal (2^-25 has biased exponent 102) to past the overflow threshold (2^16 is 143).
// Uniformly random float bits land there only ~18% of the time, so the random test adds these.
constexpr std::uint32_t kWindowLo = 98;
constexpr std::uint32_t kWindowHi = 146;

// ---- Reference model. Built only from the format's definition (sign/exponent/mantissa fields,
// std::ldexp) and exact double arithmetic, never from the bit tricks under test. ----
constexpr int kBias = (1 << (kExpBits - 1)) - 1;
constexpr unsigned kExpMax = (1u << kExpBits) - 1;
constexpr std::uint16_t kSignBit = 0x8000;
constexpr std::uint16_t kInfBits = static_cast<std::uint16_t>(kExpMax << kManBits);

unsigned exp_field(unsigned b) { return (b >> kManBits) & kExpMax; }
unsigned man_field(unsigned b) { return b & ((1u << kManBits) - 1); }
bool ref_is_nan(unsigned b) { return exp_field(b) == kExpMax && man_field(b) != 0; }
bool sign_of(unsigned b) { return (b & kSignBit) != 0; }

double ref_decode(unsigned b) {
  const unsigned e = exp_field(b);
  const unsigned m = man_field(b);
  double mag;
  if (e == kExpMax) {
    mag = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(m), 1 - kBias - kManBits);
  } else {
    mag = std::ldexp(static_cast<double>(m + (1u << kManBits)), static_cast<int>(e) - kBias - kManBits);
  }
  return std::copysign(mag, sign_of(b) ? -1.0 : 1.0);
}

struct entry {
  double value;
  std::uint16_t bits;
};

// All finite non-negative values, sorted by value rather than by pattern, so the model does not
// assume the encoding is monotonic.
const std::vector<entry>& finite_table() {
  static const std::vector<entry> table = [] {
    std::vector<entry> t;
    for (unsigned b = 0; b < kSignBit; ++b)
      if (exp_field(b) != kExpMax) t.push_back({ref_decode(b), static_cast<std::uint16_t>(b)});
    std::sort(t.begin(), t.end(), [](const entry& x, const entry& y) { return x.value < y.value; });
    return t;
  }();
  return table;
}

// IEEE overflow: |x| becomes inf iff it is at least max + half an ulp of max (at that tie the
// unbounded-exponent result would be the even 2^(emax+1)).
double overflow_threshold() {
  static const double thr = [] {
    const auto& t = finite_table();
    const double max = t.back().value;
    return max + (max - t[t.size() - 2].value) / 2;
  }();
  return thr;
}

// Nearest representable value by binary search, ties to the even mantissa. x must not be NaN.
std::uint16_t ref_encode(float x) {
  const auto sign = static_cast<std::uint16_t>(std::signbit(x) ? kSignBit : 0);
  const double a = std::fabs(static_cast<double>(x));
  if (a >= overflow_threshold()) return sign | kInfBits;
  const auto& t = finite_table();
  const auto hi = std::upper_bound(t.begin(), t.end(), a,
                                   [](double v, const entry& e) { return v < e.value; });
  const auto lo = hi - 1;  // t[0] is +0 <= a
  if (lo->value == a || hi == t.end()) return sign | lo->bits;  // exact, or in (max, threshold)
  const double mid = (lo->value + hi->value) / 2;               // exact: both have few bits
  if (a < mid) return sign | lo->bits;
  if (a > mid) return sign | hi->bits;
  return sign | (man_field(lo->bits) % 2 == 0 ? lo->bits : hi->bits);
}

// ---- Failure bookkeeping: one CHECK per loop, with the first few offenders printed. ----
std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, v > 0xffffu ? "0x%08x" : "0x%04x", static_cast<unsigned>(v));
  return buf;
}
std::uint32_t fbits(float f) { return std::bit_cast<std::uint32_t>(f); }

struct failures {
  std::size_t count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ < 8) first += what + "\n";
  }
  void report() const {
    if (count != 0) MESSAGE(count << " failures, first ones:\n" << first);
  }
};

// Fixed seed: failures must be reproducible.
std::vector<float> random_floats() {
  std::mt19937 rng(20240611u);
  std::vector<float> v;
  v.reserve(400000);
  for (int i = 0; i < 200000; ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  std::uniform_int_distribution<std::uint32_t> exp(kWindowLo, kWindowHi);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    v.push_back(std::bit_cast<float>((r & 0x807fffffu) | (exp(rng) << 23)));
  }
  return v;
}

bool same_sign_nan(std::uint16_t got, float in) {
  return ref_is_nan(got) && sign_of(got) == std::signbit(in);
}

}  // namespace

TEST_CASE("half: reference model anchors") {
  // Hand-checked values, so a mistake shared by the model and the code cannot go unnoticed.
  CHECK(ref_decode(0x3c00) == 1.0);
  CHECK(ref_decode(0xc000) == -2.0);
  CHECK(ref_decode(0x7bff) == 65504.0);
  CHECK(ref_decode(0x0400) == 0x1p-14);
  CHECK(ref_decode(0x0001) == 0x1p-24);
  CHECK(ref_decode(0x03ff) == 1023 * 0x1p-24);
  CHECK(ref_decode(0x3555) == 1365.0 / 4096);
  CHECK(std::signbit(ref_decode(0x8000)));
  CHECK(overflow_threshold() == 65520.0);
  CHECK(finite_table().size() == 31744);

  CHECK(from_bits(0x3c00) == 1.0f);
  CHECK(from_bits(0xc000) == -2.0f);
  CHECK(from_bits(0x7bff) == 65504.0f);
  CHECK(from_bits(0x0001) == 0x1p-24f);
  CHECK(from_bits(0x3555) == 1365.0f / 4096);
  CHECK(to_bits(1.0f) == 0x3c00);
  CHECK(to_bits(1.0f / 3) == 0x3555);
  CHECK(to_bits(-2.0f) == 0xc000);
  CHECK(to_bits(0.1f) == 0x2e66);
}

TEST_CASE("half: every bit pattern decodes like the ldexp reference") {
  failures f;
  for (unsigned b = 0; b <= 0xffff; ++b) {
    const float got = from_bits(static_cast<std::uint16_t>(b));
    const double want = ref_decode(b);
    const bool ok = ref_is_nan(b) ? std::isnan(got) && std::signbit(got) == std::signbit(want)
                                  : fbits(got) == fbits(static_cast<float>(want));
    if (!ok) f.add("bits " + hex(b) + " -> " + hex(fbits(got)));
  }
  f.report();
  CHECK(f.count == 0);
}

TEST_CASE("half: every non-NaN pattern round-trips through float exactly") {
  failures f;
  for (unsigned b = 0; b <= 0xffff; ++b) {
    if (ref_is_nan(b)) continue;
    const float x = static_cast<float>(ref_decode(b));  // exact
    const std::uint16_t got = to_bits(x);
    if (got != b) f.add("bits " + hex(b) + " -> " + hex(got));
  }
  f.report();
  CHECK(f.count == 0);
  CHECK(to_bits(-0.0f) == kSignBit);
  CHECK(to_bits(0.0f) == 0);
}

TEST_CASE("half: midpoints round to the even neighbour, nudged midpoints to the nearer one") {
  const auto& t = finite_table();
  failures f;
  std::size_t ties_to_upper = 0;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    const entry lo = t[i];
    const entry hi = t[i + 1];
    const double mid = (lo.value + hi.value) / 2;
    const float m = static_cast<float>(mid);
    if (static_cast<double>(m) != mid) {  // the test relies on the midpoint being a float
      f.add("midpoint not exact above " + hex(lo.bits));
      continue;
    }
    const std::uint16_t even = man_field(lo.bits) % 2 == 0 ? lo.bits : hi.bits;
    ties_to_upper += even == hi.bits;
    const float below = std::nextafter(m, 0.0f);
    const float above = std::nextafter(m, std::numeric_limits<float>::infinity());
    for (const float s : {1.0f, -1.0f}) {
      const std::uint16_t sign = s < 0 ? kSignBit : 0;
      if (to_bits(s * m) != (sign | even)) f.add("tie above " + hex(lo.bits) + " sign " + hex(sign));
      if (to_bits(s * below) != (sign | lo.bits)) f.add("below tie above " + hex(lo.bits));
      if (to_bits(s * above) != (sign | hi.bits)) f.add("above tie above " + hex(lo.bits));
    }
  }
  f.report();
  CHECK(f.count == 0);
  CHECK(ties_to_upper == (t.size() - 1) / 2);  // every other tie goes up: "always down" fails
}

TEST_CASE("half: overflow boundary") {
  CHECK(to_bits(65504.0f) == 0x7bff);
  CHECK(to_bits(65519.99f) == 0x7bff);
  CHECK(to_bits(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(to_bits(65520.0f) == 0x7c00);
  CHECK(to_bits(65536.0f) == 0x7c00);
  CHECK(to_bits(1e9f) == 0x7c00);
  CHECK(to_bits(std::numeric_limits<float>::max()) == 0x7c00);
  CHECK(to_bits(-65519.99f) == 0xfbff);
  CHECK(to_bits(-65520.0f) == 0xfc00);
  CHECK(to_bits(-std::numeric_limits<float>::max()) == 0xfc00);
  CHECK(to_bits(std::nextafter(65504.0f, 1e9f)) == 0x7bff);
}

TEST_CASE("half: underflow to zero and into the subnormals") {
  const float tiny = 0x1p-24f;  // smallest subnormal
  CHECK(to_bits(tiny) == 0x0001);
  CHECK(to_bits(tiny / 2) == 0x0000);  // tie between 0 and tiny: 0 is even
  CHECK(to_bits(std::nextafter(tiny / 2, 0.0f)) == 0x0000);
  CHECK(to_bits(std::nextafter(tiny / 2, 1.0f)) == 0x0001);
  CHECK(to_bits(-tiny / 2) == 0x8000);
  CHECK(to_bits(-std::nextafter(tiny / 2, 1.0f)) == 0x8001);
  CHECK(to_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(to_bits(-std::numeric_limits<float>::denorm_min()) == 0x8000);
  CHECK(to_bits(std::numeric_limits<float>::min()) == 0x0000);
  CHECK(to_bits(1.5f * tiny) == 0x0002);     // tie between 1 and 2
  CHECK(to_bits(2.5f * tiny) == 0x0002);     // tie between 2 and 3
  CHECK(to_bits(1022.5f * tiny) == 0x03fe);  // ties inside the subnormals
  CHECK(to_bits(1023.5f * tiny) == 0x0400);  // largest subnormal ties up to the smallest normal
  CHECK(to_bits(0x1p-14f) == 0x0400);
}

TEST_CASE("half: infinities and NaNs") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  CHECK(to_bits(inf) == 0x7c00);
  CHECK(to_bits(-inf) == 0xfc00);
  CHECK(from_bits(0x7c00) == inf);
  CHECK(from_bits(0xfc00) == -inf);

  const std::uint32_t payloads[] = {0x7f800001u, 0x7fffffffu, 0xff800001u, 0x7fc00000u, 0xffc00000u,
                                    0x7f801fffu, 0xff801fffu, 0x7fbfffffu, 0x7fa00000u, 0xffffffffu,
                                    0x7f802000u, 0x7fc00001u};
  for (const std::uint32_t p : payloads) {
    const float x = std::bit_cast<float>(p);
    REQUIRE(std::isnan(x));
    INFO("float bits " << hex(p));
    const std::uint16_t got = to_bits(x);
    CHECK(same_sign_nan(got, x));
    CHECK(std::isnan(from_bits(got)));
    CHECK(std::signbit(from_bits(got)) == std::signbit(x));
  }
  // The top payload bits survive and the result is quiet.
  CHECK(to_bits(std::bit_cast<float>(0x7fc00000u | (0x155u << 13))) == 0x7f55);
  CHECK(to_bits(std::bit_cast<float>(0xffa00000u)) == 0xff00);  // signalling -> quiet
  CHECK(from_bits(0x7e00) != from_bits(0x7e00));
  // Widening keeps the payload and quiets signalling NaNs (IEEE convertFormat, like vcvtph2ps).
  CHECK(fbits(from_bits(0x7c01)) == 0x7fc02000u);
  CHECK(fbits(from_bits(0xfd55)) == 0xffeaa000u);
  CHECK(fbits(from_bits(0x7fff)) == 0x7fffe000u);
}

TEST_CASE("half: random floats match the nearest-value search") {
  const std::vector<float> xs = random_floats();
  failures f;
  std::size_t nans = 0;
  for (const float x : xs) {
    const std::uint16_t got = to_bits(x);
    if (std::isnan(x)) {
      ++nans;
      if (!same_sign_nan(got, x)) f.add("NaN " + hex(fbits(x)) + " -> " + hex(got));
    } else if (const std::uint16_t want = ref_encode(x); got != want) {
      f.add(hex(fbits(x)) + " -> " + hex(got) + ", want " + hex(want));
    }
  }
  f.report();
  CHECK(f.count == 0);
  CHECK(nans > 0);  // the set did exercise NaNs

  // The reference also agrees on the edge cases pinned above.
  CHECK(ref_encode(65519.99f) == 0x7bff);
  CHECK(ref_encode(65520.0f) == 0x7c00);
  CHECK(ref_encode(0x1p-25f) == 0x0000);
  CHECK(ref_encode(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(ref_encode(1023.5f * 0x1p-24f) == 0x0400);
}

TEST_CASE("half: bulk conversions equal the scalar ones") {
  std::vector<std::uint16_t> all(0x10000);
  for (unsigned b = 0; b <= 0xffff; ++b) all[b] = static_cast<std::uint16_t>(b);
  std::vector<float> wide(all.size());
  from_bits_n(all.data(), wide.data(), all.size());
  failures f;
  for (unsigned b = 0; b <= 0xffff; ++b)
    if (fbits(wide[b]) != fbits(from_bits(all[b]))) f.add("widen " + hex(b));

  std::vector<float> xs = random_floats();
  for (const std::uint32_t p : {0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f800000u, 0x80000000u})
    xs.push_back(std::bit_cast<float>(p));
  std::vector<std::uint16_t> narrow(xs.size());
  to_bits_n(xs.data(), narrow.data(), xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (narrow[i] != to_bits(xs[i])) f.add("narrow " + hex(fbits(xs[i])));
  f.report();
  CHECK(f.count == 0);

  // Short and odd lengths, starting one element in (misaligned), must write exactly n outputs.
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{15},
                              std::size_t{16}, std::size_t{17}, std::size_t{1013}}) {
    INFO("n = " << n);
    constexpr float fsentinel = -12345.0f;
    constexpr std::uint16_t hsentinel = 0xabcd;
    std::vector<float> fo(n + 2, fsentinel);
    from_bits_n(all.data() + 0x3bf0, fo.data() + 1, n);
    std::vector<std::uint16_t> ho(n + 2, hsentinel);
    to_bits_n(xs.data() + 5, ho.data() + 1, n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      bad += fbits(fo[i + 1]) != fbits(from_bits(all[0x3bf0 + i]));
      bad += ho[i + 1] != to_bits(xs[5 + i]);
    }
    CHECK(bad == 0);
    CHECK(fo.front() == fsentinel);
    CHECK(fo.back() == fsentinel);
    CHECK(ho.front() == hsentinel);
    CHECK(ho.back() == hsentinel);
  }
}

TEST_CASE("half: the storage type") {
  using tutti::half;
  static_assert(std::is_trivially_copyable_v<half>);
  static_assert(std::is_trivially_default_constructible_v<half>);
  static_assert(std::is_standard_layout_v<half>);
  static_assert(sizeof(half[8]) == 16);
  static_assert(half::from_bits(0x3c00).bits == 0x3c00);
  static_assert(!std::is_convertible_v<float, half>);  // narrowing must be spelled out

  const half one(1.0f);
  CHECK(one.bits == 0x3c00);
  const float widened = one;  // implicit
  CHECK(widened == 1.0f);
  CHECK(half(65520.0f).bits == 0x7c00);
  CHECK(half(0.0f) == half(-0.0f));
  CHECK(half(1.0f) == half(1.0004f));  // both round to 1
  CHECK(half(1.0f) != half(1.001f));
  const half nan = half::from_bits(0x7e00);
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK(half(2.5f) * 2.0f == 5.0f);  // arithmetic happens in float
}
