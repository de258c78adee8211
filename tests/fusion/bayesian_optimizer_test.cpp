//! @file bayesian_optimizer_test.cpp  fusion::bayesian_optimizer: finds the maximum of a fusion-shaped score in fewer samples than a grid, and than random sampling.
#include <doctest/doctest.h>

#if TUTTI_HAVE_EIGEN
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/fusion/bayesian_optimizer.hpp"

namespace {

using tutti::fusion::bayesian_optimizer;
using tutti::fusion::bayesian_options;

double sq(double v) { return v * v; }

//! Throughput (arbitrary units) against t = log fusion threshold and c = cycle time, both scaled to
//! [0,1]: it rises while fusing amortises latency and falls once tensors wait too long for their
//! batch; a lower second hump (a trap for a greedy search) and a gentle ripple make it bumpy.
double throughput(double t, double c) {
  const double main_peak = std::exp(-sq((t - 0.68) / 0.16) - sq((c - 0.3) / 0.22));
  const double side_peak = 0.55 * std::exp(-sq((t - 0.2) / 0.12) - sq((c - 0.8) / 0.15));
  return 0.1 + main_peak + side_peak + 0.03 * std::cos(14 * t) * std::cos(10 * c);
}

//! What a measurement reports: the throughput plus a deterministic +-1 % "noise" that varies
//! quickly with the point, as run-to-run variation does.
double measured(double t, double c) { return throughput(t, c) + 0.01 * std::sin(173 * t + 311 * c) * std::cos(97 * c - 59 * t); }

//! The best throughput on the 12 x 8 grid a grid search would try.
double grid_best() {
  double best = 0;
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 8; ++j) best = std::max(best, throughput(i / 11.0, j / 7.0));
  return best;
}

constexpr std::size_t budget = 30;          // samples allowed to come within 10 % of the grid's best
constexpr std::size_t grid_points = 12 * 8;
constexpr std::uint64_t seeds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

//! Samples the optimiser takes until one lies within 10 % of the grid's best; budget + 1 if none does.
std::size_t samples_to_target(std::uint64_t seed) {
  const double target = 0.9 * grid_best();
  bayesian_optimizer bo({0, 0}, bayesian_options{.seed = seed});
  for (std::size_t n = 1; n <= budget; ++n) {
    const auto x = bo.next();
    bo.observe(x, measured(x[0], x[1]));
    if (throughput(x[0], x[1]) >= target) return n;
  }
  return budget + 1;
}

//! The same for uniform random sampling: what the optimiser must beat to be worth its Cholesky.
std::size_t random_samples_to_target(std::uint64_t seed) {
  const double target = 0.9 * grid_best();
  std::mt19937_64 rng(seed);
  const auto u = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  for (std::size_t n = 1; n <= budget; ++n) {
    const double t = u(), c = u();
    if (throughput(t, c) >= target) return n;
  }
  return budget + 1;
}

}  // namespace

TEST_CASE("bayesian_optimizer: comes within 10 % of a 12x8 grid's best in under 30 samples, for every seed") {
  for (std::uint64_t seed : seeds) {
    const std::size_t n = samples_to_target(seed);
    MESSAGE("seed " << seed << ": within 10 % of the grid's best after " << n << " samples (grid: " << grid_points
                    << ", budget: " << budget << ")");
    CHECK(n <= budget);
  }
}

TEST_CASE("bayesian_optimizer: beats random sampling with the same budget") {
  // A broken optimiser (a bad kernel, EI's sign flipped, candidates ignored) is no better than
  // random: here about 2 % of the box is within 10 % of the grid's best, so random sampling reaches
  // it within 30 samples about half the time. The optimiser's mean over the seeds must beat random's
  // over the same seeds and over 200 (the expectation, which a lucky handful of seeds cannot hide):
  // choosing a uniform candidate instead of EI's best misses 4 of these 10 seeds (15 of seeds 1-30)
  // and averages 21.5 samples on them (24 on seeds 1-30).
  double bo = 0, random_same = 0, random_many = 0;
  for (std::uint64_t seed : seeds) {
    bo += static_cast<double>(samples_to_target(seed));
    random_same += static_cast<double>(random_samples_to_target(seed));
  }
  constexpr std::uint64_t many = 200;
  for (std::uint64_t seed = 1; seed <= many; ++seed) random_many += static_cast<double>(random_samples_to_target(seed));
  const auto n = static_cast<double>(std::size(seeds));
  bo /= n;
  random_same /= n;
  random_many /= static_cast<double>(many);
  MESSAGE("mean samples to within 10 % (budget + 1 when not reached): optimiser " << bo << ", random " << random_same
                                                                                 << " (same seeds), " << random_many
                                                                                 << " (" << many << " seeds)");
  CHECK(bo < 0.7 * random_same);
  CHECK(bo < 0.7 * random_many);
}

TEST_CASE("bayesian_optimizer: best_point() lands near the maximum after the budget") {
  bayesian_optimizer bo({0, 0}, bayesian_options{.seed = 3});
  for (std::size_t i = 0; i < budget; ++i) {
    const auto x = bo.next();
    bo.observe(x, measured(x[0], x[1]));
  }
  const auto best = bo.best_point();
  REQUIRE(best.size() == 2);
  CHECK(throughput(best[0], best[1]) >= 0.9 * grid_best());
  CHECK(bo.best_score() >= measured(best[0], best[1]));
  CHECK(bo.samples() == budget);
  CHECK(bo.dimensions() == 2);
}

