//! @file reduce.hpp  Type-erased element-wise reductions: one vectorisable loop per (dtype, op).
//!
//! Algorithms call these with raw bytes and a runtime (dtype, op); templates stop here, so every
//! algorithm and transport shares the same 8 x 4 loops instead of instantiating its own
//! (Gloo's reasoning: full templating adds compile time and code, not speed).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tutti/core/dtype.hpp"
#include "tutti/core/op.hpp"

namespace tutti {
namespace detail {

struct op_sum {
  template <class T> static T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {  // wrap modulo 2^bits instead of signed-overflow UB
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
struct op_prod {
  template <class T> static T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};
// min/max propagate NaN (like torch), so a NaN gradient is never hidden by the reduction.
struct op_min {
  template <class T> static T apply(T a, T b) noexcept { return (a < b || a != a) ? a : b; }
};
struct op_max {
  template <class T> static T apply(T a, T b) noexcept { return (a > b || a != a) ? a : b; }
};

template <class Op, class T>
void reduce_loop(void* out, const void* a, const void* b, std::size_t n) noexcept {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

// 16-bit floats: widen a block to fp32, reduce in fp32, narrow once with round-to-nearest-even.
// Blocks keep the temporaries in L1 and let every stage vectorise on its own.
template <class Op, void (*Widen)(const std::uint16_t*, float*, std::size_t),
          void (*Narrow)(const float*, std::uint16_t*, std::size_t)>
void reduce_loop_16(void* out, const void* a, const void* b, std::size_t n) noexcept {
  constexpr std::size_t block = 512;
  alignas(64) float fa[block];
  alignas(64) float fb[block];
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  for (std::size_t i = 0; i < n; i += block) {
    const std::size_t m = std::min(block, n - i);
    Widen(x + i, fa, m);
    Widen(y + i, fb, m);
    for (std::size_t j = 0; j < m; ++j) fa[j] = Op::apply(fa[j], fb[j]);
    Narrow(fa, o + i, m);
  }
}

template <class Op>
void reduce_dispatch(dtype t, void* out, const void* a, const void* b, std::size_t n) noexcept {
  switch (t) {
    case dtype::f32: return reduce_loop<Op, float>(out, a, b, n);
    case dtype::f64: return reduce_loop<Op, double>(out, a, b, n);
    case dtype::f16: return reduce_loop_16<Op, half_to_float_n, float_to_half_n>(out, a, b, n);
    case dtype::bf16: return reduce_loop_16<Op, bfloat16_to_float_n, float_to_bfloat16_n>(out, a, b, n);
    case dtype::i8: return reduce_loop<Op, std::int8_t>(out, a, b, n);
    case dtype::i32: return reduce_loop<Op, std::int32_t>(out, a, b, n);
    case dtype::i64: return reduce_loop<Op, std::int64_t>(out, a, b, n);
    case dtype::u8: return reduce_loop<Op, std::uint8_t>(out, a, b, n);
    case dtype::i16: return reduce_loop<Op, std::int16_t>(out, a, b, n);
    case dtype::u32: return reduce_loop<Op, std::uint32_t>(out, a, b, n);
    case dtype::u64: return reduce_loop<Op, std::uint64_t>(out, a, b, n);
  }
}

template <class T> void divide_loop(void* buf, std::size_t n, int divisor) noexcept {
  // Divide in a type that holds the rank count: int8 cannot hold 128 ranks, uint8 not 256.
  using W = std::conditional_t<std::is_integral_v<T>, std::common_type_t<T, int>, T>;
  auto* p = static_cast<T*>(buf);
  const W d = static_cast<W>(divisor);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<W>(p[i]) / d);
}

template <void (*Widen)(const std::uint16_t*, float*, std::size_t),
          void (*Narrow)(const float*, std::uint16_t*, std::size_t)>
void divide_loop_16(void* buf, std::size_t n, int divisor) noexcept {
  constexpr std::size_t block = 512;
  alignas(64) float f[block];
  auto* p = static_cast<std::uint16_t*>(buf);
  const float d = static_cast<float>(divisor);
  for (std::size_t i = 0; i < n; i += block) {
    const std::size_t m = std::min(block, n - i);
    Widen(p + i, f, m);
    for (std::size_t j = 0; j < m; ++j) f[j] /= d;
    Narrow(f, p + i, m);
  }
}

}  // namespace detail

//! out[i] = a[i] (op) b[i] for n elements of type t; out may alias a or b.
//! op::avg reduces as op::sum here: the division happens once, in finish_avg().
inline void reduce(dtype t, op o, void* out, const void* a, const void* b, std::size_t n) noexcept {
  switch (o) {
    case op::sum: case op::avg: return detail::reduce_dispatch<detail::op_sum>(t, out, a, b, n);
    case op::prod: return detail::reduce_dispatch<detail::op_prod>(t, out, a, b, n);
    case op::min: return detail::reduce_dispatch<detail::op_min>(t, out, a, b, n);
    case op::max: return detail::reduce_dispatch<detail::op_max>(t, out, a, b, n);
  }
}

//! Turns a sum over `ranks` contributions into their average, in place (integers truncate toward 0).
inline void finish_avg(dtype t, void* buf, std::size_t n, int ranks) noexcept {
  if (ranks == 1) return;
  switch (t) {
    case dtype::f32: return detail::divide_loop<float>(buf, n, ranks);
    case dtype::f64: return detail::divide_loop<double>(buf, n, ranks);
    case dtype::f16: return detail::divide_loop_16<half_to_float_n, float_to_half_n>(buf, n, ranks);
    case dtype::bf16: return detail::divide_loop_16<bfloat16_to_float_n, float_to_bfloat16_n>(buf, n, ranks);
    case dtype::i8: return detail::divide_loop<std::int8_t>(buf, n, ranks);
    case dtype::i32: return detail::divide_loop<std::int32_t>(buf, n, ranks);
    case dtype::i64: return detail::divide_loop<std::int64_t>(buf, n, ranks);
    case dtype::u8: return detail::divide_loop<std::uint8_t>(buf, n, ranks);
    case dtype::i16: return detail::divide_loop<std::int16_t>(buf, n, ranks);
    case dtype::u32: return detail::divide_loop<std::uint32_t>(buf, n, ranks);
    case dtype::u64: return detail::divide_loop<std::uint64_t>(buf, n, ranks);
  }
}

}  // namespace tutti
