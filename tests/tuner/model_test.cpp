//! @file model_test.cpp  tuner::predict (terms and predictions by algorithm name, oversubscription) and tuner::fit_samples.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <tutti/tuner/predict.hpp>

using namespace tutti::tuner;
using tutti::collective;

namespace {
void check_terms(const std::optional<cost_terms>& t, double a_intra, double b_intra, double a_inter, double b_inter, double g,
                 double s = 0, double e = 0) {
  REQUIRE(t.has_value());
  CHECK(t->e == doctest::Approx(e));
  CHECK(t->a_intra == doctest::Approx(a_intra));
  CHECK(t->b_intra == doctest::Approx(b_intra));
  CHECK(t->a_inter == doctest::Approx(a_inter));
  CHECK(t->b_inter == doctest::Approx(b_inter));
  CHECK(t->g == doctest::Approx(g));
  CHECK(t->s == doctest::Approx(s));
}
constexpr double KiB = 1024, MiB = 1024 * KiB;
//! A schedule's own terms: terms_of without the argument check (its own test case below).
std::optional<cost_terms> schedule_of(std::string_view name, collective c, const layout& where, double bytes, double cores = 0,
                                      std::span<const tuning_value> tuning = {}, machine_shape m = {}) {
  m.check = argument_check::none;
  return terms_of(name, c, where, bytes, cores, tuning, m);
}
const layout one_node4{4, 1, 4}, two_by_two{4, 2, 2}, four_by_one{4, 4, 1};
}  // namespace

TEST_CASE("predict: split_composed_name finds the top-level comma") {
  const auto p = split_composed_name("hierarchical<hierarchical<direct, ring>, tree>");
  REQUIRE(p);
  CHECK(p->outer == "hierarchical");
  CHECK(p->first == "hierarchical<direct, ring>");
  CHECK(p->second == "tree");
  CHECK_FALSE(split_composed_name("ring"));
  CHECK_FALSE(split_composed_name("hierarchical<ring>"));
}

TEST_CASE("predict: ring pays its messages once per chunk round") {
  // 4 ranks, 1 MiB: segments of 256 KiB fit one 512 KiB chunk -> the textbook 2(p-1) messages
  check_terms(schedule_of("ring", collective::allreduce, one_node4, MiB), 6, 1.5 * MiB, 0, 0, 0.75 * MiB);
  // 64 MiB: 16 MiB segments = 32 rounds of 6 messages
  check_terms(schedule_of("ring", collective::allreduce, one_node4, 64 * MiB), 6 * 32, 1.5 * 64 * MiB, 0, 0, 0.75 * 64 * MiB);
  // on 4 nodes every step crosses the network (one rank per node at a time: no crowd)
  check_terms(schedule_of("ring", collective::allreduce, four_by_one, MiB), 0, 0, 6, 1.5 * MiB, 0.75 * MiB);
  // allgather and reduce_scatter count one rank's block: 4 x 256 KiB in all
  check_terms(schedule_of("ring", collective::allgather, one_node4, 256 * KiB), 3, 0.75 * MiB, 0, 0, 0);
  check_terms(schedule_of("ring", collective::reduce_scatter, one_node4, 256 * KiB), 3, 0.75 * MiB, 0, 0, 0.75 * MiB);
  check_terms(schedule_of("ring", collective::barrier, one_node4, 0), 3, 0, 0, 0, 0);
}

