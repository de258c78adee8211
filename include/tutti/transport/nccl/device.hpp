//! @file device.hpp  Which GPU a rank uses, and keeping it current around CUDA calls.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "tutti/core/error.hpp"
#include "tutti/core/message.hpp"
#include "tutti/cuda/device.hpp"

namespace tutti::transport::nccl_detail {

//! The device for a rank: `requested` when it is >= 0 (TUTTI_NCCL_DEVICE), else local_rank modulo
//! the count (`devices`: tutti::cuda::device_count(), whose count is 0 with a reason when CUDA sees
//! no device). Throws invalid_argument naming the rank when there is no such device.
[[nodiscard]] inline int choose_device(int rank, int requested, int local_rank, const cuda::device_count_result& devices) {
  const std::string where = on_rank(rank) + "transport::nccl: ";
  if (devices.count <= 0) throw invalid_argument(where + "no CUDA device to run on: " + devices.reason);
  if (requested >= devices.count)
    throw invalid_argument(where + "TUTTI_NCCL_DEVICE=" + std::to_string(requested) + " but only " +
                           std::to_string(devices.count) + " CUDA device(s) are visible");
  if (requested >= 0) return requested;
  if (local_rank < 0) throw invalid_argument(where + "local rank " + std::to_string(local_rank) + " is negative");
  return local_rank % devices.count;
}

//! Makes `device` current for a scope and restores the caller's device after: ranks may be
//! threads of one process, each on its own GPU, and a user's thread has its own current device.
class device_guard {
 public:
  explicit device_guard(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);  // failure shows in the next checked call
    else previous_ = -1;
  }
  ~device_guard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = -1;  //!< the device to restore, or -1 when nothing changed
};

}  // namespace tutti::transport::nccl_detail
