//! The element codecs (codec/float16.hpp, codec/int8.hpp) against their written bounds, element
//! by element, and proof that the bounds are tight enough to fail a broken codec: a truncating
//! int8 and a 16-bit running sum must both be caught.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/codec/none.hpp>
#include <tutti/codec/onebit.hpp>
#include <tutti/codec/topk.hpp>
#include <tutti/core/half.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/inproc_world.hpp>

namespace {

constexpr std::size_t counts[] = {0, 1, 7, 255, 256, 257, 1009, 100003};

//! Gradient-like values: mostly moderate, some tiny, some zero, both signs; |x| <= 60000 (fp16's range).
std::vector<float> values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 15);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int kind = static_cast<int>(gen() % 16);
    v[i] = kind == 0 ? 0.0f : mantissa(gen) * std::ldexp(1.0f, kind == 1 ? -30 : exponent(gen) / 2);
  }
  return v;
}

//! Largest |x[j] * scale| of the block holding each element (block = 0: the whole vector is one
//! block, as for fp16/bf16), computed once per block: one pass, not one per element.
std::vector<float> block_maxima(const std::vector<float>& x, std::size_t block, float scale) {
  const std::size_t size = block ? block : std::max<std::size_t>(x.size(), 1);
  std::vector<float> out(x.size());
  for (std::size_t first = 0; first < x.size(); first += size) {
    const std::size_t last = std::min(first + size, x.size());
    float m = 0;
    for (std::size_t j = first; j < last; ++j) m = std::max(m, std::fabs(x[j] * scale));
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(first), out.begin() + static_cast<std::ptrdiff_t>(last), m);
  }
  return out;
}

template <class Codec>
constexpr std::size_t block_of() {
  if constexpr (requires { Codec::block_elements; }) return Codec::block_elements;
  else return 0;
}

//! Elements of one round trip outside the codec's bound (and the first one, described).
template <class Codec>
std::size_t round_trip_violations(const std::vector<float>& x, float scale, std::string& first) {
  std::vector<std::byte> wire(Codec::encoded_bytes(tutti::dtype::f32, x.size()));
  std::vector<float> back(x.size());
  Codec::encode(x.data(), x.size(), scale, wire.data());
  Codec::decode(wire.data(), x.size(), back.data());
  std::size_t bad = 0;
  const auto maxima = block_maxima(x, block_of<Codec>(), scale);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float y = x[i] * scale;
    const float bound = Codec::max_error(y, maxima[i]);
    if (!(std::fabs(back[i] - y) <= bound)) {
      if (!bad++) first = "element " + std::to_string(i) + ": " + std::to_string(y) + " came back as " +
                          std::to_string(back[i]) + " (bound " + std::to_string(bound) + ")";
    }
  }
  return bad;
}

//! k contributions decoded and added into an fp32 accumulator (decode_add, or `Add` when given):
//! the error against the fp32 sum must stay within the sum of one round trip's bounds each plus
//! the fp32 additions' own rounding.
template <class Codec, class Add>
std::size_t accumulation_violations(int k, std::size_t n, Add&& add) {
  std::vector<float> acc(n, 0.0f);
  std::vector<double> exact(n, 0.0), bound(n, 0.0);
  std::vector<std::byte> wire(Codec::encoded_bytes(tutti::dtype::f32, n));
  for (int c = 0; c < k; ++c) {
    const auto x = values(n, 1000u + static_cast<unsigned>(c));
    Codec::encode(x.data(), n, 1.0f, wire.data());
    add(wire.data(), n, acc.data());
    const auto maxima = block_maxima(x, block_of<Codec>(), 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      exact[i] += x[i];
      bound[i] += Codec::max_error(x[i], maxima[i]) + std::fabs(exact[i]) * 0x1p-23;
    }
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += std::fabs(acc[i] - exact[i]) <= bound[i] ? 0 : 1;
  return bad;
}

//! A broken int8: truncates toward zero instead of rounding to nearest.
struct truncating_int8 : tutti::codec::int8 {
  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
    tutti::codec::int8::encode(in, n, scale, wire);
    auto* q = reinterpret_cast<std::int8_t*>(wire + blocks(n) * sizeof(float));
    for (std::size_t b = 0, i = 0; i < n; ++b, i += block_elements) {
      float s;
      std::memcpy(&s, wire + b * sizeof(float), sizeof s);
      for (std::size_t j = i; j < std::min(n, i + block_elements); ++j)
        q[j] = static_cast<std::int8_t>(s > 0 ? std::trunc(in[j] * scale / s) : 0.0f);
    }
  }
};

}  // namespace

