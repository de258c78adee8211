//! @file interpolate_test.cpp  Layouts never measured: log-space interpolation between measured
//! layouts (along nodes and along ranks per node), the cost model beyond them, the fallback without.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tutti/tuner/explain.hpp>
#include <tutti/tuner/interpolate.hpp>
#include <tutti/tuner/predict.hpp>
#include <tutti/tuner/selection.hpp>

using namespace tutti::tuner;
using tutti::collective;

namespace {
sample at(layout where, std::uint64_t bytes, std::string algorithm, double median, double spread) {
  sample s;
  s.where = where;
  s.bytes = bytes;
  s.measured = measurement{std::move(algorithm), {}, median, spread, 1.0};
  return s;
}

std::vector<candidate_info> candidates(std::initializer_list<const char*> names) {
  std::vector<candidate_info> v;
  for (const char* n : names) {
    candidate_info i{n, {}};
    i.has.fill(true);
    v.push_back(i);
  }
  return v;
}
}  // namespace

TEST_CASE("interpolate: log t = (1-w) log t1 + w log t2 along nodes, and along ranks per node") {
  const std::vector<sample> s{at({4, 2, 2}, 1024, "ring", 10, 1), at({16, 8, 2}, 1024, "ring", 40, 4),
                              at({4, 2, 2}, 1024, "direct", 8, 0), at({16, 8, 2}, 1024, "direct", 64, 2),
                              at({16, 8, 2}, 4096, "direct", 64, 2)};  // only at 8x2: not interpolated
  const auto a = interpolated_samples(s, collective::allreduce, dtype_class::floating, {8, 4, 2});
  REQUIRE(a);
  CHECK(a->how == "interpolated between 2x2 and 8x2");
  REQUIRE(a->samples.size() == 2);
  // w = (log 4 - log 2) / (log 8 - log 2) = 1/2: the geometric means.
  CHECK(a->samples[0].measured.median_us == doctest::Approx(20));
  CHECK(a->samples[0].measured.spread_us == doctest::Approx(2));
  CHECK(a->samples[0].where == layout{8, 4, 2});
  CHECK(a->samples[1].measured.median_us == doctest::Approx(std::sqrt(8.0 * 64.0)));
  CHECK(a->samples[1].measured.spread_us == doctest::Approx(1));  // a spread of 0: a straight line
  // 3 nodes: w = log(3/2) / log 4.
  const auto b = interpolated_samples(s, collective::allreduce, dtype_class::floating, {6, 3, 2});
  REQUIRE(b);
  const double w = std::log(1.5) / std::log(4.0);
  CHECK(b->samples[0].measured.median_us == doctest::Approx(std::exp((1 - w) * std::log(10.0) + w * std::log(40.0))));
  // Along ranks per node on the same nodes.
  const std::vector<sample> r{at({2, 2, 1}, 64, "ring", 5, 0), at({8, 2, 4}, 64, "ring", 20, 0)};
  const auto c = interpolated_samples(r, collective::allreduce, dtype_class::floating, {4, 2, 2});
  REQUIRE(c);
  CHECK(c->how == "interpolated between 2x1 and 2x4");
  CHECK(c->samples[0].measured.median_us == doctest::Approx(10));
  // Not between measured layouts, measured itself, or uneven: nothing.
  CHECK_FALSE(interpolated_samples(s, collective::allreduce, dtype_class::floating, {32, 16, 2}));
  CHECK_FALSE(interpolated_samples(s, collective::allreduce, dtype_class::floating, {4, 2, 2}));
  CHECK_FALSE(interpolated_samples(s, collective::allreduce, dtype_class::floating, {7, 4, 0}));
  CHECK_FALSE(interpolated_samples(s, collective::allgather, dtype_class::floating, {8, 4, 2}));
}

