//! @file pack.hpp  The CUDA multi-tensor pack/unpack kernels' tuning: elements per block's chunk.
//!
//! Plain constants, no CUDA header: cuda/chunk.hpp reads it in host and device code.
#pragma once
#include <cstddef>

namespace tutti::tuner {

struct pack_tuning {
  //! The default chunk (cuda::multi_tensor_layout::chunk_elements overrides it per table),
  //! measured (bench/cuda/gpu-check.sh, H100, ResNet-50's and BERT-base's gradients, fp32 -> fp16):
  //! a block moves its chunk in a loop with one 16-byte load per thread in flight, so fewer, longer
  //! blocks leave the memory system idle. 8 Ki elements (four steps of 256 threads) packed at 0.95x
  //! cudaMemcpy's GB/s and unpacked at 0.85-0.89x; apex's 64 Ki gave 0.78-0.81x and 0.74-0.88x,
  //! 256 Ki 0.38-0.69x. A table row is 40 bytes per 32 KiB of fp32 gradients.
  static constexpr std::size_t chunk_elements = std::size_t{1} << 13;
};

}  // namespace tutti::tuner
