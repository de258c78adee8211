//! @file choose_test.cpp  tuner::choose: the noise rule (inside the noise the default stays, beyond it
//! the challenger wins, ties by candidate order), log-space boundaries, merged ranges, reasons, explain.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <tutti/tuner/choose.hpp>
#include <tutti/tuner/measured_default.hpp>
#include <tutti/tuner/explain.hpp>
#include <tutti/tuner/selection.hpp>

using namespace tutti::tuner;
using tutti::collective;

namespace {
constexpr std::uint64_t inf = std::numeric_limits<std::uint64_t>::max();
const layout here{4, 2, 2};

sample at(std::uint64_t bytes, std::string algorithm, double median, double spread, layout where = here,
          std::vector<tuning_value> tuning = {}) {
  sample s;
  s.where = where;
  s.bytes = bytes;
  s.measured = measurement{std::move(algorithm), std::move(tuning), median, spread, 0.5};
  return s;
}
const contender ring{"ring", {}};
const std::vector<contender> order{{"ring", {}}, {"direct", {}}, {"halving_doubling", {}}};

std::string single_choice(const std::vector<sample>& samples, std::vector<contender> o = order) {
  const auto rows = choose(samples, collective::allreduce, dtype_class::floating, here, ring, o);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].min_bytes == 0);
  CHECK(rows[0].max_bytes == inf);
  return rows[0].algorithm;
}
}  // namespace

TEST_CASE("choose: a challenger inside the noise does not replace the default; with the quartiles apart it does") {
  // 2 us faster, but the interquartile ranges (80 +-1.5, 78 +-0.5) touch: a rerun could undo it.
  CHECK(single_choice({at(1024, "ring", 80, 3), at(1024, "halving_doubling", 78, 1)}) == "ring");
  // 10 us faster, the ranges apart.
  CHECK(single_choice({at(1024, "ring", 80, 3), at(1024, "halving_doubling", 70, 1)}) == "halving_doubling");
  // 10 us faster, but the challenger's spread is 18: its range (61..79) reaches the default's (78.5..81.5).
  CHECK(single_choice({at(1024, "ring", 80, 3), at(1024, "halving_doubling", 70, 18)}) == "ring");
  // ... with 16 it does not (62..78): both spreads count, half each.
  CHECK(single_choice({at(1024, "ring", 80, 3), at(1024, "halving_doubling", 70, 16)}) == "halving_doubling");
  // Exactly half the spreads' sum is not more than it.
  CHECK(single_choice({at(1024, "ring", 80, 4), at(1024, "halving_doubling", 76, 4)}) == "ring");
  // An erratic default does not keep its place against a steady challenger twice as fast
  // (measured: hierarchical at 512 KiB over 1 Gbit/s, 12.4 ms +-6.1, against ring 6.6 ms +-0.02).
  CHECK(single_choice({at(1024, "ring", 12392, 6119), at(1024, "halving_doubling", 6633, 22)}) == "halving_doubling");
  // Slower challengers never replace it.
  CHECK(single_choice({at(1024, "ring", 80, 0), at(1024, "direct", 81, 0)}) == "ring");
  const auto rows = choose(std::vector{at(1024, "ring", 80, 3), at(1024, "halving_doubling", 78, 1)}, collective::allreduce,
                           dtype_class::floating, here, ring, order);
  CHECK(rows[0].reason ==
        "at 1 KiB (1 size) ring (the default) stays: where another was faster (1 of 1 sizes) it was within the noise, "
        "e.g. 80.0 +-3.0 us vs 78.0 +-1.0 us for halving_doubling at 1 KiB");
  REQUIRE(rows[0].runner_up);
  CHECK(rows[0].runner_up->algorithm == "halving_doubling");
}

TEST_CASE("choose: ties resolve by candidate order, and the default keeps a tie") {
  const std::vector<sample> tied{at(64, "ring", 80, 1), at(64, "halving_doubling", 50, 1), at(64, "direct", 50, 1)};
  CHECK(single_choice(tied) == "direct");  // direct comes before halving_doubling
  CHECK(single_choice(tied, {{"ring", {}}, {"halving_doubling", {}}, {"direct", {}}}) == "halving_doubling");
  CHECK(single_choice({at(64, "direct", 50, 0), at(64, "ring", 50, 0)}) == "ring");
  // A contender the order does not list joins after it: it loses ties to listed ones.
  CHECK(single_choice({at(64, "ring", 80, 0), at(64, "tree", 50, 0), at(64, "direct", 50, 0)}) == "direct");
  // Tuning variants are contenders of their own.
  const std::vector<tuning_value> big{{"direct.one_shot_bytes", 1 << 20}};
  const auto rows = choose(std::vector{at(64, "ring", 80, 0), at(64, "direct", 60, 0), at(64, "direct", 40, 0, here, big)},
                           collective::allreduce, dtype_class::floating, here, ring, order);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].tuning == big);
  CHECK(rows[0].reason.find("direct{direct.one_shot_bytes=1048576} beat ring (the default)") != std::string::npos);
}

