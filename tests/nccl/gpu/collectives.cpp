//! @file collectives.cpp  communicator<transport::nccl, algorithm::native> on real GPUs: every
//! collective over as many ranks as visible GPUs (threads, one GPU each, meeting in an
//! inproc_store), inputs copied from the host, results compared with the host reference of
//! tutti/testing/pattern.hpp for counts 0, 1, a prime and a large one, every dtype and op, in place
//! and out of place; int16 reductions refused alike on every rank; a count mismatch found by the
//! native argument check.
//!
//! Without a GPU it prints "SKIP: <why>" and exits 77, which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <tutti/algorithm/native.hpp>
#include <tutti/communicator.hpp>
#include <tutti/cuda/check.hpp>
#include <tutti/cuda/device.hpp>
#include <tutti/testing/gpu_ranks.hpp>
#include <tutti/testing/pattern.hpp>
#include <tutti/transport/nccl.hpp>

namespace {

using namespace std::chrono_literals;
using tutti::const_tensor_view;
using tutti::dtype;
using tutti::op;
using tutti::tensor_view;
using tutti::testing::count_wrong;
using tutti::testing::count_wrong_pattern;
using tutti::testing::expected_period;
using tutti::testing::fill_pattern;
using comm_t = tutti::communicator<tutti::transport::nccl, tutti::algorithm::native>;

int gpus() { return tutti::cuda::device_count().count; }

//! Device memory for one test, zero-filled.
struct device_buffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit device_buffer(std::size_t n) : bytes(n) {
    TUTTI_CUDA_CHECK(cudaMalloc(&p, n ? n : 1));
    TUTTI_CUDA_CHECK(cudaMemset(p, 0, n ? n : 1));
  }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  std::byte* at(std::size_t offset) const { return static_cast<std::byte*>(p) + offset; }
  void upload(const std::vector<unsigned char>& h, std::size_t offset = 0) {
    TUTTI_CUDA_CHECK(cudaMemcpy(at(offset), h.data(), h.size(), cudaMemcpyHostToDevice));
  }
  std::vector<unsigned char> download(std::size_t offset, std::size_t n) const {
    std::vector<unsigned char> h(n);
    TUTTI_CUDA_CHECK(cudaMemcpy(h.data(), at(offset), n, cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<unsigned char> pattern(dtype t, int r, std::size_t count, op o, std::size_t first = 0) {
  std::vector<unsigned char> h(count * tutti::size_of(t));
  fill_pattern(h.data(), t, r, count, o, first);
  return h;
}

//! Runs fn(comm, rank) on one thread per GPU; returns every rank's failure text ("" for none).
std::vector<std::string> run(const std::function<void(comm_t&, int)>& fn) {
  static std::atomic<int> job{0};
  return tutti::testing::run_gpu_ranks<comm_t>(gpus(), "gpu-test/" + std::to_string(job++), fn);
}

void require_clean(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    INFO("rank " << r << ": " << errors[r]);
    CHECK(errors[r].empty());
  }
}

//! Elements of `got` that differ from the reference: bit for bit, except float avg, where NCCL
//! multiplies the sum by 1/n (tutti divides) and sums 16-bit floats in 16 bits: within 2 ulps.
std::size_t wrong_reduced(const std::vector<unsigned char>& got, dtype t, std::size_t count, std::size_t first, int world,
                          op o) {
  const auto expected = expected_period(t, world, o);
  std::size_t bad = 0;
  if (!(o == op::avg && tutti::is_floating(t))) return count_wrong(got.data(), t, count, first, expected, &bad);
  const double ulp = t == dtype::f64 ? 0x1p-52 : t == dtype::f32 ? 0x1p-23 : t == dtype::f16 ? 0x1p-10 : 0x1p-7;
  std::size_t wrong = 0;
  tutti::visit(t, [&]<class T>(std::type_identity<T>) {
    for (std::size_t i = 0; i < count; ++i) {
      T g, e;
      std::memcpy(&g, got.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&e, expected.data() + ((first + i) % tutti::testing::pattern_period) * sizeof(T), sizeof(T));
      const double gd = static_cast<double>(static_cast<float>(g)), ed = static_cast<double>(static_cast<float>(e));
      if constexpr (std::is_same_v<T, double>) {
        if (std::fabs(static_cast<double>(g) - static_cast<double>(e)) > 2 * ulp * std::fabs(static_cast<double>(e)) + 1e-300) ++wrong;
      } else if (std::fabs(gd - ed) > 2 * ulp * std::max(1.0, std::fabs(ed))) {
        ++wrong;
      }
    }
  });
  return wrong;
}

const std::vector<std::size_t> counts = {0, 1, 1009, (1u << 20) + 3};

bool reducible(dtype t) { return t != dtype::i16; }

}  // namespace

TEST_CASE("native: allreduce, every dtype and op, in place and out of place") {
  const int world = gpus();
  require_clean(run([&](comm_t& comm, int r) {
    for (dtype t : tutti::all_dtypes) {
      if (!reducible(t)) continue;
      for (op o : tutti::all_ops)
        for (std::size_t n : counts)
          for (bool in_place : {false, true}) {
            const std::size_t bytes = n * tutti::size_of(t);
            device_buffer in(bytes), out(bytes);
            in.upload(pattern(t, r, n, o));
            if (in_place) comm.allreduce(tensor_view(in.p, n, t), o);
            else comm.allreduce(const_tensor_view(in.p, n, t), tensor_view(out.p, n, t), o);
            const auto got = (in_place ? in : out).download(0, bytes);
            const std::size_t wrong = wrong_reduced(got, t, n, 0, world, o);
            if (wrong) throw std::runtime_error("allreduce " + std::string(tutti::name_of(t)) + " " +
                                                std::string(tutti::name_of(o)) + " count " + std::to_string(n) +
                                                (in_place ? " in place" : "") + ": " + std::to_string(wrong) + " wrong");
          }
    }
  }));
}

TEST_CASE("native: reduce_scatter and reduce (every root), every dtype and op") {
  const int world = gpus();
  require_clean(run([&](comm_t& comm, int r) {
    const std::size_t n_ranks = static_cast<std::size_t>(world);
    for (dtype t : tutti::all_dtypes) {
      if (!reducible(t)) continue;
      const std::size_t esz = tutti::size_of(t);
      for (op o : tutti::all_ops)
        for (std::size_t n : counts)
          for (bool in_place : {false, true}) {
            const std::string what = std::string(tutti::name_of(t)) + " " + std::string(tutti::name_of(o)) + " count " +
                                     std::to_string(n) + (in_place ? " in place" : "");
            device_buffer in(n * n_ranks * esz), out(n * esz);
            in.upload(pattern(t, r, n * n_ranks, o));
            const auto mine = static_cast<std::size_t>(r) * n;
            if (in_place)
              comm.reduce_scatter(const_tensor_view(in.p, n * n_ranks, t), tensor_view(in.at(mine * esz), n, t), o);
            else
              comm.reduce_scatter(const_tensor_view(in.p, n * n_ranks, t), tensor_view(out.p, n, t), o);
            const auto got = in_place ? in.download(mine * esz, n * esz) : out.download(0, n * esz);
            if (const auto wrong = wrong_reduced(got, t, n, mine, world, o))
              throw std::runtime_error("reduce_scatter " + what + ": " + std::to_string(wrong) + " wrong");

            const int root = static_cast<int>((n + static_cast<std::size_t>(o)) % n_ranks);
            device_buffer a(n * esz), b(n * esz);
            a.upload(pattern(t, r, n, o));
            if (in_place) comm.reduce(tensor_view(a.p, n, t), o, root);
            else comm.reduce(const_tensor_view(a.p, n, t), r == root ? tensor_view(b.p, n, t) : tensor_view(), o, root);
            if (r == root) {
              const auto result = (in_place ? a : b).download(0, n * esz);
              if (const auto wrong = wrong_reduced(result, t, n, 0, world, o))
                throw std::runtime_error("reduce " + what + " root " + std::to_string(root) + ": " + std::to_string(wrong) + " wrong");
            }
          }
    }
  }));
}

TEST_CASE("native: allgather, broadcast (every root) and alltoall move every dtype, int16 too") {
  const int world = gpus();
  require_clean(run([&](comm_t& comm, int r) {
    const std::size_t n_ranks = static_cast<std::size_t>(world);
    for (dtype t : tutti::all_dtypes) {
      const std::size_t esz = tutti::size_of(t);
      for (std::size_t n : counts)
        for (bool in_place : {false, true}) {
          const std::string what = std::string(tutti::name_of(t)) + " count " + std::to_string(n) + (in_place ? " in place" : "");
          std::size_t bad = 0;
          // allgather: block q is rank q's pattern
          device_buffer in(n * esz), out(n * n_ranks * esz);
          const std::size_t mine = static_cast<std::size_t>(r) * n * esz;
          if (in_place) out.upload(pattern(t, r, n, op::sum), mine);
          else in.upload(pattern(t, r, n, op::sum));
          comm.allgather(const_tensor_view(in_place ? out.at(mine) : in.p, n, t), tensor_view(out.p, n * n_ranks, t));
          const auto all = out.download(0, n * n_ranks * esz);
          for (int q = 0; q < world; ++q)
            if (count_wrong_pattern(all.data() + static_cast<std::size_t>(q) * n * esz, t, q, n, op::sum, &bad))
              throw std::runtime_error("allgather " + what + ": block " + std::to_string(q) + " wrong at " + std::to_string(bad));

          // broadcast from every root
          for (int root = 0; root < world; ++root) {
            device_buffer src(n * esz), dst(n * esz);
            if (r == root) (in_place ? dst : src).upload(pattern(t, root, n, op::sum));
            if (in_place) comm.broadcast(tensor_view(dst.p, n, t), root);
            else comm.broadcast(r == root ? const_tensor_view(src.p, n, t) : const_tensor_view(), tensor_view(dst.p, n, t), root);
            const auto got = dst.download(0, n * esz);
            if (count_wrong_pattern(got.data(), t, root, n, op::sum, &bad))
              throw std::runtime_error("broadcast " + what + " root " + std::to_string(root) + ": wrong at " + std::to_string(bad));
          }

          // alltoall: block q of out is rank q's pattern elements [r*n, (r+1)*n)
          device_buffer x(n * n_ranks * esz), y(n * n_ranks * esz);
          x.upload(pattern(t, r, n * n_ranks, op::sum));
          if (in_place) comm.alltoall(tensor_view(x.p, n * n_ranks, t));
          else comm.alltoall(const_tensor_view(x.p, n * n_ranks, t), tensor_view(y.p, n * n_ranks, t));
          const auto got = (in_place ? x : y).download(0, n * n_ranks * esz);
          for (int q = 0; q < world; ++q)
            if (count_wrong_pattern(got.data() + static_cast<std::size_t>(q) * n * esz, t, q, n, op::sum, &bad,
                                    static_cast<std::size_t>(r) * n))
              throw std::runtime_error("alltoall " + what + ": block " + std::to_string(q) + " wrong at " + std::to_string(bad));
        }
    }
    comm.barrier();
  }));
}

// The transport's stream is non-blocking; cudaMemcpy from pageable memory returns before its DMA to
// the device ends. Each collective must still read what the caller just wrote (transport::nccl's
// follow_callers_work): before it did, the first run on an H100 found the last elements of 1 MiB
// inputs stale. Here 64 MiB, new values each round, the collective issued right after the copy.
TEST_CASE("native: inputs written by cudaMemcpy from pageable memory just before the call are read") {
  const int world = gpus();
  require_clean(run([&](comm_t& comm, int r) {
    constexpr std::size_t n = std::size_t{16} << 20;  // floats: 64 MiB
    device_buffer in(n * sizeof(float)), out(n * sizeof(float));
    std::vector<float> host(n), got(n);
    for (int round = 0; round < 6; ++round) {
      for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i + static_cast<std::size_t>(round)) % 1021);
      TUTTI_CUDA_CHECK(cudaMemcpy(in.p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      if (round % 2 == 0) {
        comm.allreduce(const_tensor_view(in.p, n, dtype::f32), tensor_view(out.p, n, dtype::f32), op::sum);
      } else {  // in place: the alltoall copies its input to scratch first, another read to order
        comm.alltoall(tensor_view(in.p, n - n % static_cast<std::size_t>(world), dtype::f32));
        TUTTI_CUDA_CHECK(cudaMemcpy(out.p, in.p, n * sizeof(float), cudaMemcpyDeviceToDevice));
      }
      TUTTI_CUDA_CHECK(cudaMemcpy(got.data(), out.p, n * sizeof(float), cudaMemcpyDeviceToHost));
      const std::size_t block = n / static_cast<std::size_t>(world);
      for (std::size_t i = 0; i < n - n % static_cast<std::size_t>(world); ++i) {
        // allreduce: every rank wrote the same values; alltoall: block q came from rank q, whose
        // block r holds what our block r holds.
        const float expected = round % 2 == 0 ? host[i] * static_cast<float>(world)
                                              : host[static_cast<std::size_t>(r) * block + i % block];
        if (got[i] != expected)
          throw std::runtime_error("round " + std::to_string(round) + (round % 2 == 0 ? " allreduce" : " alltoall") +
                                   ": element " + std::to_string(i) + " of " + std::to_string(n) + " (block " +
                                   std::to_string(i / block) + ") is " + std::to_string(got[i]) + ", expected " +
                                   std::to_string(expected) + " (rank " + std::to_string(r) + ")");
      }
    }
  }));
}

TEST_CASE("native: int16 reductions are refused alike on every rank, and the communicator stays usable") {
  const auto errors = run([&](comm_t& comm, int r) {
    device_buffer b(64 * sizeof(float));
    try {
      comm.allreduce(tensor_view(b.p, 64, dtype::i16), op::sum);
      throw std::runtime_error("int16 allreduce was not refused");
    } catch (const tutti::invalid_argument& e) {
      const std::string w = e.what();
      if (w.find("rank " + std::to_string(r) + ": allreduce #1: ") == std::string::npos ||
          w.find("dtype int16 has no NCCL type") == std::string::npos)
        throw std::runtime_error("unexpected refusal: " + w);
    }
    comm.allreduce(tensor_view(b.p, 64, dtype::f32), op::sum);  // still usable
    comm.barrier();
  });
  require_clean(errors);
}

TEST_CASE("native: ranks that disagree on the count get the same mismatch, through the device") {
  if (gpus() < 2) return;  // a mismatch needs two ranks
  const auto errors = run([&](comm_t& comm, int r) {
    device_buffer b(64 * sizeof(float));
    try {
      comm.allreduce(tensor_view(b.p, r == 1 ? 63 : 64, dtype::f32), op::sum);
    } catch (const tutti::mismatch& e) {
      throw std::runtime_error(std::string("mismatch: ") + e.what());
    }
  });
  for (std::size_t r = 0; r < errors.size(); ++r) {
    INFO("rank " << r << ": " << errors[r]);
    CHECK(errors[r].rfind("mismatch: ", 0) == 0);
    CHECK(errors[r].find("count") != std::string::npos);
  }
}

int main(int argc, char** argv) {
  const auto census = tutti::cuda::device_count();
  if (census.count == 0) {
    std::printf("SKIP: %s\n", census.reason.c_str());
    return 77;  // CTest's SKIP_RETURN_CODE for this test
  }
  std::printf("nccl.gpu_collectives: %d GPU(s), one rank each\n", census.count);
  doctest::Context context(argc, argv);
  return context.run();
}
