//! @file tensor_lists.hpp  Random tensor lists for the multi-tensor tests (host, g++) and the GPU tests (nvcc): sizes, misalignments, buffer offsets, values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "tutti/cuda/multi_tensor.hpp"

namespace tutti_test {

//! One list: tensor sizes, each tensor's start past a 16-byte boundary (a multiple of its element
//! size, so the pointer stays legal), gaps between the tensors in the fusion buffer, and the buffer's
//! own start past 16 bytes.
struct list_shape {
  std::vector<std::size_t> counts;
  std::vector<std::size_t> misalign;  //!< bytes, per tensor
  std::vector<std::size_t> offsets;   //!< elements, per tensor, into the fusion buffer
  std::size_t buffer_misalign = 0;    //!< bytes
  std::size_t buffer_elements = 0;    //!< the buffer's length (last tensor's end plus a tail gap)
};

//! Sizes a table walk gets wrong first: empty, 1, around the vector step (8) and the chunk size,
//! odd numbers and primes.
inline const std::vector<std::size_t>& edge_counts(std::size_t chunk_elements) {
  static thread_local std::vector<std::size_t> counts;
  counts = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 255, 256, 257, 1021, 4099,
            chunk_elements - 1, chunk_elements, chunk_elements + 1, chunk_elements + 7, 2 * chunk_elements + 9};
  return counts;
}

//! A random list of n tensors of one element size (4 or 2 bytes) for a buffer of `wire_size`-byte
//! elements. Counts are mostly small (tensors in a real gradient list mostly are), some from
//! edge_counts(), at most `max_count`.
inline list_shape random_shape(std::mt19937_64& rng, std::size_t n, std::size_t tensor_size, std::size_t wire_size,
                               std::size_t chunk_elements, std::size_t max_count) {
  list_shape s;
  const auto& edges = edge_counts(chunk_elements);
  std::uniform_int_distribution<int> kind(0, 9);
  std::size_t offset = std::uniform_int_distribution<std::size_t>(0, 9)(rng);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t count;
    switch (kind(rng)) {
      case 0: case 1: case 2: count = edges[rng() % edges.size()]; break;
      case 3: count = 0; break;
      case 4: count = std::uniform_int_distribution<std::size_t>(1, 3 * chunk_elements)(rng); break;
      default: count = std::uniform_int_distribution<std::size_t>(1, 600)(rng); break;
    }
    if (count > max_count) count = max_count;
    s.counts.push_back(count);
    s.misalign.push_back(tensor_size * std::uniform_int_distribution<std::size_t>(0, 16 / tensor_size - 1)(rng));
    s.offsets.push_back(offset);
    // Gaps of 0 to 9 elements: 0 keeps the next tensor adjacent; others shift its alignment.
    offset += count + std::uniform_int_distribution<std::size_t>(0, 9)(rng) * (rng() % 2);
  }
  s.buffer_misalign = wire_size * std::uniform_int_distribution<std::size_t>(0, 16 / wire_size - 1)(rng);
  s.buffer_elements = offset + 3;
  return s;
}

//! Random element bits for a tensor of `size`-byte elements (2: every 16-bit pattern, NaNs and
//! infinities included; 4: half uniform random bits, half values in fp16's interesting range,
//! with ties and overflow).
inline void fill_random(std::mt19937_64& rng, void* data, std::size_t size, std::size_t count) {
  auto* bytes = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i) {
    if (size == 2) {
      const auto b = static_cast<std::uint16_t>(rng());
      std::memcpy(bytes + 2 * i, &b, 2);
      continue;
    }
    std::uint32_t b = static_cast<std::uint32_t>(rng());
    if (rng() % 2) {
      // Exponents from 2^-30 to 2^17: fp16 subnormals through overflow; the low mantissa bits
      // sometimes cleared to make exact ties for fp16 and bf16.
      const std::uint32_t exponent = 97 + static_cast<std::uint32_t>(rng() % 48);
      b = (b & 0x807fffffu) | (exponent << 23);
      if (rng() % 4 == 0) b &= ~0x0fffu;
    }
    std::memcpy(bytes + 4 * i, &b, 4);
  }
}

//! Host memory for one list: each tensor in its own allocation starting `misalign` bytes past a
//! 16-byte boundary, and the fusion buffer likewise.
struct host_list {
  tutti_test::list_shape shape;
  std::size_t tsize, wsize;
  std::vector<std::vector<unsigned char>> storage;  // 16 spare bytes each
  std::vector<unsigned char> buffer_storage;
  std::vector<tutti::cuda::tensor_desc> tensors;
  void* buffer = nullptr;

  static unsigned char* at(std::vector<unsigned char>& v, std::size_t misalign) {
    const auto p = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + ((16 - p % 16) % 16) + misalign;
  }

  host_list(std::mt19937_64& rng, tutti_test::list_shape s, std::size_t tensor_size, std::size_t wire_size)
      : shape(std::move(s)), tsize(tensor_size), wsize(wire_size) {
    for (std::size_t i = 0; i < shape.counts.size(); ++i) {
      storage.emplace_back(shape.counts[i] * tsize + 32);
      void* p = at(storage.back(), shape.misalign[i]);
      tutti_test::fill_random(rng, p, tsize, shape.counts[i]);
      tensors.push_back({p, shape.counts[i], shape.offsets[i]});
    }
    buffer_storage.assign(shape.buffer_elements * wsize + 32, 0xa5);  // the sentinel gaps keep
    buffer = at(buffer_storage, shape.buffer_misalign);
  }
  [[nodiscard]] std::vector<unsigned char> buffer_bytes() const {
    const auto* p = static_cast<const unsigned char*>(buffer);
    return {p, p + shape.buffer_elements * wsize};
  }
};

}  // namespace tutti_test
