//! @file multi_tensor.hpp  The multi-tensor table (tensors cut into fixed-size chunks) and the CPU reference executor that walks it as the kernels do.
//!
//! After apex's multi_tensor_apply, but the list goes to the GPU as a table in device memory rather
//! than in kernel-argument packs of a few dozen tensors: one launch covers any number of tensors,
//! one CUDA block per chunk, so one 1-element tensor and one 2^24-element tensor both keep every
//! SM busy. Plain C++ with no CUDA header: the host tests compile it with g++. The launch wrappers
//! are in cuda/multi_tensor.cuh.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tutti/codec/int8_arith.hpp"
#include "tutti/core/dtype.hpp"
#include "tutti/core/error.hpp"
#include "tutti/cuda/chunk.hpp"
#include "tutti/cuda/element.hpp"

namespace tutti::cuda::inline v0_1 {

//! One tensor of the list: its memory and where it sits in the fusion buffer.
struct tensor_desc {
  const void* data;    //!< the tensor's elements (read by pack, written by unpack)
  std::size_t count;   //!< elements; 0 makes no chunk
  std::size_t offset;  //!< index of its first element in the fusion buffer, in elements
};

//! What a table is made for: the tensors' type, the fusion buffer and its type, the chunk size.
//! The table's vector flags depend on the buffer's address, so a table serves that buffer only.
struct multi_tensor_layout {
  dtype tensor_type = dtype::f32;  //!< f32, f16 or bf16
  dtype wire_type = dtype::f16;    //!< the fusion buffer's: f32, f16 or bf16
  void* buffer = nullptr;          //!< the fusion buffer (device memory for the kernels)
  std::size_t chunk_elements = default_chunk_elements;  //!< a multiple of vector_elements, below 2^31
};

namespace detail {

[[nodiscard]] inline bool is_kernel_type(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16;
}

//! Calls f(T{}) with T the element type of t (float, half, bfloat16).
template <class F>
decltype(auto) with_element_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f16: return f(half{});
    case dtype::bf16: return f(bfloat16{});
    default: break;
  }
  throw invalid_argument("tutti::cuda: dtype " + std::string(name_of(t)) +
                         " is not an element type of the kernels (float, half, bfloat16)");
}

inline void check_layout(const multi_tensor_layout& layout, const char* who) {
  const auto fail = [&](const std::string& what) { throw invalid_argument(std::string(who) + ": " + what); };
  if (!is_kernel_type(layout.tensor_type))
    fail("tensor dtype " + std::string(name_of(layout.tensor_type)) + " is not float, half or bfloat16");
  if (!is_kernel_type(layout.wire_type))
    fail("fusion buffer dtype " + std::string(name_of(layout.wire_type)) + " is not float, half or bfloat16");
  if (layout.chunk_elements == 0 || layout.chunk_elements % vector_elements != 0 ||
      layout.chunk_elements >= (std::size_t{1} << 31))
    fail("chunk_elements = " + std::to_string(layout.chunk_elements) + " must be a positive multiple of " +
         std::to_string(vector_elements) + " below 2^31");
}

[[nodiscard]] inline bool aligned16(std::uint64_t address) noexcept { return address % 16 == 0; }

}  // namespace detail

//! Rows make_table() will produce for these tensors: sum of ceil(count / chunk_elements).
[[nodiscard]] inline std::size_t count_chunks(std::span<const tensor_desc> tensors,
                                              std::size_t chunk_elements = default_chunk_elements) noexcept {
  std::size_t n = 0;
  for (const tensor_desc& t : tensors) n += chunks_in(t.count, chunk_elements);
  return n;
}