TEST_CASE("predict: direct is one-shot up to its knob, two-shot stage by stage above, one node only") {
  // a copy counts half a message byte (beta_intra prices a message: a copy in and a copy out);
  // its synchronisations are one-sided epochs (alpha_sync), no messages
  check_terms(schedule_of("direct", collective::allreduce, {3, 1, 3}, KiB), 0, 3 * KiB / 2, 0, 0, 2 * KiB, 0, 1);
  // 4 MiB = 4 stages of 1 MiB: 2 synchronisations each and the last "done"; copy in, 2(p-1)/p read
  check_terms(schedule_of("direct", collective::allreduce, one_node4, 4 * MiB), 0, 4 * MiB * 2.5 / 2, 0, 0, 0.75 * 4 * MiB, 0, 9);
  // 48 KiB: two-shot by default (32 KiB), one-shot with direct.one_shot_bytes = 64 KiB
  const std::vector<tuning_value> wider{{"direct.one_shot_bytes", 64 * 1024}};
  CHECK(schedule_of("direct", collective::allreduce, one_node4, 48 * KiB)->e == 3);
  CHECK(schedule_of("direct", collective::allreduce, one_node4, 48 * KiB, 0, wider)->e == 1);
  // every collective is one call (base_latency), whatever it moves
  CHECK(schedule_of("direct", collective::allreduce, one_node4, 8)->c == 1);
  CHECK(schedule_of("ring", collective::allreduce, four_by_one, MiB)->c == 1);
  CHECK_FALSE(schedule_of("direct", collective::allreduce, two_by_two, KiB));  // reads peers' memory: one node
  machine_shape nvlink;
  nvlink.message_copies = 1;  // a one-sided read costs what a message does
  CHECK(schedule_of("direct", collective::allreduce, {3, 1, 3}, KiB, 0, {}, nvlink)->b_intra == 3 * KiB);
  CHECK_THROWS_AS((void)schedule_of("direct", collective::allreduce, one_node4, KiB, 0,
                                 std::vector<tuning_value>{{"direct.no_such", 1}}),
                  tutti::invalid_argument);
}

TEST_CASE("predict: tree is pipelined, halving_doubling charges each step on its partner's level") {
  // 4 ranks, 8 B: depth 2; up to 64 B the cut between the trees (on a 64-byte line) leaves
  // everything to tree 0: 4 steps of one chunk of 8 B, the interior rank reducing two children's
  check_terms(schedule_of("tree", collective::allreduce, one_node4, 8), 4, 16, 0, 0, 32);
  // 128 B: both trees, 64 B each: twice the messages (a rank handles each tree's in turn)
  check_terms(schedule_of("tree", collective::allreduce, one_node4, 128), 8, 2 * 2 * 64, 0, 0, 2 * 64 * 2);
  // 64 MiB: 32 MiB per tree in 64 chunks of 512 KiB: 2D + k - 1 = 67 steps per tree, 4 chunks a
  // step once both run
  check_terms(schedule_of("tree", collective::allreduce, one_node4, 64 * MiB), 2 * 67, 4 * 512 * KiB * 63 + 4 * 512 * KiB, 0, 0,
              2 * 512 * KiB * 65);
  // 2 ranks: each is one tree's root and the other's leaf: 2 chunks sent and 1 reduced a step
  check_terms(schedule_of("tree", collective::allreduce, {2, 1, 2}, 64 * MiB), 2 * 65, 2 * 512 * KiB * 63 + 2 * 512 * KiB, 0, 0,
              512 * KiB * 64);
  // across nodes the network's latency is paid once per step: both trees' messages fly at once
  check_terms(schedule_of("tree", collective::allreduce, four_by_one, 128), 0, 0, 4, 2 * 2 * 64, 2 * 64 * 2);
  CHECK_FALSE(schedule_of("tree", collective::reduce_scatter, one_node4, 8));
  // 2 x 2: the first halving step (distance 2) crosses nodes with both ranks of a node at once
  check_terms(schedule_of("halving_doubling", collective::allreduce, two_by_two, KiB), 2, 512, 2, 2 * 1024, 768);
  // 6 ranks on one node: 4 in the power-of-two phase, 2 folded in with the whole vector
  check_terms(schedule_of("halving_doubling", collective::allreduce, {6, 1, 6}, MiB), 4 + 2, 1.5 * MiB + 2 * MiB, 0, 0,
              0.75 * MiB + MiB);
}

