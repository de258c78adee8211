//! @file pattern.hpp  Inputs whose reductions are exact in every dtype, and their expected results.
//!
//! Values are small integers (|x| <= 8, products of 1s and 2s), so sums of up to 9 ranks and
//! products are exactly representable in fp16/bf16 and do not depend on reduction order: results
//! can be compared bit for bit. The sequence has period 251 (prime) and differs per rank, so a
//! chunk placed at the wrong offset or taken from the wrong rank shows up.
#pragma once
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include <tutti/core/dtype.hpp>
#include <tutti/core/op.hpp>

namespace tutti::testing {

inline constexpr std::size_t pattern_period = 251;

//! Rank r's element i, as an exact integer.
inline long long pattern_value(int r, std::size_t i, op o) {
  const std::uint64_t h = ((i % pattern_period) * 2654435761ull + static_cast<std::uint64_t>(r) * 40503ull) >> 7;
  if (o == op::prod) return (h % 5 == 0) ? 2 : ((h % 3 == 0) ? -1 : 1);
  return static_cast<long long>(h % 17) - 8;
}

//! Unsigned types get non-negative values.
inline long long pattern_value(dtype t, int r, std::size_t i, op o) {
  const long long v = pattern_value(r, i, o);
  return is_unsigned(t) ? (v < 0 ? -v : v) : v;
}

template <class T>
T from_integer(long long v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

//! Fills buf (count elements of t) with rank r's pattern, starting at element index `first`.
//! One period is computed, then copied: the suite fills hundreds of millions of elements.
inline void fill_pattern(void* buf, dtype t, int r, std::size_t count, op o, std::size_t first = 0) {
  const std::size_t esz = size_of(t);
  unsigned char period[pattern_period * 8];
  visit(t, [&]<class T>(std::type_identity<T>) {
    for (std::size_t i = 0; i < pattern_period; ++i) {
      const T v = from_integer<T>(pattern_value(t, r, i, o));
      std::memcpy(period + i * sizeof(T), &v, sizeof(T));
    }
  });
  auto* p = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < count;) {
    const std::size_t phase = (first + i) % pattern_period;
    const std::size_t n = std::min(pattern_period - phase, count - i);
    std::memcpy(p + i * esz, period + phase * esz, n * esz);
    i += n;
  }
}

//! The reduction over ranks 0..world-1 of element i, computed the plain way, in T's own arithmetic.
template <class T>
T reduced_value(dtype t, int world, std::size_t i, op o) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U acc = static_cast<U>(static_cast<T>(pattern_value(t, 0, i, o)));
    for (int r = 1; r < world; ++r) {
      const T v = static_cast<T>(pattern_value(t, r, i, o));
      const T a = static_cast<T>(acc);
      switch (o) {
        case op::sum: case op::avg: acc = static_cast<U>(acc + static_cast<U>(v)); break;
        case op::prod: acc = static_cast<U>(acc * static_cast<U>(v)); break;
        case op::min: acc = static_cast<U>(v < a ? v : a); break;
        case op::max: acc = static_cast<U>(v > a ? v : a); break;
      }
    }
    T out = static_cast<T>(acc);
    if (o == op::avg) out = static_cast<T>(out / static_cast<T>(world));
    return out;
  } else {
    double acc = static_cast<double>(pattern_value(t, 0, i, o));  // exact: small integers
    for (int r = 1; r < world; ++r) {
      const double v = static_cast<double>(pattern_value(t, r, i, o));
      switch (o) {
        case op::sum: case op::avg: acc += v; break;
        case op::prod: acc *= v; break;
        case op::min: acc = v < acc ? v : acc; break;
        case op::max: acc = v > acc ? v : acc; break;
      }
    }
    if (o != op::avg) return from_integer<T>(static_cast<long long>(acc));
    // avg divides the exact sum once, in the element type's compute precision (fp32 for 16-bit).
    if constexpr (std::is_same_v<T, double>) return acc / world;
    else return T(static_cast<float>(acc) / static_cast<float>(world));
  }
}

//! Expected results for one period of the pattern: expected[i % period] is element i's result.
inline std::vector<unsigned char> expected_period(dtype t, int world, op o) {
  std::vector<unsigned char> out(pattern_period * size_of(t));
  visit(t, [&]<class T>(std::type_identity<T>) {
    for (std::size_t i = 0; i < pattern_period; ++i) {
      const T v = reduced_value<T>(t, world, i, o);
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  return out;
}

//! Number of elements of buf (count elements starting at global index `first`) that differ bitwise
//! from expected_period; the index of the first one goes to *first_bad. Whole periods are compared
//! with one memcmp and only a differing period is examined element by element.
inline std::size_t count_wrong(const void* buf, dtype t, std::size_t count, std::size_t first,
                               const std::vector<unsigned char>& expected, std::size_t* first_bad) {
  const std::size_t esz = size_of(t);
  const auto* p = static_cast<const unsigned char*>(buf);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count;) {
    const std::size_t phase = (first + i) % pattern_period;
    const std::size_t n = std::min(pattern_period - phase, count - i);
    if (std::memcmp(p + i * esz, expected.data() + phase * esz, n * esz) != 0) {
      for (std::size_t k = 0; k < n; ++k) {
        if (std::memcmp(p + (i + k) * esz, expected.data() + (phase + k) * esz, esz) != 0) {
          if (wrong++ == 0 && first_bad) *first_bad = first + i + k;
        }
      }
    }
    i += n;
  }
  return wrong;
}

//! Like count_wrong, against rank r's own pattern (allgather, broadcast: nothing is reduced).
//! `first`: the global index of buf's first element in r's pattern.
inline std::size_t count_wrong_pattern(const void* buf, dtype t, int r, std::size_t count, op o,
                                       std::size_t* first_bad, std::size_t first = 0) {
  std::vector<unsigned char> expected(pattern_period * size_of(t));
  fill_pattern(expected.data(), t, r, pattern_period, o);
  return count_wrong(buf, t, count, first, expected, first_bad);
}

}  // namespace tutti::testing
