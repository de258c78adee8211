//! @file native_codecs_reference.hpp  What algorithm::native's lossy allreduce must produce, computed
//! on the host: the owner schedule's exact bits, and the written bound of native_wire_sum's 16-bit
//! NCCL sum. Shared by the host tests (g++) and the GPU test (nvcc).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include <tutti/algorithm/native_codecs_layout.hpp>
#include <tutti/codec/concepts.hpp>
#include <tutti/core/dtype.hpp>
#include <tutti/core/op.hpp>

namespace tutti::testing {

//! The owner schedule's result, bit for bit, for inputs x[r] (every rank's tensor): per segment p,
//! the owner's x[p] * s in fp32, plus decode(encode(x[q] * s)) for q = p-1, p-2, ... in fp32
//! (native_codecs::contributor), then decode(encode(sum)). The CPU ring schedule
//! (algorithm/compressed.hpp) computes each element in this order too.
template <class Codec>
std::vector<float> owner_reference(const std::vector<std::vector<float>>& x, std::size_t count, op o) {
  namespace nc = algorithm::native_codecs;
  const int n = static_cast<int>(x.size());
  const float s = o == op::avg ? 1.0f / static_cast<float>(n) : 1.0f;
  const auto wire = [](std::size_t e) { return Codec::encoded_bytes(dtype::f32, e); };
  const nc::owner_layout l = nc::make_owner_layout(count, n, 0, codec_granule<Codec>(), false, wire);
  std::vector<float> out(count), acc;
  std::vector<std::byte> bytes;
  for (int p = 0; p < n; ++p) {
    const nc::piece seg = l.at(p);
    if (!seg.size) continue;
    acc.resize(seg.size);
    bytes.resize(wire(seg.size));
    for (std::size_t i = 0; i < seg.size; ++i) acc[i] = x[static_cast<std::size_t>(p)][seg.first + i] * s;
    for (int step = 1; step < n; ++step) {
      const int q = nc::contributor(p, step, n);
      Codec::encode(x[static_cast<std::size_t>(q)].data() + seg.first, seg.size, s, bytes.data());
      Codec::decode_add(bytes.data(), seg.size, acc.data());
    }
    Codec::encode(acc.data(), seg.size, 1.0f, bytes.data());
    Codec::decode(bytes.data(), seg.size, out.data() + seg.first);
  }
  return out;
}

//! Unit roundoff and absolute underflow error of a 16-bit wire's sums: fp16 (11 significant bits,
//! subnormal spacing 2^-24) or bf16 (8 bits, fp32's range).
struct sum16_rounding {
  double u, underflow;
};

//! native_wire_sum's written bound on |out[k] - y[k]|, y = sum_i x_i[k] s exactly:
//!
//!   sum_i E(x_i s) + (n + 2) u32 sum_i (|x_i s| + E_i) + g(n-1) sum_i (|x_i s| + E_i) + (n - 1) a
//!
//! E the codec's one-round-trip bound (each contribution is packed once, the product x_i s rounded
//! in fp32 first: the second term, as in the owner schedule's bound), then NCCL adds the n packed
//! values with n - 1 additions, each rounded to the 16-bit format, in an order it chooses (ring,
//! tree, NVLS): a recursive sum's error is at most g(n-1) = (n-1)u16 / (1 - (n-1)u16) times the sum
//! of the magnitudes, plus half the subnormal spacing `a` per rounding near zero. Unpacking widens
//! exactly. Against the owner schedule's bound, the g(n-1) term replaces one output rounding: it
//! grows with the world size. Assumes no overflow (fp16's sums stay below 65504: avg scales first).
template <class Codec>
std::vector<double> wire_sum_bound(const std::vector<std::vector<float>>& x, std::size_t count, op o,
                                   sum16_rounding r16) {
  const int n = static_cast<int>(x.size());
  const double s = o == op::avg ? 1.0 / n : 1.0, u32 = 0x1p-24;
  const double m = n - 1, g = m * r16.u / (1 - m * r16.u);
  std::vector<double> bound(count);
  for (std::size_t k = 0; k < count; ++k) {
    double encoding = 0, magnitude = 0;
    for (int i = 0; i < n; ++i) {
      const float y = static_cast<float>(x[static_cast<std::size_t>(i)][k] * s);
      encoding += Codec::max_error(y, std::fabs(y));
      magnitude += std::fabs(static_cast<double>(x[static_cast<std::size_t>(i)][k]) * s);
    }
    bound[k] = (encoding + (n + 2) * u32 * (magnitude + encoding) + g * (magnitude + encoding) + m * r16.underflow) *
               (1 + 0x1p-20);
  }
  return bound;
}

}  // namespace tutti::testing
