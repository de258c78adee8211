//! @file benchmark.hpp  Benchmark any communicator type, including one with a user's own algorithm or transport.
//!
//! tutti-bench runs the algorithms tutti ships; this header runs the same measurement on a
//! communicator the caller made: an nccl-tests allreduce sweep (float sum, out of place then in
//! place, side by side; time = mean over ranks of each rank's mean time per iteration; busbw =
//! algbw x 2(n-1)/n; #wrong counted on one more, untimed iteration). Call it on every rank;
//! rank 0 prints.
//!
//!   tutti::transport::inproc::run(4, [](tutti::transport::inproc& t) {
//!     tutti::communicator<tutti::transport::inproc, my_algorithm> comm(t);
//!     tutti::testing::benchmark_allreduce(comm, {.min_bytes = 8, .max_bytes = 64 << 20});
//!   });
#pragma once
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <span>
#include <vector>

#include "tutti/core/op.hpp"

namespace tutti::testing {

struct benchmark_options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  std::FILE* out = stdout;
};

//! The sweep described at the top of this file; returns the number of wrong elements (all ranks).
template <class Comm>
double benchmark_allreduce(Comm& comm, const benchmark_options& o = {}) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t max_count = o.max_bytes / sizeof(float);
  std::vector<float> send(max_count), recv(max_count);
  const auto input = [&](std::size_t i) { return static_cast<float>((static_cast<std::size_t>(r) + i) % 7); };
  const auto expected = [&](std::size_t i) {
    float sum = 0;
    for (int p = 0; p < n; ++p) sum += static_cast<float>((static_cast<std::size_t>(p) + i) % 7);
    return sum;
  };
  if (r == 0) {
    std::fprintf(o.out, "# tutti::testing::benchmark_allreduce: %d ranks, float sum; time: mean over ranks of each "
                        "rank's mean per iteration (%d iterations, %d warm-up)\n", n, o.iters, o.warmup);
    std::fprintf(o.out, "#                                                       out-of-place                       in-place\n");
    std::fprintf(o.out, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    std::fprintf(o.out, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n");
  }
  double wrong_total = 0;
  for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    const std::size_t count = bytes / sizeof(float);
    const std::span<float> out(recv.data(), count);
    double figures[2][2];  // per mode: time (us), wrong
    for (int mode = 0; mode < 2; ++mode) {
      const bool in_place = mode == 1;
      const auto refill = [&] {
        for (std::size_t i = 0; i < count; ++i) (in_place ? recv : send)[i] = input(i);
      };
      const auto call = [&] {
        if (in_place) comm.allreduce(out, op::sum);
        else comm.allreduce(std::span<const float>(send.data(), count), out, op::sum);
      };
      refill();
      for (int i = 0; i < o.warmup; ++i) call();
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) call();
      double time_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;
      refill();
      call();
      double wrong = 0;
      for (std::size_t i = 0; i < count; ++i) wrong += recv[i] == expected(i) ? 0 : 1;
      double pair[2] = {time_us, wrong};
      comm.allreduce(std::span<double>(pair, 2), op::sum);
      figures[mode][0] = pair[0] / n;
      figures[mode][1] = pair[1];
      wrong_total += pair[1];
    }
    if (r == 0) {
      std::fprintf(o.out, "%12zu  %12zu  %8s  %6s  %6d", count * sizeof(float), count, "float", "sum", -1);
      for (const auto& f : figures) {
        const double algbw = f[0] > 0 ? static_cast<double>(count * sizeof(float)) / f[0] / 1e3 : 0;
        std::fprintf(o.out, "  %7.2f  %6.2f  %6.2f  %5.0f", f[0], algbw, algbw * 2.0 * (n - 1) / n, f[1]);
      }
      std::fprintf(o.out, "\n");
    }
    if (bytes > o.max_bytes / o.step_factor) break;
  }
  if (r == 0) std::fprintf(o.out, "# Out of bounds values : %.0f %s\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
  return wrong_total;
}

}  // namespace tutti::testing
