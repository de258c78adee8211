//! @file cost_model_test.cpp  tuner::cost_model: the formulas against hand-derived values; tuner::fit recovers known parameters.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include <tutti/tuner/cost_model.hpp>

using namespace tutti::tuner;

namespace {
void check_terms(const cost_terms& t, double a_intra, double b_intra, double a_inter, double b_inter, double g) {
  CHECK(t.a_intra == doctest::Approx(a_intra));
  CHECK(t.b_intra == doctest::Approx(b_intra));
  CHECK(t.a_inter == doctest::Approx(a_inter));
  CHECK(t.b_inter == doctest::Approx(b_inter));
  CHECK(t.g == doctest::Approx(g));
}
}  // namespace

TEST_CASE("cost_model: allreduce terms are Thakur-Rabenseifner-Gropp's") {
  const double m = 1 << 20;
  // ring over 4: 2(p-1) messages, 2(p-1)/p m bytes, (p-1)/p m reduced
  check_terms(allreduce_terms(schedule::ring, 4, m, level::intra), 6, 1.5 * m, 0, 0, 0.75 * m);
  // halving-doubling over 8: 2 log2 p messages, the same bytes as ring
  check_terms(allreduce_terms(schedule::halving_doubling, 8, m, level::inter), 0, 0, 6, 1.75 * m, 0.875 * m);
  // over 6: on 4, plus the two ranks' hand-over and return of the whole vector
  check_terms(allreduce_terms(schedule::halving_doubling, 6, m, level::intra), 4 + 2, 1.5 * m + 2 * m, 0, 0,
              0.75 * m + m);
  // binomial reduce + broadcast over 5: ceil(log2 5) = 3 steps each way, whole vector each
  check_terms(allreduce_terms(schedule::binomial_tree, 5, m, level::intra), 6, 6 * m, 0, 0, 3 * m);
  check_terms(allreduce_terms(schedule::direct_one_shot, 3, m, level::intra), 1, 2 * m, 0, 0, 2 * m);
  check_terms(allreduce_terms(schedule::direct_two_shot, 4, m, level::intra), 2, 1.5 * m, 0, 0, 0.75 * m);
  for (auto s : {schedule::ring, schedule::halving_doubling, schedule::binomial_tree, schedule::direct_one_shot})
    check_terms(allreduce_terms(s, 1, m, level::intra), 0, 0, 0, 0, 0);  // one rank: nothing moves
  CHECK_THROWS_AS((void)allreduce_terms(schedule::ring, 0, m, level::intra), tutti::invalid_argument);
  CHECK_THROWS_AS((void)allreduce_terms(schedule::ring, 2, -1, level::intra), tutti::invalid_argument);
}

TEST_CASE("cost_model: hierarchical = intra reduce-scatter + inter allreduce of 1/ppn + intra allgather") {
  const double m = 8 << 20;
  // 2 nodes x 4 ranks, ring between nodes: intra 2 x 3 messages and 2 x 3/4 m; inter ring over 2 on m/4
  check_terms(hierarchical_allreduce_terms(schedule::ring, 2, 4, m), 6, 1.5 * m, 2, 0.25 * m, 0.75 * m + 0.125 * m);
  // one rank per node: the whole allreduce is the inter-node one
  check_terms(hierarchical_allreduce_terms(schedule::halving_doubling, 4, 1, m), 0, 0, 4, 1.5 * m, 0.75 * m);
}

#if TUTTI_HAVE_EIGEN
#include <tutti/tuner/fit.hpp>

TEST_CASE("fit: recovers known alpha, beta, gamma from noisy synthetic times within 5 %") {
  const cost_parameters truth{{1.5e-6, 1.0 / 6e9}, {12e-6, 1.0 / 1.1e8}, 1.0 / 2e10};
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);  // +-2 %, as medians of a quiet machine
  std::vector<timed_sample> samples;
  for (double bytes = 8; bytes <= 256.0 * (1 << 20); bytes *= 4)
    for (int p : {2, 3, 4, 8}) {
      for (auto s : {schedule::ring, schedule::halving_doubling, schedule::direct_one_shot}) {
        const auto t = allreduce_terms(s, p, bytes, level::intra);
        samples.push_back({t, seconds(truth, t) * (1 + noise(rng))});
      }
      const auto h = hierarchical_allreduce_terms(schedule::ring, 2, p, bytes);
      samples.push_back({h, seconds(truth, h) * (1 + noise(rng))});
      const auto flat = allreduce_terms(schedule::ring, p, bytes, level::inter);
      samples.push_back({flat, seconds(truth, flat) * (1 + noise(rng))});
    }
  const auto r = fit(samples);
  CHECK(r.samples == samples.size());
  for (bool f : r.fitted) CHECK(f);
  CHECK(r.parameters.intra.alpha == doctest::Approx(truth.intra.alpha).epsilon(0.05));
  CHECK(r.parameters.intra.beta == doctest::Approx(truth.intra.beta).epsilon(0.05));
  CHECK(r.parameters.inter.alpha == doctest::Approx(truth.inter.alpha).epsilon(0.05));
  CHECK(r.parameters.inter.beta == doctest::Approx(truth.inter.beta).epsilon(0.05));
  CHECK(r.parameters.gamma == doctest::Approx(truth.gamma).epsilon(0.05));
  CHECK(r.max_relative_error < 0.05);
  CHECK(r.rms_relative_error < 0.03);
}

TEST_CASE("fit: parameters no sample exercises stay 0; bad input is refused") {
  const cost_parameters truth{{2e-6, 1e-10}, {}, 5e-11};
  std::vector<timed_sample> samples;
  for (double bytes = 64; bytes <= 64e6; bytes *= 8) {
    const auto t = allreduce_terms(schedule::ring, 4, bytes, level::intra);
    samples.push_back({t, seconds(truth, t)});
  }
  const auto r = fit(samples);
  CHECK(r.fitted[0]);
  CHECK_FALSE(r.fitted[2]);
  CHECK(r.parameters.inter.alpha == 0);
  CHECK(r.parameters.intra.beta == doctest::Approx(1e-10).epsilon(1e-6));
  CHECK(r.max_relative_error < 1e-9);

  samples[2].seconds = 0;
  CHECK_THROWS_WITH_AS((void)fit(samples), doctest::Contains("sample 2 has time 0"), tutti::invalid_argument);
  CHECK_THROWS_WITH_AS((void)fit(std::span(samples).first(2)), doctest::Contains("2 sample(s) for 3 parameter(s)"),
                       tutti::invalid_argument);
}
#else
TEST_CASE("fit: not built (Eigen 3 not found: tutti::eigen missing)") {}
#endif
