//! @file dtype_test.cpp  dtype vocabulary (size_of, name_of, is_floating, dtype_of, visit) and tensor_view.
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tutti/core/dtype.hpp"
#include "tutti/core/tensor_view.hpp"

namespace {

using tutti::bfloat16;
using tutti::dtype;
using tutti::half;

struct expected_dtype {
  dtype type;
  std::size_t size;
  std::string_view name;
  bool floating;
};
// Written out by hand from nccl-tests' names and the C++ sizes, not derived from the header.
constexpr expected_dtype table[] = {
    {dtype::f32, 4, "float", true},   {dtype::f64, 8, "double", true},  {dtype::f16, 2, "half", true},
    {dtype::bf16, 2, "bfloat16", true}, {dtype::i8, 1, "int8", false},  {dtype::i32, 4, "int32", false},
    {dtype::i64, 8, "int64", false},  {dtype::u8, 1, "uint8", false},  {dtype::i16, 2, "int16", false},
    {dtype::u32, 4, "uint32", false}, {dtype::u64, 8, "uint64", false},
};

// Everything below is also checked at compile time: these are constexpr / type-level facts.
static_assert(tutti::size_of(dtype::f64) == 8 && tutti::size_of(dtype::bf16) == 2 && tutti::size_of(dtype::u8) == 1);
static_assert(tutti::name_of(dtype::bf16) == "bfloat16");
static_assert(tutti::is_floating(dtype::f16) && !tutti::is_floating(dtype::i32));
static_assert(tutti::dtype_of<float> == dtype::f32);
static_assert(tutti::dtype_of<const double> == dtype::f64);
static_assert(tutti::dtype_of<half> == dtype::f16);
static_assert(tutti::dtype_of<const bfloat16> == dtype::bf16);
static_assert(tutti::dtype_of<std::int8_t> == dtype::i8);
static_assert(tutti::dtype_of<std::int32_t> == dtype::i32);
static_assert(tutti::dtype_of<std::int64_t> == dtype::i64);
static_assert(tutti::dtype_of<std::uint8_t> == dtype::u8);
// Every standard integer type by its size and signedness, whatever its name (issue 13, point 4).
static_assert(tutti::dtype_of<std::int16_t> == dtype::i16 && tutti::dtype_of<short> == dtype::i16);
static_assert(tutti::dtype_of<std::uint32_t> == dtype::u32 && tutti::dtype_of<unsigned> == dtype::u32);
static_assert(tutti::dtype_of<std::uint64_t> == dtype::u64 && tutti::dtype_of<unsigned long long> == dtype::u64);
static_assert(tutti::dtype_of<long long> == dtype::i64 && tutti::dtype_of<long> == tutti::dtype_of<std::int64_t>);
static_assert(tutti::dtype_of<int> == dtype::i32 && tutti::dtype_of<signed char> == dtype::i8);
static_assert(tutti::dtype_of<unsigned char> == dtype::u8 && tutti::dtype_of<const unsigned long> == dtype::u64);
static_assert(tutti::dtype_of<char> == (std::is_signed_v<char> ? dtype::i8 : dtype::u8));
static_assert(tutti::is_unsigned(dtype::u32) && !tutti::is_unsigned(dtype::i16) && !tutti::is_unsigned(dtype::f32));
static_assert(std::is_trivially_copyable_v<half> && std::is_trivially_copyable_v<bfloat16>);
// A const view can be made from a mutable one, never the other way round.
static_assert(std::is_convertible_v<tutti::tensor_view, tutti::const_tensor_view>);
static_assert(!std::is_convertible_v<tutti::const_tensor_view, tutti::tensor_view>);
static_assert(std::is_convertible_v<std::span<float>, tutti::tensor_view>);
static_assert(std::is_convertible_v<std::span<const float>, tutti::const_tensor_view>);
static_assert(!std::is_constructible_v<tutti::tensor_view, std::span<const float>>);

}  // namespace

TEST_CASE("size_of, name_of and is_floating for every dtype") {
  REQUIRE(tutti::all_dtypes.size() == std::size(table));
  for (const auto& e : table) {
    CAPTURE(e.name);
    CHECK(tutti::size_of(e.type) == e.size);
    CHECK(tutti::name_of(e.type) == e.name);
    CHECK(tutti::is_floating(e.type) == e.floating);
    CHECK(tutti::is_valid(e.type));
  }
  // all_dtypes lists each dtype exactly once.
  for (const auto& e : table) {
    int seen = 0;
    for (dtype t : tutti::all_dtypes) seen += t == e.type ? 1 : 0;
    CHECK(seen == 1);
  }
  CHECK_FALSE(tutti::is_valid(static_cast<dtype>(11)));
  CHECK_FALSE(tutti::is_valid(static_cast<dtype>(255)));
}