//! Writes the table into `out` (at least count_chunks() rows: pinned host memory, for instance,
//! for a fully asynchronous upload) and returns the rows written. Tensors are cut in list order,
//! each into chunks of chunk_elements (the last shorter); a chunk may take the vector path when
//! both its tensor address and its fusion-buffer address are 16-byte aligned (then, the chunk
//! size being a multiple of 8, every full 8-element step is too). Tensors' ranges in the buffer
//! are the caller's (fusion_buffer's offsets, say): overlaps are not checked.
inline std::size_t fill_table(std::span<const tensor_desc> tensors, const multi_tensor_layout& layout,
                              std::span<chunk> out) {
  detail::check_layout(layout, "tutti::cuda::fill_table");
  const std::size_t tsize = size_of(layout.tensor_type), wsize = size_of(layout.wire_type);
  const std::size_t step = layout.chunk_elements;
  const auto buffer = reinterpret_cast<std::uint64_t>(layout.buffer);
  if (tensors.size() > 0xffffffffu)
    throw invalid_argument("tutti::cuda::fill_table: " + std::to_string(tensors.size()) + " tensors (at most 2^32 - 1)");
  if (const std::size_t need = count_chunks(tensors, step); out.size() < need)
    throw invalid_argument("tutti::cuda::fill_table: the output holds " + std::to_string(out.size()) +
                           " rows, the tensors need " + std::to_string(need));
  std::size_t row = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const tensor_desc& t = tensors[i];
    if (t.count == 0) continue;
    if (t.data == nullptr || layout.buffer == nullptr)
      throw invalid_argument("tutti::cuda::fill_table: tensor " + std::to_string(i) + " has " +
                             std::to_string(t.count) + " elements and a null " +
                             (t.data == nullptr ? "data pointer" : "fusion buffer"));
    if (t.offset > SIZE_MAX - t.count)
      throw invalid_argument("tutti::cuda::fill_table: tensor " + std::to_string(i) + "'s offset " +
                             std::to_string(t.offset) + " + count overflows");
    const auto base = reinterpret_cast<std::uint64_t>(t.data);
    for (std::size_t first = 0; first < t.count; first += step) {
      chunk& c = out[row++];
      c.address = base + first * tsize;
      c.buffer_first = t.offset + first;
      c.tensor_first = first;
      c.tensor = static_cast<std::uint32_t>(i);
      c.count = static_cast<std::uint32_t>(t.count - first < step ? t.count - first : step);
      c.flags = detail::aligned16(c.address) && detail::aligned16(buffer + c.buffer_first * wsize) ? chunk_vector : 0u;
      c.reserved = 0;
    }
  }
  return row;
}

//! The table in a std::vector (pageable memory: see upload_table() in multi_tensor.cuh).
[[nodiscard]] inline std::vector<chunk> make_table(std::span<const tensor_desc> tensors,
                                                   const multi_tensor_layout& layout) {
  detail::check_layout(layout, "tutti::cuda::make_table");
  std::vector<chunk> table(count_chunks(tensors, layout.chunk_elements));
  table.resize(fill_table(tensors, layout, table));
  return table;
}

