// data_parallel_trainer over in-process ranks with a least-squares model whose gradients are
// exactly known: N slots equal 1 slot (within a derived fp32 bound), aggregation k with batch B
// equals batch kB, metrics averaging on and off, batch edge cases, checkpoints that resume to
// bit-identical weights and refuse corruption.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tutti/fusion/threshold.hpp>
#include <tutti/trainer/any_optimizer.hpp>
#include <tutti/trainer/data_parallel_trainer.hpp>
#include <tutti/trainer/optimizer.hpp>
#include <tutti/transport/inproc.hpp>
#include <tutti/tutti.hpp>

#include "support/least_squares.hpp"

using namespace tutti;
using namespace tutti::trainer;

namespace {

constexpr std::size_t inputs = 6, outputs = 3;

//! While set, backward sleeps a random 0 to jitter_us µs before handing over each gradient (drawn
//! from std::random_device: the timing differs from run to run, as on a loaded machine).
std::atomic<int> jitter_us{0};

void jitter() {
  if (jitter_us.load() == 0) return;
  thread_local std::mt19937 rng(std::random_device{}());
  std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, jitter_us.load())(rng)));
}

//! The least-squares model (support/least_squares.hpp), its backward pausing as jitter_us says.
struct linear_model : tutti_test::least_squares_model<inputs, outputs> {
  explicit linear_model(unsigned seed) : least_squares_model(seed) { before_each_gradient = jitter; }
};
static_assert(model<linear_model>);
using synthetic_data = tutti_test::least_squares_data<linear_model>;

// A 200 us negotiation cycle, so a step's two gradients could land in different rounds: the
// trainer's fixed buckets (gradient_buckets.hpp) make the fused batches, and so the bits, the same
// whatever the timing (until they existed, resumed runs differed in the last bits under load).
using comm_t = communicator<transport::inproc, algorithm::ring, fusion::threshold<4096, 200>>;

// What the trainer takes (concepts.hpp): tutti's communicators, with and without error feedback,
// and every optimiser of optimizer.hpp. The refusals are tests/trainer/compile_fail/.
static_assert(trainer_communicator<comm_t>);
static_assert(trainer_communicator<communicator<transport::inproc, algorithm::ring, codec::topk>>);
static_assert(!trainer_communicator<int>);
static_assert(trainer_optimizer<sgd> && trainer_optimizer<adam> && trainer_optimizer<lars<sgd>> &&
              trainer_optimizer<any_optimizer>);
static_assert(!trainer_optimizer<int>);

struct run_result {
  std::vector<float> w, b;
  std::vector<step_report> steps;
  std::vector<validation_report> validations;
  double lr_sum = 0, largest_term = 0;
};

//! Trains on `slots` in-process ranks; returns rank 0's weights and reports.
template <class Comm = comm_t>
run_result train(int slots, trainer_options o, std::size_t records = 600, bool metrics_check = false) {
  run_result out;
  synthetic_data data(records), held_out(97, 11);
  auto errors = transport::inproc::run(slots, [&](transport::inproc& t) {
    Comm comm(t);
    linear_model m(comm.rank() == 0 ? 42u : 1000u + static_cast<unsigned>(comm.rank()));  // only the chief's init counts
    sgd opt(sgd_options{.momentum = 0.9});
    data_parallel_trainer<Comm, linear_model, sgd> trainer(comm, m, opt, o);
    std::vector<step_report> steps;
    std::vector<validation_report> validations;
    double lr_sum = 0;
    trainer.fit(data, held_out, [&](const step_report& r) { steps.push_back(r); lr_sum += r.learning_rate; },
                [&](const validation_report& v) { validations.push_back(v); });
    if (metrics_check) {
      // every slot reports the same averaged metrics when average_training_metrics is on
      std::vector<double> loss{steps.back().training.at("loss")}, all(static_cast<std::size_t>(comm.size()));
      comm.allgather(loss, all);
      for (double v : all) CHECK((o.average_training_metrics ? v == all[0] : true));
    }
    if (comm.rank() == 0) {
      out.w = m.w;
      out.b = m.b;
      out.steps = steps;
      out.validations = validations;
      out.lr_sum = lr_sum;
      out.largest_term = m.largest_term;
    }
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

trainer_options base_options(std::size_t global) {
  trainer_options o;
  o.global_batch_size = global;
  o.max_batches = 24;
  o.learning_rate = [](double) { return 0.05; };
  return o;
}

//! |a − b| ≤ bound for every weight.
void check_close(const run_result& a, const run_result& b, double bound) {
  REQUIRE(a.w.size() == b.w.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.w.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a.w[i] - b.w[i])));
  for (std::size_t i = 0; i < a.b.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a.b[i] - b.b[i])));
  MESSAGE("largest weight difference " << worst << ", bound " << bound);
  CHECK(worst <= bound);
}

