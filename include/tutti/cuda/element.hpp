//! @file element.hpp  The per-element operations of tutti's CUDA kernels, host-device, shared with the CPU reference executor.
//!
//! An element type is float, tutti::half or tutti::bfloat16; in memory the 16-bit ones are read and
//! written as their bit patterns (std::uint16_t), so device code never touches the structs' host
//! constructors. Every operation rounds exactly as the CPU codecs do: the conversions are
//! core/half.hpp's and core/bfloat16.hpp's, the products and sums core/host_device.hpp's _rn ones.
//! Includes no CUDA header (g++ compiles it for the host tests).
#pragma once
#include <cstdint>

#include "tutti/core/bfloat16.hpp"
#include "tutti/core/half.hpp"
#include "tutti/core/host_device.hpp"

namespace tutti::cuda::inline v0_1 {

//! Widening to fp32 and rounding back, per element type. The primary template exists only to fail.
template <class T>
struct element {
  static_assert(sizeof(T) == 0, "tutti::cuda: an element type is float, tutti::half or tutti::bfloat16");
};

template <>
struct element<float> {
  using storage = float;  //!< how the kernels read and write it
  [[nodiscard]] TUTTI_HOST_DEVICE static float widen(float x) noexcept { return x; }
  [[nodiscard]] TUTTI_HOST_DEVICE static float narrow(float y) noexcept { return y; }
  //! Exponent all ones: an infinity or a NaN.
  [[nodiscard]] TUTTI_HOST_DEVICE static bool nonfinite(float x) noexcept {
    return (tutti::detail::float_as_bits(x) & 0x7f800000u) == 0x7f800000u;
  }
};

template <>
struct element<half> {
  using storage = std::uint16_t;
  [[nodiscard]] TUTTI_HOST_DEVICE static float widen(std::uint16_t b) noexcept { return half_bits_to_float(b); }
  [[nodiscard]] TUTTI_HOST_DEVICE static std::uint16_t narrow(float y) noexcept { return float_to_half_bits(y); }
  [[nodiscard]] TUTTI_HOST_DEVICE static bool nonfinite(std::uint16_t b) noexcept { return (b & 0x7c00u) == 0x7c00u; }
};

template <>
struct element<bfloat16> {
  using storage = std::uint16_t;
  [[nodiscard]] TUTTI_HOST_DEVICE static float widen(std::uint16_t b) noexcept { return bfloat16_bits_to_float(b); }
  [[nodiscard]] TUTTI_HOST_DEVICE static std::uint16_t narrow(float y) noexcept { return float_to_bfloat16_bits(y); }
  [[nodiscard]] TUTTI_HOST_DEVICE static bool nonfinite(std::uint16_t b) noexcept { return (b & 0x7f80u) == 0x7f80u; }
};

template <class T>
using storage_t = typename element<T>::storage;

//! Pack: a tensor element x of type T to the fusion buffer's type W, as narrow(widen(x) * scale):
//! for a float tensor exactly codec::fp16 / codec::bf16's encode of x with that scale.
template <class T, class W>
[[nodiscard]] TUTTI_HOST_DEVICE storage_t<W> pack_element(storage_t<T> x, float scale) noexcept {
  return element<W>::narrow(tutti::detail::mul_rn(element<T>::widen(x), scale));
}

//! Unpack: a fusion-buffer element w of type W back to the tensor's type T, times scale.
template <class T, class W>
[[nodiscard]] TUTTI_HOST_DEVICE storage_t<T> unpack_element(storage_t<W> w, float scale) noexcept {
  return element<T>::narrow(tutti::detail::mul_rn(element<W>::widen(w), scale));
}

//! Unpack into the tensor's existing value: old + w * scale in fp32, rounded once more to T.
template <class T, class W>
[[nodiscard]] TUTTI_HOST_DEVICE storage_t<T> unpack_accumulate_element(storage_t<T> old, storage_t<W> w,
                                                                      float scale) noexcept {
  return element<T>::narrow(tutti::detail::add_rn(element<T>::widen(old), tutti::detail::mul_rn(element<W>::widen(w), scale)));
}

//! The codecs' receive step: an fp32 accumulator plus a widened 16-bit wire element
//! (codec::fp16 / codec::bf16's decode_add).
template <class W>
[[nodiscard]] TUTTI_HOST_DEVICE float decode_reduce_element(float acc, storage_t<W> w) noexcept {
  return tutti::detail::add_rn(acc, element<W>::widen(w));
}

}  // namespace tutti::cuda::inline v0_1
