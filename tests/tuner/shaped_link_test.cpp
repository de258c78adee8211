//! @file shaped_link_test.cpp  tuner::shaped_link: a token-bucket shaped link's terms, max() pricing, and the fit by regimes.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <tutti/tuner/predict.hpp>

using namespace tutti::tuner;
using tutti::collective;

namespace {
constexpr double KiB = 1024, MiB = 1024 * KiB, bucket = 128 * KiB;  // tbf "burst 1mbit", as tc reads it
const layout one_node4{4, 1, 4}, two_by_two{4, 2, 2}, four_by_one{4, 4, 1};
const char* const candidates[] = {"ring", "tree", "halving_doubling", "hierarchical<direct, ring>", "hierarchical<ring, ring>"};

//! Namespace hosts whose links are tc token buckets, as this VM's 1 Gbit/s runs.
machine_shape token_bucket_hosts() {
  machine_shape m;
  m.network_on_cpus = true, m.links_shaped = true, m.token_bucket = true, m.bucket_bytes = bucket;
  m.check = argument_check::none;
  return m;
}
cost_terms link_of(std::string_view name, const layout& where, double bytes) {
  const auto t = terms_of(name, collective::allreduce, where, bytes, 0, {}, token_bucket_hosts());
  REQUIRE(t.has_value());
  return *t;
}
void check_link(const cost_terms& t, double within, double paced, double exchange) {
  CHECK(t.link_within == doctest::Approx(within));
  CHECK(t.link_paced == doctest::Approx(paced));
  CHECK(t.link_exchange == doctest::Approx(exchange));
}
}  // namespace

TEST_CASE("shaped_link: each step's bucket covers min(step, bucket) of its bytes; the rest is paced, apart in exchange steps") {
  // ring, 4 hosts: 6 steps of one chunk of the segment on each host's link
  check_link(link_of("ring", four_by_one, 2 * MiB), 6 * bucket, 6 * (512 * KiB - bucket), 0);
  check_link(link_of("ring", four_by_one, 32 * KiB), 48 * KiB, 0, 0);
  // halving_doubling on 2 x 2: its crossing step carries both ranks' halves at once, both ways
  check_link(link_of("halving_doubling", two_by_two, 2 * MiB), 2 * bucket, 0, 2 * (2 * MiB - bucket));
  // tree at 512 KiB: one chunk per tree, two filling steps of a chunk per tree
  check_link(link_of("tree", four_by_one, 512 * KiB), 2 * bucket, 0, 2 * (512 * KiB - bucket));
  // hierarchical on 2 x 2: both ranks' inter-node rings at once, 2 steps of 512 KiB each
  check_link(link_of("hierarchical<direct, ring>", two_by_two, 2 * MiB), 2 * bucket, 2 * (MiB - bucket), 0);

  // in all, the link carries what the first (summed) model charges it: b_inter on a shaped link
  machine_shape summed = token_bucket_hosts();
  summed.token_bucket = false;
  for (const layout& where : {two_by_two, four_by_one})
    for (const char* name : candidates)
      for (double bytes : {8.0, 1 * KiB, 64 * KiB, 1 * MiB, 16 * MiB}) {
        CAPTURE(name);
        CAPTURE(where.nodes);
        CAPTURE(bytes);
        const cost_terms t = link_of(name, where, bytes);
        const auto sum = terms_of(name, collective::allreduce, where, bytes, 0, {}, summed);
        REQUIRE(sum.has_value());
        CHECK(t.link_within + t.link_paced + t.link_exchange == doctest::Approx(sum->b_inter));
        CHECK(t.link_within <= sum->b_inter);
      }
}

TEST_CASE("shaped_link: beside the link, a call's terms are the unshaped schedule's; one node has no link") {
  machine_shape unshaped = token_bucket_hosts();
  unshaped.links_shaped = false;
  for (const layout& where : {one_node4, two_by_two, four_by_one})
    for (const char* name : {"ring", "tree", "halving_doubling", "hierarchical<direct, ring>", "direct"})
      for (double cores : {0.0, 1.0}) {
        CAPTURE(name);
        CAPTURE(where.nodes);
        CAPTURE(cores);
        const auto a = terms_of(name, collective::allreduce, where, MiB, cores, {}, token_bucket_hosts());
        const auto b = terms_of(name, collective::allreduce, where, MiB, cores, {}, unshaped);
        REQUIRE(a.has_value() == b.has_value());
        if (!a) continue;  // direct across nodes
        CHECK(a->a_intra == b->a_intra);
        CHECK(a->b_intra == b->b_intra);
        CHECK(a->a_inter == b->a_inter);
        CHECK(a->b_inter == b->b_inter);
        CHECK(a->g == b->g);
        CHECK(a->s == b->s);
        CHECK(a->m == b->m);
        CHECK(a->e == b->e);
        CHECK(a->c == b->c);
        CHECK_FALSE(b->on_shaped_link());
        CHECK(a->on_shaped_link() == (where.nodes > 1));
      }
  // collectives other than allreduce have no link terms yet: no formula, rather than a wrong one
  CHECK_FALSE(terms_of("ring", collective::reduce_scatter, two_by_two, MiB, 0, {}, token_bucket_hosts()));
  CHECK(terms_of("ring", collective::reduce_scatter, one_node4, MiB, 0, {}, token_bucket_hosts()));
}

