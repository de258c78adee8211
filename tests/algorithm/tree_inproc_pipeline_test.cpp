//! tree with tiny chunks (64 bytes) over inproc: many pipeline steps per tree, more than the tree
//! depth and the request windows, so chunks of both trees are in flight on every level at once.
//! Every root, in and out of place, counts around chunk and half boundaries.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tutti/algorithm/tree.hpp>
#include <tutti/testing/conformance.hpp>
#include <tutti/testing/inproc_world.hpp>

namespace {

using namespace tutti;
using namespace tutti::testing;
using world_t = inproc_world<algorithm::tree>;

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
    world_t::run(world, [&](auto& comm) { per_rank(comm, world, log); }, tiny_chunks());
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
