//! @file topk.hpp  codec::topk — the k largest magnitudes of each chunk as (index, value) pairs,
//! with error feedback.
//!
//! Wire, for a chunk of n elements: k = ceil(n * PerMille / 1000) pairs (uint32 index within the
//! chunk, ascending; fp32 value), 8 bytes each — 1 % keeps 8 % of the fp32 bytes. Selection is
//! per pipelining chunk, not per tensor, so it stays in cache and the wire size follows from the
//! count alone. Values travel exactly: decode gives the kept elements bit for bit and zeros
//! elsewhere, so with error feedback (codec/error_feedback.hpp) sent + residual == v exactly.
//!
//! Sums of sparse vectors are not sparse: a topk allreduce gathers every rank's encoded
//! contribution and each rank decodes and adds all of them in fp32, in rank order, so all ranks get
//! the same bits (algorithm/compressed.hpp, gathered_allreduce). Ties in magnitude keep the lower
//! index. NaN counts as larger than any number, so a NaN gradient is sent, not hidden.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

#include "tutti/codec/concepts.hpp"

namespace tutti::codec {

template <unsigned PerMille = 10>
struct topk_of {
  static_assert(PerMille >= 1 && PerMille <= 1000, "tutti::codec::topk_of<PerMille>: keep between 1 and 1000 per mille");
  using tutti_role = role::codec;
  static constexpr std::string_view name = "topk";
  static constexpr unsigned parameter = PerMille;  //!< travels in the collective's descriptor
  static constexpr bool lossless = false;
  static constexpr bool error_feedback = true;
  static constexpr std::size_t pair_bytes = sizeof(std::uint32_t) + sizeof(float);

  [[nodiscard]] static constexpr bool accepts(dtype t) noexcept { return t == dtype::f32; }
  [[nodiscard]] static constexpr std::size_t kept(std::size_t n) noexcept { return (n * PerMille + 999) / 1000; }
  [[nodiscard]] static constexpr std::size_t encoded_bytes(dtype, std::size_t n) noexcept { return kept(n) * pair_bytes; }

  //! v = in * scale + residual; the k largest |v| go on the wire; residual = v where not sent, 0 where sent.
  static void encode(const float* in, std::size_t n, float scale, float* residual, std::byte* wire) {
    if (n == 0) return;
    thread_local std::vector<std::uint32_t> order;
    for (std::size_t i = 0; i < n; ++i) residual[i] = in[i] * scale + residual[i];
    const std::size_t k = kept(n);
    order.resize(n);
    std::iota(order.begin(), order.end(), 0u);
    const auto larger = [&](std::uint32_t a, std::uint32_t b) {
      const float x = std::fabs(residual[a]), y = std::fabs(residual[b]);
      if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
      return x > y || (!(y > x) && a < b);
    };
    if (k < n) std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end(), larger);
    std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    auto* indices = wire;
    auto* values = wire + k * sizeof(std::uint32_t);
    for (std::size_t j = 0; j < k; ++j) {
      const std::uint32_t i = order[j];
      std::memcpy(indices + j * sizeof i, &i, sizeof i);
      std::memcpy(values + j * sizeof(float), &residual[i], sizeof(float));
      residual[i] = 0.0f;  // sent exactly
    }
  }
  static void decode(const std::byte* wire, std::size_t n, float* out) noexcept {
    std::fill(out, out + n, 0.0f);
    decode_add(wire, n, out);
  }
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept {
    const std::size_t k = kept(n);
    const auto* values = wire + k * sizeof(std::uint32_t);
    for (std::size_t j = 0; j < k; ++j) {
      std::uint32_t i;
      float v;
      std::memcpy(&i, wire + j * sizeof i, sizeof i);
      std::memcpy(&v, values + j * sizeof v, sizeof v);
      if (i < n) acc[i] += v;  // a corrupt index is dropped, not written out of bounds
    }
  }
};

//! 1 % of each chunk.
using topk = topk_of<10>;

static_assert(feedback_codec_policy<topk>);

}  // namespace tutti::codec
