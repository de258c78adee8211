//! @file expected.hpp  The input pattern every rank sends, the result every rank must get, and
//! the count of elements that differ (the #wrong column).
//!
//! Rank r's element i is a small integer with period 17 in i, so every reduction below is exact in
//! every dtype (|sums| <= 8n; products are of +-1 and +-2) and does not depend on reduction order:
//! results are compared exactly, and the expected values are a 17-entry table per check.
#pragma once
#include <tutti/tutti.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace bench {

using tutti::op;

inline constexpr std::size_t period = 17;

inline long long input_value(int rank, std::size_t i, op o) {
  const std::size_t k = (i * 7 + static_cast<std::size_t>(rank) * 13) % period;
  if (o == op::prod) {
    constexpr int factors[4] = {1, -1, 2, -2};
    return factors[k % 4];
  }
  return static_cast<long long>(k) - 8;
}

template <class T>
T from_integer(long long v) {
  if constexpr (std::is_same_v<T, tutti::half> || std::is_same_v<T, tutti::bfloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);  // unsigned types wrap, as the library's arithmetic does
}

template <class T>
using table = std::array<T, period>;

template <class T>
table<T> input_table(int rank, op o) {
  table<T> t{};
  for (std::size_t m = 0; m < period; ++m) t[m] = from_integer<T>(input_value(rank, m, o));
  return t;
}

//! The reduction over all ranks of element m, in the element type's own arithmetic
//! (integers wrap modulo 2^bits; avg divides once, in fp32 for 16-bit floats).
template <class T>
table<T> reduced_table(int n, op o) {
  table<T> t{};
  for (std::size_t m = 0; m < period; ++m) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      T acc = static_cast<T>(input_value(0, m, o));
      for (int r = 1; r < n; ++r) {
        const T v = static_cast<T>(input_value(r, m, o));
        switch (o) {
          case op::sum: case op::avg: acc = static_cast<T>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(v))); break;
          case op::prod:
            acc = static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(acc)) *
                                                static_cast<std::uint64_t>(static_cast<U>(v))));
            break;
          case op::min: acc = std::min(acc, v); break;
          case op::max: acc = std::max(acc, v); break;
        }
      }
      // avg: the sum divided by the rank count as an int (documented in op.hpp), truncating.
      t[m] = o == op::avg ? static_cast<T>(static_cast<long long>(acc) / n) : acc;
    } else {
      double acc = static_cast<double>(input_value(0, m, o));  // exact
      for (int r = 1; r < n; ++r) {
        const auto v = static_cast<double>(input_value(r, m, o));
        switch (o) {
          case op::sum: case op::avg: acc += v; break;
          case op::prod: acc *= v; break;
          case op::min: acc = std::min(acc, v); break;
          case op::max: acc = std::max(acc, v); break;
        }
      }
      if (o != op::avg) t[m] = from_integer<T>(static_cast<long long>(acc));
      else if constexpr (std::is_same_v<T, double>) t[m] = acc / n;
      else t[m] = T(static_cast<float>(acc) / static_cast<float>(n));
    }
  }
  return t;
}

//! p[i] = tab[(first + i) % period] for i < count.
template <class T>
void fill(void* buf, std::size_t count, const table<T>& tab, std::size_t first = 0) {
  auto* p = static_cast<T*>(buf);
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1) p[i] = tab[m];
}

//! How many of p[i] differ from tab[(first + i) % period].
template <class T>
std::size_t count_wrong(const void* buf, std::size_t count, const table<T>& tab, std::size_t first = 0) {
  const auto* p = static_cast<const T*>(buf);
  std::size_t wrong = 0;
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1)
    wrong += !(p[i] == tab[m]);
  return wrong;
}

}  // namespace bench
