//! Compositions inside compositions: a hierarchical inside hierarchical (context::sub hands each
//! level the call, tag, deadline, its own state slot and the part of the node map it spans), two
//! stateful algorithms in one communicator, and the node map learnt when the communicator is made.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/node_map.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>

namespace {
using namespace tutti::testing;
using tutti::algorithm::hierarchical;
namespace alg = tutti::algorithm;

// A hierarchical as Intra: it sees one node (the part of the node map its group spans), so its
// own Intra does the work and its Inter groups are single ranks. Before context::sub it threw
// "this context has no node map" on its first collective.
using nested_intra_shm = fork_world<hierarchical<hierarchical<alg::direct, alg::ring>, alg::ring>, blocked_nodes<2>>;
using nested_intra_threads = inproc_world<hierarchical<hierarchical<alg::ring, alg::tree>, alg::ring>, blocked_nodes<3>>;
// A hierarchical as Inter: every rank of its group is on another node, so its Inter does the work.
using nested_inter_threads = inproc_world<hierarchical<alg::ring, hierarchical<alg::ring, alg::ring>>, interleaved_nodes<3>>;

//! Two stateful algorithms in one communicator, taking turns by collective: each keeps its own
//! node grid and groups (algorithm_state has a slot per state type), as tuned<A...> will need.
struct alternating {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "alternating";
  using first = hierarchical<alg::ring, alg::ring>;
  using second = hierarchical<alg::tree, alg::ring>;
  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, tutti::op o) {
    if (c.tag() % 2) first::allreduce(c, in, out, count, t, o);
    else second::allreduce(c, in, out, count, t, o);
  }
};
using alternating_threads = inproc_world<alternating, blocked_nodes<3>>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, nested_intra_shm, nested_intra_threads, nested_inter_threads,
                          alternating_threads);
TEST_CASE_TEMPLATE_INVOKE(reduce_scatter_conformance, nested_inter_threads);
TEST_CASE_TEMPLATE_INVOKE(allgather_conformance, nested_intra_shm, nested_inter_threads);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, nested_intra_shm, nested_intra_threads, nested_inter_threads);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, nested_intra_threads, nested_inter_threads);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, nested_intra_shm, nested_inter_threads);

TEST_CASE("hierarchical's name says its parts") {
  CHECK(hierarchical<alg::direct, alg::ring>::name == "hierarchical<direct, ring>");
  CHECK(hierarchical<hierarchical<alg::direct, alg::ring>, alg::tree>::name == "hierarchical<hierarchical<direct, ring>, tree>");
}

TEST_CASE("the node map is learnt when the communicator is made, and a group's part renumbers its nodes") {
  // Ranks 0..5 on nodes a b a c b a: learn_nodes exchanges every rank's node id once.
  const std::vector<std::string> ids{"a", "b", "a", "c", "b", "a"};
  std::vector<tutti::node_map> maps(ids.size());
  auto errors = tutti::transport::inproc::run(
      static_cast<int>(ids.size()),
      [&](tutti::transport::inproc& t) {
        auto learnt = alg::learn_nodes(t, tutti::deadline::after(std::chrono::seconds(20)));
        REQUIRE(learnt.map.has_value());
        maps[static_cast<std::size_t>(t.rank())] = *learnt.map;
      },
      ids);
  for (auto& e : errors) CHECK_FALSE(e);
  for (const auto& m : maps) {
    CHECK(m.node_of == std::vector<int>{0, 1, 0, 2, 1, 0});
    CHECK(m.local_of == std::vector<int>{0, 0, 1, 0, 1, 2});
  }
  // The group of ranks 3, 1, 0: nodes c, b, a, numbered again by first appearance in the group.
  const std::vector<int> members{3, 1, 0};
  const auto part = alg::part_of(maps[0], members);
  REQUIRE(part.map.has_value());
  CHECK(part.map->node_of == std::vector<int>{0, 1, 2});
  CHECK(part.map->nodes() == 3);
  // The group of ranks 0, 2, 5: all on node a.
  const std::vector<int> same{0, 2, 5};
  CHECK(alg::part_of(maps[0], same).map->nodes() == 1);
}

TEST_CASE("making a communicator is collective: a rank that never makes one is named by the others' constructors") {
  auto options = tutti::communicator_options::from_env();
  options.timeout = std::chrono::milliseconds(300);
  std::atomic<bool> release{false};
  std::vector<std::string> what(3);
  auto errors = tutti::transport::inproc::run(3, [&](tutti::transport::inproc& t) {
    if (t.rank() == 2) {  // alive, but busy elsewhere until the others gave up
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    try {
      tutti::communicator<tutti::transport::inproc, alg::ring> comm(t, options);
    } catch (const tutti::timeout& e) {
      what[static_cast<std::size_t>(t.rank())] = e.what();
    } catch (const tutti::peer_lost& e) {  // the other waiting rank timed out first and left
      what[static_cast<std::size_t>(t.rank())] = e.what();
    }
    if (t.rank() == 0) release.store(true);
  });
  for (auto& e : errors) CHECK_FALSE(e);
  for (int r : {0, 1}) {
    const std::string& w = what[static_cast<std::size_t>(r)];
    INFO(w);
    CHECK(w.rfind("rank " + std::to_string(r) + ": tutti::communicator: while learning which node each rank is on: ", 0) == 0);
  }
  CHECK((what[0].find("rank 2") != std::string::npos || what[1].find("rank 2") != std::string::npos));
}
