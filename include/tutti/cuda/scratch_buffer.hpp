//! @file scratch_buffer.hpp  Grow-only CUDA memory a transport keeps for its collectives' scratch:
//! device memory (cudaMalloc) or pinned host memory (cudaMallocHost).
//!
//! Pinned, not pageable, host memory: a copy from pageable memory synchronises the stream, a wait
//! no deadline bounds. Device code and destructors do not throw, and this layer sits below the
//! transports that word their errors: reserve() returns CUDA's status for the caller to check.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace tutti::cuda::inline v0_1 {

class scratch_buffer {
 public:
  enum kind_t { device, pinned_host };
  explicit scratch_buffer(kind_t kind) noexcept : kind_(kind) {}
  scratch_buffer(const scratch_buffer&) = delete;
  scratch_buffer& operator=(const scratch_buffer&) = delete;
  ~scratch_buffer() { release(); }

  //! Makes data() hold at least `bytes` (rounded up to 256), reallocating only to grow; the caller
  //! has made its device current and drained the stream's use of the previous allocation.
  //! Returns the allocation's status; on failure the buffer is empty.
  [[nodiscard]] cudaError_t reserve(std::size_t bytes) noexcept {
    if (bytes <= size_) return cudaSuccess;
    release();
    const std::size_t rounded = (bytes + 255) & ~std::size_t{255};
    void* p = nullptr;
    const cudaError_t e = kind_ == device ? cudaMalloc(&p, rounded) : cudaMallocHost(&p, rounded);
    if (e != cudaSuccess) return e;
    data_ = static_cast<std::byte*>(p);
    size_ = rounded;
    return cudaSuccess;
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  //! The CUDA call reserve() makes, for the caller's error message.
  [[nodiscard]] const char* allocator_name() const noexcept { return kind_ == device ? "cudaMalloc" : "cudaMallocHost"; }

  void release() noexcept {
    if (!data_) return;
    if (kind_ == device) cudaFree(data_);
    else cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  kind_t kind_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tutti::cuda::inline v0_1
