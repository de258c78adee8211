//! @file native_codecs_test.cpp  Lossy codecs over NCCL without a GPU: the device schedule's
//! segments, block alignment, wire slots, scratch regions and messages (native_codecs_layout.hpp)
//! against compressed.hpp's layout; the host reference of its bits against the CPU ring schedule;
//! native_wire_sum's written bound against a simulated 16-bit sum. The kernels' part runs in
//! gpu/codecs.cu.
#include <doctest/doctest.h>

#if TUTTI_HAVE_NCCL
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <tutti/algorithm/compressed.hpp>
#include <tutti/algorithm/native_codecs_layout.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/cuda/multi_tensor.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/inproc_world.hpp>

#include "native_codecs_reference.hpp"

namespace {

using tutti::dtype;
using tutti::op;
namespace nc = tutti::algorithm::native_codecs;

const std::vector<std::size_t> layout_counts = {0, 1, 7, 255, 256, 257, 1009, 4097, 1000003, (std::size_t{1} << 20) + 3};

template <class Codec>
std::size_t wire(std::size_t e) {
  return Codec::encoded_bytes(dtype::f32, e);
}

template <class Codec>
void check_layouts() {
  constexpr std::size_t g = tutti::codec_granule<Codec>();
  constexpr bool sixteen = g == 1;
  for (std::size_t count : layout_counts)
    for (int n = 1; n <= 9; ++n)
      for (int r = 0; r < n; ++r) {
        CAPTURE(count);
        CAPTURE(n);
        CAPTURE(r);
        const auto l = nc::make_owner_layout(count, n, r, g, sixteen, wire<Codec>);
        // compressed.hpp's segment, and its pieces when a round holds a whole segment.
        const std::size_t per_rank = (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
        CHECK(l.segment == tutti::algorithm::compressed_detail::round_up(per_rank, g));
        const tutti::algorithm::compressed_detail::layout cpu{count, l.segment, std::max<std::size_t>(l.segment, g)};
        std::size_t next = 0;
        for (int p = 0; p < n; ++p) {
          const auto mine = l.at(p), theirs = cpu.at(p, 0);
          CHECK(mine.first == theirs.first);
          CHECK(mine.size == theirs.size);
          if (mine.size) {
            CHECK(mine.first == next);  // in order, no gap, no overlap
            CHECK(mine.first % g == 0);  // int8: a block's scale covers the same elements everywhere
            next = mine.first + mine.size;
          }
          CHECK(wire<Codec>(mine.size) <= l.slot);
        }
        CHECK(next == count);
        // Regions: 256-byte aligned, in order, large enough.
        for (std::size_t offset : {l.outgoing, l.contributions, l.results, l.accumulator, l.tables, l.total})
          CHECK(offset % nc::scratch_alignment == 0);
        CHECK(l.contributions - l.outgoing >= l.slot * static_cast<std::size_t>(n));
        CHECK(l.results - l.contributions >= l.slot * static_cast<std::size_t>(n));
        CHECK(l.accumulator - l.results >= l.slot * static_cast<std::size_t>(n));
        CHECK(l.tables - l.accumulator >= l.segment * sizeof(float));
        CHECK(l.total - l.tables >= l.table_rows * sizeof(tutti::cuda::chunk));
        // The tables' rows: what cuda::count_chunks says for the lists the schedule builds.
        std::vector<tutti::cuda::tensor_desc> own{{nullptr, l.at(r).size, 0}}, others, all;
        for (int p = 0; p < n; ++p) {
          if (p != r) others.push_back({nullptr, l.at(p).size, 0});
          all.push_back({nullptr, l.at(p).size, 0});
        }
        std::size_t rows = tutti::cuda::count_chunks(own);
        if (sixteen) rows += tutti::cuda::count_chunks(others) + tutti::cuda::count_chunks(own) + tutti::cuda::count_chunks(all);
        CHECK(l.table_rows == rows);
      }
}

TEST_CASE("native codecs: the owner schedule's segments, slots and scratch match compressed.hpp's layout") {
  check_layouts<tutti::codec::fp16>();
  check_layouts<tutti::codec::int8>();
}

template <class Codec>
void check_messages() {
  constexpr std::size_t g = tutti::codec_granule<Codec>();
  for (std::size_t count : layout_counts)
    for (int n = 1; n <= 9; ++n) {
      CAPTURE(count);
      CAPTURE(n);
      std::vector<std::vector<nc::message>> plan;
      for (int r = 0; r < n; ++r) plan.push_back(nc::phase1_messages(nc::make_owner_layout(count, n, r, g, g == 1, wire<Codec>), r, wire<Codec>));
      const auto l = nc::make_owner_layout(count, n, 0, g, g == 1, wire<Codec>);
      const auto find = [&](int a, int b, bool send) -> const nc::message* {
        const nc::message* hit = nullptr;
        int hits = 0;
        for (const auto& m : plan[static_cast<std::size_t>(a)])
          if (m.peer == b && m.is_send == send) hit = &m, ++hits;
        CHECK(hits <= 1);  // one send and one receive per pair: NCCL's per-pair order cannot cross
        return hit;
      };
      for (int a = 0; a < n; ++a) {
        std::size_t sent = 0;
        for (int b = 0; b < n; ++b) {
          const nc::message* s = find(a, b, true);
          const nc::message* rcv = find(b, a, false);
          if (a == b || !l.at(b).size) {
            CHECK(s == nullptr);
            CHECK(rcv == nullptr);
            continue;
          }
          REQUIRE(s != nullptr);
          REQUIRE(rcv != nullptr);
          CHECK(s->bytes == rcv->bytes);  // NCCL needs equal sizes on both sides
          CHECK(s->bytes == wire<Codec>(l.at(b).size));
          CHECK(s->offset == l.outgoing + static_cast<std::size_t>(b) * l.slot);
          CHECK(rcv->offset == l.contributions + static_cast<std::size_t>(a) * l.slot);
          sent += s->bytes;
        }
        // The CPU schedule's phase-1 bytes: every other segment, encoded once.
        std::size_t cpu = 0;
        for (int p = 0; p < n; ++p)
          if (p != a) cpu += wire<Codec>(l.at(p).size);
        CHECK(sent == cpu);
      }
    }
}

TEST_CASE("native codecs: phase-1 sends and receives pair up across ranks with equal sizes") {
  check_messages<tutti::codec::fp16>();
  check_messages<tutti::codec::int8>();
}

TEST_CASE("native codecs: the wire-sum layout holds the 16-bit tensor and its two tables") {
  for (std::size_t count : layout_counts) {
    const auto l = nc::make_wire_sum_layout(count);
    CHECK(l.tables >= count * 2);
    CHECK(l.tables % nc::scratch_alignment == 0);
    std::vector<tutti::cuda::tensor_desc> one{{nullptr, count, 0}};
    CHECK(l.table_rows == 2 * tutti::cuda::count_chunks(one));
    CHECK(l.total >= l.tables + l.table_rows * sizeof(tutti::cuda::chunk));
  }
}

std::vector<std::vector<float>> inputs(int n, std::size_t count) {
  std::vector<std::vector<float>> x(static_cast<std::size_t>(n), std::vector<float>(count));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) x[static_cast<std::size_t>(r)][i] = tutti::testing::gradient_value(r, i);
  return x;
}

//! The GPU test compares the device's bits with owner_reference; here owner_reference is compared
//! with the CPU path (ring's compressed schedule), so the GPU's result is the CPU's bit for bit.
template <class Codec>
void check_reference_is_cpu_path() {
  using world = tutti::testing::inproc_world<tutti::algorithm::ring, tutti::testing::one_node, Codec>;
  for (int n : {1, 2, 3, 5})
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1009}, std::size_t{70001}})
      for (op o : {op::sum, op::avg}) {
        CAPTURE(n);
        CAPTURE(count);
        const auto x = inputs(n, count);
        const auto expected = tutti::testing::owner_reference<Codec>(x, count, o);
        std::vector<std::vector<float>> got(static_cast<std::size_t>(n));
        world::run(n, [&](auto& comm) {
          auto v = x[static_cast<std::size_t>(comm.rank())];
          comm.allreduce(v, o);
          got[static_cast<std::size_t>(comm.rank())] = v;
        });
        for (int r = 0; r < n; ++r)
          CHECK(std::memcmp(got[static_cast<std::size_t>(r)].data(), expected.data(), count * sizeof(float)) == 0);
      }
}