TEST_CASE("compile: a layout with no rows is answered by interpolation, with the rule and the reason saying so") {
  table t;
  t.source = "t.json";
  for (const layout l : {layout{4, 2, 2}, layout{16, 8, 2}}) {
    const double scale = l.nodes == 2 ? 1 : 4;
    t.samples.push_back(at(l, 8, "ring", 50 * scale, 1));
    t.samples.push_back(at(l, 8, "halving_doubling", 10 * scale, 1));
    t.samples.push_back(at(l, 8, "tree", 1, 0));  // not compiled in below: never chosen
    t.samples.push_back(at(l, 1 << 20, "ring", 100 * scale, 1));
    t.samples.push_back(at(l, 1 << 20, "halving_doubling", 300 * scale, 1));
  }
  const auto cands = candidates({"ring", "halving_doubling"});
  const selection s = compile(t, {8, 4, 2}, cands, 0);
  CHECK(s.how() == "allreduce (float): interpolated between 2x2 and 8x2");
  const choice& small = s.find(collective::allreduce, dtype_class::floating, 8);
  CHECK(small.candidate == 1);
  REQUIRE(small.from);
  CHECK(small.from->reason.find("halving_doubling beat ring (the default)") != std::string::npos);
  CHECK(small.from->reason.find("(interpolated between 2x2 and 8x2)") != std::string::npos);
  CHECK(small.from->winner->median_us == doctest::Approx(20));
  CHECK(s.find(collective::allreduce, dtype_class::floating, 2895).candidate == 1);  // sqrt(8 * 1 MiB) = 2896.3
  CHECK(s.find(collective::allreduce, dtype_class::floating, 2896).candidate == 0);
  CHECK(s.find(collective::allreduce, dtype_class::integer, 8).candidate == 1);  // integer takes float's rows
  CHECK(s.find(collective::allgather, dtype_class::floating, 8).from == nullptr);  // nothing measured: fallback
  // A measured layout without rows has them chosen from its own samples.
  const selection measured = compile(t, {4, 2, 2}, cands, 0);
  CHECK(measured.how() == "allreduce (float): chosen from the samples of 2x2 (the table has no rows for it)");
  CHECK(measured.find(collective::allreduce, dtype_class::floating, 8).from->winner->median_us == 10);
  const std::string text = explain(t, {8, 4, 2}, collective::allreduce, dtype_class::floating, 8, "ring");
  CAPTURE(text);
  CHECK(text.find("these are interpolated between 2x2 and 8x2 (default ring)") != std::string::npos);
  CHECK(text.find("tree: 1.0 +-0.0 us") != std::string::npos);  // explain shows every measured candidate
}

TEST_CASE("compile: beyond the measured layouts the fitted model answers; without it the fallback") {
  table t;
  t.source = "t.json";
  t.samples = {at({4, 2, 2}, 8, "ring", 50, 1), at({4, 2, 2}, 8, "halving_doubling", 10, 1), at({4, 2, 2}, 1 << 22, "ring", 900, 1),
               at({4, 2, 2}, 1 << 22, "halving_doubling", 3000, 1)};
  const auto cands = candidates({"ring", "halving_doubling"});
  const layout far{64, 32, 2};
  const selection none = compile(t, far, cands, 1);
  CHECK(none.how() == "no rows, samples or model for 32x2: every call runs halving_doubling with its defaults");
  CHECK(none.find(collective::allreduce, dtype_class::floating, 8).candidate == 1);
  CHECK(none.find(collective::allreduce, dtype_class::floating, 8).from == nullptr);

  t.model = fitted_model{.alpha_intra = 1e-6, .beta_intra = 1e-10, .alpha_inter = 5e-6, .beta_inter = 1e-9,
                         .gamma = 1e-10, .samples = 4};
  const selection s = compile(t, far, cands, 0);
  CHECK(s.how().find("allreduce (float): predicted by the cost model fitted to 4 samples") != std::string::npos);
  // A collective the table never measured is not the model's (fitted to allreduce): the fallback runs it.
  CHECK(s.how().find("broadcast (float): predicted") == std::string::npos);
  CHECK(s.find(collective::broadcast, dtype_class::floating, 8).from == nullptr);
  CHECK(s.find(collective::broadcast, dtype_class::floating, 8).candidate == 0);
  const cost_parameters p = parameters_of(*t.model);
  for (const std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{1} << 22}) {
    CAPTURE(bytes);
    const auto r = predicted_seconds(p, "ring", collective::allreduce, far, static_cast<double>(bytes));
    const auto d = predicted_seconds(p, "halving_doubling", collective::allreduce, far, static_cast<double>(bytes));
    REQUIRE(r);
    REQUIRE(d);
    const choice& c = s.find(collective::allreduce, dtype_class::floating, bytes);
    CHECK(c.candidate == (*d < *r ? 1u : 0u));  // rms error 0: any predicted win counts
    REQUIRE(c.from);
    CHECK(c.from->reason.find("(predicted by the cost model") != std::string::npos);
  }
  CHECK(explain(t, far, collective::allreduce, dtype_class::floating, 8, "ring").find(
            "these are predicted by the cost model fitted to 4 samples (default ring)") != std::string::npos);
  // With the model's typical error as the spread, a small predicted win does not switch.
  t.model->rms_relative_error = 10;
  const selection cautious = compile(t, far, cands, 0);
  CHECK(cautious.find(collective::allreduce, dtype_class::floating, 8).candidate == 0);
  CHECK(cautious.find(collective::allreduce, dtype_class::floating, 1 << 22).candidate == 0);
}
