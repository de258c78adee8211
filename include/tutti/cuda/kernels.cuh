//! @file kernels.cuh  tutti's __global__ templates: multi-tensor pack/unpack with a scale, fp32 decode-reduce, int8 block quantisation.
//!
//! Header-only like CUB: the user's nvcc instantiates what the launch wrappers (cuda/multi_tensor.cuh)
//! call. Every element goes through the host-device functions the CPU reference executor and codecs
//! use (cuda/element.hpp, codec/int8_arith.hpp), so the results are the CPU's bit for bit. Each
//! kernel moves groups of four elements per access where the addresses allow it (a chunk's flag,
//! or the wrapper's alignment test for flat buffers) and falls back to one element per thread
//! elsewhere, in grid-stride loops. Device code neither throws nor synchronises with the host. Everything is in
//! the versioned inline namespace v0_1, so two tutti versions' kernels in one program are distinct
//! symbols rather than an ODR violation.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tutti/codec/int8_arith.hpp"
#include "tutti/cuda/chunk.hpp"
#include "tutti/cuda/element.hpp"

namespace tutti::cuda::inline v0_1::kernels {

inline constexpr unsigned block_threads = 256;  //!< threads of every kernel's block
inline constexpr unsigned vec = static_cast<unsigned>(vector_elements);

//! int8 kernels' flags: which of their addresses take the wide path.
inline constexpr unsigned int8_vector = 1u;  //!< fp32 side 16-byte, int8 values 8-byte (quantise) or 4-byte (dequantise) aligned
inline constexpr unsigned int8_scales_aligned = 2u;  //!< the scales are 4-byte aligned

//! Elements one thread moves per access in the element-wise kernels: 16 bytes of float, 8 of a
//! 16-bit type. Thread t of a block takes group t, then t + blockDim.x, ...: a warp's access is 32
//! consecutive groups (512 or 256 contiguous bytes). Eight consecutive elements per thread instead
//! (two 16-byte words of float, 32 bytes apart across the warp) halved the write bandwidth on an
//! H100: 1.47 TB/s store-only against 2.82 contiguous, int8 dequantise at 0.31x cudaMemcpy.
inline constexpr unsigned group = 4;

//! One group (four elements) in one access; the address is aligned to the group's size.
template <class S>
__device__ __forceinline__ void load_group(const S* p, S (&x)[group]) {
  static_assert(sizeof(S) == 2 || sizeof(S) == 4);
  using word = std::conditional_t<sizeof(S) == 4, uint4, uint2>;
  const word w = *reinterpret_cast<const word*>(p);
  memcpy(x, &w, sizeof x);  // a register move after optimisation
}

template <class S>
__device__ __forceinline__ void store_group(S* p, const S (&x)[group]) {
  static_assert(sizeof(S) == 2 || sizeof(S) == 4);
  using word = std::conditional_t<sizeof(S) == 4, uint4, uint2>;
  word w;
  memcpy(&w, x, sizeof w);
  *reinterpret_cast<word*>(p) = w;
}

//! Eight elements in one (16-bit types) or two (float) 16-byte words; the address is 16-byte aligned.
//! Only int8_quantise reads this way (a lane's eight values of a block): it measured 0.98x cudaMemcpy.
template <class S>
__device__ __forceinline__ void load_vector(const S* p, S (&x)[vec]) {
  static_assert(sizeof(S) == 2 || sizeof(S) == 4);
  constexpr unsigned words = sizeof(S) * vec / 16;
  uint4 w[words];
#pragma unroll
  for (unsigned k = 0; k < words; ++k) w[k] = reinterpret_cast<const uint4*>(p)[k];
  memcpy(x, w, sizeof x);  // a register move after optimisation
}

//! Raises the caller's flag once per block that saw a non-finite value. Every thread of the block
//! reaches it (the flag pointer is the same for all), as __syncthreads_or requires.
__device__ __forceinline__ void raise_flag(int* flag, bool bad) {
  if (flag != nullptr && __syncthreads_or(bad) && threadIdx.x == 0) atomicOr(flag, 1);
}

//! y = packed x times scale; whether a value written is infinite or NaN.
template <class T, class W>
__device__ __forceinline__ bool pack_group(storage_t<W> (&y)[group], const storage_t<T> (&x)[group], float scale) {
  bool bad = false;
#pragma unroll
  for (unsigned j = 0; j < group; ++j) {
    y[j] = pack_element<T, W>(x[j], scale);
    bad |= element<W>::nonfinite(y[j]);
  }
  return bad;
}

//! One CUDA block per chunk of the table (grid-stride when the table outgrows the grid). Each
//! thread moves two groups per step (both loads in flight before either store), then the chunk's
//! last count % 4 elements one per thread.
template <class T, class W>
__global__ void __launch_bounds__(block_threads)
    pack_kernel(const chunk* __restrict__ table, std::size_t chunks, storage_t<W>* __restrict__ buffer,
                float scale, int* nonfinite) {
  bool bad = false;
  for (std::size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const chunk row = table[c];
    const auto* src = reinterpret_cast<const storage_t<T>*>(row.address);
    storage_t<W>* dst = buffer + row.buffer_first;
    const unsigned groups = (row.flags & chunk_vector) ? row.count / group : 0;
    for (unsigned g = threadIdx.x; g < groups; g += 2 * blockDim.x) {
      const unsigned h = g + blockDim.x;
      const bool second = h < groups;
      storage_t<T> x[group], x2[group] = {};
      load_group(src + g * group, x);
      if (second) load_group(src + h * group, x2);
      storage_t<W> y[group];
      bad |= pack_group<T, W>(y, x, scale);
      store_group(dst + g * group, y);
      if (second) {
        bad |= pack_group<T, W>(y, x2, scale);
        store_group(dst + h * group, y);
      }
    }
    for (unsigned i = groups * group + threadIdx.x; i < row.count; i += blockDim.x) {
      const storage_t<W> y = pack_element<T, W>(src[i], scale);
      bad |= element<W>::nonfinite(y);
      dst[i] = y;
    }
  }
  raise_flag(nonfinite, bad);
}

//! y = unpacked w, or w added to the tensor's x in fp32.
template <class T, class W>
__device__ __forceinline__ void unpack_group(storage_t<T> (&x)[group], const storage_t<W> (&w)[group], float scale,
                                             bool accumulate) {
#pragma unroll
  for (unsigned j = 0; j < group; ++j)
    x[j] = accumulate ? unpack_accumulate_element<T, W>(x[j], w[j], scale) : unpack_element<T, W>(w[j], scale);
}

template <class T, class W>
__global__ void __launch_bounds__(block_threads)
    unpack_kernel(const chunk* __restrict__ table, std::size_t chunks, const storage_t<W>* __restrict__ buffer,
                  float scale, bool accumulate) {
  for (std::size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const chunk row = table[c];
    auto* dst = reinterpret_cast<storage_t<T>*>(row.address);
    const storage_t<W>* src = buffer + row.buffer_first;
    const unsigned groups = (row.flags & chunk_vector) ? row.count / group : 0;
    for (unsigned g = threadIdx.x; g < groups; g += 2 * blockDim.x) {
      const unsigned h = g + blockDim.x;
      const bool second = h < groups;
      storage_t<W> w[group], w2[group] = {};
      storage_t<T> x[group] = {}, x2[group] = {};
      load_group(src + g * group, w);
      if (second) load_group(src + h * group, w2);
      if (accumulate) {
        load_group(dst + g * group, x);
        if (second) load_group(dst + h * group, x2);
      }
      unpack_group<T, W>(x, w, scale, accumulate);
      store_group(dst + g * group, x);
      if (second) {
        unpack_group<T, W>(x2, w2, scale, accumulate);
        store_group(dst + h * group, x2);
      }
    }
    for (unsigned i = groups * group + threadIdx.x; i < row.count; i += blockDim.x)
      dst[i] = accumulate ? unpack_accumulate_element<T, W>(dst[i], src[i], scale) : unpack_element<T, W>(src[i], scale);
  }
}

//! acc[i] += widen(wire[i]); `vector` when acc is 16-byte and wire 8-byte aligned. Two groups per
//! thread and step, as in the chunk kernels.
template <class W>
__global__ void __launch_bounds__(block_threads)
    decode_reduce_kernel(float* __restrict__ acc, const std::uint16_t* __restrict__ wire, std::size_t n, bool vector) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t thread = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t groups = vector ? n / group : 0;
  for (std::size_t g = thread; g < groups; g += 2 * stride) {
    const std::size_t h = g + stride;
    const bool second = h < groups;
    std::uint16_t w[group], w2[group] = {};
    float a[group], a2[group] = {};
    load_group(wire + g * group, w);
    load_group(acc + g * group, a);
    if (second) {
      load_group(wire + h * group, w2);
      load_group(acc + h * group, a2);
    }
#pragma unroll
    for (unsigned j = 0; j < group; ++j) a[j] = decode_reduce_element<W>(a[j], w[j]);
    store_group(acc + g * group, a);
    if (second) {
#pragma unroll
      for (unsigned j = 0; j < group; ++j) a2[j] = decode_reduce_element<W>(a2[j], w2[j]);
      store_group(acc + h * group, a2);
    }
  }
  for (std::size_t i = groups * group + thread; i < n; i += stride) acc[i] = decode_reduce_element<W>(acc[i], wire[i]);
}

