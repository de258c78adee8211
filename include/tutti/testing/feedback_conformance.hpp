//! @file feedback_conformance.hpp  The allreduce conformance suite for codecs with error feedback
//! (topk, onebit): what was sent plus what is left must add up to what was given, exactly up to
//! fp32's rounding, and the running compressed sum must converge to the uncompressed one.
//!
//! Instantiate with TEST_CASE_TEMPLATE_INVOKE(feedback_allreduce_conformance,
//! your_world<your_algorithm, layout, codec::topk>). For world sizes 1-9 and counts 0, 1, 7, 1009
//! and 100,003 (suite_sizes.hpp), sum and avg, in place and out of place (the largest count: sum in place and avg
//! out of place), each rank allreduces the same gradient
//! (gradient_value(r, i)) for T = 3 steps with one error_feedback. By telescoping, for every element
//!
//!   sum_t out_t + sum_ranks residual_T = T * sum_i x_i * s      (s = 1/n for avg)
//!
//! in exact arithmetic, whatever the schedule (flat, or hierarchical with its node partial sums),
//! so a lost, doubled or mis-scaled contribution shows. The check allows fp32's rounding of every
//! addition and subtraction involved: 8 (n + 4) 2^-24 times the sum of the magnitudes (T sum_i
//! |x_i s| + sum_t |out_t| + sum_ranks |residual_T|) — a lost contribution errs by |x_i s|, far above
//! it. Also checked: identical bits on every rank, untouched inputs, guard zones.
//! feedback_convergence() runs one world for many steps and requires the relative error of the
//! running sum to fall (the residual stays bounded while the sum grows with T).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <vector>

#include <tutti/codec/error_feedback.hpp>
#include <tutti/core/tensor_view.hpp>
#include <tutti/testing/compressed_conformance.hpp>
#include <tutti/testing/conformance.hpp>

