//! @file scratch_buffer_test.cpp  cuda::scratch_buffer (transport::nccl's scratch memory): grows
//! only, reports CUDA's status instead of throwing, and is empty after a failed allocation. On a
//! host without a GPU the allocations fail, which is what the second half checks.
#include <doctest/doctest.h>

#if TUTTI_TEST_HAVE_CUDART
#include <cstddef>
#include <string>

#include "tutti/cuda/device.hpp"
#include "tutti/cuda/scratch_buffer.hpp"

using tutti::cuda::scratch_buffer;

TEST_CASE("scratch_buffer: grows only, rounded to 256 bytes; with no GPU it says why and stays empty") {
  for (auto kind : {scratch_buffer::device, scratch_buffer::pinned_host}) {
    scratch_buffer b(kind);
    CHECK(b.data() == nullptr);
    CHECK(b.reserve(0) == cudaSuccess);  // nothing asked, nothing allocated
    const cudaError_t first = b.reserve(100);
    if (tutti::cuda::device_count().count == 0) {
      CHECK(first != cudaSuccess);
      CHECK(b.data() == nullptr);
      (void)cudaGetLastError();
      continue;
    }
    REQUIRE(first == cudaSuccess);
    std::byte* const p = b.data();
    CHECK(p != nullptr);
    CHECK(b.reserve(256) == cudaSuccess);  // 100 was rounded up to 256: no new allocation
    CHECK(b.data() == p);
    CHECK(b.reserve(257) == cudaSuccess);
    CHECK(b.data() != nullptr);
    b.release();
    CHECK(b.data() == nullptr);
  }
  CHECK(std::string(scratch_buffer(scratch_buffer::device).allocator_name()) == "cudaMalloc");
  CHECK(std::string(scratch_buffer(scratch_buffer::pinned_host).allocator_name()) == "cudaMallocHost");
}
#else
TEST_CASE("scratch_buffer: needs the CUDA runtime, which this build did not find" * doctest::skip()) {}
#endif