TEST_CASE("codecs: fp16, bf16 and int8 satisfy the lossy codec concept; none is lossless") {
  CHECK(tutti::codec_policy<tutti::codec::none>);
  CHECK_FALSE(tutti::lossy_codec_policy<tutti::codec::none>);
  CHECK(tutti::lossy_codec_policy<tutti::codec::fp16>);
  CHECK(tutti::lossy_codec_policy<tutti::codec::bf16>);
  CHECK(tutti::lossy_codec_policy<tutti::codec::int8>);
  CHECK(tutti::codec::fp16::encoded_bytes(tutti::dtype::f32, 1000) == 2000);
  CHECK(tutti::codec::int8::encoded_bytes(tutti::dtype::f32, 257) == 2 * 4 + 257);  // two blocks: 256 + 1
  CHECK(tutti::codec::int8::encoded_bytes(tutti::dtype::f32, 0) == 0);
  CHECK(tutti::codec::fp16::accepts(tutti::dtype::f32));
  CHECK_FALSE(tutti::codec::int8::accepts(tutti::dtype::i32));
}

TEST_CASE_TEMPLATE("codecs: one round trip stays within the written bound, every element", Codec,
                   tutti::codec::fp16, tutti::codec::bf16, tutti::codec::int8) {
  for (std::size_t n : counts)
    for (float scale : {1.0f, 1.0f / 7.0f}) {
      CAPTURE(n);
      CAPTURE(scale);
      std::string first;
      CHECK_MESSAGE(round_trip_violations<Codec>(values(n, static_cast<unsigned>(n)), scale, first) == 0, first);
    }
  // Exact cases: zeros stay zero, and values the format holds come back exactly.
  std::vector<float> exact = {0.0f, -0.0f, 1.0f, -2.0f, 0.5f, 3.0f};
  std::vector<std::byte> wire(Codec::encoded_bytes(tutti::dtype::f32, exact.size()));
  std::vector<float> back(exact.size());
  Codec::encode(exact.data(), exact.size(), 1.0f, wire.data());
  Codec::decode(wire.data(), exact.size(), back.data());
  CHECK(back[0] == 0.0f);
  if constexpr (!std::is_same_v<Codec, tutti::codec::int8>)
    for (std::size_t i = 0; i < exact.size(); ++i) CHECK(back[i] == exact[i]);
}

TEST_CASE_TEMPLATE("codecs: decode_add accumulates 9 contributions in fp32 within the summed bounds", Codec,
                   tutti::codec::fp16, tutti::codec::bf16, tutti::codec::int8) {
  for (std::size_t n : {std::size_t{1}, std::size_t{1009}, std::size_t{100003}}) {
    CAPTURE(n);
    CHECK(accumulation_violations<Codec>(9, n, [](const std::byte* w, std::size_t m, float* acc) {
            Codec::decode_add(w, m, acc);
          }) == 0);
  }
}

TEST_CASE("codecs: the bounds are tight enough to catch a broken codec") {
  // Truncation instead of rounding: up to a whole step instead of half.
  std::string first;
  CHECK(round_trip_violations<truncating_int8>(values(100003, 5), 1.0f, first) > 1000);
  // A 16-bit running sum instead of fp32 accumulation: the partial sums are rounded again at every step.
  const auto bad = accumulation_violations<tutti::codec::fp16>(9, 100003, [](const std::byte* w, std::size_t m, float* acc) {
    std::vector<float> y(m);
    tutti::codec::fp16::decode(w, m, y.data());
    for (std::size_t i = 0; i < m; ++i) acc[i] = static_cast<float>(tutti::half(acc[i] + y[i]));
  });
  CHECK(bad > 1000);
}