namespace tutti::testing {

//! A shared (MAP_SHARED) array, so forked ranks can hand their results to the checking thread.
template <class T>
class shared_array {
 public:
  explicit shared_array(std::size_t n) : n_(n ? n : 1) {
    void* p = ::mmap(nullptr, n_ * sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("shared_array: mmap failed");
    p_ = static_cast<T*>(p);
  }
  shared_array(const shared_array&) = delete;
  shared_array& operator=(const shared_array&) = delete;
  ~shared_array() { ::munmap(p_, n_ * sizeof(T)); }
  T& operator[](std::size_t i) noexcept { return p_[i]; }
  T* data() noexcept { return p_; }

 private:
  std::size_t n_;
  T* p_;
};

//! Runs `steps` error-feedback allreduces per case; returns failed checks (text in log_text).
template <class World>
std::size_t feedback_allreduce_failures(std::string& log_text, std::vector<int> worlds = World::world_sizes(),
                                        std::vector<std::size_t> counts = compressed_counts(), int steps = 3) {
  using codec_type = typename World::communicator_type::codec_type;
  std::size_t failures = 0;
  const double u = 0x1p-24;
  for (int world : worlds) {
    const auto n = static_cast<std::size_t>(world);
    for (std::size_t count : counts) {
      for (op o : {op::sum, op::avg}) {
        for (int in_place = 0; in_place < 2; ++in_place) {
          // The largest count runs two of the four (op, layout) pairs, to stay within CI's budget.
          if (count >= large_count && (o == op::sum) != (in_place == 1)) continue;
          const auto name = case_name("allreduce", world, count, dtype::f32, o, in_place) + " codec " +
                            std::string(codec_type::name);
          shared_array<double> running(count), running_abs(count);  // rank 0's sum over steps of out
          shared_array<float> residuals(n * count);
          shared_array<std::uint64_t> hashes(n * static_cast<std::size_t>(steps));
          failure_log log;
          use_suite_chunk();
          World::run(world, [&](auto& comm) {
            const int r = comm.rank();
            const auto rr = static_cast<std::size_t>(r);
            error_feedback feedback;
            guarded_buffer in, out;
            std::vector<float> x(count);
            for (std::size_t i = 0; i < count; ++i) x[i] = gradient_value(r, i);
            for (int t = 0; t < steps; ++t) {
              bool input_intact = true;
              const std::size_t bytes = count * sizeof(float);
              if (in_place) {
                out.reset(bytes, 0);
                if (bytes) std::memcpy(out.data(), x.data(), bytes);  // count 0: both may be null
                comm.allreduce(tensor_view(out.data(), count, dtype::f32), o, feedback);
              } else {
                in.reset(bytes, 0);
                if (bytes) std::memcpy(in.data(), x.data(), bytes);
                out.reset(bytes, output_fill);
                comm.allreduce(const_tensor_view(in.data(), count, dtype::f32), tensor_view(out.data(), count, dtype::f32),
                               o, feedback);
                input_intact = (bytes == 0 || std::memcmp(in.data(), x.data(), bytes) == 0) && in.guards_intact();
              }
              verify(log, r, name + " step " + std::to_string(t), 0, 0, out.guards_intact(), input_intact);
              hashes[static_cast<std::size_t>(t) * n + rr] = hash_bytes(out.data(), bytes);
              if (r == 0)
                for (std::size_t i = 0; i < count; ++i) {
                  float v;
                  std::memcpy(&v, out.data() + i * sizeof v, sizeof v);
                  running[i] += v;
                  running_abs[i] += std::fabs(v);
                }
            }
            const auto& res = feedback.residual();
            if (count && res.size() != count) log.record(r, name + ": the error_feedback was not sized to the tensor");
            for (std::size_t i = 0; i < res.size() && i < count; ++i) residuals[rr * count + i] = res[i];
          });
          for (int t = 0; t < steps; ++t)
            for (std::size_t q = 1; q < n; ++q)
              if (hashes[static_cast<std::size_t>(t) * n + q] != hashes[static_cast<std::size_t>(t) * n]) {
                log.record(static_cast<int>(q), name + " step " + std::to_string(t) + ": result differs from rank 0's");
                break;
              }
          const double s = o == op::avg ? 1.0 / world : 1.0;
          std::size_t wrong = 0, first_bad = 0;
          double worst_gap = 0, worst_slack = 0;
          for (std::size_t k = 0; k < count; ++k) {
            double given = 0, given_abs = 0, left = 0, left_abs = 0;
            for (int q = 0; q < world; ++q) {
              const double xs = static_cast<double>(gradient_value(q, k)) * s;
              given += steps * xs;
              given_abs += steps * std::fabs(xs);
              left += residuals[static_cast<std::size_t>(q) * count + k];
              left_abs += std::fabs(residuals[static_cast<std::size_t>(q) * count + k]);
            }
            const double gap = std::fabs(running[k] + left - given);
            const double slack = 8.0 * (world + 4) * u * (given_abs + running_abs[k] + left_abs);
            if (!(gap <= slack) && !wrong++) first_bad = k, worst_gap = gap, worst_slack = slack;
          }
          if (wrong)
            log.record(0, name + ": sent + residual differs from what was given on " + std::to_string(wrong) +
                              " elements; first at " + std::to_string(first_bad) + ": off by " + std::to_string(worst_gap) +
                              ", rounding allows " + std::to_string(worst_slack));
          failures += log.count();
          if (log.count()) log_text += std::string(World::name) + " world=" + std::to_string(world) + "\n" + log.text();
        }
      }
    }
  }
  return failures;
}

//! Relative L1 error of the running compressed sum against the running exact sum after `early`
//! and after `late` steps of a fixed gradient stream (every step the same gradient_value(r, i)).
template <class World>
std::pair<double, double> feedback_convergence(int world, std::size_t count, int early, int late) {
  shared_array<double> errors(2);
  World::run(world, [&](auto& comm) {
    error_feedback feedback;
    std::vector<float> x(count), out(count);
    std::vector<double> running(count, 0.0), exact(count, 0.0);
    for (std::size_t i = 0; i < count; ++i) {
      x[i] = gradient_value(comm.rank(), i);
      for (int q = 0; q < world; ++q) exact[i] += gradient_value(q, i);
    }
    for (int t = 1; t <= late; ++t) {
      comm.allreduce(x, out, op::sum, feedback);
      for (std::size_t i = 0; i < count; ++i) running[i] += out[i];
      if (comm.rank() == 0 && (t == early || t == late)) {
        double num = 0, den = 0;
        for (std::size_t i = 0; i < count; ++i) {
          num += std::fabs(running[i] - t * exact[i]);
          den += std::fabs(t * exact[i]);
        }
        errors[t == early ? 0 : 1] = num / den;
      }
    }
  });
  return {errors[0], errors[1]};
}

}  // namespace tutti::testing

TEST_CASE_TEMPLATE_DEFINE("feedback_allreduce_conformance: sent + residual = given, converging", World,
                          feedback_allreduce_conformance) {
  std::string text;
  const auto failures = tutti::testing::feedback_allreduce_failures<World>(text);
  INFO(text);
  CHECK(failures == 0);
  // 300 steps of a fixed stream on 4 ranks: the error of the running sum falls at least fivefold
  // between step 10 and step 300 (it goes as 1/T once every element has been sent; topk at 1 %
  // sends each element about once in 100 steps, so the early error is still large).
  const auto [early, late] = tutti::testing::feedback_convergence<World>(4, 1009, 10, 300);
  INFO("relative error of the running sum: ", early, " after 10 steps, ", late, " after 300");
  CHECK(late < early / 5);
  CHECK(late < 0.1);
}
