//! @file device.hpp  How many GPUs this process sees, and why none when there are none (for tests and benchmarks that skip).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace tutti::cuda::inline v0_1 {

struct device_count_result {
  int count = 0;       //!< visible CUDA devices; 0 when the runtime cannot say
  std::string reason;  //!< empty when count > 0; otherwise why there is none
};

//! cudaGetDeviceCount, made safe to read: on a machine without a GPU or driver it returns an error
//! and leaves its argument untouched, so the count starts at 0 here. A non-sticky error (no
//! device) is cleared from cudaGetLastError(); a missing or old driver stays, as CUDA keeps it.
[[nodiscard]] inline device_count_result device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return {0, std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + ": " +
                   cudaGetErrorString(status)};
  }
  if (count <= 0) return {0, "cudaGetDeviceCount found no CUDA device"};
  return {count, {}};
}

}  // namespace tutti::cuda::inline v0_1