TEST_CASE("native codecs: the owner schedule's host reference is the CPU ring schedule, bit for bit") {
  check_reference_is_cpu_path<tutti::codec::fp16>();
  check_reference_is_cpu_path<tutti::codec::bf16>();
  check_reference_is_cpu_path<tutti::codec::int8>();
}

//! double -> 16 bits rounded once (round to odd into float first, then float -> 16 bits to nearest
//! even: float's 24 bits leave room, so the two roundings equal one).
template <class Codec>
float round16(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && (std::bit_cast<std::uint32_t>(f) & 1u) == 0)
    f = std::nextafter(f, static_cast<double>(f) < d ? INFINITY : -INFINITY);
  std::byte b[2];
  Codec::encode(&f, 1, 1.0f, b);
  float back;
  Codec::decode(b, 1, &back);
  return back;
}

//! What NCCL may return: each rank's contribution packed once, then summed with every addition
//! rounded to 16 bits, in rank order, in reverse, or as a pairwise tree.
template <class Codec>
std::vector<float> simulated_wire_sum(const std::vector<std::vector<float>>& x, std::size_t count, op o, int order) {
  const int n = static_cast<int>(x.size());
  const float s = o == op::avg ? 1.0f / static_cast<float>(n) : 1.0f;
  std::vector<std::vector<float>> packed(x.size(), std::vector<float>(count));
  std::vector<std::byte> bytes(count * 2);
  for (std::size_t r = 0; r < x.size(); ++r) {
    Codec::encode(x[r].data(), count, s, bytes.data());
    Codec::decode(bytes.data(), count, packed[r].data());
  }
  std::vector<float> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<float> v(x.size());
    for (std::size_t r = 0; r < x.size(); ++r) v[r] = packed[order == 1 ? x.size() - 1 - r : r][k];
    if (order == 2) {
      while (v.size() > 1) {
        std::vector<float> next;
        for (std::size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(round16<Codec>(double{v[i]} + double{v[i + 1]}));
        if (v.size() % 2) next.push_back(v.back());
        v = next;
      }
      out[k] = v[0];
    } else {
      float acc = v[0];
      for (std::size_t r = 1; r < v.size(); ++r) acc = round16<Codec>(double{acc} + double{v[r]});
      out[k] = acc;
    }
  }
  return out;
}