TEST_CASE("choose: ranges merge, boundaries sit at the geometric mean, measurements are the row's largest size") {
  std::vector<sample> s;
  for (std::uint64_t b : {8, 32, 128}) {
    s.push_back(at(b, "ring", 80, 3));
    s.push_back(at(b, "halving_doubling", 30 + static_cast<double>(b) / 128, 1.2));
  }
  for (std::uint64_t b : {512, 2048}) {
    s.push_back(at(b, "ring", 100, 3));
    s.push_back(at(b, "halving_doubling", 200, 1));
  }
  s.push_back(at(3000, "ring", 300, 3));
  s.push_back(at(3000, "direct", 100, 3));
  const auto rows = choose(s, collective::allreduce, dtype_class::floating, here, ring, order);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].algorithm == "halving_doubling");
  CHECK(rows[0].min_bytes == 0);
  CHECK(rows[0].max_bytes == 255);  // sqrt(128 * 512) = 256 starts the next
  CHECK(rows[1].algorithm == "ring");
  CHECK(rows[1].min_bytes == 256);
  CHECK(rows[1].max_bytes == 2478);  // sqrt(2048 * 3000) = 2478.7..., rounded: 2479
  CHECK(rows[2].algorithm == "direct");
  CHECK(rows[2].min_bytes == 2479);
  CHECK(rows[2].max_bytes == inf);
  CHECK(rows[0].reason ==
        "at 8 B..128 B (3 sizes) halving_doubling beat ring (the default) beyond the noise (their interquartile ranges apart), "
        "e.g. 31.0 +-1.2 us vs 80.0 +-3.0 us for ring at 128 B");
  CHECK(rows[0].winner->median_us == 31);
  CHECK(rows[0].runner_up->algorithm == "ring");
  CHECK(rows[1].reason == "at 512 B..2 KiB (2 sizes) ring (the default) was fastest, e.g. 100.0 +-3.0 us vs 200.0 +-1.0 us "
                          "for halving_doubling at 2 KiB");
  CHECK(rows[1].where == here);
  // What choose makes, compile accepts, and dispatch follows at each boundary.
  table t;
  t.rows = rows;
  std::vector<candidate_info> candidates;
  for (const auto& c : order) {
    candidate_info i{c.algorithm, {}};
    i.has.fill(true);
    candidates.push_back(i);
  }
  const selection sel = compile(t, here, candidates, 0);
  for (auto [bytes, expect] : {std::pair<std::uint64_t, std::uint32_t>{255, 2}, {256, 0}, {2478, 0}, {2479, 1}})
    CHECK(sel.find(collective::allreduce, dtype_class::floating, bytes).candidate == expect);
  // Two neighbouring sizes one byte apart still leave both on their own side.
  const auto tight = choose(std::vector{at(7, "ring", 80, 0), at(7, "direct", 10, 0), at(8, "ring", 10, 0), at(8, "direct", 80, 0)},
                            collective::allreduce, dtype_class::floating, here, ring, order);
  REQUIRE(tight.size() == 2);
  CHECK(tight[0].max_bytes == 7);
  CHECK(tight[1].min_bytes == 8);
}

TEST_CASE("choose: no samples make no rows; a default never measured loses to the fastest; choose_all groups keys") {
  CHECK(choose(std::vector<sample>{}, collective::allreduce, dtype_class::floating, here, ring, order).empty());
  const auto rows = choose(std::vector{at(8, "direct", 20, 1), at(8, "tree", 10, 1)}, collective::allreduce,
                           dtype_class::floating, here, ring, order);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].algorithm == "tree");
  CHECK(rows[0].reason.find("the default (ring) was not measured") != std::string::npos);
  std::vector<sample> two{at(8, "ring", 10, 0), at(8, "direct", 5, 0, {2, 1, 2}), at(8, "ring", 20, 0, {2, 1, 2})};
  two.push_back(at(8, "direct", 1, 0));
  two.back().collective_kind = collective::allgather;
  const auto all = choose_all(two, [](collective, const layout&) { return ring; }, order);
  REQUIRE(all.size() == 3);
  CHECK(all[0].where == here);
  CHECK(all[1].where == layout{2, 1, 2});
  CHECK(all[1].algorithm == "direct");
  CHECK(all[2].collective_kind == collective::allgather);
}