TEST_CASE("predict: hierarchical = intra reduce-scatter + ppn inter allreduces of 1/ppn + intra allgather") {
  // 2 x 2, 1 MiB: direct reduce-scatter (2 epochs), ring over 2 nodes on 512 KiB by both ranks of
  // a node at once through one link (bytes x 2), direct allgather (2 epochs)
  check_terms(schedule_of("hierarchical<direct, ring>", collective::allreduce, two_by_two, MiB), 0, MiB, 2, MiB, 0.75 * MiB, 0, 4);
  // tree cannot reduce-scatter: reduce to local 0, allreduce the whole vector, broadcast
  const auto t = schedule_of("hierarchical<tree, ring>", collective::allreduce, two_by_two, MiB);
  REQUIRE(t);
  CHECK(t->b_inter == doctest::Approx(MiB));  // ring over 2 on the whole vector, one flow per node
  // one node: still Intra's reduce-scatter and allgather (2 + 2 epochs), not Intra's allreduce
  CHECK(schedule_of("hierarchical<direct, ring>", collective::allreduce, one_node4, MiB)->e == 4);
  // the count's remainder mod q goes whole through Intra's allreduce (float: 4 B an element):
  // 3 ranks, 8 floats = blocks of 2 and a tail of 2: 2 + 2 epochs and 1; 2 floats: the tail only
  CHECK(schedule_of("hierarchical<direct, ring>", collective::allreduce, {3, 1, 3}, 32)->e == 5);
  CHECK(schedule_of("hierarchical<direct, ring>", collective::allreduce, {3, 1, 3}, 8)->e == 1);
  // one rank per node: Inter

  CHECK(schedule_of("hierarchical<direct, ring>", collective::allreduce, four_by_one, MiB)->b_inter ==
        doctest::Approx(schedule_of("ring", collective::allreduce, four_by_one, MiB)->b_inter));
  CHECK(schedule_of("hierarchical<hierarchical<direct, ring>, ring>", collective::allreduce, two_by_two, MiB));
  CHECK_FALSE(schedule_of("hierarchical<direct, ring>", collective::allreduce, {5, 2, 0}, MiB));  // uneven nodes
  CHECK_FALSE(schedule_of("hierarchical<direct, ring>", collective::allgather, two_by_two, MiB));
}

TEST_CASE("predict: every candidate tutti-tune measures has a prediction; unknown names have none") {
  const cost_parameters p{{1e-6, 1e-10}, {2e-5, 1e-9}, 5e-11};
  for (const char* name : {"ring", "direct", "tree", "halving_doubling", "hierarchical<direct, ring>",
                           "hierarchical<ring, ring>", "hierarchical<direct, tree>", "hierarchical<direct, halving_doubling>"}) {
    CAPTURE(name);
    for (double bytes : {8.0, 64 * KiB, 256 * MiB}) {
      const auto t = predicted_seconds(p, name, collective::allreduce, {3, 1, 3}, bytes);
      REQUIRE(t);
      CHECK(*t > 0);
    }
  }
  CHECK_FALSE(predicted_seconds(p, "bruck", collective::allreduce, one_node4, 8));
  CHECK_FALSE(predicted_seconds(p, "tuned<ring, direct>", collective::allreduce, one_node4, 8));
  // priced as seconds(): ring over 4 nodes, 1 MiB, after the communicator's argument check
  // (3 descriptors of 32 B)
  CHECK(*predicted_seconds(p, "ring", collective::allreduce, four_by_one, MiB) ==
        doctest::Approx((6 + 3) * 2e-5 + (1.5 * MiB + 3 * 32) * 1e-9 + 0.75 * MiB * 5e-11));
}

TEST_CASE("predict: oversubscription stretches CPU work by ranks/cores and charges waits on descheduled peers") {
  // 4 ranks on 2 cores: o = 2; ring 8 B has 6 messages: 12 intra alphas, 6 x (1 - 1/2) switches
  check_terms(schedule_of("ring", collective::allreduce, one_node4, 8, 2), 2 * 6, 2 * 12, 0, 0, 2 * 6, 3);
  check_terms(schedule_of("ring", collective::allreduce, one_node4, 8, 4), 6, 12, 0, 0, 6, 0);  // enough cores
  check_terms(schedule_of("ring", collective::allreduce, one_node4, 8, 0), 6, 12, 0, 0, 6, 0);  // unknown: none
  // network terms are not stretched; their waits count (4 hosts sharing 2 cores: 0.5 each)
  check_terms(schedule_of("ring", collective::allreduce, four_by_one, 8, 0.5), 0, 0, 6, 12, 2 * 6, 3);
  cost_parameters p{{1e-6, 0}, {}, 0};
  p.switch_cost = 5e-6;
  p.alpha_sync = 1e-6;  // direct's one epoch, stretched by 1.5 like a message
  CHECK(*predicted_seconds(p, "direct", collective::allreduce, {3, 1, 3}, 8, 2) == doctest::Approx(1.5e-6 + 5e-6 / 3));
}

