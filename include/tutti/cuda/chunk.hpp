//! @file chunk.hpp  One row of the multi-tensor table: what a CUDA block of the pack/unpack kernels copies.
//!
//! Plain data, no CUDA header: cuda/multi_tensor.hpp builds tables of these on the host, the
//! kernels (cuda/kernels.cuh) read them from device memory.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tutti/tuner/pack.hpp"

namespace tutti::cuda::inline v0_1 {

//! Elements one thread moves per step of the vector path: 16 bytes of a 16-bit type, two 16-byte
//! words of float. A chunk's first element is a multiple of this from its tensor's start.
inline constexpr std::size_t vector_elements = 8;

//! The default chunk: tuner::pack_tuning says where it was measured.
inline constexpr std::size_t default_chunk_elements = tuner::pack_tuning::chunk_elements;

//! Rows a tensor of `elements` becomes: ceil(elements / chunk_elements) (0 for an empty tensor).
[[nodiscard]] constexpr std::size_t chunks_in(std::size_t elements,
                                              std::size_t chunk_elements = default_chunk_elements) noexcept {
  return elements / chunk_elements + (elements % chunk_elements != 0);
}

//! chunk::flags bits.
inline constexpr std::uint32_t chunk_vector = 1u;  //!< tensor and buffer addresses 16-byte aligned

//! Offsets are 64-bit (a tensor or a fusion buffer may hold more than 2^32 elements); a count is
//! at most the chunk size, which is below 2^31.
struct chunk {
  std::uint64_t address;       //!< the chunk's first element in its tensor (a device address)
  std::uint64_t buffer_first;  //!< that element's index in the fusion buffer
  std::uint64_t tensor_first;  //!< that element's index in its tensor
  std::uint32_t tensor;        //!< the tensor's index in the list the table was made from
  std::uint32_t count;         //!< elements, 1 to the chunk size
  std::uint32_t flags;         //!< chunk_vector when the 16-byte path is legal
  std::uint32_t reserved;      //!< zero; keeps the row 40 bytes on every compiler
};
static_assert(sizeof(chunk) == 40);

}  // namespace tutti::cuda::inline v0_1
