//! Tuning values as data (tuner/): the defaults are read through the context, and an override set
//! for a call steers the schedule — each algorithm still matches the reference on the other side
//! of every crossover.
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <string_view>

#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/tuner/overrides.hpp>

namespace {
using namespace tutti::testing;
namespace alg = tutti::algorithm;

//! Runs Algorithm with `Tuned::overrides()` set on the context: what algorithm::tuned<...> will do.
template <class Algorithm, class Tuned>
struct with_tuning {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = Tuned::name;
  template <class Transport>
  static constexpr bool checks_arguments = tutti::checks_arguments<Algorithm, alg::context<Transport>>;
  template <class Ctx>
  static void agree(Ctx& c) {
    tuned(c);
    Algorithm::agree(c);
  }
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, tutti::op o) {
    Algorithm::allreduce(tuned(c), in, out, count, t, o);
  }
  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, int root) {
    Algorithm::broadcast(tuned(c), in, out, count, t, root);
  }
  template <class Ctx>
  static void reduce(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, tutti::op o, int root) {
    Algorithm::reduce(tuned(c), in, out, count, t, o, root);
  }
  template <class Ctx>
  static void alltoall(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t) {
    Algorithm::alltoall(tuned(c), in, out, count, t);
  }

 private:
  template <class Ctx>
  static Ctx& tuned(Ctx& c) {
    static const tutti::tuner::overrides chosen = Tuned::overrides();
    c.set_tuning(&chosen);
    return c;
  }
};

//! direct never one-shot: every allreduce takes the two-shot schedule.
struct always_two_shot {
  static constexpr std::string_view name = "direct (always two-shot)";
  static tutti::tuner::overrides overrides() {
    tutti::tuner::overrides o;
    o.set(tutti::tuner::direct_tuning{.one_shot_bytes = 0});
    return o;
  }
};
//! halving_doubling with every crossover on the other side: broadcast always scatter + allgather
//! (from 3 ranks), reduce always a binomial tree, alltoall always Bruck (from 3 ranks).
struct crossovers_reversed {
  static constexpr std::string_view name = "halving_doubling (crossovers reversed)";
  static tutti::tuner::overrides overrides() {
    tutti::tuner::overrides o;
    constexpr auto all = std::numeric_limits<std::size_t>::max();
    o.set(tutti::tuner::halving_doubling_tuning{.scatter_broadcast_bytes = 0, .tree_reduce_bytes = all,
                                                .bruck_block_bytes = all});
    return o;
  }
};
using two_shot = fork_world<with_tuning<alg::direct, always_two_shot>>;
using reversed = inproc_world<with_tuning<alg::halving_doubling, crossovers_reversed>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, two_shot);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, reversed);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, reversed);
TEST_CASE_TEMPLATE_INVOKE(alltoall_conformance, reversed);

TEST_CASE("a context reads a tuning struct's defaults unless the call overrides them") {
  tutti::tuner::overrides none;
  CHECK(none.find<tutti::tuner::direct_tuning>() == nullptr);
  CHECK(tutti::tuner::defaults<tutti::tuner::direct_tuning>.one_shot_bytes == std::size_t{32} << 10);
  tutti::tuner::overrides chosen;
  chosen.set(tutti::tuner::direct_tuning{.one_shot_bytes = 5});
  chosen.set(tutti::tuner::direct_tuning{.one_shot_bytes = 7});  // replaces
  REQUIRE(chosen.find<tutti::tuner::direct_tuning>() != nullptr);
  CHECK(chosen.find<tutti::tuner::direct_tuning>()->one_shot_bytes == 7);
  CHECK(chosen.find<tutti::tuner::halving_doubling_tuning>() == nullptr);
}
