//! @file check.hpp  TUTTI_CUDA_CHECK: a CUDA status that is not cudaSuccess becomes a tutti::cuda_error naming the call, file, line and CUDA's message.
//!
//! The kernels' launch wrappers return cudaError_t (device code and wrappers never throw: a caller
//! in a noexcept path checks the status itself); host code that wants an exception wraps a call:
//!   TUTTI_CUDA_CHECK(tutti::cuda::pack(layout, table, rows, scale, flag, stream));
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "tutti/core/error.hpp"

namespace tutti::cuda::inline v0_1 {

//! A CUDA runtime call failed; code() is its status.
class cuda_error : public tutti::error {
 public:
  cuda_error(cudaError_t code, const std::string& what) : tutti::error(what), code_(code) {}
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }  //!< the failing call's status

 private:
  cudaError_t code_;
};

//! The exception TUTTI_CUDA_CHECK throws: "<file>:<line>: <call> failed: <cudaErrorName>: <message>".
[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw cuda_error(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                             cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

}  // namespace tutti::cuda::inline v0_1

//! Evaluates a CUDA call once; throws tutti::cuda::cuda_error unless it returned cudaSuccess.
#define TUTTI_CUDA_CHECK(call)                                                       \
  do {                                                                               \
    const cudaError_t tutti_cuda_check_status_ = (call);                             \
    if (tutti_cuda_check_status_ != cudaSuccess)                                     \
      ::tutti::cuda::throw_cuda_error(tutti_cuda_check_status_, #call, __FILE__, __LINE__); \
  } while (false)