// ---- the same proof through a whole allreduce schedule -----------------------------------------
// The compressed conformance suite (tutti/testing/compressed_conformance.hpp) must reject the
// schedule's result when the codec under it is broken: a codec that truncates instead of rounding,
// and a receiver that keeps a 16-bit running sum instead of an fp32 one. Each is caught at every
// world size where it changes anything (a running sum needs two additions: worlds of 3 and more).

namespace {

//! fp16 that rounds toward zero instead of to nearest even.
struct truncating_fp16 : tutti::codec::fp16 {
  static constexpr std::string_view name = "trunc16";
  static void encode(const float* in, std::size_t n, float scale, std::byte* wire) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      const float y = in[i] * scale;
      std::uint16_t h;
      float back;
      tutti::float_to_half_n(&y, &h, 1);
      tutti::half_to_float_n(&h, &back, 1);
      if (std::fabs(back) > std::fabs(y) && (h & 0x7fff)) --h;  // one step back toward zero
      std::memcpy(wire + 2 * i, &h, 2);
    }
  }
};

//! fp16 whose receiver rounds its accumulator to fp16 after every addition.
struct running_sum_fp16 : tutti::codec::fp16 {
  static constexpr std::string_view name = "run16";
  static void decode_add(const std::byte* wire, std::size_t n, float* acc) noexcept {
    std::vector<float> y(n);
    tutti::codec::fp16::decode(wire, n, y.data());
    for (std::size_t i = 0; i < n; ++i) acc[i] = static_cast<float>(tutti::half(acc[i] + y[i]));
  }
};

struct truncating_int8_named : truncating_int8 {
  static constexpr std::string_view name = "trunc8";
};

template <class Codec>
std::size_t schedule_failures(int world) {
  std::string text;
  return tutti::testing::compressed_allreduce_failures<
      tutti::testing::inproc_world<tutti::algorithm::ring, tutti::testing::one_node, Codec>>(text, {world}, {1009, 100003});
}

}  // namespace

TEST_CASE("codecs: the compressed allreduce suite passes a correct codec and fails a broken one") {
  for (int world : {2, 3, 8}) {
    CAPTURE(world);
    CHECK(schedule_failures<tutti::codec::fp16>(world) == 0);
    CHECK(schedule_failures<tutti::codec::int8>(world) == 0);
    CHECK(schedule_failures<truncating_fp16>(world) > 0);
    CHECK(schedule_failures<truncating_int8_named>(world) > 0);
    if (world >= 3) CHECK(schedule_failures<running_sum_fp16>(world) > 0);
  }
}

// ---- codecs with error feedback ---------------------------------------------------------------

