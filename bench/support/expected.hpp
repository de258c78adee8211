//! @file expected.hpp  The input pattern every rank sends, the result every rank must get, and
//! the count of elements that differ (the #wrong column).
//!
//! Rank r's element i is a small integer with period 17 in i, so every reduction below is exact in
//! every dtype (|sums| <= 8n; products are of +-1 and +-2) and does not depend on reduction order:
//! results are compared exactly, and the expected values are a 17-entry table per check.
//! With a lossy --codec (fp16, bf16, int8) the allreduce's result is compared with the exact sum
//! within the codec's written error bound instead (lossy_expected below).
#pragma once
#include <tutti/tutti.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "options.hpp"

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

// ---- lossy codecs: within a bound, not exact -----------------------------------------------------

//! Per pattern index m: the exact float32 sum (or avg) of every rank's element, and how far a
//! lossy allreduce's result may be from it.
struct lossy_expectation {
  table<double> reference{};
  table<double> bound{};
  double largest_bound = 0;
};

//! The bound of tutti/testing/compressed_conformance.hpp (docs/compression.md) for tutti-bench's
//! own inputs: every contribution x_r = input * s (s = 1/n for avg) is encoded once, the owner
//! sums in fp32 and encodes the sum once, so
//!   |out - y| <= d + E(|y| + d, B_y + d),  d = sum_r E(x_r, B_r) + (n + 2) u sum_r (|x_r| + E(x_r, B_r))
//! with E = Codec::max_error, u = 2^-24, B_r the largest |x_r| of a codec block and B_y that of
//! the result. B_r and B_y are taken over the whole 17-entry pattern (every int8 block of 256 holds
//! all of it): an upper bound of each block's, and the codecs' bounds only grow with it. The same
//! bound covers hierarchical, whose inter-node contributions are sums of a node's ranks: the
//! errors of a node's sum are at most the sum of its ranks' (E grows at most linearly in |x| and B).
//! fp16 and bf16 carry these small integers (|sums| <= 8n) exactly; int8 does not.
template <class Codec>
lossy_expectation lossy_expected(int n, op o) {
  lossy_expectation e;
  const double s = o == op::avg ? 1.0 / n : 1.0;
  table<double> magnitude{}, encoding{};
  for (int r = 0; r < n; ++r) {
    float block_max = 0;
    for (std::size_t m = 0; m < period; ++m)
      block_max = std::max(block_max, std::fabs(static_cast<float>(static_cast<double>(input_value(r, m, o)) * s)));
    for (std::size_t m = 0; m < period; ++m) {
      const double x = static_cast<double>(input_value(r, m, o)) * s;
      e.reference[m] += x;
      magnitude[m] += std::fabs(x);
      encoding[m] += Codec::max_error(static_cast<float>(x), block_max);
    }
  }
  constexpr double u = 0x1p-24;
  table<double> drift{};
  double out_max = 0, drift_max = 0;
  for (std::size_t m = 0; m < period; ++m) {
    drift[m] = encoding[m] + (n + 2) * u * (magnitude[m] + encoding[m]);
    out_max = std::max(out_max, std::fabs(e.reference[m]));
    drift_max = std::max(drift_max, drift[m]);
  }
  for (std::size_t m = 0; m < period; ++m) {
    const double out = Codec::max_error(static_cast<float>(std::fabs(e.reference[m]) + drift[m]),
                                        static_cast<float>(out_max + drift_max));
    e.bound[m] = (drift[m] + out) * (1 + 0x1p-20);  // the bound's own rounding
    e.largest_bound = std::max(e.largest_bound, e.bound[m]);
  }
  return e;
}

//! lossy_expected for the codec --codec names (not none).
inline lossy_expectation lossy_expected(codec_kind c, int n, op o) {
  switch (c) {
    case codec_kind::fp16: return lossy_expected<tutti::codec::fp16>(n, o);
    case codec_kind::bf16: return lossy_expected<tutti::codec::bf16>(n, o);
    case codec_kind::int8: return lossy_expected<tutti::codec::int8>(n, o);
    case codec_kind::none: break;
  }
  return {};  // exact: the bound is 0
}

//! How many float p[i] are farther from e.reference[(first + i) % period] than its bound (NaN,
//! the poison of an element never written, counts).
inline std::size_t count_outside(const void* buf, std::size_t count, const lossy_expectation& e, std::size_t first = 0) {
  const auto* p = static_cast<const float*>(buf);
  std::size_t wrong = 0;
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1)
    wrong += !(std::fabs(static_cast<double>(p[i]) - e.reference[m]) <= e.bound[m]);
  return wrong;
}

//! The largest |p[i] - reference| over the elements that are numbers (NaN ones count in count_outside).
inline double largest_error(const void* buf, std::size_t count, const lossy_expectation& e, std::size_t first = 0) {
  const auto* p = static_cast<const float*>(buf);
  double largest = 0;
  for (std::size_t i = 0, m = first % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1) {
    const double d = std::fabs(static_cast<double>(p[i]) - e.reference[m]);
    if (d > largest) largest = d;
  }
  return largest;
}

//! The header's "check:" line: which comparison #wrong counts.
inline std::string check_description(const options& o) {
  if (!o.check) return "none (-c 0)";
  if (o.codec == codec_kind::none) return "#wrong counts elements that differ from the exact result (exact comparison)";
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.3g", lossy_expected(o.codec, o.ranks, o.reduction).largest_bound);
  return "#wrong counts elements farther from the exact result than the codec's written bound (" +
         std::string(name_of(o.codec)) + "::max_error once per contribution and once on the result, plus fp32 "
         "rounding: at most " + bound + " here), not exact comparison";
}

}  // namespace bench
