//! @file kernels.cuh  tutti's __global__ templates: multi-tensor pack/unpack with a scale, fp32 decode-reduce, int8 block quantisation.
//!
//! Header-only like CUB: the user's nvcc instantiates what the launch wrappers (cuda/multi_tensor.cuh)
//! call. Every element goes through the host-device functions the CPU reference executor and codecs
//! use (cuda/element.hpp, codec/int8_arith.hpp), so the results are the CPU's bit for bit. Each
//! kernel reads 16-byte words where the addresses allow it (a chunk's flag, or the wrapper's
//! alignment test for flat buffers) and falls back to one element per thread elsewhere, in
//! grid-stride loops. Device code neither throws nor synchronises with the host. Everything is in
//! the versioned inline namespace v0_1, so two tutti versions' kernels in one program are distinct
//! symbols rather than an ODR violation.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tutti/codec/int8_arith.hpp"
#include "tutti/cuda/chunk.hpp"
#include "tutti/cuda/element.hpp"

namespace tutti::cuda::inline v0_1::kernels {

inline constexpr unsigned block_threads = 256;  //!< threads of every kernel's block
inline constexpr unsigned vec = static_cast<unsigned>(vector_elements);

//! int8 kernels' flags: which of their addresses take the wide path.
inline constexpr unsigned int8_vector = 1u;          //!< fp32 side 16-byte, int8 values 8-byte aligned
inline constexpr unsigned int8_scales_aligned = 2u;  //!< the scales are 4-byte aligned

//! Eight elements in one (16-bit types) or two (float) 16-byte words; the address is 16-byte aligned.
template <class S>
__device__ __forceinline__ void load_vector(const S* p, S (&x)[vec]) {
  static_assert(sizeof(S) == 2 || sizeof(S) == 4);
  constexpr unsigned words = sizeof(S) * vec / 16;
  uint4 w[words];
#pragma unroll
  for (unsigned k = 0; k < words; ++k) w[k] = reinterpret_cast<const uint4*>(p)[k];
  memcpy(x, w, sizeof x);  // a register move after optimisation
}

template <class S>
__device__ __forceinline__ void store_vector(S* p, const S (&x)[vec]) {
  static_assert(sizeof(S) == 2 || sizeof(S) == 4);
  constexpr unsigned words = sizeof(S) * vec / 16;
  uint4 w[words];
  memcpy(w, x, sizeof w);
#pragma unroll
  for (unsigned k = 0; k < words; ++k) reinterpret_cast<uint4*>(p)[k] = w[k];
}

//! Raises the caller's flag once per block that saw a non-finite value. Every thread of the block
//! reaches it (the flag pointer is the same for all), as __syncthreads_or requires.
__device__ __forceinline__ void raise_flag(int* flag, bool bad) {
  if (flag != nullptr && __syncthreads_or(bad) && threadIdx.x == 0) atomicOr(flag, 1);
}

//! One CUDA block per chunk of the table (grid-stride when the table outgrows the grid).
template <class T, class W>
__global__ void __launch_bounds__(block_threads)
    pack_kernel(const chunk* __restrict__ table, std::size_t chunks, storage_t<W>* __restrict__ buffer,
                float scale, int* nonfinite) {
  bool bad = false;
  for (std::size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const chunk row = table[c];
    const auto* src = reinterpret_cast<const storage_t<T>*>(row.address);
    storage_t<W>* dst = buffer + row.buffer_first;
    unsigned first_scalar = 0;
    if (row.flags & chunk_vector) {
      first_scalar = row.count - row.count % vec;
      for (unsigned v = threadIdx.x * vec; v < first_scalar; v += blockDim.x * vec) {
        storage_t<T> x[vec];
        storage_t<W> y[vec];
        load_vector(src + v, x);
#pragma unroll
        for (unsigned j = 0; j < vec; ++j) {
          y[j] = pack_element<T, W>(x[j], scale);
          bad |= element<W>::nonfinite(y[j]);
        }
        store_vector(dst + v, y);
      }
    }
    for (unsigned i = first_scalar + threadIdx.x; i < row.count; i += blockDim.x) {
      const storage_t<W> y = pack_element<T, W>(src[i], scale);
      bad |= element<W>::nonfinite(y);
      dst[i] = y;
    }
  }
  raise_flag(nonfinite, bad);
}

template <class T, class W>
__global__ void __launch_bounds__(block_threads)
    unpack_kernel(const chunk* __restrict__ table, std::size_t chunks, const storage_t<W>* __restrict__ buffer,
                  float scale, bool accumulate) {
  for (std::size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const chunk row = table[c];
    auto* dst = reinterpret_cast<storage_t<T>*>(row.address);
    const storage_t<W>* src = buffer + row.buffer_first;
    unsigned first_scalar = 0;
    if (row.flags & chunk_vector) {
      first_scalar = row.count - row.count % vec;
      for (unsigned v = threadIdx.x * vec; v < first_scalar; v += blockDim.x * vec) {
        storage_t<W> w[vec];
        storage_t<T> x[vec];
        load_vector(src + v, w);
        if (accumulate) {
          load_vector(dst + v, x);
#pragma unroll
          for (unsigned j = 0; j < vec; ++j) x[j] = unpack_accumulate_element<T, W>(x[j], w[j], scale);
        } else {
#pragma unroll
          for (unsigned j = 0; j < vec; ++j) x[j] = unpack_element<T, W>(w[j], scale);
        }
        store_vector(dst + v, x);
      }
    }
    for (unsigned i = first_scalar + threadIdx.x; i < row.count; i += blockDim.x)
      dst[i] = accumulate ? unpack_accumulate_element<T, W>(dst[i], src[i], scale) : unpack_element<T, W>(src[i], scale);
  }
}

//! acc[i] += widen(wire[i]); `vector` when both are 16-byte aligned.
template <class W>
__global__ void __launch_bounds__(block_threads)
    decode_reduce_kernel(float* __restrict__ acc, const std::uint16_t* __restrict__ wire, std::size_t n, bool vector) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t thread = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  std::size_t first_scalar = 0;
  if (vector) {
    first_scalar = n - n % vec;
    for (std::size_t v = thread * vec; v < first_scalar; v += stride * vec) {
      std::uint16_t w[vec];
      float a[vec];
      load_vector(wire + v, w);
      load_vector(acc + v, a);
#pragma unroll
      for (unsigned j = 0; j < vec; ++j) a[j] = decode_reduce_element<W>(a[j], w[j]);
      store_vector(acc + v, a);
    }
  }
  for (std::size_t i = first_scalar + thread; i < n; i += stride) acc[i] = decode_reduce_element<W>(acc[i], wire[i]);
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

//! Decodes codec::int8's wire: out[i] = q * s, or out[i] += q * s in fp32; eight elements per thread.
template <unsigned Threads>  // a template, so that a header defines it in every TU without an ODR violation
__global__ void __launch_bounds__(Threads)
    int8_dequantise_kernel(const std::byte* __restrict__ wire, std::size_t n, float* __restrict__ out, bool accumulate,
                           unsigned flags) {
  namespace arith = codec::int8_arith;
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  const auto* values = reinterpret_cast<const std::int8_t*>(wire + blocks * sizeof(float));
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t groups = (n + vec - 1) / vec;
  for (std::size_t g = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const std::size_t first = g * vec;  // eight elements never straddle a block (256 = 32 * 8)
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
    if (first + vec <= n && (flags & int8_vector)) {
      std::int8_t q[vec];
      const uint2 packed = *reinterpret_cast<const uint2*>(values + first);
      memcpy(q, &packed, sizeof q);
      float x[vec];
      if (accumulate) load_vector(out + first, x);
#pragma unroll
      for (unsigned j = 0; j < vec; ++j) {
        const float v = arith::dequantise(q[j], s);
        x[j] = accumulate ? tutti::detail::add_rn(x[j], v) : v;
      }
      store_vector(out + first, x);
    } else {
      for (std::size_t i = first; i < first + vec && i < n; ++i) {
        const float v = arith::dequantise(values[i], s);
        out[i] = accumulate ? tutti::detail::add_rn(out[i], v) : v;
      }
    }
  }
}

}  // namespace tutti::cuda::inline v0_1::kernels
