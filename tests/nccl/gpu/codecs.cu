//! @file codecs.cu  Lossy codecs over communicator<transport::nccl, native> on real GPUs: fp16, bf16
//! and int8 with the owner schedule (every element of every rank within compressed_conformance's
//! written bound, bit for bit the host reference of the CPU path, identical bits on every rank),
//! and fp16/bf16 with native_wire_sum's 16-bit NCCL sum (within wire_sum_bound). Counts 0, 1, 7,
//! 1009 and 1,000,003, sum and avg, in place and out of place, one rank per visible GPU (threads
//! meeting in an inproc_store; one GPU is a world of one, which still encodes and decodes).
//!
//! Not doctest: one small program keeps nvcc's work down. Exit 0 all good, 1 a failure (printed),
//! 77 no GPU ("SKIP: <reason>", which CTest reports as skipped).
#define DOCTEST_CONFIG_DISABLE  // compressed_conformance.hpp's suite is not run here, only its bound
#include <cuda_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include <tutti/algorithm/native.hpp>
#include <tutti/codec/float16.hpp>
#include <tutti/codec/int8.hpp>
#include <tutti/communicator.hpp>
#include <tutti/cuda/check.hpp>
#include <tutti/cuda/device.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/gpu_ranks.hpp>
#include <tutti/transport/nccl.hpp>

#include "../native_codecs_reference.hpp"

namespace {

using tutti::op;

std::mutex log_mutex;
std::atomic<int> failures{0};

void fail(const std::string& what) {
  std::lock_guard lock(log_mutex);
  if (++failures <= 30) std::printf("FAIL: %s\n", what.c_str());
}

struct device_floats {
  float* p = nullptr;
  explicit device_floats(std::size_t n) { TUTTI_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(float))); }
  ~device_floats() { cudaFree(p); }
  device_floats(const device_floats&) = delete;
  device_floats& operator=(const device_floats&) = delete;
};

const std::vector<std::size_t> counts = {0, 1, 7, 1009, 1000003};

