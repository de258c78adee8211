//! @file reduce_test.cpp  tutti::reduce and tutti::finish_avg against a scalar reference, every dtype x op.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"
#include "tutti/core/reduce.hpp"

namespace {

using tutti::bfloat16;
using tutti::dtype;
using tutti::half;
using tutti::op;

template <class T> constexpr bool is_half_like = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
// The type the reference computes in: 16-bit floats are widened to float (exact), everything else is itself.
template <class T> using compute_t = std::conditional_t<is_half_like<T>, float, T>;

// ---- Reference: the documented semantics, one element at a time, written independently of the
// header (integers go through uint64_t, whose conversions back to T are modular since C++20). ----
template <class T> T ref_apply(op o, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    const auto ua = static_cast<std::uint64_t>(a);
    const auto ub = static_cast<std::uint64_t>(b);
    switch (o) {
      case op::sum: case op::avg: return static_cast<T>(ua + ub);
      case op::prod: return static_cast<T>(ua * ub);
      case op::min: return a < b ? a : b;
      case op::max: return a > b ? a : b;
    }
    return T{};
  } else {
    using C = compute_t<T>;
    const C x = static_cast<C>(a);
    const C y = static_cast<C>(b);
    C r{};
    switch (o) {
      case op::sum: case op::avg: r = x + y; break;
      case op::prod: r = x * y; break;
      case op::min: r = std::isnan(x) || std::isnan(y) ? std::numeric_limits<C>::quiet_NaN() : (y < x ? y : x); break;
      case op::max: r = std::isnan(x) || std::isnan(y) ? std::numeric_limits<C>::quiet_NaN() : (y > x ? y : x); break;
    }
    return T(r);  // one rounding, to nearest even, for half / bfloat16
  }
}

template <class T> T ref_divide(T x, int ranks) {
  if constexpr (std::is_unsigned_v<T>) {
    return static_cast<T>(x / static_cast<T>(ranks));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<long long>(x) / ranks);  // C++ division truncates toward zero
  } else {
    using C = compute_t<T>;
    return T(static_cast<C>(x) / static_cast<C>(ranks));
  }
}

template <class T> bool same_value(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return x == y;
  } else {
    using C = compute_t<T>;
    const C a = static_cast<C>(x), b = static_cast<C>(y);
    return (std::isnan(a) && std::isnan(b)) || a == b;
  }
}

template <class T> std::string show(T x) {
  if constexpr (std::is_unsigned_v<T>) return std::to_string(static_cast<unsigned long long>(x));
  else if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<long long>(x));
  else return std::to_string(static_cast<double>(static_cast<compute_t<T>>(x)));
}

// Random values: the full range for integers; for floats mostly moderate values (so prod stays
// finite in half), plus a sprinkling of NaN, +-inf, zeros and exact ties with the other operand.
template <class T> std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    for (auto& x : v) x = static_cast<T>(d(gen));
  } else {
    using C = compute_t<T>;
    std::uniform_real_distribution<double> d(-150.0, 150.0);
    std::uniform_int_distribution<int> special(0, 59);
    for (auto& x : v) {
      switch (special(gen)) {
        case 0: x = T(std::numeric_limits<C>::quiet_NaN()); break;
        case 1: x = T(std::numeric_limits<C>::infinity()); break;
        case 2: x = T(-std::numeric_limits<C>::infinity()); break;
        case 3: x = T(C(0)); break;
        case 4: x = T(C(-0.0)); break;
        default: x = T(static_cast<C>(d(gen)));
      }
    }
  }
  return v;
}

constexpr std::size_t counts[] = {0, 1, 7, 1009};
constexpr std::size_t guard = 8;  // elements past the end that must stay untouched

// Typed convenience: reduce two single values of T.
template <class T> T reduce1(op o, T a, T b) {
  T out{};
  tutti::reduce(tutti::dtype_of<T>, o, &out, &a, &b, 1);
  return out;
}

template <class T> T avg_of(std::initializer_list<T> xs) {
  T acc = *xs.begin();
  for (auto it = xs.begin() + 1; it != xs.end(); ++it) acc = reduce1(op::avg, acc, *it);
  tutti::finish_avg(tutti::dtype_of<T>, &acc, 1, static_cast<int>(xs.size()));
  return acc;
}

