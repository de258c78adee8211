//! @file multi_tensor_test.cpp  The multi-tensor table (chunking, offsets, alignment flags) and the reference executor's walk, against a naive per-tensor loop.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/tensor_lists.hpp"
#include "tutti/cuda/multi_tensor.hpp"

namespace {

using tutti::dtype;
namespace tc = tutti::cuda;

using tutti_test::host_list;

//! The naive reference: tensor by tensor, element by element, no table.
template <class T, class W>
void naive_pack(const host_list& l, float scale) {
  auto* out = static_cast<tc::storage_t<W>*>(l.buffer);
  for (const tc::tensor_desc& t : l.tensors) {
    const auto* in = static_cast<const tc::storage_t<T>*>(t.data);
    for (std::size_t e = 0; e < t.count; ++e) out[t.offset + e] = tc::pack_element<T, W>(in[e], scale);
  }
}

template <class T, class W>
void naive_unpack(const host_list& l, float scale, bool accumulate) {
  const auto* in = static_cast<const tc::storage_t<W>*>(l.buffer);
  for (const tc::tensor_desc& t : l.tensors) {
    auto* out = static_cast<tc::storage_t<T>*>(const_cast<void*>(t.data));
    for (std::size_t e = 0; e < t.count; ++e)
      out[e] = accumulate ? tc::unpack_accumulate_element<T, W>(out[e], in[t.offset + e], scale)
                          : tc::unpack_element<T, W>(in[t.offset + e], scale);
  }
}

//! The first rule a row breaks (empty: none), checked against the list the table was made from.
std::string row_errors(const std::vector<tc::chunk>& table, const host_list& l, std::size_t chunk_elements) {
  for (std::size_t r = 0; r < table.size(); ++r) {
    const tc::chunk& c = table[r];
    const std::string at = "row " + std::to_string(r) + ": ";
    if (c.tensor >= l.tensors.size()) return at + "tensor index out of range";
    const tc::tensor_desc& t = l.tensors[c.tensor];
    if (c.count < 1 || c.count > chunk_elements) return at + "count " + std::to_string(c.count);
    if (c.tensor_first % chunk_elements != 0) return at + "does not start on a chunk boundary";
    if (c.tensor_first + c.count > t.count) return at + "runs past its tensor";
    if (c.buffer_first != t.offset + c.tensor_first) return at + "buffer index differs from offset + first";
    if (c.address != reinterpret_cast<std::uint64_t>(t.data) + c.tensor_first * l.tsize) return at + "address";
    const bool aligned = c.address % 16 == 0 &&
                         (reinterpret_cast<std::uint64_t>(l.buffer) + c.buffer_first * l.wsize) % 16 == 0;
    if (((c.flags & tc::chunk_vector) != 0) != aligned) return at + "vector flag disagrees with the addresses";
  }
  return {};
}

//! How often the table's rows cover each buffer element.
std::vector<int> coverage(const std::vector<tc::chunk>& table, const host_list& l) {
  std::vector<int> seen(l.shape.buffer_elements, 0);
  for (const tc::chunk& c : table)
    for (std::size_t e = 0; e < c.count && c.buffer_first + e < seen.size(); ++e) ++seen[c.buffer_first + e];
  return seen;
}

std::vector<int> expected_coverage(const host_list& l) {
  std::vector<int> want(l.shape.buffer_elements, 0);
  for (const tc::tensor_desc& t : l.tensors)
    for (std::size_t e = 0; e < t.count; ++e) ++want[t.offset + e];
  return want;
}

template <class T, class W>
void check_list(std::mt19937_64& rng, std::size_t n, std::size_t chunk_elements, std::size_t max_count) {
  const dtype tt = tutti::dtype_of<T>, wt = tutti::dtype_of<W>;
  host_list l(rng, tutti_test::random_shape(rng, n, sizeof(tc::storage_t<T>), sizeof(tc::storage_t<W>), chunk_elements, max_count),
              sizeof(tc::storage_t<T>), sizeof(tc::storage_t<W>));
  const tc::multi_tensor_layout layout{tt, wt, l.buffer, chunk_elements};
  const std::vector<tc::chunk> table = tc::make_table(l.tensors, layout);
  REQUIRE(table.size() == tc::count_chunks(l.tensors, chunk_elements));
  REQUIRE(row_errors(table, l, chunk_elements) == "");
  REQUIRE(coverage(table, l) == expected_coverage(l));  // every element exactly once, gaps never

  const float scale = std::uniform_int_distribution<int>(0, 1)(rng) ? 1.0f : 0.3f;
  naive_pack<T, W>(l, scale);
  const auto want = l.buffer_bytes();
  std::fill(l.buffer_storage.begin(), l.buffer_storage.end(), 0xa5);
  int flag = 0;
  tc::reference::pack(layout, table, scale, &flag);
  REQUIRE(l.buffer_bytes() == want);  // bit for bit, and the sentinel gaps untouched

  // Unpack with accumulate into the tensors: naive on a copy of the tensors, the executor on them.
  std::vector<std::vector<unsigned char>> before;
  for (const auto& t : l.tensors) {
    const auto* p = static_cast<const unsigned char*>(t.data);
    before.emplace_back(p, p + t.count * l.tsize);
  }
  const bool accumulate = rng() % 2;
  naive_unpack<T, W>(l, 0.5f, accumulate);
  std::vector<std::vector<unsigned char>> naive;
  for (std::size_t i = 0; i < l.tensors.size(); ++i) {
    auto* p = static_cast<unsigned char*>(const_cast<void*>(l.tensors[i].data));
    naive.emplace_back(p, p + l.tensors[i].count * l.tsize);
    std::memcpy(p, before[i].data(), before[i].size());
  }
  tc::reference::unpack(layout, table, 0.5f, accumulate);
  for (std::size_t i = 0; i < l.tensors.size(); ++i) {
    const auto* p = static_cast<const unsigned char*>(l.tensors[i].data);
    REQUIRE(std::vector<unsigned char>(p, p + l.tensors[i].count * l.tsize) == naive[i]);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("multi_tensor: random lists, every element once, pack and unpack equal the naive loop bit for bit",
                   TW, std::pair<float, tutti::half>, std::pair<float, tutti::bfloat16>, std::pair<float, float>,
                   std::pair<tutti::half, float>, std::pair<tutti::bfloat16, float>, std::pair<tutti::half, tutti::bfloat16>,
                   std::pair<tutti::bfloat16, tutti::half>, std::pair<tutti::half, tutti::half>,
                   std::pair<tutti::bfloat16, tutti::bfloat16>) {
  using T = typename TW::first_type;
  using W = typename TW::second_type;
  std::mt19937_64 rng(12);
  for (std::size_t chunk_elements : {std::size_t{8}, std::size_t{24}, std::size_t{1024}, tc::default_chunk_elements})
    for (int round = 0; round < 6; ++round) {
      CAPTURE(chunk_elements);
      CAPTURE(round);
      check_list<T, W>(rng, 1 + rng() % 40, chunk_elements, 5 * chunk_elements);
    }
}

TEST_CASE("multi_tensor: one huge tensor (2^24 + 3 elements) beside tiny ones") {
  std::mt19937_64 rng(24);
  tutti_test::list_shape s;
  s.counts = {1, (std::size_t{1} << 24) + 3, 0, 5};
  s.misalign = {0, 4, 0, 12};
  s.offsets = {0, 1, s.counts[1] + 1, s.counts[1] + 1};
  s.buffer_misalign = 0;
  s.buffer_elements = s.counts[1] + 9;
  host_list l(rng, s, 4, 2);
  const tc::multi_tensor_layout layout{dtype::f32, dtype::bf16, l.buffer};
  const auto table = tc::make_table(l.tensors, layout);
  // 2^24 / chunk full chunks and one of 3, between the two small tensors' rows
  CHECK(table.size() == 1 + ((std::size_t{1} << 24) / tc::default_chunk_elements + 1) + 1);
  REQUIRE(row_errors(table, l, tc::default_chunk_elements) == "");
  REQUIRE(coverage(table, l) == expected_coverage(l));
  naive_pack<float, tutti::bfloat16>(l, 0.25f);
  const auto want = l.buffer_bytes();
  std::fill(l.buffer_storage.begin(), l.buffer_storage.end(), 0xa5);
  tc::reference::pack(layout, table, 0.25f);
  CHECK(l.buffer_bytes() == want);
}

TEST_CASE("multi_tensor: offsets and counts beyond 2^32 elements stay 64-bit (table only, no memory touched)") {
  const std::size_t big = (std::size_t{3} << 31) + 5;  // 6 Gi elements
  const std::size_t offset = std::size_t{1} << 33;
  const std::vector<tc::tensor_desc> tensors = {{reinterpret_cast<void*>(0x10000), big, offset},
                                                {reinterpret_cast<void*>(0x20000), 3, offset + big}};
  const tc::multi_tensor_layout layout{dtype::f32, dtype::f16, reinterpret_cast<void*>(0x40000)};
  const auto table = tc::make_table(tensors, layout);
  const std::size_t full = big / tc::default_chunk_elements;
  REQUIRE(table.size() == full + 1 + 1);
  const tc::chunk& last = table[full];
  CHECK(last.tensor == 0);
  CHECK(last.count == big % tc::default_chunk_elements);
  CHECK(last.tensor_first == full * tc::default_chunk_elements);
  CHECK(last.buffer_first == offset + full * tc::default_chunk_elements);
  CHECK(last.address == 0x10000 + 4 * last.tensor_first);
  CHECK(table.back().buffer_first == offset + big);
  CHECK(table.back().tensor == 1);
}

TEST_CASE("multi_tensor: the vector flag at every byte misalignment 0..15 of tensor and buffer") {
  for (std::size_t tm = 0; tm < 16; ++tm)
    for (std::size_t bm = 0; bm < 16; ++bm)
      for (dtype wire : {dtype::f32, dtype::f16}) {
        const std::size_t wsize = tutti::size_of(wire);
        const std::vector<tc::tensor_desc> tensors = {{reinterpret_cast<void*>(0x1000 + tm), 100, 0},
                                                      {reinterpret_cast<void*>(0x9000 + tm), 100, 101}};
        const tc::multi_tensor_layout layout{dtype::f32, wire, reinterpret_cast<void*>(0x20000 + bm), 32};
        const auto table = tc::make_table(tensors, layout);
        REQUIRE(table.size() == 8);  // 4 chunks of 32, 32, 32, 4 per tensor
        for (const tc::chunk& c : table) {
          const bool want = (0x1000 + tm) % 16 == 0 && (0x20000 + bm + c.buffer_first * wsize) % 16 == 0;
          CAPTURE(tm);
          CAPTURE(bm);
          CAPTURE(c.buffer_first);
          CHECK(((c.flags & tc::chunk_vector) != 0) == want);
        }
      }
}

TEST_CASE("multi_tensor: a broken table is caught by the coverage check and by the executor") {
  std::mt19937_64 rng(3);
  host_list l(rng, tutti_test::random_shape(rng, 30, 4, 2, 64, 500), 4, 2);
  const tc::multi_tensor_layout layout{dtype::f32, dtype::f16, l.buffer, 64};
  auto table = tc::make_table(l.tensors, layout);
  REQUIRE(table.size() > 3);
  const auto want = expected_coverage(l);
  REQUIRE(row_errors(table, l, 64) == "");
  REQUIRE(coverage(table, l) == want);
  auto dropped = table;
  dropped.erase(dropped.begin() + 2);
  CHECK(coverage(dropped, l) != want);
  auto longer = table;
  ++longer[1].count;  // one element too many: covers one twice, or a gap, or runs past its tensor
  CHECK((coverage(longer, l) != want || row_errors(longer, l, 64) != ""));
  auto shifted = table;
  ++shifted[0].buffer_first;
  CHECK(row_errors(shifted, l, 64) == "row 0: buffer index differs from offset + first");
  auto flagged = table;
  flagged[0].flags ^= tc::chunk_vector;
  CHECK(row_errors(flagged, l, 64) == "row 0: vector flag disagrees with the addresses");
  // A row flagged for 16-byte words at an address that is not 16-byte aligned.
  auto lying = table;
  lying[0].flags = tc::chunk_vector;
  lying[0].address |= 4;
  CHECK_THROWS_WITH_AS(tc::reference::pack(layout, lying, 1.0f), doctest::Contains("not 16-byte aligned"),
                       tutti::invalid_argument);
}

TEST_CASE("multi_tensor: refusals name what is wrong") {
  const std::vector<tc::tensor_desc> tensors = {{nullptr, 3, 0}};
  float buffer[4];
  CHECK_THROWS_WITH_AS(tc::make_table(tensors, {dtype::f32, dtype::f16, buffer}),
                       doctest::Contains("tensor 0 has 3 elements and a null data pointer"), tutti::invalid_argument);
  const std::vector<tc::tensor_desc> empty_null = {{nullptr, 0, 0}};
  CHECK(tc::make_table(empty_null, {dtype::f32, dtype::f16, buffer}).empty());  // nothing to copy, nothing to refuse
  CHECK_THROWS_WITH_AS(tc::make_table(empty_null, {dtype::i32, dtype::f16, buffer}),
                       doctest::Contains("tensor dtype int32 is not float, half or bfloat16"), tutti::invalid_argument);
  CHECK_THROWS_WITH_AS(tc::make_table(empty_null, {dtype::f32, dtype::f64, buffer}),
                       doctest::Contains("fusion buffer dtype double"), tutti::invalid_argument);
  CHECK_THROWS_WITH_AS(tc::make_table(empty_null, {dtype::f32, dtype::f16, buffer, 12}),
                       doctest::Contains("chunk_elements = 12 must be a positive multiple of 8"), tutti::invalid_argument);
  std::vector<tc::chunk> small(1);
  const std::vector<tc::tensor_desc> two = {{buffer, 2, 0}, {buffer, 2, 2}};
  CHECK_THROWS_WITH_AS(tc::fill_table(two, {dtype::f32, dtype::f32, buffer}, small),
                       doctest::Contains("the output holds 1 rows, the tensors need 2"), tutti::invalid_argument);
}
