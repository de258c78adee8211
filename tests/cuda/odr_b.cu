//! @file odr_b.cu  Second of two translation units that instantiate the same kernels (the ODR test), and its main.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "odr_run.cuh"
#include "tutti/cuda/device.hpp"

std::vector<std::uint16_t> odr_b_run(std::vector<std::int8_t>& int8_values) { return odr_run<1>(int8_values); }

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