// Each check runs one (dtype, op, count) case and returns "" or a description of the first wrong
// element. Keeping the doctest macros out of the per-type templates keeps this file quick to compile.
template <class T> std::string check_reduce(op o, std::size_t n) {
  const dtype t = tutti::dtype_of<T>;
  const auto seed = static_cast<std::uint32_t>(n * 131 + static_cast<unsigned>(t) * 7 + static_cast<unsigned>(o));
  // One element of offset, so the loops also run on pointers that are not vector-aligned.
  auto a = random_values<T>(n + 1, seed);
  auto b = random_values<T>(n + 1, seed + 1000);
  for (std::size_t i = 0; i < n + 1; i += 11) b[i] = a[i];  // exact ties for min / max
  std::vector<T> out(n + 1 + guard);
  std::memset(out.data(), 0xA5, out.size() * sizeof(T));
  const std::vector<T> before = out;

  tutti::reduce(t, o, out.data() + 1, a.data() + 1, b.data() + 1, n);

  for (std::size_t i = 1; i <= n; ++i) {
    const T want = ref_apply(o, a[i], b[i]);
    if (!same_value(out[i], want))
      return "element " + std::to_string(i - 1) + ": " + show(a[i]) + " " + std::string(tutti::name_of(o)) + " " +
             show(b[i]) + " gave " + show(out[i]) + ", expected " + show(want);
  }
  if (std::memcmp(out.data(), before.data(), sizeof(T)) != 0) return "wrote the element before out";
  if (std::memcmp(out.data() + 1 + n, before.data() + 1 + n, guard * sizeof(T)) != 0) return "wrote past out + n";
  return "";
}

template <class T> std::string check_alias(op o) {
  constexpr std::size_t n = 1009;
  const dtype t = tutti::dtype_of<T>;
  const auto a = random_values<T>(n, 17);
  const auto b = random_values<T>(n, 23);
  auto first_wrong = [&](const char* what, const std::vector<T>& got, const std::vector<T>& x,
                         const std::vector<T>& y) -> std::string {
    for (std::size_t i = 0; i < n; ++i)
      if (!same_value(got[i], ref_apply(o, x[i], y[i])))
        return std::string(what) + ": element " + std::to_string(i) + " is " + show(got[i]) + ", expected " +
               show(ref_apply(o, x[i], y[i]));
    return "";
  };
  auto x = a;  // out == a
  tutti::reduce(t, o, x.data(), x.data(), b.data(), n);
  if (auto e = first_wrong("out == a", x, a, b); !e.empty()) return e;
  auto y = b;  // out == b
  tutti::reduce(t, o, y.data(), a.data(), y.data(), n);
  if (auto e = first_wrong("out == b", y, a, b); !e.empty()) return e;
  auto z = a;  // out == a == b
  tutti::reduce(t, o, z.data(), z.data(), z.data(), n);
  return first_wrong("out == a == b", z, a, a);
}

template <class T> std::string check_finish_avg(int ranks, std::size_t n) {
  const auto sum = random_values<T>(n, static_cast<std::uint32_t>(n + ranks * 3));
  std::vector<T> buf(n + guard);
  std::memset(buf.data(), 0x5A, buf.size() * sizeof(T));
  const std::vector<T> before = buf;
  std::copy(sum.begin(), sum.end(), buf.begin());

  tutti::finish_avg(tutti::dtype_of<T>, buf.data(), n, ranks);

  for (std::size_t i = 0; i < n; ++i) {
    const T want = ref_divide(sum[i], ranks);
    if (!same_value(buf[i], want))
      return "element " + std::to_string(i) + ": " + show(sum[i]) + " / " + std::to_string(ranks) + " gave " +
             show(buf[i]) + ", expected " + show(want);
  }
  if (std::memcmp(buf.data() + n, before.data() + n, guard * sizeof(T)) != 0) return "wrote past buf + n";
  return "";
}

