//! @file arithmetic_test.cpp  The kernels' per-element arithmetic, run on the CPU by the reference executor, equals the CPU codecs bit for bit; the non-finite flag.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "cuda/tensor_lists.hpp"
#include "tutti/codec/float16.hpp"
#include "tutti/codec/int8.hpp"
#include "tutti/cuda/multi_tensor.hpp"

namespace {

using tutti::dtype;
namespace tc = tutti::cuda;

std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n) {
  std::vector<float> v(n);
  tutti_test::fill_random(rng, v.data(), 4, n);
  return v;
}

//! Elements whose bytes differ, except that any two float NaNs match: IEEE 754 leaves the payload
//! of an operation on two NaNs open, and a vectorised loop may commute an addition.
template <class S>
std::size_t mismatches(const std::vector<S>& a, const std::vector<S>& b) {
  REQUIRE(a.size() == b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<S, float>)
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    n += std::memcmp(&a[i], &b[i], sizeof(S)) != 0;
  }
  return n;
}

//! The reference executor's pack of one f32 tensor into a 16-bit buffer (one table, one tensor).
std::vector<std::uint16_t> reference_pack16(const std::vector<float>& in, dtype wire, float scale, int* flag = nullptr) {
  std::vector<std::uint16_t> out(in.size());
  const tc::tensor_desc t{in.data(), in.size(), 0};
  const tc::multi_tensor_layout layout{dtype::f32, wire, out.data(), 64};
  tc::reference::pack(layout, tc::make_table({&t, 1}, layout), scale, flag);
  return out;
}

template <class Codec>
std::vector<std::uint16_t> codec_encode16(const std::vector<float>& in, float scale) {
  std::vector<std::uint16_t> out(in.size());
  Codec::encode(in.data(), in.size(), scale, reinterpret_cast<std::byte*>(out.data()));
  return out;
}

//! A deliberately broken narrowing: truncation instead of round-to-nearest-even in fp16's normal
//! range (clearing the 13 bits fp16 drops makes the float exactly representable, so rounding it
//! is truncating the original).
std::uint16_t truncating_half(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t truncated = u & ~0x1fffu;
  float t;
  std::memcpy(&t, &truncated, 4);
  const bool normal = std::isfinite(f) && std::fabs(f) >= 0x1p-14f && std::fabs(f) < 65504.0f;
  return tutti::float_to_half_bits(normal ? t : f);
}

}  // namespace

TEST_CASE("arithmetic: pack of f32 to f16 / bf16 equals codec::fp16 / bf16 encode bit for bit") {
  std::mt19937_64 rng(16);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}})
    for (float scale : {1.0f, 0.125f, 3.0f}) {
      const auto in = random_floats(rng, n);
      CAPTURE(n);
      CAPTURE(scale);
      CHECK(mismatches(reference_pack16(in, dtype::f16, scale), codec_encode16<tutti::codec::fp16>(in, scale)) == 0);
      CHECK(mismatches(reference_pack16(in, dtype::bf16, scale), codec_encode16<tutti::codec::bf16>(in, scale)) == 0);
    }
}

TEST_CASE("arithmetic: the comparison catches a narrowing that truncates instead of rounding") {
  std::mt19937_64 rng(17);
  const auto in = random_floats(rng, 100000);
  const auto good = codec_encode16<tutti::codec::fp16>(in, 1.0f);
  std::vector<std::uint16_t> broken(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) broken[i] = truncating_half(in[i]);
  // About half of the normal-range inputs round up; all of those come out one ulp low.
  CHECK(mismatches(broken, good) > in.size() / 8);
  CHECK(mismatches(reference_pack16(in, dtype::f16, 1.0f), broken) > in.size() / 8);
}

TEST_CASE("arithmetic: decode_reduce equals codec::fp16 / bf16 decode_add bit for bit (NaN as NaN), every 16-bit pattern") {
  std::mt19937_64 rng(18);
  std::vector<std::uint16_t> wire(65536);
  for (std::size_t i = 0; i < wire.size(); ++i) wire[i] = static_cast<std::uint16_t>(i);
  const auto acc0 = random_floats(rng, wire.size());
  for (dtype t : {dtype::f16, dtype::bf16}) {
    auto ours = acc0, theirs = acc0;
    tc::reference::decode_reduce(t, wire.data(), ours.data(), wire.size());
    const auto* bytes = reinterpret_cast<const std::byte*>(wire.data());
    if (t == dtype::f16)
      tutti::codec::fp16::decode_add(bytes, wire.size(), theirs.data());
    else
      tutti::codec::bf16::decode_add(bytes, wire.size(), theirs.data());
    CHECK(mismatches(ours, theirs) == 0);
  }
  float acc = 0;
  CHECK_THROWS_AS(tc::reference::decode_reduce(dtype::f32, wire.data(), &acc, 1), tutti::invalid_argument);
}