TEST_CASE("explain: the row, its reason, every candidate at the nearest measured size, the rule") {
  table t;
  t.source = "t.json";
  for (std::uint64_t b : {1024, 4096, 16384}) {
    t.samples.push_back(at(b, "ring", 80, 3));
    t.samples.push_back(at(b, "direct", b < 16384 ? 20 : 200, 1));
  }
  t.rows = choose(t.samples, collective::allreduce, dtype_class::floating, here, ring, order);
  t.rows[0].line = 7;
  const std::string text = explain(t, here, collective::allreduce, dtype_class::floating, 5000);
  CAPTURE(text);
  CHECK(text.find("allreduce of 5000 B (float) over 2x2 (world 4), t.json:") == 0);
  CHECK(text.find("row 1 (line 7): 0 B..8191 B -> direct") != std::string::npos);
  CHECK(text.find("why: at 1 KiB..4 KiB (2 sizes) direct beat ring (the default)") != std::string::npos);
  CHECK(text.find("measured at 4 KiB (the measured size nearest 5000 B):") != std::string::npos);
  CHECK(text.find("direct: 20.0 +-1.0 us") != std::string::npos);
  CHECK(text.find("<- this row's choice") != std::string::npos);
  CHECK(text.find("ring: 80.0 +-3.0 us") != std::string::npos);
  CHECK(text.find("the rule: " + std::string(noise_rule)) != std::string::npos);
  const std::string none = explain(t, {3, 1, 3}, collective::allreduce, dtype_class::floating, 8);
  CHECK(none.find("neither samples around this layout nor a model") != std::string::npos);
}

TEST_CASE("the default is the candidate fastest over the sweep, not automatic's guess") {
  using namespace tutti::tuner;
  const layout where{4, 4, 1};
  std::vector<sample> samples;
  auto add = [&](const char* algorithm, std::uint64_t bytes, double median, double spread,
                 std::vector<tuning_value> tuning = {}) {
    sample s;
    s.where = where;
    s.bytes = bytes;
    s.measured = {algorithm, std::move(tuning), median, spread, 0};
    samples.push_back(s);
  };
  // Namespace hosts 4 x 1 (medians of three tunes): halving_doubling ahead of automatic's
  // hierarchical<direct, ring> at every size, but within the ±25 % spreads at 2 MiB.
  add("hierarchical<direct, ring>", 131072, 402, 101);
  add("halving_doubling", 131072, 323, 95);
  add("hierarchical<direct, ring>", 2097152, 4194, 915);
  add("halving_doubling", 2097152, 3760, 828);
  // A variant with tuning values is never the default, even with the lowest mean (here only at 128 KiB).
  add("direct", 131072, 300, 1, {{"direct.one_shot_bytes", 0}});
  const contender automatic{"hierarchical<direct, ring>", {}};
  const contender d = measured_default(samples, tutti::collective::allreduce, dtype_class::floating, where, automatic);
  CHECK(d.algorithm == "halving_doubling");
  CHECK(d.tuning.empty());
  const auto rows = choose(samples, tutti::collective::allreduce, dtype_class::floating, where, d);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].algorithm == "halving_doubling");
  // With automatic's choice as the default the slower one keeps 2 MiB (within the noise).
  const auto before = choose(samples, tutti::collective::allreduce, dtype_class::floating, where, automatic);
  REQUIRE(before.size() == 2);
  CHECK(before[1].algorithm == "hierarchical<direct, ring>");
  // Ties keep the given default; another layout's or collective's samples do not count.
  CHECK(measured_default(samples, tutti::collective::allreduce, dtype_class::floating, layout{4, 2, 2}, automatic)
            .algorithm == automatic.algorithm);
  CHECK(measured_default(samples, tutti::collective::broadcast, dtype_class::floating, where, automatic).algorithm ==
        automatic.algorithm);
  std::vector<sample> tie = {samples[0], samples[2]};
  tie.push_back(samples[0]);
  tie.back().measured.algorithm = "ring";
  tie.push_back(samples[2]);
  tie.back().measured.algorithm = "ring";
  CHECK(measured_default(tie, tutti::collective::allreduce, dtype_class::floating, where, automatic).algorithm ==
        automatic.algorithm);
}
