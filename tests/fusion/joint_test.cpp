// Joint tuning (fusion/joint.hpp): the fusion autotuner chooses which candidate of an
// algorithm::tuned<...> runs the engine's collectives. Its parts alone (the choice on the wire, the
// forced scope, the tuner's mapping of levels to candidates, unordered levels in the optimiser),
// then end to end over threads: every rank runs rank 0's choice in the same round, the caller's own
// collectives keep the table's choice, and sums stay exact across switches.
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include <tutti/fusion/joint.hpp>
#include <tutti/fusion/negotiation.hpp>

using namespace tutti;

namespace {

//! A control as joint.hpp sees one (algorithm::tuned's has the same members): records what it is told.
struct fake_info {
  std::string_view name;
  std::array<bool, 7> has{};
};
struct fake_layout {
  int world = 4, nodes = 2, ranks_per_node = 2;
};
struct fake_control {
  std::vector<fake_info> all;
  std::vector<std::int64_t> calls;  //!< forced candidate, or -1 for release()
  fake_layout where;
  [[nodiscard]] std::span<const fake_info> candidates() const { return all; }
  [[nodiscard]] fake_layout layout() const { return where; }
  void force(std::uint32_t i) { calls.push_back(i); }
  void release() { calls.push_back(-1); }
};
struct fake_port {
  fake_control* control;
  [[nodiscard]] fake_control& algorithm_control() const { return *control; }
};
struct plain_port {};

fake_control three_candidates() {
  fake_control c;
  c.all = {{"ring", {}}, {"barrier_only", {}}, {"direct", {}}};
  c.all[0].has[static_cast<std::size_t>(collective::allreduce)] = true;
  c.all[2].has[static_cast<std::size_t>(collective::allreduce)] = true;
  return c;
}

}  // namespace

TEST_CASE("joint: the choices are the control's candidates with an allreduce; none without a control") {
  auto control = three_candidates();
  const auto choices = fusion::algorithm_choices(fake_port{&control});
  REQUIRE(choices.size() == 2);
  CHECK(choices[0].candidate == 0);
  CHECK(choices[0].name == "ring");
  CHECK(choices[1].candidate == 2);
  CHECK(choices[1].name == "direct");
  CHECK(fusion::algorithm_choices(plain_port{}).empty());

  // hierarchical<...> refuses nodes of different sizes: a choice only where they are equal.
  control.all.push_back({"hierarchical<ring, ring>", {}});
  control.all.back().has[static_cast<std::size_t>(collective::allreduce)] = true;
  CHECK(fusion::algorithm_choices(fake_port{&control}).size() == 3);
  control.where = {3, 2, 0};
  CHECK(fusion::algorithm_choices(fake_port{&control}).size() == 2);
  static_assert(fusion::choosing_port<fake_port>);
  static_assert(!fusion::choosing_port<plain_port>);
}

TEST_CASE("joint: a forced scope forces choice - 1 and releases it, also on a throw; 0 touches nothing") {
  auto control = three_candidates();
  const fake_port port{&control};
  { const fusion::forced_algorithm<fake_port> none(port, 0); }
  CHECK(control.calls.empty());
  { const fusion::forced_algorithm<fake_port> third(port, 3); }
  CHECK(control.calls == std::vector<std::int64_t>{2, -1});
  control.calls.clear();
  try {
    const fusion::forced_algorithm<fake_port> first(port, 1);
    throw 7;
  } catch (int) {
  }
  CHECK(control.calls == std::vector<std::int64_t>{0, -1});
  control.calls.clear();
  CHECK_THROWS_WITH_AS(fusion::forced_algorithm<fake_port>(port, 4),
                       doctest::Contains("algorithm choice 4 names no candidate (there are 3)"), transport_error);
  CHECK(control.calls.empty());
  CHECK_THROWS_WITH_AS(fusion::forced_algorithm<plain_port>(plain_port{}, 1),
                       doctest::Contains("whose algorithm has no control"), transport_error);
  { const fusion::forced_algorithm<plain_port> nothing(plain_port{}, 0); }
}