// NaN in either operand of min / max gives NaN: single elements, and in a buffer at positions in
// the vectorised body and in the tail. Returns the number of wrong results.
template <class T> int nan_propagation_failures() {
  if constexpr (std::is_integral_v<T>) {
    return 0;
  } else {
    using C = compute_t<T>;
    const T nan = T(std::numeric_limits<C>::quiet_NaN());
    const T one = T(C(1));
    const T inf = T(std::numeric_limits<C>::infinity());
    const T ninf = T(-std::numeric_limits<C>::infinity());
    auto is_nan = [](T x) { return std::isnan(static_cast<C>(x)); };
    int bad = 0;
    for (op o : {op::min, op::max}) {
      bad += !is_nan(reduce1(o, nan, one));
      bad += !is_nan(reduce1(o, one, nan));
      bad += !is_nan(reduce1(o, nan, nan));
      bad += !is_nan(reduce1(o, nan, inf));
      bad += !is_nan(reduce1(o, ninf, nan));
      std::vector<T> a(1009, T(C(2))), b(1009, T(C(3))), out(1009);
      a[5] = nan;
      b[600] = nan;
      b[1008] = nan;
      tutti::reduce(tutti::dtype_of<T>, o, out.data(), a.data(), b.data(), a.size());
      for (std::size_t i = 0; i < out.size(); ++i) {
        const bool want_nan = i == 5 || i == 600 || i == 1008;
        bad += is_nan(out[i]) != want_nan;
        if (!want_nan) bad += static_cast<C>(out[i]) != (o == op::min ? C(2) : C(3));
      }
    }
    bad += static_cast<C>(reduce1(op::min, one, ninf)) != -std::numeric_limits<C>::infinity();
    bad += static_cast<C>(reduce1(op::max, one, ninf)) != C(1);
    return bad;
  }
}

}  // namespace

TEST_CASE("reduce matches the scalar reference for every dtype x op at counts 0, 1, 7, 1009") {
  for (dtype t : tutti::all_dtypes) {
    for (op o : tutti::all_ops) {
      for (std::size_t n : counts) {
        CAPTURE(tutti::name_of(t));
        CAPTURE(tutti::name_of(o));
        CAPTURE(n);
        const std::string error = tutti::visit(t, [&](auto id) { return check_reduce<typename decltype(id)::type>(o, n); });
        CHECK_MESSAGE(error.empty(), error);
      }
    }
  }
}

TEST_CASE("reduce: out may alias a, b, or both") {
  for (dtype t : tutti::all_dtypes) {
    for (op o : tutti::all_ops) {
      CAPTURE(tutti::name_of(t));
      CAPTURE(tutti::name_of(o));
      const std::string error = tutti::visit(t, [&](auto id) { return check_alias<typename decltype(id)::type>(o); });
      CHECK_MESSAGE(error.empty(), error);
    }
  }
}

TEST_CASE("finish_avg matches the scalar reference for every dtype at counts 0, 1, 7, 1009 and 1, 2, 3, 7 ranks") {
  for (dtype t : tutti::all_dtypes) {
    for (int ranks : {1, 2, 3, 7}) {
      for (std::size_t n : counts) {
        CAPTURE(tutti::name_of(t));
        CAPTURE(ranks);
        CAPTURE(n);
        const std::string error =
            tutti::visit(t, [&](auto id) { return check_finish_avg<typename decltype(id)::type>(ranks, n); });
        CHECK_MESSAGE(error.empty(), error);
      }
    }
  }
}

TEST_CASE("float min and max propagate NaN from either side") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    CAPTURE(tutti::name_of(t));
    CHECK(tutti::visit(t, [](auto id) { return nan_propagation_failures<typename decltype(id)::type>(); }) == 0);
  }
}