TEST_CASE("arithmetic: int8 quantise / dequantise equal codec::int8 encode / decode / decode_add bit for bit") {
  using codec = tutti::codec::int8;
  std::mt19937_64 rng(19);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                        std::size_t{1000}, std::size_t{65537}})
    for (int variant = 0; variant < 3; ++variant) {
      CAPTURE(n);
      CAPTURE(variant);
      std::vector<float> in(n);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (float& x : in) x = normal(rng) * (variant == 2 ? 0x1p-124f : 1.0f);  // 2: subnormal scales
      if (variant == 1 && n > 300) {
        in[3] = std::numeric_limits<float>::infinity();
        in[290] = std::numeric_limits<float>::quiet_NaN();
      }
      const std::size_t bytes = codec::encoded_bytes(dtype::f32, n);
      std::vector<std::byte> ours(bytes + 1), theirs(bytes + 1);  // +1: an unaligned wire below
      for (std::size_t shift : {0, 1}) {
        tc::reference::int8_quantise(in.data(), n, 0.5f, ours.data() + shift);
        codec::encode(in.data(), n, 0.5f, theirs.data() + shift);
        CHECK(std::memcmp(ours.data() + shift, theirs.data() + shift, bytes) == 0);
      }
      std::vector<float> out_ours = in, out_theirs = in;
      tc::reference::int8_dequantise(theirs.data() + 1, n, out_ours.data());
      codec::decode(theirs.data() + 1, n, out_theirs.data());
      CHECK(mismatches(out_ours, out_theirs) == 0);
      out_ours = in;
      out_theirs = in;
      tc::reference::int8_dequantise(theirs.data() + 1, n, out_ours.data(), true);
      codec::decode_add(theirs.data() + 1, n, out_theirs.data());
      CHECK(mismatches(out_ours, out_theirs) == 0);
    }
}

TEST_CASE("arithmetic: an int8 block's values stay in [-127, 127] for every block maximum, subnormal scales included") {
  namespace arith = tutti::codec::int8_arith;
  // Every maximum below 2^-103 (the subnormal scales and the reciprocals that overflow), then
  // every 4099th pattern up to the largest finite float.
  const auto check = [](std::uint32_t bits) {
    const arith::block_scale s = arith::scale_of_block(bits);
    float top;
    std::memcpy(&top, &bits, 4);
    const float r = top * s.inverse;
    if (!(std::isfinite(s.inverse) && r <= 127.5f)) return false;
    const int q = arith::quantise(top, s.inverse), qn = arith::quantise(-top, s.inverse);
    // A normal scale puts the maximum at 127; a subnormal one may put it lower, never above.
    const bool normal_scale = s.scale >= 0x1p-126f;
    return q == -qn && q >= 0 && q <= 127 && (!normal_scale || q == 127);
  };
  std::size_t bad = 0;
  for (std::uint32_t bits = 0; bits < (0x0cu << 23); ++bits) bad += !check(bits);
  for (std::uint64_t bits = 0x0cu << 23; bits < 0x7f800000u; bits += 4099) bad += !check(static_cast<std::uint32_t>(bits));
  CHECK(bad == 0);
  CHECK(check(0x7f7fffffu));
  CHECK_FALSE(arith::scale_of_block(0x7f800000u).finite);  // infinity
  CHECK(std::isnan(arith::scale_of_block(0x7fc00001u).scale));
}

TEST_CASE("arithmetic: the non-finite flag is raised by an infinity, a NaN or an fp16 overflow, and only then") {
  std::vector<float> in = {1.0f, -2.5f, 65504.0f, 1e-30f};
  int flag = 0;
  (void)reference_pack16(in, dtype::f16, 1.0f, &flag);
  CHECK(flag == 0);
  in.push_back(65520.0f);  // rounds to fp16 infinity
  (void)reference_pack16(in, dtype::f16, 1.0f, &flag);
  CHECK(flag == 1);
  flag = 0;
  (void)reference_pack16(in, dtype::bf16, 1.0f, &flag);  // fine in bfloat16
  CHECK(flag == 0);
  (void)reference_pack16(in, dtype::f16, 0.5f, &flag);  // the scale brings it back in range
  CHECK(flag == 0);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    flag = 0;
    std::vector<float> with = {0.0f, bad};
    (void)reference_pack16(with, dtype::bf16, 1.0f, &flag);
    CHECK(flag == 1);
  }
  flag = 1;  // never reset: the caller clears it once per step
  (void)reference_pack16({1.0f}, dtype::f16, 1.0f, &flag);
  CHECK(flag == 1);
  (void)reference_pack16(in, dtype::f16, 1.0f, nullptr);  // no flag, no check
}