//! The fp32 bound on the weights' difference between two ways of summing the same gradient:
//! each gradient entry is a mean of B terms of magnitude at most T, summed in two orders: each
//! within γ_B·B·T/B = γ_B·T of the exact mean (γ_n = n·u/(1−n·u), u = 2⁻²⁴), so they differ by at
//! most 2·γ_B·T (plus the allreduce's averaging: one more rounding of the mean, ≤ u·T). SGD with
//! momentum μ applies a gradient difference δ through the momentum buffer with total weight at
//! most 1/(1−μ) per step, times the learning rate; the least-squares map is contractive at this
//! learning rate, so differences do not grow: |Δw| ≤ Σ_t lr_t · (2γ_B + u)·T / (1−μ), plus the
//! update's own rounding, u·|w| per step on both sides (|w| < 2 here).
double derived_bound(const run_result& r, std::size_t batch, double momentum) {
  const double u = std::ldexp(1.0, -24), n = static_cast<double>(batch);
  const double gamma = n * u / (1 - n * u);
  return r.lr_sum * (2 * gamma + u) * r.largest_term / (1 - momentum) + 2 * static_cast<double>(r.steps.size()) * u * 2.0;
}

}  // namespace

TEST_CASE("trainer: N slots with global batch B reach the weights of 1 slot with B (fp32 bound derived)") {
  const auto one = train(1, base_options(48));
  for (int slots : {2, 3, 4, 6}) {
    CAPTURE(slots);
    const auto many = train(slots, base_options(48));
    check_close(one, many, std::max(derived_bound(one, 48, 0.9), derived_bound(many, 48, 0.9)));
  }
}

TEST_CASE("trainer: aggregation_frequency k with batch B equals batch kB") {
  auto plain = base_options(48);
  plain.max_batches = 8;
  auto aggregated = base_options(12);
  aggregated.aggregation_frequency = 4;
  aggregated.max_batches = 32;  // 8 optimiser steps of 4 batches each
  const auto a = train(2, plain);
  const auto b = train(2, aggregated);
  REQUIRE(a.steps.size() == 8);
  REQUIRE(b.steps.size() == 8);
  // The batch of 48 and four of 12 are the same records only if both orders agree: the sampler's
  // order is per epoch, so global batch j of 48 = batches 4j..4j+3 of 12.
  check_close(a, b, std::max(derived_bound(a, 48, 0.9), derived_bound(b, 48, 0.9)));
}

TEST_CASE("trainer: average_training_metrics averages over slots; off, each slot reports its own") {
  auto on = base_options(30);
  on.max_batches = 4;
  const auto r_on = train(3, on, 600, true);
  auto off = on;
  off.average_training_metrics = false;
  const auto r_off = train(3, off, 600, true);
  // The slots see different records: the chief's own loss differs from the average.
  CHECK(r_on.steps.back().training.at("loss") != r_off.steps.back().training.at("loss"));
  CHECK(r_on.validations.size() == 1);
  CHECK(r_on.validations[0].validation.count("loss") == 1);
}

