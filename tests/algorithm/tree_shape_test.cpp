//! algorithm::tree's double binary tree: two spanning binary trees of bounded depth, no rank
//! interior in both, parents and children that agree, for every world size 1-64.
#include <doctest/doctest.h>

#include <bit>
#include <vector>

#include <tutti/algorithm/tree.hpp>

using tutti::algorithm::tree;

namespace {

int ceil_log2(int n) { return n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1)); }

}  // namespace

TEST_CASE("tree::shape builds two spanning binary trees for n = 1..64") {
  for (int n = 1; n <= 64; ++n) {
    std::vector<int> interior(static_cast<std::size_t>(n), 0);
    for (int which = 0; which < 2; ++which) {
      INFO("n=", n, " tree ", which);
      std::vector<tree::node> nodes;
      for (int v = 0; v < n; ++v) nodes.push_back(tree::shape(n, v, which));
      int roots = 0;
      for (int v = 0; v < n; ++v) {
        INFO("rank ", v);
        const auto& s = nodes[static_cast<std::size_t>(v)];
        CHECK(s.parent >= -1);
        CHECK(s.parent < n);
        CHECK(s.parent != v);
        if (s.parent < 0) {
          ++roots;
          CHECK(v == (n > 1 ? which : 0));  // tree 0 rooted at 0, tree 1 at 1
          CHECK(s.depth == 0);
        } else {
          // exactly one parent, which lists this rank among its children, one level up
          const auto& p = nodes[static_cast<std::size_t>(s.parent)];
          CHECK((p.children[0] == v) + (p.children[1] == v) == 1);
          CHECK(s.depth == p.depth + 1);
        }
        for (int ch : s.children) {
          if (ch < 0) continue;
          CHECK(ch < n);
          CHECK(nodes[static_cast<std::size_t>(ch)].parent == v);
        }
        CHECK((s.children[0] >= 0 || s.children[1] < 0));  // children[1] only with children[0]
        CHECK((s.children[1] < 0 || s.children[0] != s.children[1]));
        // depth bound: floor(log2 n) in fact, within the ceil(log2 n) + 1 asked for
        CHECK(s.depth <= ceil_log2(n) + 1);
        CHECK(s.depth <= std::bit_width(static_cast<unsigned>(n)) - 1);
        if (s.child_count() > 0) ++interior[static_cast<std::size_t>(v)];
      }
      CHECK(roots == 1);
      // spanning: every rank reaches the root through its parents (depth steps, no cycle)
      for (int v = 0; v < n; ++v) {
        int u = v, hops = 0;
        while (nodes[static_cast<std::size_t>(u)].parent >= 0 && hops <= n) {
          u = nodes[static_cast<std::size_t>(u)].parent;
          ++hops;
        }
        CHECK(nodes[static_cast<std::size_t>(u)].parent < 0);
        CHECK(hops == nodes[static_cast<std::size_t>(v)].depth);
      }
    }
    for (int v = 0; v < n; ++v) {
      INFO("n=", n, " rank ", v);
      CHECK(interior[static_cast<std::size_t>(v)] <= 1);  // no rank is interior in both trees
    }
    if (n > 1) CHECK(tree::shape(n, 0, 1).child_count() == 0);  // the first root is a leaf of tree 1
  }
}

TEST_CASE("tree::shape is usable at compile time") {
  constexpr auto s = tree::shape(8, 0, 0);
  static_assert(s.parent == -1 && s.depth == 0);
  CHECK(s.child_count() >= 1);
}
