// fusion_buffer, scaled_copy, the negotiation's wire format and the coordinator's decisions: the
// parts of the fusion engine that need no transport.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tutti/core/reduce.hpp>
#include <tutti/fusion/buffer.hpp>
#include <tutti/fusion/negotiation.hpp>
#include <tutti/fusion/timeline.hpp>

using namespace tutti;
using namespace tutti::fusion;

namespace {

std::vector<std::byte> random_bytes(dtype t, std::size_t n, std::mt19937& rng) {
  std::vector<std::byte> out(n * size_of(t));
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  std::vector<float> f(n);
  for (auto& x : f) x = u(rng);
  switch (t) {
    case dtype::f32: if (n) std::memcpy(out.data(), f.data(), out.size()); break;  // n = 0: both null
    case dtype::f64:
      for (std::size_t i = 0; i < n; ++i) {
        const double d = f[i];
        std::memcpy(out.data() + i * 8, &d, 8);
      }
      break;
    case dtype::f16: float_to_half_n(f.data(), reinterpret_cast<std::uint16_t*>(out.data()), n); break;
    case dtype::bf16: float_to_bfloat16_n(f.data(), reinterpret_cast<std::uint16_t*>(out.data()), n); break;
    default:
      for (auto& b : out) b = static_cast<std::byte>(rng());
  }
  return out;
}

}  // namespace

TEST_CASE("fusion_buffer: pack and unpack round-trip every dtype at 64-byte offsets with zero gaps") {
  std::mt19937 rng(7);
  for (dtype t : all_dtypes) {
    CAPTURE(name_of(t));
    const std::vector<std::size_t> counts{0, 1, 17, 0, 1009, 3, 64};
    std::vector<std::vector<std::byte>> data;
    std::vector<const_tensor_view> in;
    for (auto n : counts) {
      data.push_back(random_bytes(t, n, rng));
      in.emplace_back(data.back().data(), n, t);
    }
    fusion_buffer buf;
    buf.pack(in);
    CHECK(buf.type() == t);
    std::size_t end = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      CHECK((buf.offset(i) * size_of(t)) % fusion_buffer::alignment == 0);
      CHECK(buf.offset(i) >= end);
      for (std::size_t g = end * size_of(t); g < buf.offset(i) * size_of(t); ++g)
        REQUIRE(buf.data()[g] == std::byte{0});  // a gap holds zeros, so its sum is zero too
      CHECK((data[i].empty() || std::memcmp(buf.data() + buf.offset(i) * size_of(t), data[i].data(), data[i].size()) == 0));
      end = buf.offset(i) + counts[i];
    }
    CHECK(buf.elements() == end);
    std::vector<std::vector<std::byte>> back;
    std::vector<tensor_view> out;
    for (auto n : counts) {
      back.emplace_back(n * size_of(t), std::byte{0x5a});
      out.emplace_back(back.back().data(), n, t);
    }
    buf.unpack(out);
    for (std::size_t i = 0; i < counts.size(); ++i) CHECK(back[i] == data[i]);
  }
}

TEST_CASE("fusion_buffer: unpack dividing by the rank count gives op::avg's bits; pack scales in one pass") {
  std::mt19937 rng(11);
  for (dtype t : all_dtypes) {
    CAPTURE(name_of(t));
    for (int ranks : {1, 3, 7, 128}) {
      CAPTURE(ranks);
      auto src = random_bytes(t, 1001, rng);
      auto expected = src;
      finish_avg(t, expected.data(), 1001, ranks);  // what an avg allreduce does after summing
      std::vector<std::byte> got(src.size());
      scaled_copy(t, got.data(), src.data(), 1001, 1.0, ranks);
      CHECK(got == expected);
    }
  }
  // A power-of-two scale is exact: pack(x, 0.25) then unpack(., 4) returns x bit for bit.
  std::vector<float> x(333);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 40.f;
  fusion_buffer buf;
  const const_tensor_view one[] = {const_tensor_view(std::span<const float>(x))};
  buf.pack(one, 0.25);
  const auto* packed = reinterpret_cast<const float*>(buf.data());
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(packed[i] == x[i] * 0.25f);
  std::vector<float> y(x.size());
  const tensor_view outs[] = {tensor_view(std::span<float>(y))};
  buf.unpack(outs, 4.0);
  CHECK(y == x);
}