TEST_CASE("visit calls back with the C++ type of each dtype") {
  for (const auto& e : table) {
    CAPTURE(e.name);
    // visit returns what the callback returns; both facts must round-trip through the C++ type.
    const dtype back = tutti::visit(e.type, [](auto id) { return tutti::dtype_of<typename decltype(id)::type>; });
    CHECK(back == e.type);
    const std::size_t size = tutti::visit(e.type, [](auto id) { return sizeof(typename decltype(id)::type); });
    CHECK(size == e.size);
    const bool floating = tutti::visit(e.type, [](auto id) {
      using T = typename decltype(id)::type;
      return std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
    });
    CHECK(floating == e.floating);
  }
  // Specific pairs, by type identity rather than by round-tripping.
  CHECK(tutti::visit(dtype::f16, [](auto id) { return std::is_same_v<typename decltype(id)::type, half>; }));
  CHECK(tutti::visit(dtype::bf16, [](auto id) { return std::is_same_v<typename decltype(id)::type, bfloat16>; }));
  CHECK(tutti::visit(dtype::u8, [](auto id) { return std::is_same_v<typename decltype(id)::type, std::uint8_t>; }));
  CHECK(tutti::visit(dtype::i8, [](auto id) { return std::is_same_v<typename decltype(id)::type, std::int8_t>; }));
  CHECK(tutti::visit(dtype::f32, [](auto id) { return std::is_same_v<typename decltype(id)::type, float>; }));
}

TEST_CASE("visit can return a reference (decltype(auto))") {
  static int target = 0;
  int& r = tutti::visit(dtype::i32, [](auto) -> int& { return target; });
  r = 7;
  CHECK(target == 7);
}

TEST_CASE("tensor_view from std::span: data, count, bytes and type") {
  std::vector<double> d(7, 1.0);
  tutti::tensor_view v = std::span<double>(d);
  CHECK(v.data == d.data());
  CHECK(v.count == 7);
  CHECK(v.type == dtype::f64);
  CHECK(v.bytes() == 56);
  CHECK(static_cast<void*>(v.bytes_ptr()) == static_cast<void*>(d.data()));
  static_assert(std::is_same_v<decltype(v.bytes_ptr()), std::byte*>);

  std::array<half, 1009> h{};
  tutti::tensor_view hv = std::span<half>(h);
  CHECK(hv.count == 1009);
  CHECK(hv.type == dtype::f16);
  CHECK(hv.bytes() == 2018);

  std::array<std::uint8_t, 3> u{};
  tutti::tensor_view uv = std::span<std::uint8_t>(u);
  CHECK(uv.type == dtype::u8);
  CHECK(uv.bytes() == 3);

  std::array<bfloat16, 5> b{};
  tutti::tensor_view bv = std::span<bfloat16>(b);
  CHECK(bv.type == dtype::bf16);
  CHECK(bv.count == 5);
  CHECK(bv.bytes() == 10);

  std::vector<std::int64_t> empty;
  tutti::tensor_view ev = std::span<std::int64_t>(empty);
  CHECK(ev.count == 0);
  CHECK(ev.bytes() == 0);
  CHECK(ev.type == dtype::i64);
}

TEST_CASE("tensor_view from a fixed-extent std::span (what std::span(array) and std::span(c_array) give)") {
  // Checked at run time rather than with static_assert so that, while the conversion is missing,
  // this fails as one test instead of breaking the build of the whole folder.
  CHECK(std::is_convertible_v<std::span<float, 4>, tutti::tensor_view>);
  CHECK(std::is_convertible_v<std::span<const float, 4>, tutti::const_tensor_view>);
  CHECK(std::is_convertible_v<std::span<float, 4>, tutti::const_tensor_view>);
  CHECK_FALSE(std::is_convertible_v<std::span<const float, 4>, tutti::tensor_view>);
}

TEST_CASE("tensor_view: default and explicit construction") {
  tutti::tensor_view def;
  CHECK(def.data == nullptr);
  CHECK(def.count == 0);
  CHECK(def.bytes() == 0);

  std::int32_t x[4] = {};
  tutti::tensor_view v(x, 4, dtype::i32);
  CHECK(v.data == x);
  CHECK(v.bytes() == 16);
  // The count is in elements of the stated type, whatever the buffer really holds.
  tutti::tensor_view as_bytes(x, 16, dtype::u8);
  CHECK(as_bytes.bytes() == 16);
  CHECK(as_bytes.count == 16);
}

TEST_CASE("const_tensor_view from a const span and from a tensor_view") {
  const std::vector<float> f = {1.f, 2.f, 3.f};
  tutti::const_tensor_view cv = std::span<const float>(f);
  CHECK(cv.data == f.data());
  CHECK(cv.count == 3);
  CHECK(cv.type == dtype::f32);
  CHECK(cv.bytes() == 12);
  static_assert(std::is_same_v<decltype(cv.bytes_ptr()), const std::byte*>);
  CHECK(static_cast<const void*>(cv.bytes_ptr()) == static_cast<const void*>(f.data()));

  std::vector<std::int8_t> m(11);
  tutti::tensor_view mv = std::span<std::int8_t>(m);
  tutti::const_tensor_view from_mutable = mv;
  CHECK(from_mutable.data == m.data());
  CHECK(from_mutable.count == 11);
  CHECK(from_mutable.type == dtype::i8);
  CHECK(from_mutable.bytes() == 11);

  // A mutable span converts straight to a const view as well.
  tutti::const_tensor_view direct = std::span<std::int8_t>(m);
  CHECK(direct.data == m.data());
  CHECK(direct.type == dtype::i8);
}