TEST_CASE("predict: the cache term charges the share of bytes a rank's 3 S no longer fits in its cache") {
  machine_shape m;
  m.cache_bytes = 3 * MiB;
  // 2 ranks, 2 MiB: 3 S = 6 MiB, half of it out of a 3 MiB cache; ring moves 2 MiB and reduces 1 MiB
  // (in 2 rounds of 512 KiB per segment)
  check_terms(schedule_of("ring", collective::allreduce, {2, 1, 2}, 2 * MiB, 0, {}, m), 4, 2 * MiB, 0, 0, MiB);
  CHECK(schedule_of("ring", collective::allreduce, {2, 1, 2}, 2 * MiB, 0, {}, m)->m == doctest::Approx(1.5 * MiB));
  CHECK(schedule_of("ring", collective::allreduce, {2, 1, 2}, 512 * KiB, 0, {}, m)->m == 0);  // fits
  // 4 ranks on 2 cores share a core's cache: 1.5 MiB each; 1 MiB -> 3 MiB touched, half out
  CHECK(schedule_of("ring", collective::allreduce, one_node4, MiB, 2, {}, m)->m == doctest::Approx(2 * 0.5 * (1.5 + 0.75) * MiB));
  // the network's bytes spill too, and are stretched, when it runs on the CPUs
  m.network_on_cpus = true;
  const auto t = schedule_of("ring", collective::allreduce, four_by_one, MiB, 0.5, {}, m);
  REQUIRE(t);
  CHECK(t->b_inter == doctest::Approx(2 * 1.5 * MiB));
  CHECK(t->a_inter == 2 * 6);
}

TEST_CASE("predict: when the network is the CPUs, each end of a message pays on its own level") {
  machine_shape m;
  m.network_on_cpus = true;
  // 2 x 2 ring: every rank sends on one level and receives on the other: half of each, no crowd
  check_terms(schedule_of("ring", collective::allreduce, two_by_two, MiB, 0, {}, m), 3, 0.75 * MiB, 3, 0.75 * MiB, 0.75 * MiB);
  // one rank per node: all across
  check_terms(schedule_of("ring", collective::allreduce, four_by_one, MiB, 0, {}, m), 0, 0, 6, 1.5 * MiB, 0.75 * MiB);
  // tree on 2 x 2: the level-1 edges (2 labels apart) all cross, the level-2 ones half: 3/4;
  // the network's latency once per step, shared memory's per tree
  check_terms(schedule_of("tree", collective::allreduce, two_by_two, 128, 0, {}, m), 2, 0.25 * 256, 3, 0.75 * 256, 256);
  // a shaped link paces the bytes: all of a ring step's on the link, and halving_doubling's
  // crossing steps crowd the node's one link with both its ranks
  m.links_shaped = true;
  check_terms(schedule_of("ring", collective::allreduce, two_by_two, MiB, 0, {}, m), 3, 0, 3, 1.5 * MiB, 0.75 * MiB);
  CHECK(schedule_of("halving_doubling", collective::allreduce, two_by_two, KiB, 0, {}, m)->b_inter == 2 * KiB);
  m.links_shaped = false;
  CHECK(schedule_of("halving_doubling", collective::allreduce, two_by_two, KiB, 0, {}, m)->b_inter == KiB);
  // oversubscribed (2 x 2 on 2 cores: o = 2): the CPUs' bytes stretch, a shaped link's do not
  CHECK(schedule_of("ring", collective::allreduce, two_by_two, MiB, 1, {}, m)->b_inter == doctest::Approx(1.5 * MiB));
  m.links_shaped = true;
  CHECK(schedule_of("ring", collective::allreduce, two_by_two, MiB, 1, {}, m)->b_inter == doctest::Approx(1.5 * MiB));
  CHECK(schedule_of("ring", collective::allreduce, two_by_two, MiB, 1, {}, m)->a_inter == doctest::Approx(6));
}

TEST_CASE("predict: halving_doubling's folded-out ranks do not compete for cores in long phases") {
  CHECK(competing_ranks("halving_doubling", {3, 1, 3}) == 2);
  CHECK(competing_ranks("hierarchical<halving_doubling, ring>", {3, 1, 3}) == 2);  // one node: Intra runs
  CHECK(competing_ranks("ring", {3, 1, 3}) == 3);
  // 3 ranks on 2 cores: messages stretched by 1.5 and waits charged; bytes not (2 busy ranks)
  const auto t = schedule_of("halving_doubling", collective::allreduce, {3, 1, 3}, 8, 2);
  const auto plain = schedule_of("halving_doubling", collective::allreduce, {3, 1, 3}, 8);
  REQUIRE(t);
  CHECK(t->a_intra == doctest::Approx(1.5 * plain->a_intra));
  CHECK(t->b_intra == doctest::Approx(plain->b_intra));
  CHECK(t->s == doctest::Approx(plain->a_intra / 3));
}

