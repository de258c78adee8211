//! @file multi_tensor.cuh  Host launch wrappers of tutti's kernels: multi-tensor pack/unpack, decode-reduce, int8 quantise/dequantise.
//!
//! Every wrapper enqueues on the caller's stream and returns at once with the launch's status
//! (cudaErrorInvalidValue for arguments it refuses); none synchronises, allocates or throws. Wrap a
//! call in TUTTI_CUDA_CHECK (cuda/check.hpp) for an exception. Memory is the caller's: tensors,
//! fusion buffer, wires, the device copy of the table and the non-finite flag (a device int that
//! pack only ever sets to 1: the caller zeroes it, e.g. with cudaMemsetAsync, once per step).
//!
//! A step on the GPU, with a table made once for a fixed tensor list and buffer (cuda/multi_tensor.hpp):
//!   auto table = tutti::cuda::make_table(tensors, layout);            // host, once
//!   TUTTI_CUDA_CHECK(tutti::cuda::upload_table(table, device_table, stream));
//!   TUTTI_CUDA_CHECK(tutti::cuda::pack(layout, device_table, table.size(), 1.0f / world, flag, stream));
//!   ... the collective on layout.buffer ...
//!   TUTTI_CUDA_CHECK(tutti::cuda::unpack(layout, device_table, table.size(), 1.0f, false, stream));
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "tutti/core/dtype.hpp"
#include "tutti/cuda/chunk.hpp"
#include "tutti/cuda/kernels.cuh"
#include "tutti/cuda/multi_tensor.hpp"

namespace tutti::cuda::inline v0_1 {

namespace launch_detail {

//! Blocks for `work` units of `per_block` each, within the grid's x limit (the kernels grid-stride).
[[nodiscard]] inline unsigned grid_for(std::size_t work, std::size_t per_block) noexcept {
  const std::size_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 0x7fffffffu ? blocks : 0x7fffffffu);
}

[[nodiscard]] inline bool aligned(const void* p, std::size_t bytes) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

//! Calls f(T{}) for the kernels' element types; cudaErrorInvalidValue for any other dtype.
template <class F>
cudaError_t with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f16: return f(half{});
    case dtype::bf16: return f(bfloat16{});
    default: return cudaErrorInvalidValue;
  }
}

[[nodiscard]] inline bool valid(const multi_tensor_layout& layout) noexcept {
  return cuda::detail::is_kernel_type(layout.tensor_type) && cuda::detail::is_kernel_type(layout.wire_type);
}

}  // namespace launch_detail

//! Copies a table to the device: cudaMemcpyAsync on `stream`, so the kernels enqueued after it on
//! that stream see it. From pinned host memory (cudaMallocHost; fill_table() writes into it) the copy
//! is asynchronous and the host rows must stay unchanged until the stream has passed the copy. From
//! pageable memory (make_table()'s std::vector) CUDA stages the rows before the call returns, so
//! they may be changed or freed at once, but the call may wait for the staging (and, CUDA's
//! documentation allows, for the stream): build the table once per tensor list, not per step.
inline cudaError_t upload_table(std::span<const chunk> host_table, chunk* device_table, cudaStream_t stream) noexcept {
  if (host_table.empty()) return cudaSuccess;
  if (device_table == nullptr) return cudaErrorInvalidValue;
  return cudaMemcpyAsync(device_table, host_table.data(), host_table.size_bytes(), cudaMemcpyHostToDevice, stream);
}

//! Pack, typed: the tensors (T) of a device table into the fusion buffer (W), times scale, in one
//! launch; *nonfinite = 1 if a value written is infinite or NaN (nullptr: not checked).
template <class T, class W>
cudaError_t pack(const chunk* device_table, std::size_t chunks, storage_t<W>* buffer, float scale, int* nonfinite,
                 cudaStream_t stream) noexcept {
  if (chunks == 0) return cudaSuccess;
  kernels::pack_kernel<T, W><<<launch_detail::grid_for(chunks, 1), kernels::block_threads, 0, stream>>>(
      device_table, chunks, buffer, scale, nonfinite);
  return cudaGetLastError();
}

//! Unpack, typed: the fusion buffer (W) times scale into the tensors (T), or added to them in fp32.
template <class T, class W>
cudaError_t unpack(const chunk* device_table, std::size_t chunks, const storage_t<W>* buffer, float scale,
                   bool accumulate, cudaStream_t stream) noexcept {
  if (chunks == 0) return cudaSuccess;
  kernels::unpack_kernel<T, W><<<launch_detail::grid_for(chunks, 1), kernels::block_threads, 0, stream>>>(
      device_table, chunks, buffer, scale, accumulate);
  return cudaGetLastError();
}

