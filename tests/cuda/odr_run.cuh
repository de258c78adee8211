//! @file odr_run.cuh  The ODR test's body, included by both of its translation units (odr_a.cu, odr_b.cu).
#pragma once
#include <cstdint>
#include <vector>

#include "tutti/cuda/check.hpp"
#include "tutti/cuda/multi_tensor.cuh"

//! Packs {1, 2, 3} * 2 to fp16 and quantises it to int8 on the GPU; returns the fp16 bits and the
//! int8 values, for main (odr_b.cu) to compare across the two translation units.
//! A template, instantiated once per translation unit (Unit = 0 in odr_a.cu, 1 in odr_b.cu): two
//! functions, each with its own instantiations of the same kernels in its own object file.
template <int Unit>
std::vector<std::uint16_t> odr_run(std::vector<std::int8_t>& int8_values) {
  namespace tc = tutti::cuda;
  const float host[3] = {1.0f, 2.0f, 3.0f};
  float* in = nullptr;
  std::uint16_t* buffer = nullptr;
  tc::chunk* table = nullptr;
  std::byte* wire = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&in, sizeof host));
  TUTTI_CUDA_CHECK(cudaMalloc(&buffer, 3 * sizeof(std::uint16_t)));
  TUTTI_CUDA_CHECK(cudaMalloc(&table, sizeof(tc::chunk)));
  TUTTI_CUDA_CHECK(cudaMalloc(&wire, 8));
  TUTTI_CUDA_CHECK(cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice));
  const tc::tensor_desc t{in, 3, 0};
  const auto rows = tc::make_table({&t, 1}, {tutti::dtype::f32, tutti::dtype::f16, buffer});
  TUTTI_CUDA_CHECK(tc::upload_table(rows, table, nullptr));
  TUTTI_CUDA_CHECK((tc::pack<float, tutti::half>(table, rows.size(), buffer, 2.0f, nullptr, nullptr)));
  TUTTI_CUDA_CHECK(tc::int8_quantise(in, 3, 1.0f, wire, nullptr));
  std::vector<std::uint16_t> out(3);
  int8_values.resize(3);
  TUTTI_CUDA_CHECK(cudaMemcpy(out.data(), buffer, 3 * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
  TUTTI_CUDA_CHECK(cudaMemcpy(int8_values.data(), wire + 4, 3, cudaMemcpyDeviceToHost));
  cudaFree(in);
  cudaFree(buffer);
  cudaFree(table);
  cudaFree(wire);
  return out;
}
