//! @file gpu_ranks.hpp  Test and benchmark setup: one rank per visible GPU, as threads of this
//! process, each with its own transport::nccl, meeting in an inproc_store.
//!
//! The GPU tests (tests/nccl/gpu/) and tutti-cuda-native-bench run their ranks this way; it is the
//! GPU counterpart of inproc_world.hpp (whose ranks share host memory, not devices).
#pragma once
#include <cuda_runtime_api.h>

#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <tutti/bootstrap/inproc_store.hpp>
#include <tutti/cuda/check.hpp>
#include <tutti/transport/nccl.hpp>

namespace tutti::testing {

//! Runs fn(comm, rank) for ranks 0..world-1 on one thread each, rank r on GPU r, with a
//! Comm(std::unique_ptr<transport::nccl>) built from the ncclUniqueId shared under `prefix` (unique
//! per call: ranks of two calls must not meet). Returns each rank's failure text ("" for none).
//! on_failure(rank) runs on a rank's thread after it failed, e.g. to leave a std::barrier its
//! peers would otherwise wait at.
template <class Comm, class F, class OnFailure>
std::vector<std::string> run_gpu_ranks(int world, const std::string& prefix, F&& fn, OnFailure&& on_failure) {
  bootstrap::inproc_store store;
  std::vector<std::string> errors(static_cast<std::size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      try {
        TUTTI_CUDA_CHECK(cudaSetDevice(r));  // the rank's own allocations land on its GPU too
        auto options = transport::nccl_options::from_env();
        options.device = r;
        Comm comm(std::make_unique<transport::nccl>(r, world, store, prefix, options));
        fn(comm, r);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        on_failure(r);
      }
    });
  for (auto& t : ranks) t.join();
  return errors;
}

template <class Comm, class F>
std::vector<std::string> run_gpu_ranks(int world, const std::string& prefix, F&& fn) {
  return run_gpu_ranks<Comm>(world, prefix, std::forward<F>(fn), [](int) {});
}

}  // namespace tutti::testing
