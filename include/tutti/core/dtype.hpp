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

enum class dtype : std::uint8_t { f32, f64, f16, bf16, i8, i32, i64, u8 };

inline constexpr std::array<dtype, 8> all_dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16,
                                                     dtype::i8,  dtype::i32, dtype::i64, dtype::u8};

[[nodiscard]] constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f64: case dtype::i64: return 8;
    case dtype::f32: case dtype::i32: return 4;
    case dtype::f16: case dtype::bf16: return 2;
    case dtype::i8:  case dtype::u8: return 1;
  }
  return 0;
}

//! The names nccl-tests prints (float, double, half, bfloat16, int8, int32, int64, uint8).
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
  }
  return "?";
}

[[nodiscard]] constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

[[nodiscard]] constexpr bool is_valid(dtype t) noexcept {
  return static_cast<std::uint8_t>(t) <= static_cast<std::uint8_t>(dtype::u8);
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
    case dtype::f32: break;
  }
  return fn(std::type_identity<float>{});
}

//! dtype_of<T> maps a C++ element type to its dtype; a type tutti does not carry fails to compile.
template <class T> struct dtype_of_t {
  static_assert(sizeof(T) == 0, "tutti: this element type has no tutti::dtype "
                                "(supported: float, double, half, bfloat16, int8_t, int32_t, int64_t, uint8_t)");
};
template <> struct dtype_of_t<float> : std::integral_constant<dtype, dtype::f32> {};
template <> struct dtype_of_t<double> : std::integral_constant<dtype, dtype::f64> {};
template <> struct dtype_of_t<half> : std::integral_constant<dtype, dtype::f16> {};
template <> struct dtype_of_t<bfloat16> : std::integral_constant<dtype, dtype::bf16> {};
template <> struct dtype_of_t<std::int8_t> : std::integral_constant<dtype, dtype::i8> {};
template <> struct dtype_of_t<std::int32_t> : std::integral_constant<dtype, dtype::i32> {};
template <> struct dtype_of_t<std::int64_t> : std::integral_constant<dtype, dtype::i64> {};
template <> struct dtype_of_t<std::uint8_t> : std::integral_constant<dtype, dtype::u8> {};
template <class T> inline constexpr dtype dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

}  // namespace tutti