TEST_CASE("fusion_buffer: refusals name the tensor and the value") {
  std::vector<float> f(4);
  std::vector<std::int32_t> i(4);
  fusion_buffer buf;
  const const_tensor_view mixed[] = {const_tensor_view(std::span<const float>(f)),
                                     const_tensor_view(std::span<const std::int32_t>(i))};
  CHECK_THROWS_WITH_AS(buf.pack(mixed), doctest::Contains("tensor 1 has dtype int32"), invalid_argument);
  const const_tensor_view ints[] = {const_tensor_view(std::span<const std::int32_t>(i))};
  CHECK_THROWS_WITH_AS(buf.pack(ints, 0.5), doctest::Contains("scale of 0.5"), invalid_argument);
  buf.pack(ints);
  std::vector<std::int32_t> small(3);
  const tensor_view wrong[] = {tensor_view(std::span<std::int32_t>(small))};
  CHECK_THROWS_WITH_AS(buf.unpack(wrong), doctest::Contains("has 3 elements, but 4 were packed"), invalid_argument);
}

TEST_CASE("negotiation: reports and responses survive the wire; truncated ones are refused") {
  report r;
  r.cached = {0x5, 0x8000000000000000ull};
  r.fresh = {{"layer1.weight", {dtype::f32, op::sum, 4096}}, {"bias", {dtype::bf16, op::avg, 7}}};
  r.blocking_requested = 3;
  r.stopping = true;
  const auto rb = encode(r);
  const auto r2 = decode_report(rb);
  CHECK(r2.cached == r.cached);
  CHECK(r2.fresh == r.fresh);
  CHECK(r2.blocking_requested == 3);
  CHECK(r2.stopping);

  response a;
  a.assignments = {{0, "w", {dtype::f32, op::sum, 10}}};
  a.batches = {{0, 2, 5}, {1}};
  a.failures = {{failure_kind::stalled, "x", "tensor 'x' ..."}};
  a.grant_to = 9;
  a.params = {1 << 20, std::chrono::microseconds(2500)};
  a.stop = true;
  const auto ab = encode(a);
  const auto a2 = decode_response(ab);
  CHECK(a2.assignments.size() == 1);
  CHECK(a2.assignments[0].name == "w");
  CHECK(a2.batches == a.batches);
  CHECK(a2.failures[0].message == "tensor 'x' ...");
  CHECK(a2.grant_to == 9);
  CHECK(a2.params == a.params);
  CHECK(a2.stop);
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, ab.size() - 1}) {
    std::vector<std::byte> part(ab.begin(), ab.begin() + static_cast<std::ptrdiff_t>(cut));
    CHECK_THROWS_AS(decode_response(part), transport_error);
  }
  auto longer = rb;
  longer.push_back(std::byte{0});
  CHECK_THROWS_WITH_AS(decode_report(longer), doctest::Contains("trailing"), transport_error);
}

TEST_CASE("coordinator: batches follow ids, split by dtype and op, and never exceed the threshold") {
  const tensor_meta f1k{dtype::f32, op::sum, 256};  // 1 KiB
  const tensor_meta big{dtype::f32, op::sum, 1 << 20};
  const tensor_meta h{dtype::f16, op::sum, 512};  // 1 KiB
  const tensor_meta avg{dtype::f32, op::avg, 256};
  std::vector<std::pair<std::uint32_t, tensor_meta>> ids{{0, f1k}, {1, h}, {2, f1k}, {3, big}, {4, avg}, {5, f1k}, {6, f1k}};
  auto b = coordinator::batch(ids, 3 << 10);
  // the huge tensor closes the open float32-sum batch: a batch holds consecutive tensors of its kind
  const std::vector<std::vector<std::uint32_t>> expected{{0, 2}, {1}, {3}, {4}, {5, 6}};
  CHECK(b == expected);
  // threshold 0: one collective per tensor, in id order
  auto single = coordinator::batch(ids, 0);
  REQUIRE(single.size() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) CHECK(single[i] == std::vector<std::uint32_t>{ids[i].first});
}