TEST_CASE("integer sum and prod wrap modulo 2^bits") {
  CHECK(reduce1<std::int8_t>(op::sum, 100, 100) == -56);
  CHECK(reduce1<std::int8_t>(op::sum, -128, -1) == 127);
  CHECK(reduce1<std::int8_t>(op::prod, -128, -1) == -128);
  CHECK(reduce1<std::int8_t>(op::prod, 16, 16) == 0);
  CHECK(reduce1<std::uint8_t>(op::sum, 200, 100) == 44);
  CHECK(reduce1<std::uint8_t>(op::prod, 200, 2) == 144);
  CHECK(reduce1<std::uint8_t>(op::prod, 255, 255) == 1);
  CHECK(reduce1<std::int32_t>(op::sum, std::numeric_limits<std::int32_t>::max(), 1) ==
        std::numeric_limits<std::int32_t>::min());
  CHECK(reduce1<std::int32_t>(op::prod, 65536, 65536) == 0);
  CHECK(reduce1<std::int32_t>(op::prod, 65537, 65537) == 131073);  // 2^32 + 2^17 + 1 mod 2^32
  CHECK(reduce1<std::int32_t>(op::prod, std::numeric_limits<std::int32_t>::min(), -1) ==
        std::numeric_limits<std::int32_t>::min());
  CHECK(reduce1<std::int64_t>(op::sum, std::numeric_limits<std::int64_t>::max(), 1) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(reduce1<std::int64_t>(op::prod, (std::int64_t{1} << 32) + 1, (std::int64_t{1} << 32) + 1) ==
        (std::int64_t{1} << 33) + 1);  // 2^64 + 2^33 + 1 mod 2^64
  // op::avg sums exactly like op::sum (the division comes later, in finish_avg).
  CHECK(reduce1<std::int8_t>(op::avg, 100, 100) == -56);
}

TEST_CASE("integer min and max are signed for int types and unsigned for uint8") {
  CHECK(reduce1<std::int8_t>(op::min, -128, 127) == -128);
  CHECK(reduce1<std::int8_t>(op::max, -128, 127) == 127);
  CHECK(reduce1<std::uint8_t>(op::min, 0, 255) == 0);
  CHECK(reduce1<std::uint8_t>(op::max, 0, 255) == 255);
  CHECK(reduce1<std::int64_t>(op::min, std::numeric_limits<std::int64_t>::min(), 0) ==
        std::numeric_limits<std::int64_t>::min());
}

TEST_CASE("integer avg truncates toward zero: -7 over 2 ranks is -3, not -4") {
  CHECK(avg_of<std::int32_t>({-3, -4}) == -3);
  CHECK(avg_of<std::int32_t>({3, 4}) == 3);
  CHECK(avg_of<std::int8_t>({-3, -4}) == -3);
  CHECK(avg_of<std::int64_t>({-3, -4}) == -3);
  CHECK(avg_of<std::int32_t>({-1, 0, 0}) == 0);
  CHECK(avg_of<std::int32_t>({-5, 0, 0}) == -1);
  CHECK(avg_of<std::uint8_t>({7, 0}) == 3);
  // The sum wraps before the division, as documented in op.hpp: (100 + 100) mod 2^8 = -56, / 2 = -28.
  CHECK(avg_of<std::int8_t>({100, 100}) == -28);
  // Floats do not truncate.
  CHECK(avg_of<float>({-3.f, -4.f}) == -3.5f);
  CHECK(avg_of<double>({1.0, 2.0, 4.0}) == doctest::Approx(7.0 / 3.0));
}

TEST_CASE("finish_avg divides by world sizes that do not fit the element type (int8/uint8, 128..300 ranks)") {
  // The division must use the rank count itself: 128 or 200 do not fit int8 and 300 does not fit
  // uint8, so narrowing the divisor to the element type first flips signs or divides by the wrong number.
  auto avg8 = [](auto x, int ranks) {
    tutti::finish_avg(tutti::dtype_of<decltype(x)>, &x, 1, ranks);
    return x;
  };
  CHECK(avg8(std::int8_t{-128}, 128) == -1);
  CHECK(avg8(std::int8_t{100}, 128) == 0);
  CHECK(avg8(std::int8_t{100}, 200) == 0);
  CHECK(avg8(std::int8_t{-100}, 50) == -2);  // (control: fits)
  CHECK(avg8(std::uint8_t{200}, 300) == 0);
  CHECK(avg8(std::uint8_t{250}, 125) == 2);  // (control: fits)
  CHECK(avg8(std::int32_t{-1000}, 300) == -3);
}

TEST_CASE("fp16 reductions are computed in fp32 and rounded once, to nearest even") {
  auto h = [](float f) { return half(f); };
  auto sum = [&](float a, float b) { return reduce1(op::sum, h(a), h(b)).bits; };
  auto prod = [&](float a, float b) { return reduce1(op::prod, h(a), h(b)).bits; };
  // Spacing of halves in [2048, 4096) is 2. 2049 is a tie between 2048 (even) and 2050: stays 2048.
  CHECK(sum(2048.f, 1.f) == 0x6800);
  // 2051 is a tie between 2050 (odd mantissa) and 2052 (even): goes up to 2052. Truncating gives 2050.
  CHECK(sum(2048.f, 3.f) == 0x6802);
  CHECK(sum(-2048.f, -3.f) == 0xE802);
  // 1 + 2^-11 + 2^-20 lies just above the tie between 1 and 1 + 2^-10. fp32 holds it exactly, so it
  // rounds up; rounding the sum first to an intermediate that keeps only a guard bit (or to bfloat16)
  // would make it an exact tie and round down to 1.
  CHECK(sum(1.f, 0x1p-11f + 0x1p-20f) == 0x3C01);
  CHECK(sum(1.f, 0x1p-11f) == 0x3C00);  // (the exact tie itself rounds to even)
  // Overflow: 65504 + 8 rounds back to the largest half; 65504 + 16 is at the tie and becomes inf.
  CHECK(sum(65504.f, 8.f) == 0x7BFF);
  CHECK(sum(65504.f, 16.f) == 0x7C00);
  // Subnormal results: 2^-24 * 0.5 is a tie between 0 and 2^-24 -> 0; 3 * 2^-24 * 0.5 -> 2 * 2^-24.
  CHECK(prod(0x1p-24f, 0.5f) == 0x0000);
  CHECK(prod(0x3p-24f, 0.5f) == 0x0002);
  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: the 2^-20 is below half an ulp.
  CHECK(prod(1.f + 0x1p-10f, 1.f + 0x1p-10f) == 0x3C02);
  // avg: sum 3 + 4 = 7 exactly, / 2 = 3.5 exactly.
  half v[2] = {h(3.f), h(4.f)};
  tutti::reduce(dtype::f16, op::avg, &v[0], &v[0], &v[1], 1);
  tutti::finish_avg(dtype::f16, &v[0], 1, 2);
  CHECK(v[0].bits == h(3.5f).bits);
  // avg of 1 over 3 ranks: 1/3 rounded once from fp32 is 0x3555.
  half third = h(1.f);
  tutti::finish_avg(dtype::f16, &third, 1, 3);
  CHECK(third.bits == 0x3555);
}

TEST_CASE("bf16 reductions are computed in fp32 and rounded once, to nearest even") {
  auto b = [](float f) { return bfloat16(f); };
  auto sum = [&](float x, float y) { return reduce1(op::sum, b(x), b(y)).bits; };
  // Spacing of bfloat16 in [256, 512) is 2: 257 ties to 256 (even), 259 ties up to 260 (truncation: 258).
  CHECK(sum(256.f, 1.f) == 0x4380);
  CHECK(sum(256.f, 3.f) == 0x4382);
  // 1 + 2^-8 + 2^-15 (both operands exact in bfloat16): just above the tie between 1 and 1 + 2^-7,
  // so it rounds up; a sum first rounded to 9 significant bits would be an exact tie and go down to 1.
  CHECK(sum(1.f, 0x1p-8f + 0x1p-15f) == 0x3F81);
  CHECK(sum(1.f, 0x1p-8f) == 0x3F80);
  // bf16 has float's range: 2^127 + 2^127 = 2^128 overflows to inf only because fp32 does too.
  CHECK(sum(0x1p127f, 0x1p127f) == 0x7F80);
  CHECK(reduce1(op::prod, b(0x1p-100f), b(0x1p-20f)).bits == b(0x1p-120f).bits);
}

TEST_CASE("fp16 sum: each reduce() call rounds once, so fp32 accumulation across calls is not implied") {
  // Three ranks contributing 2048, 1, 1: 2048 + 1 rounds to 2048 (tie to even) after the first
  // call and again after the second. This pins down the documented per-call rounding.
  half acc = half(2048.f);
  const half one = half(1.f);
  tutti::reduce(dtype::f16, op::sum, &acc, &acc, &one, 1);
  tutti::reduce(dtype::f16, op::sum, &acc, &acc, &one, 1);
  CHECK(acc.bits == 0x6800);
  // Summing the two small contributions first keeps them: 1 + 1 = 2, 2048 + 2 = 2050.
  half small = one;
  tutti::reduce(dtype::f16, op::sum, &small, &small, &one, 1);
  half big = half(2048.f);
  tutti::reduce(dtype::f16, op::sum, &big, &big, &small, 1);
  CHECK(big.bits == 0x6801);
}