TEST_CASE("predict: the argument check is part of every measured time") {
  // the communicator's exchange: a descriptor to each of the 3 peers before ring's 6 messages
  CHECK(terms_of("ring", collective::allreduce, one_node4, 8)->a_intra == 6 + 3);
  CHECK(terms_of("ring", collective::allreduce, four_by_one, 8)->a_inter == 6 + 3);
  CHECK(terms_of("direct", collective::allreduce, one_node4, 8)->e == 1);  // carried in its first epoch
  CHECK(terms_of("direct", collective::allreduce, one_node4, 8)->a_intra == 0);
  // across 2 x 2: one descriptor to the rank's own node, two across
  CHECK(terms_of("ring", collective::allreduce, two_by_two, 8)->a_intra == 1);
  CHECK(terms_of("ring", collective::allreduce, two_by_two, 8)->a_inter == 6 + 2);
  machine_shape m;
  m.check = argument_check::epoch;  // tuned<...> with direct over shm: direct's agree() first
  CHECK(terms_of("ring", collective::allreduce, one_node4, 8, 0, {}, m)->a_intra == 6);
  CHECK(terms_of("ring", collective::allreduce, one_node4, 8, 0, {}, m)->e == 1);
  CHECK(terms_of("ring", collective::allreduce, four_by_one, 8, 0, {}, m)->a_inter == 6 + 3);  // no direct across nodes
  m.check = argument_check::none;  // TUTTI_CHECK=0
  CHECK(terms_of("ring", collective::allreduce, one_node4, 8, 0, {}, m)->a_intra == 6);
}

TEST_CASE("predict: parameters_of takes a table's fitted model") {
  fitted_model m;
  m.alpha_intra = 1, m.beta_intra = 2, m.alpha_inter = 3, m.beta_inter = 4, m.gamma = 5, m.switch_cost = 6;
  m.memory_beta = 7, m.cache_bytes = 8, m.network_on_cpus = true, m.alpha_sync = 9, m.base_latency = 10;
  const auto p = parameters_of(m);
  CHECK(p.intra.alpha == 1);
  CHECK(p.intra.beta == 2);
  CHECK(p.inter.alpha == 3);
  CHECK(p.inter.beta == 4);
  CHECK(p.gamma == 5);
  CHECK(p.switch_cost == 6);
  CHECK(p.memory_beta == 7);
  CHECK(p.alpha_sync == 9);
  CHECK(p.base_latency == 10);
  CHECK(p.machine.cache_bytes == 8);
  CHECK(p.machine.network_on_cpus);
  CHECK(p.machine.node_links == 1);
}

#if TUTTI_HAVE_EIGEN
#include <tutti/tuner/fit_table.hpp>