TEST_CASE("joint: the algorithm choice travels in the response") {
  fusion::response a;
  a.params = {std::size_t{1} << 20, std::chrono::microseconds(2500), 3};
  const auto bytes = fusion::encode(a);
  const auto b = fusion::decode_response(bytes);
  CHECK(b.params == a.params);
  CHECK(b.params.algorithm == 3);
  a.params.algorithm = 0;
  CHECK(fusion::decode_response(fusion::encode(a)).params.algorithm == 0);
}

#if TUTTI_HAVE_EIGEN
#include <tutti/fusion/autotuned.hpp>

TEST_CASE("joint: unordered levels are equally far apart in the kernel; ordered ones by their order") {
  fusion::detail::gp_hyper h{{1.0, 2.0}, 1.0, 1e-3, {0, 1}};
  const double l0[] = {0.5, 0.1}, l1[] = {0.5, 0.3}, l4[] = {0.5, 0.9};
  CHECK(fusion::detail::matern52(l0, l1, h) == fusion::detail::matern52(l0, l4, h));
  CHECK(fusion::detail::matern52(l0, l0, h) == 1.0);
  h.unordered.clear();  // the same points, ordered: level 4 is further from level 0 than level 1 is
  CHECK(fusion::detail::matern52(l0, l1, h) > fusion::detail::matern52(l0, l4, h));
}

TEST_CASE("joint: the optimiser finds the best of five unordered levels whose order means nothing") {
  // Levels 1 and 3 are good, their neighbours bad: an ordered kernel would smooth across them.
  const double bonus[] = {0.0, 0.9, 0.1, 0.6, 0.0};
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    fusion::bayesian_optimizer bo({0, 5}, fusion::bayesian_options{.seed = seed, .unordered_levels = true});
    for (int i = 0; i < 24; ++i) {
      const auto x = bo.next();
      const auto level = static_cast<std::size_t>(x[1] * 5);
      bo.observe(x, std::exp(-(x[0] - 0.4) * (x[0] - 0.4) / 0.04) + bonus[level]);
    }
    const auto best = bo.best_point();
    CHECK(best[1] == doctest::Approx(1.5 / 5));
  }
}

TEST_CASE("joint: the tuner's algorithm levels map to level 0 (the algorithm's own choice) and the candidates") {
  using space = fusion::fusion_search_space;
  CHECK(space::level_at(0.0, 3) == 0);
  CHECK(space::level_at(0.5, 3) == 1);
  CHECK(space::level_at(1.0, 3) == 2);
  for (std::size_t k = 0; k < 4; ++k) CHECK(space::level_at(space::level_of(k, 4), 4) == k);

  fusion::autotune_settings s;
  s.warmup_samples = 0;
  s.steps_per_sample = 1;
  s.max_samples = 12;
  // Candidate 1 (no allreduce) is not among the choices: the tuner may say 0, 1 (ring) or 3 (direct).
  const std::vector<fusion::algorithm_choice> choices{{0, "ring"}, {2, "direct"}};
  const fusion::parameters initial{std::size_t{64} << 20, std::chrono::microseconds(1000)};
  fusion::bayesian_tuner tuner(initial, s, "none", "tuned<ring, barrier_only, direct>", choices);
  auto now = fusion::clock::now();
  std::set<std::uint32_t> seen;
  fusion::parameters last = initial;
  for (int round = 0; round < 200 && !tuner.settled(); ++round) {
    now += std::chrono::milliseconds(1);
    // A score that prefers direct: the tuner must settle there.
    const std::size_t bytes = last.algorithm == 3 ? 4000 : 1000;
    if (auto p = tuner.observe(bytes, 1, 1, now)) {
      CHECK((p->algorithm == 0 || p->algorithm == 1 || p->algorithm == 3));
      seen.insert(p->algorithm);
      last = *p;
    }
  }
  REQUIRE(tuner.settled());
  CHECK(seen.size() == 3);
  CHECK(last.algorithm == 3);

  s.algorithm = false;  // TUTTI_AUTOTUNE_ALGORITHM=0: the algorithm stays the communicator's own choice
  fusion::bayesian_tuner plain(initial, s, "none", "tuned<ring, barrier_only, direct>", choices);
  for (int round = 0; round < 60; ++round) {
    now += std::chrono::milliseconds(1);
    if (auto p = plain.observe(1000, 1, 1, now)) CHECK(p->algorithm == 0);
  }
}
#endif
