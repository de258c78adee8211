//! tree: its double binary tree's shape, its conformance suites over inproc and shm, and 64-byte-chunk pipelining.
#include <doctest/doctest.h>

#include <bit>
#include <string>
#include <vector>

#include <tutti/testing/conformance.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/inproc_world.hpp>
#include <tutti/algorithm/tree.hpp>

// ---- The conformance suites of the collectives tree has (allreduce, reduce, broadcast, barrier),
// over inproc (threads) and over shm (forked processes, world sizes 1-9). ----

namespace {
using threads = tutti::testing::inproc_world<tutti::algorithm::tree>;
using processes = tutti::testing::fork_world<tutti::algorithm::tree>;
}  // namespace
TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(broadcast_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(reduce_conformance, threads, processes);
TEST_CASE_TEMPLATE_INVOKE(barrier_conformance, threads, processes);

// ---- tree::shape: two spanning binary trees of bounded depth, no rank interior in both, parents
// and children that agree, for every world size 1-64. ----

namespace {

using tutti::algorithm::tree;

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

// ---- Tiny chunks (64 bytes) over inproc: many pipeline steps per tree, more than the tree depth
// and the request windows, so chunks of both trees are in flight on every level at once. Every
// root, in and out of place, counts around chunk and half boundaries. ----

namespace {

using namespace tutti;
using namespace tutti::testing;

communicator_options tiny_chunks() {
  auto o = communicator_options::from_env();
  o.chunk_bytes = 64;
  return o;
}

const std::vector<std::size_t> counts = {1, 2, 3, 15, 16, 17, 33, 100, 1009};
const std::vector<dtype> types = {dtype::f32, dtype::f16, dtype::i64, dtype::u8};

template <class PerRank>
void each_world(PerRank&& per_rank) {
  for (int world = 1; world <= 9; ++world) {
    failure_log log;
    threads::run(world, [&](auto& comm) { per_rank(comm, world, log); }, tiny_chunks());
    INFO("world=", world, "\n", log.text());
    CHECK(log.count() == 0);
  }
}

}  // namespace

TEST_CASE("tree allreduce with 64-byte chunks") {
  each_world([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    for (dtype t : types) {
      for (op o : {op::sum, op::avg}) {
        const auto expected = expected_period(t, world, o);
        for (std::size_t count : counts) {
          for (bool in_place : {false, true}) {
            const auto name = case_name("allreduce", world, count, t, o, in_place);
            out.reset(count * size_of(t), output_fill);
            if (in_place) {
              fill_pattern(out.data(), t, comm.rank(), count, o);
              comm.allreduce(tensor_view(out.data(), count, t), o);
            } else {
              in.reset(count * size_of(t), 0);
              fill_pattern(in.data(), t, comm.rank(), count, o);
              comm.allreduce(const_tensor_view(in.data(), count, t), tensor_view(out.data(), count, t), o);
            }
            std::size_t first_bad = 0;
            const auto wrong = count_wrong(out.data(), t, count, 0, expected, &first_bad);
            verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), true);
          }
        }
      }
    }
  });
}

TEST_CASE("tree reduce and broadcast with 64-byte chunks, every root") {
  each_world([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    for (dtype t : types) {
      const auto expected = expected_period(t, world, op::sum);
      for (std::size_t count : counts) {
        const std::size_t bytes = count * size_of(t);
        for (int root = 0; root < world; ++root) {
          const bool is_root = comm.rank() == root;
          for (bool in_place : {false, true}) {
            std::size_t first_bad = 0, wrong = 0;
            auto name = case_name("reduce", world, count, t, op::sum, in_place) + " root=" + std::to_string(root);
            in.reset(bytes, 0);
            fill_pattern(in.data(), t, comm.rank(), count, op::sum);
            if (in_place) {
              comm.reduce(tensor_view(in.data(), count, t), op::sum, root);
              if (is_root) wrong = count_wrong(in.data(), t, count, 0, expected, &first_bad);
              verify(log, comm.rank(), name, wrong, first_bad, in.guards_intact(), true);
            } else {
              out.reset(bytes, output_fill);
              comm.reduce(const_tensor_view(in.data(), count, t),
                          is_root ? tensor_view(out.data(), count, t) : tensor_view(nullptr, 0, t), op::sum, root);
              if (is_root) wrong = count_wrong(out.data(), t, count, 0, expected, &first_bad);
              verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), in.guards_intact());
            }

            name = case_name("broadcast", world, count, t, op::sum, in_place) + " root=" + std::to_string(root);
            out.reset(bytes, output_fill);
            if (in_place) {
              if (is_root) fill_pattern(out.data(), t, root, count, op::sum);
              comm.broadcast(tensor_view(out.data(), count, t), root);
            } else {
              in.reset(bytes, 0);
              fill_pattern(in.data(), t, root, count, op::sum);
              comm.broadcast(const_tensor_view(is_root ? in.data() : nullptr, is_root ? count : 0, t),
                             tensor_view(out.data(), count, t), root);
            }
            wrong = count_wrong_pattern(out.data(), t, root, count, op::sum, &first_bad);
            verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), true);
          }
        }
      }
    }
  });
}
