//! @file dtype.hpp  Runtime element types and their compile-time C++ counterparts.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tutti/core/bfloat16.hpp"
#include "tutti/core/half.hpp"

namespace tutti {

enum class dtype : std::uint8_t { f32, f64, f16, bf16, i8, i32, i64, u8, i16, u32, u64 };

inline constexpr std::array<dtype, 11> all_dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16,
                                                      dtype::i8,  dtype::i16, dtype::i32, dtype::i64,
                                                      dtype::u8,  dtype::u32, dtype::u64};

[[nodiscard]] constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f64: case dtype::i64: case dtype::u64: return 8;
    case dtype::f32: case dtype::i32: case dtype::u32: return 4;
    case dtype::f16: case dtype::bf16: case dtype::i16: return 2;
    case dtype::i8:  case dtype::u8: return 1;
  }
  return 0;
}

//! The names nccl-tests prints (float, double, half, bfloat16, int8, int32, int64, uint8, uint32,
//! uint64), and int16 in the same style.
[[nodiscard]] constexpr std::string_view name_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::f16: return "half";
    case dtype::bf16: return "bfloat16";
    case dtype::i8: return "int8";
    case dtype::i32: return "int32";
    case dtype::i64: return "int64";
    case dtype::u8: return "uint8";
    case dtype::i16: return "int16";
    case dtype::u32: return "uint32";
    case dtype::u64: return "uint64";
  }
  return "?";
}

[[nodiscard]] constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

[[nodiscard]] constexpr bool is_unsigned(dtype t) noexcept {
  return t == dtype::u8 || t == dtype::u32 || t == dtype::u64;
}

[[nodiscard]] constexpr bool is_valid(dtype t) noexcept {
  return static_cast<std::uint8_t>(t) <= static_cast<std::uint8_t>(dtype::u64);
}

//! Calls fn(std::type_identity<T>{}) with the C++ type of `t`; the one place a runtime dtype
//! becomes a compile-time type (tests, references, tools; never an element loop's inner body).
template <class F>
decltype(auto) visit(dtype t, F&& fn) {
  switch (t) {
    case dtype::f64: return fn(std::type_identity<double>{});
    case dtype::f16: return fn(std::type_identity<half>{});
    case dtype::bf16: return fn(std::type_identity<bfloat16>{});
    case dtype::i8: return fn(std::type_identity<std::int8_t>{});
    case dtype::i32: return fn(std::type_identity<std::int32_t>{});
    case dtype::i64: return fn(std::type_identity<std::int64_t>{});
    case dtype::u8: return fn(std::type_identity<std::uint8_t>{});
    case dtype::i16: return fn(std::type_identity<std::int16_t>{});
    case dtype::u32: return fn(std::type_identity<std::uint32_t>{});
    case dtype::u64: return fn(std::type_identity<std::uint64_t>{});
    case dtype::f32: break;
  }
  return fn(std::type_identity<float>{});
}

//! dtype_of<T> maps a C++ element type to its dtype; a type tutti does not carry fails to compile,
//! and the compiler's note names it ("required from ... dtype_of_t<long double>").
//! Every standard integer type maps by its size and signedness, whatever its name: long and
//! long long are both 64 bits on Linux and both are i64; char is i8 or u8 as the platform signs it.
//! Not carried: bool, unsigned 16-bit integers, long double, 128-bit integers.
template <class T> struct dtype_of_t {
  static_assert(sizeof(T) == 0, "tutti: this element type has no tutti::dtype (supported: float, double, "
                                "tutti::half, tutti::bfloat16, and integers of 8, 16 (signed), 32 and 64 bits)");
};
template <> struct dtype_of_t<float> : std::integral_constant<dtype, dtype::f32> {};
template <> struct dtype_of_t<double> : std::integral_constant<dtype, dtype::f64> {};
template <> struct dtype_of_t<half> : std::integral_constant<dtype, dtype::f16> {};
template <> struct dtype_of_t<bfloat16> : std::integral_constant<dtype, dtype::bf16> {};

namespace detail {
template <std::size_t Bytes, bool Signed> struct integer_dtype {
  static_assert(Bytes == 0, "tutti: no tutti::dtype for an integer of this size and signedness "
                            "(supported: 8, 16 (signed), 32 and 64 bits)");
};
template <> struct integer_dtype<1, true> : std::integral_constant<dtype, dtype::i8> {};
template <> struct integer_dtype<2, true> : std::integral_constant<dtype, dtype::i16> {};
template <> struct integer_dtype<4, true> : std::integral_constant<dtype, dtype::i32> {};
template <> struct integer_dtype<8, true> : std::integral_constant<dtype, dtype::i64> {};
template <> struct integer_dtype<1, false> : std::integral_constant<dtype, dtype::u8> {};
template <> struct integer_dtype<4, false> : std::integral_constant<dtype, dtype::u32> {};
template <> struct integer_dtype<8, false> : std::integral_constant<dtype, dtype::u64> {};
}  // namespace detail

template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct dtype_of_t<T> : detail::integer_dtype<sizeof(T), std::is_signed_v<T>> {};

template <class T> inline constexpr dtype dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

}  // namespace tutti