template <class Codec>
void check_wire_sum_bound(tutti::testing::sum16_rounding r16) {
  const std::size_t count = 4099;
  std::size_t beyond_owner_bound = 0;
  for (int n = 1; n <= 9; ++n)
    for (op o : {op::sum, op::avg}) {
      CAPTURE(n);
      const auto x = inputs(n, count);
      const auto bound = tutti::testing::wire_sum_bound<Codec>(x, count, o, r16);
      const auto owner = tutti::testing::expect_compressed<Codec>(n, count, o);
      for (int order = 0; order < 3; ++order) {
        const auto got = simulated_wire_sum<Codec>(x, count, o, order);
        std::size_t outside = 0;
        for (std::size_t k = 0; k < count; ++k) {
          const double err = std::fabs(static_cast<double>(got[k]) - owner.reference[k]);
          outside += !(err <= bound[k]);
          beyond_owner_bound += !(err <= owner.bound[k]);
        }
        CHECK(outside == 0);
      }
    }
  // The 16-bit sum does exceed the owner schedule's bound: it needs its own, looser one (and the
  // GPU test's owner-schedule check would catch a schedule that summed in 16 bits).
  CHECK(beyond_owner_bound > 0);
}

TEST_CASE("native_wire_sum: a 16-bit sum in any order stays within the written bound, not the owner schedule's") {
  check_wire_sum_bound<tutti::codec::fp16>({0x1p-11, 0x1p-25});
  check_wire_sum_bound<tutti::codec::bf16>({0x1p-8, 0x1p-134});
}

}  // namespace

#else
TEST_CASE("native codecs: not built (no CUDA toolkit or NCCL found)") {}
#endif