//! The CPU reference executor: each function walks a table (or a buffer) exactly as the matching
//! kernel does — chunk by chunk, the vector path in steps of vector_elements where the chunk's flag
//! allows, the scalar path for the rest — with the same per-element functions (cuda/element.hpp,
//! codec/int8_arith.hpp). The GPU tests compare the kernels with it bit for bit (NaNs compare as
//! NaN: the GPU's arithmetic returns a canonical NaN where the CPU's keeps the payload). Memory is
//! host memory here.
namespace reference {

namespace detail {

//! The kernels' vector path reads 16-byte words; a table whose flag promises that for a misaligned
//! address is wrong, and the reference executor refuses it rather than hide it.
inline void check_vector_row(const chunk& c, std::uint64_t buffer_address) {
  if (c.address % 16 != 0 || buffer_address % 16 != 0)
    throw invalid_argument("tutti::cuda::reference: chunk of tensor " + std::to_string(c.tensor) + " at element " +
                           std::to_string(c.tensor_first) + " is flagged for the vector path but is not 16-byte aligned");
}

template <class T, class W>
void pack(const multi_tensor_layout& layout, std::span<const chunk> table, float scale, int* nonfinite) {
  auto* buffer = static_cast<storage_t<W>*>(layout.buffer);
  bool bad = false;
  for (const chunk& c : table) {
    const auto* src = reinterpret_cast<const storage_t<T>*>(c.address);
    storage_t<W>* dst = buffer + c.buffer_first;
    std::size_t first_scalar = 0;
    if (c.flags & chunk_vector) {
      check_vector_row(c, reinterpret_cast<std::uint64_t>(dst));
      first_scalar = c.count - c.count % vector_elements;
      for (std::size_t v = 0; v < first_scalar; v += vector_elements)
        for (std::size_t j = 0; j < vector_elements; ++j) {
          dst[v + j] = pack_element<T, W>(src[v + j], scale);
          bad |= element<W>::nonfinite(dst[v + j]);
        }
    }
    for (std::size_t i = first_scalar; i < c.count; ++i) {
      dst[i] = pack_element<T, W>(src[i], scale);
      bad |= element<W>::nonfinite(dst[i]);
    }
  }
  if (nonfinite != nullptr && bad) *nonfinite = 1;
}

template <class T, class W>
void unpack(const multi_tensor_layout& layout, std::span<const chunk> table, float scale, bool accumulate) {
  const auto* buffer = static_cast<const storage_t<W>*>(layout.buffer);
  for (const chunk& c : table) {
    auto* dst = reinterpret_cast<storage_t<T>*>(c.address);
    const storage_t<W>* src = buffer + c.buffer_first;
    if (c.flags & chunk_vector) check_vector_row(c, reinterpret_cast<std::uint64_t>(src));
    // The vector and scalar paths compute each element alike; one loop serves both here.
    for (std::size_t i = 0; i < c.count; ++i)
      dst[i] = accumulate ? unpack_accumulate_element<T, W>(dst[i], src[i], scale) : unpack_element<T, W>(src[i], scale);
  }
}

}  // namespace detail

//! Kernel pack: every chunk's tensor elements times `scale`, rounded to the buffer's type, into the
//! fusion buffer; *nonfinite = 1 (never reset to 0) if any value written is an infinity or a NaN.
inline void pack(const multi_tensor_layout& layout, std::span<const chunk> table, float scale,
                 int* nonfinite = nullptr) {
  cuda::detail::check_layout(layout, "tutti::cuda::reference::pack");
  cuda::detail::with_element_type(layout.tensor_type, [&](auto t) {
    cuda::detail::with_element_type(layout.wire_type, [&](auto w) {
      detail::pack<decltype(t), decltype(w)>(layout, table, scale, nonfinite);
    });
  });
}

//! Kernel unpack: the fusion buffer's elements times `scale` into the tensors, or added to them
//! in fp32 when `accumulate`.
inline void unpack(const multi_tensor_layout& layout, std::span<const chunk> table, float scale,
                   bool accumulate = false) {
  cuda::detail::check_layout(layout, "tutti::cuda::reference::unpack");
  cuda::detail::with_element_type(layout.tensor_type, [&](auto t) {
    cuda::detail::with_element_type(layout.wire_type, [&](auto w) {
      detail::unpack<decltype(t), decltype(w)>(layout, table, scale, accumulate);
    });
  });
}

//! acc[i] += widen(wire[i]) in fp32, wire of type f16 or bf16 (codec::fp16 / bf16's decode_add).
inline void decode_reduce(dtype wire_type, const void* wire, float* acc, std::size_t n) {
  if (wire_type != dtype::f16 && wire_type != dtype::bf16)
    throw invalid_argument("tutti::cuda::reference::decode_reduce: wire dtype " + std::string(name_of(wire_type)) +
                           " is not half or bfloat16");
  cuda::detail::with_element_type(wire_type, [&](auto w) {
    const auto* in = static_cast<const std::uint16_t*>(wire);
    for (std::size_t i = 0; i < n; ++i) acc[i] = decode_reduce_element<decltype(w)>(acc[i], in[i]);
  });
}

//! codec::int8's wire (codec/int8.hpp) of in[0, n) times `scale`, block by block as the kernel
//! (one warp per block of codec::int8_arith::block_elements): scales first, then the values.
inline void int8_quantise(const float* in, std::size_t n, float scale, std::byte* wire) {
  namespace arith = codec::int8_arith;
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  auto* values = reinterpret_cast<std::int8_t*>(wire + blocks * sizeof(float));
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t first = b * arith::block_elements;
    const std::size_t m = n - first < arith::block_elements ? n - first : arith::block_elements;
    std::uint32_t top = 0;
    for (std::size_t j = 0; j < m; ++j) {
      const std::uint32_t bits = arith::magnitude_bits(tutti::detail::mul_rn(in[first + j], scale));
      top = bits > top ? bits : top;
    }
    const arith::block_scale s = arith::scale_of_block(top);
    for (std::size_t j = 0; j < m; ++j)
      values[first + j] = s.finite ? arith::quantise(tutti::detail::mul_rn(in[first + j], scale), s.inverse) : std::int8_t{0};
    std::memcpy(wire + b * sizeof(float), &s.scale, sizeof s.scale);
  }
}

//! Decodes codec::int8's wire of n elements into out (q * s), or adds it to out in fp32.
inline void int8_dequantise(const std::byte* wire, std::size_t n, float* out, bool accumulate = false) {
  namespace arith = codec::int8_arith;
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  const auto* values = reinterpret_cast<const std::int8_t*>(wire + blocks * sizeof(float));
  for (std::size_t i = 0; i < n; ++i) {
    float s;
    std::memcpy(&s, wire + (i / arith::block_elements) * sizeof(float), sizeof s);
    const float v = arith::dequantise(values[i], s);
    out[i] = accumulate ? tutti::detail::add_rn(out[i], v) : v;
  }
}

}  // namespace reference

}  // namespace tutti::cuda::inline v0_1
