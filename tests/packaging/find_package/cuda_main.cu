// A user's CUDA program against an installed tutti: nvcc compiles tutti's kernels (header-only,
// tutti/cuda/*.cuh) in the user's translation unit. Built when the consumer has nvcc
// (TUTTI_CONSUMER_CUDA). Packs two tensors into a half buffer with a scale and unpacks them where
// a GPU exists; without one it says why and still passes (building and linking is the test here).
#include <tutti/cuda/check.hpp>
#include <tutti/cuda/device.hpp>
#include <tutti/cuda/multi_tensor.cuh>
#include <tutti/version.hpp>

#include <cstdio>
#include <vector>

int main() {
  namespace tc = tutti::cuda;
  const auto devices = tc::device_count();
  if (devices.count == 0) {
    std::printf("tutti %d.%d.%d cuda consumer: built and linked; kernels not run (%s)\n", TUTTI_VERSION_MAJOR,
                TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH, devices.reason.c_str());
    return 0;
  }
  const std::vector<float> a{1.f, 2.f, 3.f}, b{4.f, 5.f};
  float *da = nullptr, *db = nullptr;
  void* buffer = nullptr;
  tc::chunk* table = nullptr;
  TUTTI_CUDA_CHECK(cudaMalloc(&da, 3 * sizeof(float)));
  TUTTI_CUDA_CHECK(cudaMalloc(&db, 2 * sizeof(float)));
  TUTTI_CUDA_CHECK(cudaMalloc(&buffer, 64 * 2));
  TUTTI_CUDA_CHECK(cudaMemcpy(da, a.data(), 3 * sizeof(float), cudaMemcpyHostToDevice));
  TUTTI_CUDA_CHECK(cudaMemcpy(db, b.data(), 2 * sizeof(float), cudaMemcpyHostToDevice));
  const std::vector<tc::tensor_desc> tensors{{da, 3, 0}, {db, 2, 32}};
  const tc::multi_tensor_layout layout{tutti::dtype::f32, tutti::dtype::f16, buffer};
  const auto rows = tc::make_table(tensors, layout);
  TUTTI_CUDA_CHECK(cudaMalloc(&table, rows.size() * sizeof(tc::chunk)));
  TUTTI_CUDA_CHECK(tc::upload_table(rows, table, nullptr));
  TUTTI_CUDA_CHECK(tc::pack(layout, table, rows.size(), 0.5f, nullptr, nullptr));
  TUTTI_CUDA_CHECK(tc::unpack(layout, table, rows.size(), 1.0f, false, nullptr));
  std::vector<float> back(2);
  TUTTI_CUDA_CHECK(cudaMemcpy(back.data(), db, 2 * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("tutti %d.%d.%d cuda consumer: %g %g (expect 2 2.5)\n", TUTTI_VERSION_MAJOR, TUTTI_VERSION_MINOR,
              TUTTI_VERSION_PATCH, back[0], back[1]);
  cudaFree(da);
  cudaFree(db);
  cudaFree(buffer);
  cudaFree(table);
  return back[0] == 2.f && back[1] == 2.5f ? 0 : 1;
}