//! One algorithm and codec over every visible GPU: every case on every rank.
template <class Algorithm, class Codec>
void run_suite(int world, const char* label, bool owner_schedule, tutti::testing::sum16_rounding r16) {
  using comm_t = tutti::communicator<tutti::transport::nccl, Algorithm, Codec>;
  static std::atomic<int> job{0};
  const std::string prefix = std::string("gpu-codecs/") + label + "/" + std::to_string(job++);
  // Every rank's inputs, on the host, for the references (gradient_value(r, i), as the CPU suite).
  std::vector<std::vector<float>> x(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    x[static_cast<std::size_t>(r)].resize(counts.back());
    for (std::size_t i = 0; i < counts.back(); ++i) x[static_cast<std::size_t>(r)][i] = tutti::testing::gradient_value(r, i);
  }
  struct one_case {
    std::size_t count;
    op o;
    bool in_place;
  };
  std::vector<one_case> cases;
  for (std::size_t count : counts)
    for (op o : {op::sum, op::avg})
      for (bool in_place : {false, true}) cases.push_back({count, o, in_place});
  // results[case][rank]: compared across ranks after all ranks finish.
  std::vector<std::vector<std::vector<float>>> results(cases.size(), std::vector<std::vector<float>>(static_cast<std::size_t>(world)));
  const auto errors = tutti::testing::run_gpu_ranks<comm_t>(world, prefix, [&](comm_t& comm, int r) {
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const auto& c = cases[k];
      const std::vector<float>& mine = x[static_cast<std::size_t>(r)];
      device_floats in(c.count), out(c.count);
      TUTTI_CUDA_CHECK(cudaMemcpy(in.p, mine.data(), c.count * sizeof(float), cudaMemcpyHostToDevice));
      if (c.in_place) {
        comm.allreduce(tutti::tensor_view(in.p, c.count, tutti::dtype::f32), c.o);
      } else {
        TUTTI_CUDA_CHECK(cudaMemset(out.p, 0xCD, c.count * sizeof(float)));
        comm.allreduce(tutti::const_tensor_view(in.p, c.count, tutti::dtype::f32),
                       tutti::tensor_view(out.p, c.count, tutti::dtype::f32), c.o);
        std::vector<float> after(c.count);
        TUTTI_CUDA_CHECK(cudaMemcpy(after.data(), in.p, c.count * sizeof(float), cudaMemcpyDeviceToHost));
        if (std::memcmp(after.data(), mine.data(), c.count * sizeof(float)) != 0)
          fail(std::string(label) + " rank " + std::to_string(r) + " count " + std::to_string(c.count) +
               ": the input of an out-of-place allreduce changed");
      }
      auto& got = results[k][static_cast<std::size_t>(r)];
      got.resize(c.count);
      TUTTI_CUDA_CHECK(cudaMemcpy(got.data(), c.in_place ? in.p : out.p, c.count * sizeof(float), cudaMemcpyDeviceToHost));
    }
  });
  for (int r = 0; r < world; ++r)
    if (!errors[static_cast<std::size_t>(r)].empty())
      fail(std::string(label) + " rank " + std::to_string(r) + ": " + errors[static_cast<std::size_t>(r)]);

  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    const std::string name = std::string(label) + " world " + std::to_string(world) + " count " + std::to_string(c.count) +
                             " " + std::string(tutti::name_of(c.o)) + (c.in_place ? " in place" : " out of place");
    std::vector<std::vector<float>> xs(x.size());
    for (std::size_t r = 0; r < x.size(); ++r) xs[r].assign(x[r].begin(), x[r].begin() + static_cast<std::ptrdiff_t>(c.count));
    const auto e = tutti::testing::expect_compressed<Codec>(world, c.count, c.o);
    std::vector<float> bound(e.bound);
    std::vector<float> exact;
    if (owner_schedule) {
      exact = tutti::testing::owner_reference<Codec>(xs, c.count, c.o);
    } else if constexpr (!std::is_same_v<Codec, tutti::codec::int8>) {
      const auto b = tutti::testing::wire_sum_bound<Codec>(xs, c.count, c.o, r16);
      for (std::size_t i = 0; i < c.count; ++i) bound[i] = static_cast<float>(b[i]);
    }
    for (int r = 0; r < world; ++r) {
      const auto& got = results[k][static_cast<std::size_t>(r)];
      if (got.size() != c.count) continue;  // that rank failed, and said so
      std::size_t outside = 0, first = 0;
      for (std::size_t i = 0; i < c.count; ++i)
        if (!(std::fabs(static_cast<double>(got[i]) - e.reference[i]) <= bound[i]) && !outside++) first = i;
      if (outside)
        fail(name + " rank " + std::to_string(r) + ": " + std::to_string(outside) + " elements outside the bound; first at " +
             std::to_string(first) + ": got " + std::to_string(got[first]) + ", reference " +
             std::to_string(e.reference[first]) + ", bound " + std::to_string(bound[first]));
      if (owner_schedule && std::memcmp(got.data(), exact.data(), c.count * sizeof(float)) != 0)
        fail(name + " rank " + std::to_string(r) + ": differs from the CPU path's bits (host reference)");
      if (owner_schedule && r > 0 && results[k][0].size() == c.count &&
          std::memcmp(got.data(), results[k][0].data(), c.count * sizeof(float)) != 0)
        fail(name + " rank " + std::to_string(r) + ": differs from rank 0's bits (replicas would drift apart)");
    }
  }
  std::printf("%s: world %d, %zu cases run\n", label, world, cases.size());
}

}  // namespace

int main() {
  const auto devices = tutti::cuda::device_count();
  if (devices.count == 0) {
    std::printf("SKIP: %s\n", devices.reason.c_str());
    return 77;
  }
  const int world = devices.count;
  namespace alg = tutti::algorithm;
  namespace codec = tutti::codec;
  const tutti::testing::sum16_rounding fp16{0x1p-11, 0x1p-25}, bf16{0x1p-8, 0x1p-134};
  run_suite<alg::native, codec::fp16>(world, "native fp16", true, fp16);
  run_suite<alg::native, codec::bf16>(world, "native bf16", true, bf16);
  run_suite<alg::native, codec::int8>(world, "native int8", true, fp16);
  run_suite<alg::native_wire_sum, codec::fp16>(world, "native_wire_sum fp16", false, fp16);
  run_suite<alg::native_wire_sum, codec::bf16>(world, "native_wire_sum bf16", false, bf16);
  if (failures) {
    std::printf("%d failure(s)\n", failures.load());
    return 1;
  }
  std::printf("all lossy allreduce cases within their bounds\n");
  return 0;
}