//! codec::int8's wire of in[0, n) * scale: one warp per block of 256 elements, eight per lane,
//! the block's largest magnitude by a warp shuffle reduction.
template <unsigned Threads>  // a template, so that a header defines it in every TU without an ODR violation
__global__ void __launch_bounds__(Threads)
    int8_quantise_kernel(const float* __restrict__ in, std::size_t n, float scale, std::byte* __restrict__ wire,
                         unsigned flags) {
  namespace arith = codec::int8_arith;
  constexpr std::size_t block = arith::block_elements;
  static_assert(block == 32 * vec, "one warp of eight elements per lane covers a block");
  const std::size_t blocks = (n + block - 1) / block;
  auto* values = reinterpret_cast<std::int8_t*>(wire + blocks * sizeof(float));
  const unsigned lane = threadIdx.x % 32;
  const std::size_t warps = std::size_t{gridDim.x} * blockDim.x / 32;
  for (std::size_t b = (std::size_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; b < blocks; b += warps) {
    const std::size_t first = b * block + lane * vec;
    const bool full = n - b * block >= block;  // the same for the whole warp
    float y[vec];
    if (full && (flags & int8_vector)) {
      load_vector(in + first, y);
#pragma unroll
      for (unsigned j = 0; j < vec; ++j) y[j] = tutti::detail::mul_rn(y[j], scale);
    } else {
#pragma unroll
      for (unsigned j = 0; j < vec; ++j) y[j] = first + j < n ? tutti::detail::mul_rn(in[first + j], scale) : 0.0f;
    }
    std::uint32_t top = 0;  // padding is +0, whose bits (0) never raise the maximum
#pragma unroll
    for (unsigned j = 0; j < vec; ++j) top = max(top, arith::magnitude_bits(y[j]));
#pragma unroll
    for (unsigned offset = 16; offset > 0; offset /= 2) top = max(top, __shfl_xor_sync(0xffffffffu, top, offset));
    const arith::block_scale s = arith::scale_of_block(top);
    std::int8_t q[vec];
#pragma unroll
    for (unsigned j = 0; j < vec; ++j) q[j] = s.finite ? arith::quantise(y[j], s.inverse) : std::int8_t{0};
    if (full && (flags & int8_vector)) {
      uint2 packed;
      memcpy(&packed, q, sizeof packed);
      *reinterpret_cast<uint2*>(values + first) = packed;
    } else {
      for (unsigned j = 0; j < vec; ++j)
        if (first + j < n) values[first + j] = q[j];
    }
    if (lane == 0) {
      if (flags & int8_scales_aligned) {
        reinterpret_cast<float*>(wire)[b] = s.scale;
      } else {
        const std::uint32_t bits = tutti::detail::float_as_bits(s.scale);
        for (unsigned k = 0; k < 4; ++k)  // the wire is little-endian memory, as memcpy writes it on the CPU
          wire[b * sizeof(float) + k] = static_cast<std::byte>(bits >> (8 * k));
      }
    }
  }
}

//! Decodes codec::int8's wire: out[i] = q * s, or out[i] += q * s in fp32; one group of four per
//! thread and step (a 4-byte load of values, one 16-byte store).
template <unsigned Threads>  // a template, so that a header defines it in every TU without an ODR violation
__global__ void __launch_bounds__(Threads)
    int8_dequantise_kernel(const std::byte* __restrict__ wire, std::size_t n, float* __restrict__ out, bool accumulate,
                           unsigned flags) {
  namespace arith = codec::int8_arith;
  static_assert(arith::block_elements % group == 0, "a group never straddles two blocks");
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  const auto* values = reinterpret_cast<const std::int8_t*>(wire + blocks * sizeof(float));
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t groups = (n + group - 1) / group;
  for (std::size_t g = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const std::size_t first = g * group;
    const std::size_t b = first / arith::block_elements;
    float s;
    if (flags & int8_scales_aligned) {
      s = reinterpret_cast<const float*>(wire)[b];
    } else {
      std::uint32_t bits = 0;
      for (unsigned k = 0; k < 4; ++k)
        bits |= static_cast<std::uint32_t>(wire[b * sizeof(float) + k]) << (8 * k);
      s = tutti::detail::bits_as_float(bits);
    }
    if (first + group <= n && (flags & int8_vector)) {
      std::int8_t q[group];
      const std::uint32_t packed = *reinterpret_cast<const std::uint32_t*>(values + first);
      memcpy(q, &packed, sizeof q);
      float x[group] = {};
      if (accumulate) load_group(out + first, x);
#pragma unroll
      for (unsigned j = 0; j < group; ++j) {
        const float v = arith::dequantise(q[j], s);
        x[j] = accumulate ? tutti::detail::add_rn(x[j], v) : v;
      }
      store_group(out + first, x);
    } else {
      for (std::size_t i = first; i < first + group && i < n; ++i) {
        const float v = arith::dequantise(values[i], s);
        out[i] = accumulate ? tutti::detail::add_rn(out[i], v) : v;
      }
    }
  }
}

}  // namespace tutti::cuda::inline v0_1::kernels