TEST_CASE("shaped_link: a call takes the larger of the unshaped schedule's time and its link's") {
  cost_parameters p;
  p.inter.alpha = 10e-6;
  p.link = {1 / 120e6, 1 / 90e6, 1 / 60e6};
  cost_terms t;
  t.a_inter = 2;  // 20 us
  CHECK(seconds(p, t) == summed_seconds(p, t));  // no link bytes: the sum, as before
  t.link_within = 1200;  // 10 us on the link: the schedule's 20 us win
  CHECK(seconds(p, t) == doctest::Approx(20e-6));
  t.link_paced = 9000, t.link_exchange = 600;  // 10 + 100 + 10 us
  CHECK(link_seconds(p, t) == doctest::Approx(120e-6));
  CHECK(seconds(p, t) == doctest::Approx(120e-6));
  CHECK(summed_seconds(p, t) == doctest::Approx(20e-6));
  const cost_terms twice = t * 2 + t;
  CHECK(twice.link_paced == 27000);
}

#if TUTTI_HAVE_EIGEN
#include <tutti/tuner/fit_table.hpp>

TEST_CASE("fit_samples: on token-bucket links, recovers the rate, both efficiencies and the network's alpha and beta within 5 %") {
  cost_parameters truth{{0.9e-6, 1.0 / 5e9}, {6.5e-6, 1.0 / 0.9e9}, 1.0 / 4e9};
  truth.switch_cost = 2e-6, truth.memory_beta = 6e-11, truth.alpha_sync = 0.14e-6, truth.base_latency = 0.5e-6;
  const double rate = 120e6, paced = 0.78, exchange = 0.6;  // bytes/s in the bucket; beyond it; exchange steps beyond it
  truth.link = {1 / rate, 1 / (paced * rate), 1 / (exchange * paced * rate)};
  truth.machine = token_bucket_hosts();
  truth.machine.cache_bytes = 2 * MiB;
  truth.machine.check = argument_check::exchange;
  fit_options options;
  options.machine = truth.machine;
  options.machine_cores = 2;  // namespace hosts sharing this VM's 2 cores
  options.held = node_parameters_of(truth);
  std::mt19937 rng(20261127);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  std::vector<sample> samples;
  for (const layout& where : {two_by_two, four_by_one})
    for (const char* name : candidates)
      for (double bytes = 8; bytes <= 256 * MiB; bytes *= 4) {
        sample s;
        s.where = where;
        s.bytes = static_cast<std::uint64_t>(bytes);
        s.measured.algorithm = name;
        const auto t = predicted_seconds(truth, name, collective::allreduce, where, bytes, options.cores_for(where));
        REQUIRE(t);
        s.measured.median_us = *t * 1e6 * (1 + noise(rng));
        samples.push_back(s);
      }
  const auto r = fit_samples_with_residuals(samples, options);
  CHECK(r.left_out == 0);
  CHECK(r.fit.link_fitted);
  CHECK(r.fit.link_bound > samples.size() / 4);        // from 32 KiB on
  CHECK(r.fit.link_bound < samples.size() - 10);       // not the latency-bound ones
  const auto& l = r.fit.parameters.link;
  CHECK(1 / l.beta == doctest::Approx(rate).epsilon(0.05));
  CHECK(l.beta / l.paced_beta == doctest::Approx(paced).epsilon(0.05));
  CHECK(l.paced_beta / l.exchange_beta == doctest::Approx(exchange).epsilon(0.05));
  CHECK(r.model.alpha_inter == doctest::Approx(truth.inter.alpha).epsilon(0.05));
  CHECK(r.model.beta_inter == doctest::Approx(truth.inter.beta).epsilon(0.05));
  CHECK(r.model.alpha_intra == truth.intra.alpha);  // held
  CHECK(r.fit.max_relative_error < 0.05);
  for (const auto& e : r.residuals) CHECK(std::abs(e.relative_error()) < 0.05);

  // the unshaped fit of the same samples is fit() itself, with no link in sight
  fit_options unshaped = options;
  unshaped.machine.token_bucket = false;
  const auto u = fit_samples_with_residuals(samples, unshaped);
  CHECK_FALSE(u.fit.link_fitted);
  CHECK(u.fit.parameters.link.beta == 0);
  CHECK(u.fit.link_bound == 0);

  // bad times are refused, as fit() refuses them
  std::vector<timed_sample> bad{{link_of("ring", two_by_two, MiB), 0.0}};
  CHECK_THROWS_AS((void)fit_token_bucket(bad), tutti::invalid_argument);
}
#else
TEST_CASE("fit_samples: token-bucket links not built (Eigen 3 not found: tutti::eigen missing)") {}
#endif
