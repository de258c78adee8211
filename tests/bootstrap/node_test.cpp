//! Node identity and the node grid hierarchical algorithms are built on.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <tutti/bootstrap/node.hpp>

using tutti::node_grid;
using tutti::node_hash;

namespace {
std::vector<std::uint64_t> hashes_of(const std::vector<std::string>& ids) {
  std::vector<std::uint64_t> h;
  for (const auto& id : ids) h.push_back(node_hash(id));
  return h;
}
}  // namespace

TEST_CASE("node_id_from_env: TUTTI_NODE_ID overrides hostname and boot id") {
  ::unsetenv("TUTTI_NODE_ID");
  const std::string real = tutti::node_id_from_env();
  CHECK(real.find('/') != std::string::npos);  // "<host>/<boot id>"
  CHECK(real.size() > 30);                     // a boot id is a 36-character uuid
  ::setenv("TUTTI_NODE_ID", "rack3-node7", 1);
  CHECK(tutti::node_id_from_env() == "rack3-node7");
  ::setenv("TUTTI_NODE_ID", "", 1);
  CHECK(tutti::node_id_from_env() == real);  // empty means unset
  ::unsetenv("TUTTI_NODE_ID");
}

TEST_CASE("node_grid: consecutive ranks per node") {
  const auto h = hashes_of({"a", "a", "b", "b", "c", "c"});
  const auto g = node_grid::from_hashes(h, 3);
  CHECK(g.nodes == 3);
  CHECK(g.local_size == 2);
  CHECK(g.node == 1);
  CHECK(g.local_rank == 1);
  CHECK(g.intra == std::vector<int>{2, 3});
  CHECK(g.inter == std::vector<int>{1, 3, 5});
  CHECK(g.at(2, 0) == 4);
}

TEST_CASE("node_grid: interleaved ranks; nodes numbered by their lowest rank") {
  const auto h = hashes_of({"y", "x", "y", "x", "y", "x"});  // node 0 is "y" (rank 0's)
  for (int me = 0; me < 6; ++me) {
    const auto g = node_grid::from_hashes(h, me);
    CHECK(g.nodes == 2);
    CHECK(g.local_size == 3);
    CHECK(g.node == me % 2);
    CHECK(g.local_rank == me / 2);
    CHECK(g.intra == (me % 2 == 0 ? std::vector<int>{0, 2, 4} : std::vector<int>{1, 3, 5}));
    CHECK(g.inter == std::vector<int>{2 * (me / 2), 2 * (me / 2) + 1});
  }
}

TEST_CASE("node_grid: one node, and one rank per node") {
  auto g = node_grid::from_hashes(hashes_of({"a", "a", "a"}), 2);
  CHECK(g.nodes == 1);
  CHECK(g.inter == std::vector<int>{2});
  g = node_grid::from_hashes(hashes_of({"a", "b", "c"}), 2);
  CHECK(g.local_size == 1);
  CHECK(g.intra == std::vector<int>{2});
  CHECK(g.inter == std::vector<int>{0, 1, 2});
}

TEST_CASE("node_grid: uneven nodes are refused, naming every node's ranks") {
  const auto h = hashes_of({"a", "a", "a", "b", "b"});
  CHECK_THROWS_WITH_AS(node_grid::from_hashes(h, 4),
                       doctest::Contains("same number of ranks on every node; node 0 has 3 (ranks 0 1 2); node 1 has 2 "
                                         "(ranks 3 4)"),
                       tutti::invalid_argument);
}

TEST_CASE("node_map::from_ids: nodes named by the id's host part, described rank by rank") {
  const std::vector<std::string> ids = {"h0/boot-a", "h0/boot-a", "h1/boot-b", "rack2"};
  const auto m = tutti::node_map::from_ids(ids);
  CHECK(m.nodes() == 3);
  CHECK(m.names == std::vector<std::string>{"h0", "h1", "rack2"});
  CHECK(!m.even());
  CHECK(m.describe() == "h0: ranks 0 1; h1: rank 2; rack2: rank 3");
  // From hashes alone the nodes have no names: they are numbered.
  CHECK(tutti::node_map::from_hashes(hashes_of({"a", "b", "a"})).describe() == "node 0: ranks 0 2; node 1: rank 1");
}
