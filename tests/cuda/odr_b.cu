//! @file odr_b.cu  Second of two translation units that instantiate the same kernels (the ODR test), and its main.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "tutti/cuda/check.hpp"
#include "tutti/cuda/device.hpp"
#include "tutti/cuda/multi_tensor.cuh"

//! Packs {1, 2, 3} * 2 to fp16 and quantises it to int8 on the GPU; returns the fp16 bits and the
//! int8 values, for main to compare with odr_a.cu's.
std::vector<std::uint16_t> odr_b_run(std::vector<std::int8_t>& int8_values) {
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

std::vector<std::uint16_t> odr_a_run(std::vector<std::int8_t>& int8_values);

//! Both translation units launch pack<float, half> and int8_quantise_kernel: the program links (the
//! test here) and, on a GPU, each launch runs and gives fp16 {2, 4, 6} = {0x4000, 0x4400, 0x4600}
//! and int8 {42, 85, 127} (round(127 * x / 3)).
int main() {
  const auto devices = tutti::cuda::device_count();
  if (devices.count == 0) {
    std::printf("SKIP: linked; no GPU to run on: %s\n", devices.reason.c_str());
    return 77;
  }
  try {
    std::vector<std::int8_t> qa, qb;
    const auto a = odr_a_run(qa);
    const auto b = odr_b_run(qb);
    const std::vector<std::uint16_t> want = {0x4000, 0x4400, 0x4600};
    const std::vector<std::int8_t> want_q = {42, 85, 127};
    if (a != want || b != want || qa != want_q || qb != want_q) {
      std::printf("FAIL: the two translation units' kernels disagree with the expected values\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