namespace {

//! One encode with feedback of in (scale s) on top of residual r_prev: returns v = in*s + r_prev,
//! what was sent (decoded) and the new residual.
template <class Codec>
void feedback_step(const std::vector<float>& in, float s, std::vector<float>& residual, std::vector<float>& v,
                   std::vector<float>& sent) {
  const std::size_t n = in.size();
  v.resize(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = in[i] * s + residual[i];
  std::vector<std::byte> wire(Codec::encoded_bytes(tutti::dtype::f32, n));
  Codec::encode(in.data(), n, s, residual.data(), wire.data());
  sent.assign(n, 0.0f);
  Codec::decode(wire.data(), n, sent.data());
}

}  // namespace

TEST_CASE("codecs: topk and onebit satisfy the feedback codec concept; wire sizes") {
  CHECK(tutti::feedback_codec_policy<tutti::codec::topk>);
  CHECK(tutti::feedback_codec_policy<tutti::codec::onebit>);
  CHECK_FALSE(tutti::feedback_codec_policy<tutti::codec::fp16>);
  CHECK_FALSE(tutti::lossy_codec_policy<tutti::codec::topk>);
  CHECK(tutti::codec::topk::encoded_bytes(tutti::dtype::f32, 1000) == 10 * 8);   // 1 %: 10 (index, value) pairs
  CHECK(tutti::codec::topk::encoded_bytes(tutti::dtype::f32, 1) == 8);           // at least one
  CHECK(tutti::codec::topk::encoded_bytes(tutti::dtype::f32, 0) == 0);
  CHECK(tutti::codec::onebit::encoded_bytes(tutti::dtype::f32, 256) == 4 + 32);  // one scale, 256 bits
  CHECK(tutti::codec::onebit::encoded_bytes(tutti::dtype::f32, 257) == 36 + 4 + 1);
}

TEST_CASE_TEMPLATE("codecs: error feedback keeps exactly what was not sent (topk: bit for bit)", Codec,
                   tutti::codec::topk, tutti::codec::onebit) {
  for (std::size_t n : counts) {
    CAPTURE(n);
    std::vector<float> residual(n, 0.0f), v, sent;
    std::size_t bad = 0;
    for (int step = 0; step < 5; ++step) {
      feedback_step<Codec>(values(n, 77u + static_cast<unsigned>(step)), 1.0f / 3.0f, residual, v, sent);
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<Codec, tutti::codec::topk>) {
          bad += sent[i] + residual[i] == v[i] && (sent[i] == 0.0f || residual[i] == 0.0f) ? 0 : 1;
        } else {  // one fp32 rounding of v - sent (codec/onebit.hpp says why exactness is impossible)
          bad += std::fabs(static_cast<double>(sent[i]) + residual[i] - v[i]) <= std::fabs(residual[i]) * 0x1p-24 ? 0 : 1;
        }
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("codecs: topk sends the k largest magnitudes, NaN first, and zero elsewhere") {
  std::vector<float> x = {0.5f, -4.0f, 1.0f, 3.0f, -0.25f, 2.0f, 0.0f, -3.5f};
  x.resize(400, 0.125f);  // 1 % of 400: 4 kept
  std::vector<float> residual(x.size(), 0.0f), v, sent;
  feedback_step<tutti::codec::topk>(x, 1.0f, residual, v, sent);
  CHECK(sent[1] == -4.0f);
  CHECK(sent[7] == -3.5f);
  CHECK(sent[3] == 3.0f);
  CHECK(sent[5] == 2.0f);
  CHECK(sent[2] == 0.0f);
  CHECK(residual[2] == 1.0f);
  x[100] = std::nanf("");
  std::fill(residual.begin(), residual.end(), 0.0f);
  feedback_step<tutti::codec::topk>(x, 1.0f, residual, v, sent);
  CHECK(std::isnan(sent[100]));  // a NaN gradient is sent, not hidden in the residual
}

TEST_CASE("codecs: onebit sends the sign and the block's mean magnitude") {
  std::vector<float> x = {1.0f, -3.0f, 2.0f, -2.0f};
  std::vector<float> residual(4, 0.0f), v, sent;
  feedback_step<tutti::codec::onebit>(x, 1.0f, residual, v, sent);
  CHECK(sent == std::vector<float>{2.0f, -2.0f, 2.0f, -2.0f});
  CHECK(residual == std::vector<float>{-1.0f, -1.0f, 0.0f, 0.0f});
}

TEST_CASE("codecs: a NaN or an infinity is not hidden: int8 turns its block to NaN, fp16 and bf16 carry it") {
  std::vector<float> x(600, 0.5f);
  x[300] = std::nanf("");
  x[10] = std::numeric_limits<float>::infinity();
  std::vector<std::byte> wire(tutti::codec::int8::encoded_bytes(tutti::dtype::f32, x.size()));
  std::vector<float> back(x.size());
  tutti::codec::int8::encode(x.data(), x.size(), 1.0f, wire.data());
  tutti::codec::int8::decode(wire.data(), x.size(), back.data());
  CHECK(std::isnan(back[0]));    // block 0 holds the infinity
  CHECK(std::isnan(back[257]));  // block 1 holds the NaN
  CHECK(std::isnan(back[511]));
  CHECK(back[512] == 0.5f);      // block 2 is clean
  std::vector<std::byte> half_wire(tutti::codec::fp16::encoded_bytes(tutti::dtype::f32, x.size()));
  tutti::codec::fp16::encode(x.data(), x.size(), 1.0f, half_wire.data());
  tutti::codec::fp16::decode(half_wire.data(), x.size(), back.data());
  CHECK(std::isnan(back[300]));
  CHECK(std::isinf(back[10]));
  CHECK(back[11] == 0.5f);
}