TEST_CASE("coordinator: a name is ready once every rank reported it, then travels as one bit") {
  coordinator c(3, std::chrono::seconds(60));
  tensor_cache cache;
  const tensor_meta m{dtype::f32, op::sum, 10};
  const auto now = clock::now();
  std::vector<report> reps(3);
  reps[0].fresh = {{"b", m}, {"a", m}};
  reps[2].fresh = {{"a", m}};
  auto r1 = c.decide(reps, cache, {}, now);
  CHECK(r1.batches.empty());
  CHECK(c.pending() == 2);
  std::vector<report> reps2(3);
  reps2[1].fresh = {{"a", m}, {"b", m}};
  reps2[2].fresh = {{"b", m}};
  auto r2 = c.decide(reps2, cache, {}, now);
  REQUIRE(r2.assignments.size() == 2);
  CHECK(r2.assignments[0].name == "b");  // new ids in the order first reported: rank 0 enqueued b, then a
  CHECK(r2.assignments[1].name == "a");
  for (const auto& a : r2.assignments) cache.assign(a);
  // Next step: every rank reports both by bit, and they come back in id order.
  std::vector<report> reps3(3);
  for (auto& r : reps3) r.cached = {0x3};
  auto r3 = c.decide(reps3, cache, {}, now);
  CHECK(r3.assignments.empty());
  CHECK(r3.batches == std::vector<std::vector<std::uint32_t>>{{0}, {1}});  // b (id 0) first, as produced
  CHECK(c.pending() == 0);
}

TEST_CASE("coordinator: a size mismatch is reported once all ranks have the name; a stall names the missing ranks") {
  coordinator c(4, std::chrono::milliseconds(100));
  tensor_cache cache;
  const auto t0 = clock::now();
  std::vector<report> reps(4);
  for (int r = 0; r < 4; ++r) reps[static_cast<std::size_t>(r)].fresh = {{"w", {dtype::f32, op::sum, r == 2 ? 99u : 100u}}};
  reps[0].fresh.push_back({"ghost", {dtype::f32, op::sum, 5}});
  reps[3].fresh.push_back({"ghost", {dtype::f32, op::sum, 5}});
  auto r1 = c.decide(reps, cache, {}, t0);
  REQUIRE(r1.failures.size() == 1);
  CHECK(r1.failures[0].kind == failure_kind::mismatch);
  CHECK(r1.failures[0].message ==
        "tensor 'w' is enqueued with different sizes, dtypes or ops: rank(s) 0, 1, 3 enqueued 100 float, op sum; "
        "rank(s) 2 enqueued 99 float, op sum");
  auto r2 = c.decide(std::vector<report>(4), cache, {}, t0 + std::chrono::milliseconds(50));
  CHECK(r2.failures.empty());
  auto r3 = c.decide(std::vector<report>(4), cache, {}, t0 + std::chrono::milliseconds(150));
  REQUIRE(r3.failures.size() == 1);
  CHECK(r3.failures[0].kind == failure_kind::stalled);
  CHECK(r3.failures[0].message.find("tensor 'ghost' was enqueued by rank(s) 0, 3 but rank(s) 1, 2 have not enqueued it") == 0);
  CHECK(c.pending() == 0);
}

TEST_CASE("coordinator: blocking turns go to the least-advanced rank's count; a stopping rank fails what is pending") {
  coordinator c(3, std::chrono::seconds(60));
  tensor_cache cache;
  std::vector<report> reps(3);
  reps[0].blocking_requested = 2;
  reps[1].blocking_requested = 1;
  reps[2].blocking_requested = 2;
  reps[0].fresh = {{"x", {dtype::f32, op::sum, 1}}};
  auto r = c.decide(reps, cache, {}, clock::now());
  CHECK(r.grant_to == 1);
  CHECK_FALSE(r.stop);
  std::vector<report> stop(3);
  stop[1].stopping = true;
  auto s = c.decide(stop, cache, {}, clock::now());
  CHECK(s.stop);
  REQUIRE(s.failures.size() == 1);
  CHECK(s.failures[0].kind == failure_kind::stopped);
  CHECK(s.failures[0].message.find("rank(s) 1 stopped their fusion engine") != std::string::npos);
  CHECK(rank_list({0, 1, 2, 5, 7, 8}) == "0-2, 5, 7, 8");
}

TEST_CASE("timeline: one file per rank, with names escaped") {
  CHECK(timeline::path_for("/tmp/t.json", 3, 4) == "/tmp/t.rank3.json");
  CHECK(timeline::path_for("/tmp/t.json", 0, 1) == "/tmp/t.json");
  CHECK(timeline::path_for("/tmp/dir.x/t", 1, 2) == "/tmp/dir.x/t.rank1");
  CHECK(timeline::escaped("a\"b\\c\n") == "a\\\"b\\\\c\\u000a");
}
