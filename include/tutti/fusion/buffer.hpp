//! @file buffer.hpp  fusion_buffer: many tensors of one dtype packed into one aligned buffer and back.
//!
//! Each tensor starts on a 64-byte boundary (a cache line: the copies and the collective's element
//! loops stay aligned, and no two tensors share a line). The gaps are zeroed on pack, so the buffer's
//! bytes depend only on the tensors: a sum over padding is zero and a codec sees the same block on
//! every rank. A scale can be fused into either copy (one pass over memory each way): pack multiplies
//! (a loss scale, a 1/world pre-scale), unpack divides by a rank count exactly as op::avg's finish
//! does (so sum-then-unpack-dividing gives the bits of an avg allreduce) and/or multiplies.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tutti/core/bfloat16.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/half.hpp"
#include "tutti/core/reduce.hpp"
#include "tutti/core/tensor_view.hpp"

namespace tutti::fusion {

namespace detail {

//! out[i] = in[i] / divisor * scale in T (float for the 16-bit types); one pass, vectorisable.
template <class T>
void scaled_copy_loop(void* out, const void* in, std::size_t n, double scale, int divisor) noexcept {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(in);
  const T d = static_cast<T>(divisor), s = static_cast<T>(scale);
  if (divisor != 1 && scale != 1.0)
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] / d * s;
  else if (divisor != 1)
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] / d;
  else
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] * s;
}

template <void (*Widen)(const std::uint16_t*, float*, std::size_t),
          void (*Narrow)(const float*, std::uint16_t*, std::size_t)>
void scaled_copy_loop_16(void* out, const void* in, std::size_t n, double scale, int divisor) noexcept {
  constexpr std::size_t block = 512;
  alignas(64) float f[block];
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(in);
  for (std::size_t i = 0; i < n; i += block) {
    const std::size_t m = std::min(block, n - i);
    Widen(x + i, f, m);
    scaled_copy_loop<float>(f, f, m, scale, divisor);
    Narrow(f, o + i, m);
  }
}

}  // namespace detail

//! Copies n elements of t from in to out, dividing by `divisor` (as op::avg's finish does: integers
//! truncate toward zero) and multiplying by `scale`. Integer types take no scale other than 1.
inline void scaled_copy(dtype t, void* out, const void* in, std::size_t n, double scale = 1.0, int divisor = 1) {
  if (n == 0) return;
  if (scale == 1.0 && divisor == 1) {
    if (out != in) std::memcpy(out, in, n * size_of(t));
    return;
  }
  switch (t) {
    case dtype::f32: return detail::scaled_copy_loop<float>(out, in, n, scale, divisor);
    case dtype::f64: return detail::scaled_copy_loop<double>(out, in, n, scale, divisor);
    case dtype::f16: return detail::scaled_copy_loop_16<half_to_float_n, float_to_half_n>(out, in, n, scale, divisor);
    case dtype::bf16:
      return detail::scaled_copy_loop_16<bfloat16_to_float_n, float_to_bfloat16_n>(out, in, n, scale, divisor);
    default:
      if (scale != 1.0)
        throw invalid_argument("fusion_buffer: a scale of " + std::to_string(scale) + " cannot apply to dtype " +
                               std::string(name_of(t)) + " (integers take only an averaging divisor)");
      if (out != in) std::memcpy(out, in, n * size_of(t));
      finish_avg(t, out, n, divisor);
  }
}

class fusion_buffer {
 public:
  static constexpr std::size_t alignment = 64;  //!< bytes; every tensor starts on such a boundary

  //! Lays out tensors of `counts` elements of `t` and makes room; returns the buffer's element count.
  std::size_t layout(dtype t, std::span<const std::size_t> counts) {
    const std::size_t element = size_of(t), step = alignment / std::min(element, alignment);
    type_ = t;
    offsets_.resize(counts.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      at = (at + step - 1) / step * step;
      offsets_[i] = at;
      at += counts[i];
    }
    counts_.assign(counts.begin(), counts.end());
    elements_ = at;
    reserve(at * element);
    return at;
  }

  //! Lays the tensors out and copies them in, multiplied by `scale`; the gaps become zero.
  //! Every tensor must have the buffer's dtype.
  void pack(std::span<const const_tensor_view> tensors, double scale = 1.0) {
    if (tensors.empty()) {
      elements_ = 0;
      offsets_.clear();
      counts_.clear();
      return;
    }
    counts_scratch_.clear();  // (clear + push_back: GCC 12 warns, falsely, on resize here)
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      check_type(tensors[i].type, tensors.front().type, i, "pack");
      counts_scratch_.push_back(tensors[i].count);
    }
    layout(tensors.front().type, counts_scratch_);
    const std::size_t element = size_of(type_);
    std::size_t end = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      std::memset(data() + end * element, 0, (offsets_[i] - end) * element);
      scaled_copy(type_, data() + offsets_[i] * element, tensors[i].data, tensors[i].count, scale);
      end = offsets_[i] + tensors[i].count;
    }
  }

  //! Copies the buffer's tensors out (same order and counts as the last layout or pack), divided by
  //! `divisor` and multiplied by `scale`.
  void unpack(std::span<const tensor_view> tensors, double scale = 1.0, int divisor = 1) const {
    if (tensors.size() != counts_.size())
      throw invalid_argument("fusion_buffer::unpack: " + std::to_string(tensors.size()) +
                             " tensors given, but the buffer holds " + std::to_string(counts_.size()));
    const std::size_t element = size_of(type_);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      check_type(tensors[i].type, type_, i, "unpack");
      if (tensors[i].count != counts_[i])
        throw invalid_argument("fusion_buffer::unpack: tensor " + std::to_string(i) + " has " +
                               std::to_string(tensors[i].count) + " elements, but " + std::to_string(counts_[i]) +
                               " were packed");
      scaled_copy(type_, tensors[i].data, data() + offsets_[i] * element, counts_[i], scale, divisor);
    }
  }

  [[nodiscard]] std::byte* data() const noexcept { return storage_.get(); }
  [[nodiscard]] dtype type() const noexcept { return type_; }
  [[nodiscard]] std::size_t elements() const noexcept { return elements_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return elements_ * size_of(type_); }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t offset(std::size_t i) const { return offsets_.at(i); }  //!< in elements
  [[nodiscard]] tensor_view view() const noexcept { return {data(), elements_, type_}; }

  //! Gives the memory back (the engine calls it only between collectives, never during one).
  void release() noexcept {
    storage_.reset();
    capacity_ = elements_ = 0;
  }

 private:
  static void check_type(dtype got, dtype want, std::size_t i, const char* what) {
    if (got != want)
      throw invalid_argument("fusion_buffer::" + std::string(what) + ": tensor " + std::to_string(i) + " has dtype " +
                             std::string(name_of(got)) + ", but the buffer holds " + std::string(name_of(want)) +
                             " (fuse one dtype per buffer)");
  }

  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) return;
    const std::size_t rounded = (bytes + 4095) & ~std::size_t{4095};
    storage_.reset(static_cast<std::byte*>(::operator new(rounded, std::align_val_t{alignment})));
    capacity_ = rounded;
  }

  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{alignment}); }
  };
  std::unique_ptr<std::byte, aligned_delete> storage_;
  std::size_t capacity_ = 0, elements_ = 0;
  dtype type_ = dtype::f32;
  std::vector<std::size_t> offsets_, counts_, counts_scratch_;
};

}  // namespace tutti::fusion
