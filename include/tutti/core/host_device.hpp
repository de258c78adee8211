//! @file host_device.hpp  TUTTI_HOST_DEVICE and the bit casts and IEEE-exact float operations that the CPU codecs and the CUDA kernels share.
//!
//! One arithmetic, two processors: a conversion written once with these helpers rounds the same
//! way on the CPU (checked by the host tests) and on the GPU (where the kernels call it). Nothing
//! here throws or needs a library beyond <bit> and <cstdint>, so device code may include it.
//!
//! Bit-exactness between the two sides holds for nvcc's defaults (-ftz=false, IEEE division and
//! square root): --use_fast_math flushes subnormals to zero in the _rn intrinsics too. On the host
//! the operations are plain `*`, `+`, `/`; g++ may contract a*b+c into an FMA only when the target
//! has FMA (-mfma, -march=haswell and later) and -ffp-contract=fast (GNU dialects' default), which
//! tutti's builds (baseline x86-64) never enable.
#pragma once
#include <bit>  // both passes: nvcc parses host code in the device pass too
#include <cstdint>

#if defined(__CUDACC__)
#define TUTTI_HOST_DEVICE __host__ __device__
#else
#define TUTTI_HOST_DEVICE
#endif

namespace tutti::detail {

[[nodiscard]] TUTTI_HOST_DEVICE inline std::uint32_t float_as_bits(float f) noexcept {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}

[[nodiscard]] TUTTI_HOST_DEVICE inline float bits_as_float(std::uint32_t u) noexcept {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// The _rn intrinsics are never contracted with a neighbouring operation into an FMA (nvcc fuses
// a plain a * b + c by default, -fmad=true), so a device result equals the host's rounded-twice one.

[[nodiscard]] TUTTI_HOST_DEVICE inline float mul_rn(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

[[nodiscard]] TUTTI_HOST_DEVICE inline float add_rn(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

[[nodiscard]] TUTTI_HOST_DEVICE inline float sub_rn(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

//! Correctly rounded division on both sides, whatever -prec-div says (--use_fast_math sets it false).
[[nodiscard]] TUTTI_HOST_DEVICE inline float div_rn(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace tutti::detail