TEST_CASE("bayesian_optimizer: finds the best level of a categorical dimension, and proposes only level centres") {
  // Score: a bump in the continuous x0, plus 0 / 0.8 / 0.3 for levels 0 / 1 / 2 of x1.
  const double bonus[] = {0.0, 0.8, 0.3};
  const double centres[] = {0.5 / 3.0, 1.5 / 3.0, 2.5 / 3.0};
  for (std::uint64_t seed : seeds) {
    CAPTURE(seed);
    bayesian_optimizer bo({0, 3}, bayesian_options{.seed = seed});
    for (int i = 0; i < 20; ++i) {
      const auto x = bo.next();
      REQUIRE(x.size() == 2);
      const bool at_centre = x[1] == centres[0] || x[1] == centres[1] || x[1] == centres[2];
      CAPTURE(x[1]);
      REQUIRE(at_centre);
      const auto level = static_cast<std::size_t>(x[1] * 3);
      bo.observe(x, std::exp(-sq((x[0] - 0.3) / 0.2)) + bonus[level]);
    }
    const auto best = bo.best_point();
    CHECK(best[1] == centres[1]);
    CHECK(std::abs(best[0] - 0.3) < 0.1);
  }
}

TEST_CASE("bayesian_optimizer: observe() stores a categorical coordinate at its level's centre") {
  bayesian_optimizer bo({4});
  bo.observe({0.0}, 1.0);
  CHECK(bo.best_point() == std::vector<double>{0.125});
  bo.observe({1.0}, 2.0);  // the top of the box belongs to the last level
  CHECK(bo.best_point() == std::vector<double>{0.875});
  CHECK(bo.best_score() == 2.0);
}

TEST_CASE("bayesian_optimizer: the same seed gives the same points; another seed other points") {
  const auto run = [](std::uint64_t seed) {
    bayesian_optimizer bo({0, 0, 5}, bayesian_options{.seed = seed});
    std::vector<std::vector<double>> points;
    for (int i = 0; i < 12; ++i) {
      points.push_back(bo.next());
      const auto& x = points.back();
      bo.observe(x, measured(x[0], x[1]) + 0.1 * x[2]);
    }
    return points;
  };
  const auto a = run(7);
  CHECK(a == run(7));
  CHECK(a != run(8));
}

TEST_CASE("bayesian_optimizer: next() takes a few milliseconds at 50 samples in 4 dimensions") {
  // Reported, not checked: the machines that run the tests are shared. The budget is 20 ms.
  bayesian_optimizer bo({0, 0, 0, 4}, bayesian_options{.seed = 11});
  for (int i = 0; i < 50; ++i) {
    const auto x = bo.next();
    bo.observe(x, throughput(x[0], x[1]) - sq(x[2] - 0.5) + 0.1 * x[3]);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto x = bo.next();
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  MESSAGE("next() at 50 samples, d = 4: " << took.count() << " ms");
  REQUIRE(x.size() == 4);
  for (double v : x) CHECK((v >= 0.0 && v <= 1.0));
}

TEST_CASE("bayesian_optimizer: bad arguments are refused, naming the value") {
  using tutti::invalid_argument;
  CHECK_THROWS_WITH_AS(bayesian_optimizer({}), doctest::Contains("got levels.size() == 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(bayesian_optimizer({0}, bayesian_options{.candidates = 0}),
                       doctest::Contains("options.candidates >= 1; got 0"), invalid_argument);
  CHECK_THROWS_WITH_AS(bayesian_optimizer({0}, bayesian_options{.noise = -1}),
                       doctest::Contains("options.noise > 0; got -1"), invalid_argument);
  CHECK_THROWS_WITH_AS(bayesian_optimizer({0}, bayesian_options{.xi = std::numeric_limits<double>::quiet_NaN()}),
                       doctest::Contains("options.xi >= 0; got nan"), invalid_argument);

  bayesian_optimizer bo({0, 3});
  CHECK_THROWS_WITH_AS(bo.best_point(), doctest::Contains("got 0"), invalid_argument);
  CHECK(bo.best_score() == -std::numeric_limits<double>::infinity());
  CHECK_THROWS_WITH_AS(bo.observe({0.5}, 1.0), doctest::Contains("x.size() == 2; got 1"), invalid_argument);
  CHECK_THROWS_WITH_AS(bo.observe({0.5, 0.5, 0.5}, 1.0), doctest::Contains("x.size() == 2; got 3"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(bo.observe({0.5, 1.5}, 1.0), doctest::Contains("x[1] == 1.5"), invalid_argument);
  CHECK_THROWS_WITH_AS(bo.observe({0.5, 0.5}, std::numeric_limits<double>::quiet_NaN()),
                       doctest::Contains("finite score; got nan"), invalid_argument);
  CHECK_THROWS_WITH_AS(bo.observe({0.5, 0.5}, std::numeric_limits<double>::infinity()),
                       doctest::Contains("finite score; got inf"), invalid_argument);
  CHECK(bo.samples() == 0);  // nothing refused was recorded
}

#else
TEST_CASE("bayesian_optimizer: not built (Eigen 3 not found: tutti::eigen missing)") {}
#endif
