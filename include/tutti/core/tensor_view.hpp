//! @file tensor_view.hpp  A typed-at-runtime view of contiguous elements: what collectives move.
#pragma once
#include <cstddef>
#include <ranges>
#include <span>
#include <type_traits>

#include "tutti/core/dtype.hpp"

namespace tutti {

//! Non-owning (pointer, count, dtype). Counts are in elements, never bytes, so a count
//! mismatch between ranks can be reported in the user's own units.
template <class Byte>
struct basic_tensor_view {
  Byte* data = nullptr;
  std::size_t count = 0;
  dtype type = dtype::f32;

  basic_tensor_view() = default;
  basic_tensor_view(Byte* d, std::size_t n, dtype t) noexcept : data(d), count(n), type(t) {}
  template <class T, std::size_t Extent>
    requires(std::is_const_v<Byte> || !std::is_const_v<T>)
  basic_tensor_view(std::span<T, Extent> s) noexcept  // NOLINT: implicit from a typed span is the point
      : data(s.data()), count(s.size()), type(dtype_of<T>) {}
  //! a mutable view converts to a const one
  template <class B>
    requires(std::is_const_v<Byte> && !std::is_const_v<B>)
  basic_tensor_view(basic_tensor_view<B> v) noexcept : data(v.data), count(v.count), type(v.type) {}

  [[nodiscard]] std::size_t bytes() const noexcept { return count * size_of(type); }
  [[nodiscard]] auto* bytes_ptr() const noexcept {
    if constexpr (std::is_const_v<Byte>) return static_cast<const std::byte*>(data);
    else return static_cast<std::byte*>(data);
  }
};

using tensor_view = basic_tensor_view<void>;              //!< writable elements
using const_tensor_view = basic_tensor_view<const void>;  //!< read-only elements

//! The view of a contiguous range of elements (a std::vector<float>, a std::array, a span).
template <std::ranges::contiguous_range R>
[[nodiscard]] tensor_view view_of(R& r) noexcept { return tensor_view(std::span(std::ranges::data(r), std::ranges::size(r))); }
template <std::ranges::contiguous_range R>
[[nodiscard]] const_tensor_view const_view_of(const R& r) noexcept {
  return const_tensor_view(std::span(std::ranges::data(r), std::ranges::size(r)));
}

}  // namespace tutti