TEST_CASE("fit_samples: recovers alpha, beta, gamma, the sync, call, switch and cache costs from a synthetic tune run within 5 %") {
  cost_parameters truth{{0.9e-6, 1.0 / 5e9}, {30e-6, 1.0 / 1.1e8}, 1.0 / 4e9};
  truth.switch_cost = 5e-6;
  truth.memory_beta = 1.2e-10;
  truth.alpha_sync = 0.3e-6;
  truth.base_latency = 0.6e-6;
  truth.machine.cache_bytes = 2 * MiB;
  const double cores = 2;
  fit_options options;
  options.cores_per_node = cores;
  options.machine.cache_bytes = 2 * MiB;
  options.of_class = dtype_class::floating;
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  std::vector<sample> samples;
  const auto add = [&](const layout& where, const std::string& name, double bytes, std::vector<tuning_value> tuning = {}) {
    sample s;
    s.where = where;
    s.bytes = static_cast<std::uint64_t>(bytes);
    s.measured.algorithm = name;
    s.measured.tuning = std::move(tuning);
    const auto t = predicted_seconds(truth, name, collective::allreduce, where, bytes, cores, s.measured.tuning);
    REQUIRE(t);
    s.measured.median_us = *t * 1e6 * (1 + noise(rng));
    samples.push_back(s);
  };
  for (double bytes = 8; bytes <= 256 * MiB; bytes *= 4) {
    for (const layout& w : {layout{2, 1, 2}, layout{3, 1, 3}, one_node4})
      for (const char* name : {"ring", "direct", "tree", "halving_doubling", "hierarchical<direct, ring>"}) add(w, name, bytes);
    add(one_node4, "direct", bytes, {{"direct.one_shot_bytes", 128 * 1024}});
    for (const layout& w : {two_by_two, four_by_one})
      for (const char* name : {"ring", "tree", "halving_doubling", "hierarchical<direct, ring>", "hierarchical<ring, ring>"})
        add(w, name, bytes);
  }
  // left out: no formula, no time, another dtype class
  sample unknown = samples.front();
  unknown.measured.algorithm = "bruck";
  sample untimed = samples.front();
  untimed.measured.median_us = 0;
  sample integer = samples.front();
  integer.dtypes = dtype_class::integer;
  samples.insert(samples.begin(), {unknown, untimed, integer});

  const auto r = fit_samples_with_residuals(samples, options);
  CHECK(r.left_out == 3);
  CHECK(r.residuals.size() == samples.size() - 3);
  CHECK(r.residuals.front().sample == 3);
  for (bool f : r.fit.fitted) CHECK(f);
  CHECK(r.fit.switch_cost_fitted);
  CHECK(r.fit.memory_beta_fitted);
  CHECK(r.fit.alpha_sync_fitted);
  CHECK(r.fit.base_latency_fitted);
  CHECK(r.model.alpha_sync == doctest::Approx(truth.alpha_sync).epsilon(0.05));
  CHECK(r.model.base_latency == doctest::Approx(truth.base_latency).epsilon(0.05));
  CHECK(r.model.memory_beta == doctest::Approx(truth.memory_beta).epsilon(0.05));
  CHECK(r.model.cache_bytes == 2 * MiB);
  CHECK(r.model.alpha_intra == doctest::Approx(truth.intra.alpha).epsilon(0.05));
  CHECK(r.model.beta_intra == doctest::Approx(truth.intra.beta).epsilon(0.05));
  CHECK(r.model.alpha_inter == doctest::Approx(truth.inter.alpha).epsilon(0.05));
  CHECK(r.model.beta_inter == doctest::Approx(truth.inter.beta).epsilon(0.05));
  CHECK(r.model.gamma == doctest::Approx(truth.gamma).epsilon(0.05));
  CHECK(r.model.switch_cost == doctest::Approx(truth.switch_cost).epsilon(0.05));
  CHECK(r.model.samples == r.residuals.size());
  CHECK(r.model.max_relative_error < 0.05);
  for (const auto& e : r.residuals) CHECK(std::abs(e.relative_error()) < 0.05);
  CHECK(fit_samples(samples, options).gamma == doctest::Approx(r.model.gamma));

  // the node's parameters held (from the machine's shm table): only the network's are fitted,
  // to the samples of several nodes alone, and they come out as well
  std::vector<sample> across;
  for (const auto& s : samples)
    if (s.where.nodes > 1) across.push_back(s);
  fit_options held = options;
  held.held = node_parameters_of(truth);
  const auto h = fit_samples_with_residuals(across, held);
  CHECK_FALSE(h.fit.fitted[0]);
  CHECK(h.fit.fitted[2]);
  CHECK_FALSE(h.fit.alpha_sync_fitted);
  CHECK(h.model.alpha_intra == truth.intra.alpha);
  CHECK(h.model.base_latency == truth.base_latency);
  CHECK(h.model.alpha_inter == doctest::Approx(truth.inter.alpha).epsilon(0.05));
  CHECK(h.model.beta_inter == doctest::Approx(truth.inter.beta).epsilon(0.05));
  CHECK(h.model.max_relative_error < 0.05);

  // a table whose samples the model cannot use is refused, naming the count
  CHECK_THROWS_WITH_AS((void)fit_samples(std::span(samples).first(3), options), doctest::Contains("0 sample(s)"), tutti::invalid_argument);
}
#else
TEST_CASE("fit_samples: not built (Eigen 3 not found: tutti::eigen missing)") {}
#endif