TEST_CASE("trainer: batch edge cases — B smaller than the slots is refused, B not divisible drops the remainder") {
  CHECK_THROWS_WITH_AS(train(4, base_options(3)),
                       doctest::Contains("global_batch_size 3 is smaller than resources.slots_per_trial 4"),
                       invalid_argument);
  auto o = base_options(50);  // 3 slots: 16 each, 2 dropped per batch
  o.max_batches = 2;
  const auto r = train(3, o);
  CHECK(r.steps.back().records == 48);
  const auto plan = batch_plan::make(50, 3);
  CHECK(plan.per_slot == 16);
  CHECK(plan.dropped == 2);
  // The union over slots of one global batch is the records one slot would take with 48.
  shard_sampler three(600, plan, 9), one(600, batch_plan::make(48, 1), 9);
  (void)one;
  std::vector<std::size_t> uni;
  for (std::size_t s = 0; s < 3; ++s) {
    auto i = three.indices(5, s);
    CHECK(i.size() == 16);
    uni.insert(uni.end(), i.begin(), i.end());
  }
  std::sort(uni.begin(), uni.end());
  CHECK(std::adjacent_find(uni.begin(), uni.end()) == uni.end());  // disjoint
}

TEST_CASE("trainer: resuming from a checkpoint gives bit-identical final weights; a corrupt newest one is skipped") {
  const auto dir = std::filesystem::temp_directory_path() / ("tutti-trainer-ckpt-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto o = base_options(24);
  o.max_batches = 20;
  const auto uninterrupted = train(2, o);

  auto first = o;
  first.checkpoint_dir = dir;
  first.checkpoint_period = 4;
  first.checkpoints_kept = 3;
  first.max_batches = 12;  // "killed" after 12 batches: checkpoints at 4, 8, 12
  train(2, first);
  auto second = first;
  second.max_batches = 20;
  const auto resumed = train(2, second);
  CHECK(resumed.w == uninterrupted.w);
  CHECK(resumed.b == uninterrupted.b);
  CHECK(resumed.steps.front().batches == 13);

  // Corrupt the newest (20): a resume then starts from 16 and still ends bit-identical.
  const auto newest = checkpoint_path(dir, 20);
  REQUIRE(std::filesystem::exists(newest));
  {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  auto third = second;
  third.max_batches = 20;
  const auto again = train(2, third);
  CHECK(again.steps.front().batches == 17);
  CHECK(again.w == uninterrupted.w);
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainer: with an error-feedback codec (topk) each rank's residuals are checkpointed; resuming is bit-identical") {
  using topk_comm = communicator<transport::inproc, algorithm::ring, codec::topk, fusion::threshold<4096, 200>>;
  const auto dir = std::filesystem::temp_directory_path() / ("tutti-trainer-topk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto o = base_options(24);
  o.max_batches = 16;
  const auto uninterrupted = train<topk_comm>(3, o);
  auto first = o;
  first.checkpoint_dir = dir;
  first.checkpoint_period = 4;
  first.max_batches = 8;
  train<topk_comm>(3, first);
  for (int r = 0; r < 3; ++r)  // every rank's residuals beside the checkpoint of batch 8
    CHECK(std::filesystem::exists(dir / ("feedback-000000000008.rank" + std::to_string(r))));
  auto second = first;
  second.max_batches = 16;
  const auto resumed = train<topk_comm>(3, second);
  CHECK(resumed.steps.front().batches == 9);
  CHECK(resumed.w == uninterrupted.w);
  CHECK(resumed.b == uninterrupted.b);
  // Without a rank's residuals the checkpoint cannot be resumed exactly: refused, naming the file.
  std::filesystem::remove(dir / "feedback-000000000016.rank1");
  CHECK_THROWS_WITH_AS(train<topk_comm>(3, second), doctest::Contains("feedback-000000000016.rank1, which is missing"),
                       invalid_argument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainer: gradients go to the fusion engine in fixed buckets: reruns are bit-identical whatever the timing") {
  // Backward hands over its gradients at random moments, so without buckets the engine's rounds
  // would fuse them differently from run to run (3 ranks: ring's summation order follows the
  // buffer's layout; topk selects per chunk). Seen failing that way before the buckets.
  using topk_comm = communicator<transport::inproc, algorithm::ring, codec::topk, fusion::threshold<4096, 200>>;
  auto o = base_options(24);
  o.max_batches = 12;
  jitter_us = 600;
  const auto a = train(3, o), b = train(3, o);
  const auto ta = train<topk_comm>(3, o), tb = train<topk_comm>(3, o);
  jitter_us = 0;
  CHECK(a.w == b.w);
  CHECK(a.b == b.b);
  CHECK(ta.w == tb.w);
  CHECK(ta.b == tb.b);

  // The buckets are the engine's own cut (coordinator::batch) of backward's order, learnt in the
  // first step; a bucket goes once all of its gradients are final, buckets in order.
  gradient_buckets buckets({1000, 10, 2000, 5});  // float counts: 4000, 40, 8000, 20 bytes
  std::vector<std::vector<std::size_t>> sent;
  const auto send = [&](const std::vector<std::size_t>& members) { sent.push_back(members); };
  buckets.new_step(4096);
  for (std::size_t i : {3u, 2u, 1u, 0u}) buckets.ready(i, send);
  CHECK(sent.empty());  // the first step holds them to learn the order
  buckets.backward_done(send);
  // 20 → 64 B, 8000 alone (more than 4096 with it), 40 → 64 and 4000 fit together: {3}, {2}, {1, 0}
  CHECK(sent == std::vector<std::vector<std::size_t>>{{3}, {2}, {1, 0}});
  sent.clear();
  buckets.new_step(4096);
  buckets.ready(2, send);
  CHECK(sent.empty());  // bucket {2} waits for {3}, the one before it
  buckets.ready(3, send);
  CHECK(sent == std::vector<std::vector<std::size_t>>{{3}, {2}});
  buckets.ready(0, send);
  buckets.ready(1, send);
  CHECK(sent.size() == 3);
  buckets.new_step(1 << 20);  // a new threshold (the autotuner's) re-cuts: one bucket
  CHECK(buckets.buckets() == std::vector<std::vector<std::size_t>>{{3, 2, 1, 0}});
}

TEST_CASE("trainer: a job whose ranks differ from resources.slots_per_trial is refused on every rank before training") {
  // Seen by a user: 3 slots configured, 2 ranks started; the run trained 2 × 32 records while the
  // configuration's warning spoke of 21 per slot.
  auto o = base_options(64);
  o.slots_per_trial = 3;
  synthetic_data data(600), held_out(97, 11);
  std::atomic<int> steps{0};
  auto errors = transport::inproc::run(2, [&](transport::inproc& t) {
    comm_t comm(t);
    linear_model m(42);
    sgd opt(sgd_options{});
    data_parallel_trainer<comm_t, linear_model, sgd> trainer(comm, m, opt, o);
    trainer.fit(data, held_out, [&](const step_report&) { ++steps; });
  });
  CHECK(steps.load() == 0);
  REQUIRE(errors.size() == 2);
  for (std::size_t r = 0; r < errors.size(); ++r) {
    CAPTURE(r);
    REQUIRE(errors[r] != nullptr);
    const std::string expected =
        "rank " + std::to_string(r) + ": data_parallel_trainer: resources.slots_per_trial is 3 but the job has 2 ranks";
    CHECK_THROWS_WITH_AS(std::rethrow_exception(errors[r]), doctest::Contains(expected.c_str()), invalid_argument);
  }
  o.slots_per_trial = 2;  // the same run with the right number trains
  CHECK(train(2, o).steps.size() == 24);
}