//! Pack for a layout's runtime dtypes (instantiates the nine type pairs). `device_table` holds the
//! `chunks` rows make_table()/fill_table() made for this layout, uploaded.
inline cudaError_t pack(const multi_tensor_layout& layout, const chunk* device_table, std::size_t chunks, float scale,
                        int* nonfinite, cudaStream_t stream) noexcept {
  if (!launch_detail::valid(layout)) return cudaErrorInvalidValue;
  return launch_detail::with_type(layout.tensor_type, [&](auto t) {
    return launch_detail::with_type(layout.wire_type, [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      return pack<T, W>(device_table, chunks, static_cast<storage_t<W>*>(layout.buffer), scale, nonfinite, stream);
    });
  });
}

//! Unpack for a layout's runtime dtypes.
inline cudaError_t unpack(const multi_tensor_layout& layout, const chunk* device_table, std::size_t chunks,
                          float scale, bool accumulate, cudaStream_t stream) noexcept {
  if (!launch_detail::valid(layout)) return cudaErrorInvalidValue;
  return launch_detail::with_type(layout.tensor_type, [&](auto t) {
    return launch_detail::with_type(layout.wire_type, [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      return unpack<T, W>(device_table, chunks, static_cast<const storage_t<W>*>(layout.buffer), scale, accumulate,
                          stream);
    });
  });
}

//! acc[i] += widen(wire[i]) in fp32 for i < n, wire of type f16 or bf16: codec::fp16 / bf16's
//! decode_add, the receive step of a schedule that must not sum in 16 bits.
inline cudaError_t decode_reduce(dtype wire_type, const void* wire, float* acc, std::size_t n,
                                 cudaStream_t stream) noexcept {
  if (n == 0) return cudaSuccess;
  if (wire_type != dtype::f16 && wire_type != dtype::bf16) return cudaErrorInvalidValue;
  // Groups of four: 16 bytes of acc, 8 of wire. Two groups per thread.
  const bool vector = launch_detail::aligned(wire, 8) && launch_detail::aligned(acc, 16);
  const unsigned grid = launch_detail::grid_for(n, std::size_t{kernels::block_threads} * 2 * kernels::group);
  const auto* in = static_cast<const std::uint16_t*>(wire);
  if (wire_type == dtype::f16)
    kernels::decode_reduce_kernel<half><<<grid, kernels::block_threads, 0, stream>>>(acc, in, n, vector);
  else
    kernels::decode_reduce_kernel<bfloat16><<<grid, kernels::block_threads, 0, stream>>>(acc, in, n, vector);
  return cudaGetLastError();
}

//! codec::int8's wire (codec/int8.hpp: codec::int8::encoded_bytes(f32, n) bytes at `wire`, any
//! alignment) of in[0, n) * scale, bit for bit as codec::int8::encode writes it on the CPU.
inline cudaError_t int8_quantise(const float* in, std::size_t n, float scale, std::byte* wire,
                                 cudaStream_t stream) noexcept {
  namespace arith = codec::int8_arith;
  if (n == 0) return cudaSuccess;
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  const unsigned flags =
      (launch_detail::aligned(in, 16) && launch_detail::aligned(wire + blocks * sizeof(float), 8) ? kernels::int8_vector : 0u) |
      (launch_detail::aligned(wire, sizeof(float)) ? kernels::int8_scales_aligned : 0u);
  const unsigned grid = launch_detail::grid_for(blocks, kernels::block_threads / 32);  // a warp per block
  kernels::int8_quantise_kernel<kernels::block_threads><<<grid, kernels::block_threads, 0, stream>>>(in, n, scale, wire, flags);
  return cudaGetLastError();
}

//! Decodes codec::int8's wire of n elements into out (accumulate: adds to out in fp32), as
//! codec::int8::decode / decode_add.
inline cudaError_t int8_dequantise(const std::byte* wire, std::size_t n, float* out, bool accumulate,
                                   cudaStream_t stream) noexcept {
  namespace arith = codec::int8_arith;
  if (n == 0) return cudaSuccess;
  const std::size_t blocks = (n + arith::block_elements - 1) / arith::block_elements;
  const unsigned flags =
      (launch_detail::aligned(out, 16) && launch_detail::aligned(wire + blocks * sizeof(float), 4) ? kernels::int8_vector : 0u) |
      (launch_detail::aligned(wire, sizeof(float)) ? kernels::int8_scales_aligned : 0u);
  const unsigned grid = launch_detail::grid_for(n, std::size_t{kernels::block_threads} * kernels::group);  // a group per thread
  kernels::int8_dequantise_kernel<kernels::block_threads><<<grid, kernels::block_threads, 0, stream>>>(wire, n, out, accumulate, flags);
  return cudaGetLastError();
}

}  // namespace tutti::cuda::inline v0_1
