//! @file conformance.hpp  The collective conformance suite, written once for every World setup.
//!
//! A World (see inproc_world.hpp) says how ranks are made; its communicator type fixes the
//! transport and algorithm. Each TEST_CASE_TEMPLATE_DEFINE below checks one collective against a
//! plain reference for world sizes 1-9, counts 0, 1, 2, 7, 1009 and 100,003 (suite_sizes.hpp, runs_at), every dtype and op,
//! in place and out of place, bit for bit, with guard bytes around every output to catch overruns.
//! Instantiate with TEST_CASE_TEMPLATE_INVOKE(allreduce_conformance, your_world<your_algorithm>).
//! Each test case's name begins with its suite's identifier and a colon ("allreduce_conformance:
//! allreduce matches the reference<World>"), so that --test-case=allreduce_conformance:* selects
//! that suite alone (tests/CMakeLists.txt registers one CTest per suite a source invokes that way).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <span>
#include <thread>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <sys/mman.h>
#include <string>
#include <vector>

#include <tutti/core/message.hpp>
#include <tutti/core/tensor_view.hpp>
#include <tutti/testing/pattern.hpp>
#include <tutti/testing/suite_sizes.hpp>

namespace tutti::testing {

inline const std::vector<int>& conformance_world_sizes() {
  static const std::vector<int> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  return sizes;
}
inline const std::vector<std::size_t>& conformance_counts() {
  static const std::vector<std::size_t> counts = {0, 1, 2, 7, 1009, large_count};
  return counts;
}

//! The large count runs on a representative subset, to keep the suite's time within
//! CI's budget: every dtype with sum and every op with f32 for reductions (the element loops are
//! type-erased per (dtype, op) and each pair is already checked at 1009 elements, across chunk and
//! segment boundaries); one dtype per element size (1, 2, 4, 8 bytes) for collectives that only move data.
inline bool runs_at(std::size_t count, dtype t, op o) {
  return count < large_count || o == op::sum || t == dtype::f32;
}
inline bool runs_at(std::size_t count, dtype t) {
  return count < large_count || t == dtype::u8 || t == dtype::f16 || t == dtype::f32 || t == dtype::f64;
}

inline constexpr std::size_t guard_bytes = 64;
inline constexpr unsigned char guard_fill = 0xA5;
inline constexpr unsigned char output_fill = 0xCD;

//! A byte buffer with guard zones on both sides; data() points past the front guard.
class guarded_buffer {
 public:
  void reset(std::size_t bytes, unsigned char fill) {
    storage_.assign(bytes + 2 * guard_bytes, guard_fill);
    std::memset(storage_.data() + guard_bytes, fill, bytes);
    bytes_ = bytes;
  }
  [[nodiscard]] unsigned char* data() noexcept { return storage_.data() + guard_bytes; }
  [[nodiscard]] bool guards_intact() const noexcept {
    for (std::size_t i = 0; i < guard_bytes; ++i)
      if (storage_[i] != guard_fill || storage_[guard_bytes + bytes_ + i] != guard_fill) return false;
    return true;
  }

 private:
  std::vector<unsigned char> storage_;
  std::size_t bytes_ = 0;
};

//! Collects the failures of all ranks of one world. It lives in a shared anonymous mapping, so
//! ranks that are threads and ranks that are forked processes report into the same log.
class failure_log {
 public:
  failure_log() {
    void* p = ::mmap(nullptr, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("failure_log: mmap failed");
    s_ = new (p) shared{};
  }
  failure_log(const failure_log&) = delete;
  failure_log& operator=(const failure_log&) = delete;
  ~failure_log() { ::munmap(s_, sizeof(shared)); }

  void record(int rank, const std::string& what) {
    const std::string line = on_rank(rank) + what + "\n";
    while (s_->lock.test_and_set(std::memory_order_acquire)) {
    }
    if (s_->count++ < 8) {
      const std::size_t n = std::min(line.size(), sizeof(s_->text) - 1 - s_->used);
      std::memcpy(s_->text + s_->used, line.data(), n);
      s_->used += n;
    }
    s_->lock.clear(std::memory_order_release);
  }
  [[nodiscard]] std::size_t count() const { return s_->count; }
  [[nodiscard]] std::string text() const { return std::string(s_->text, s_->used); }

 private:
  struct shared {
    std::atomic_flag lock = ATOMIC_FLAG_INIT;  // lock-free, so it works across processes
    std::size_t count = 0;
    std::size_t used = 0;
    char text[8192] = {};
  };
  shared* s_;
};

inline std::string case_name(const char* coll, int world, std::size_t count, dtype t, op o, bool in_place) {
  return std::string(coll) + " world=" + std::to_string(world) + " count=" + std::to_string(count) + " " +
         std::string(name_of(t)) + " " + std::string(name_of(o)) + (in_place ? " in-place" : " out-of-place");
}

//! Checks that a rank's output matches; records what was wrong.
inline void verify(failure_log& log, int rank, const std::string& name, std::size_t wrong, std::size_t first_bad,
                   bool guards_ok, bool input_intact) {
  if (wrong) log.record(rank, name + ": " + std::to_string(wrong) + " wrong elements, first at " + std::to_string(first_bad));
  if (!guards_ok) log.record(rank, name + ": wrote outside its output buffer");
  if (!input_intact) log.record(rank, name + ": modified its (const) input buffer");
}

//! Runs per_rank(comm, world, log) on every rank of every world size the World offers
//! (World::world_sizes(): 1-9 for threads and forked processes; the launched size under tutti-run).
template <class World, class PerRank>
void for_each_world(PerRank&& per_rank) {
  use_suite_chunk();
  for (int world : World::world_sizes()) {
    failure_log log;
    World::run(world, [&](auto& comm) { per_rank(comm, world, log); });
    INFO(std::string(World::name), " world=", world, "\n", log.text());
    CHECK(log.count() == 0);
  }
}

}  // namespace tutti::testing

TEST_CASE_TEMPLATE_DEFINE("allreduce_conformance: allreduce matches the reference", World, allreduce_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    std::vector<unsigned char> pristine;
    for (dtype t : all_dtypes) {
      for (op o : all_ops) {
        const auto expected = expected_period(t, world, o);
        for (std::size_t count : conformance_counts()) {
          if (!runs_at(count, t, o)) continue;
          const std::size_t bytes = count * size_of(t);
          for (bool in_place : {false, true}) {
            const auto name = case_name("allreduce", world, count, t, o, in_place);
            std::size_t first_bad = 0;
            bool input_intact = true;
            if (in_place) {
              out.reset(bytes, 0);
              fill_pattern(out.data(), t, comm.rank(), count, o);
              comm.allreduce(tensor_view(out.data(), count, t), o);
            } else {
              in.reset(bytes, 0);
              fill_pattern(in.data(), t, comm.rank(), count, o);
              pristine.assign(in.data(), in.data() + bytes);
              out.reset(bytes, output_fill);
              comm.allreduce(const_tensor_view(in.data(), count, t), tensor_view(out.data(), count, t), o);
              input_intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
            }
            const auto wrong = count_wrong(out.data(), t, count, 0, expected, &first_bad);
            verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), input_intact);
          }
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("reduce_scatter_conformance: reduce_scatter matches the reference", World,
                          reduce_scatter_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    std::vector<unsigned char> pristine;
    const auto n = static_cast<std::size_t>(world);
    const auto r = static_cast<std::size_t>(comm.rank());
    for (dtype t : all_dtypes) {
      const std::size_t esz = size_of(t);
      for (op o : all_ops) {
        const auto expected = expected_period(t, world, o);
        for (std::size_t count : conformance_counts()) {  // count: elements each rank receives
          if (!runs_at(count, t, o)) continue;
          for (bool in_place : {false, true}) {
            const auto name = case_name("reduce_scatter", world, count, t, o, in_place);
            std::size_t first_bad = 0;
            in.reset(count * n * esz, 0);
            fill_pattern(in.data(), t, comm.rank(), count * n, o);
            const unsigned char* result = nullptr;
            bool guards_ok = true, input_intact = true;
            if (in_place) {  // the output is this rank's block of the input
              comm.reduce_scatter(const_tensor_view(in.data(), count * n, t),
                                  tensor_view(in.data() + r * count * esz, count, t), o);
              result = in.data() + r * count * esz;
              guards_ok = in.guards_intact();
            } else {
              pristine.assign(in.data(), in.data() + count * n * esz);
              out.reset(count * esz, output_fill);
              comm.reduce_scatter(const_tensor_view(in.data(), count * n, t), tensor_view(out.data(), count, t), o);
              result = out.data();
              guards_ok = out.guards_intact();
              input_intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
            }
            const auto wrong = count_wrong(result, t, count, r * count, expected, &first_bad);
            verify(log, comm.rank(), name, wrong, first_bad, guards_ok, input_intact);
          }
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("allgather_conformance: allgather matches the reference", World, allgather_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    std::vector<unsigned char> pristine;
    const auto n = static_cast<std::size_t>(world);
    const auto r = static_cast<std::size_t>(comm.rank());
    for (dtype t : all_dtypes) {
      const std::size_t esz = size_of(t);
      for (std::size_t count : conformance_counts()) {
        if (!runs_at(count, t)) continue;
        for (bool in_place : {false, true}) {
          const auto name = case_name("allgather", world, count, t, op::sum, in_place);
          out.reset(count * n * esz, output_fill);
          bool input_intact = true;
          if (in_place) {
            fill_pattern(out.data() + r * count * esz, t, comm.rank(), count, op::sum);
            comm.allgather(const_tensor_view(out.data() + r * count * esz, count, t), tensor_view(out.data(), count * n, t));
          } else {
            in.reset(count * esz, 0);
            fill_pattern(in.data(), t, comm.rank(), count, op::sum);
            pristine.assign(in.data(), in.data() + count * esz);
            comm.allgather(const_tensor_view(in.data(), count, t), tensor_view(out.data(), count * n, t));
            input_intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
          }
          for (int q = 0; q < world; ++q) {  // block q must be rank q's pattern
            std::size_t first_bad = 0;
            const auto wrong = count_wrong_pattern(out.data() + static_cast<std::size_t>(q) * count * esz, t, q,
                                                   count, op::sum, &first_bad);
            verify(log, comm.rank(), name + " block " + std::to_string(q), wrong, first_bad, true, true);
          }
          verify(log, comm.rank(), name, 0, 0, out.guards_intact(), input_intact);
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("broadcast_conformance: broadcast matches the reference", World, broadcast_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    for (dtype t : all_dtypes) {
      const std::size_t esz = size_of(t);
      for (std::size_t count : conformance_counts()) {
        if (!runs_at(count, t)) continue;
        for (int root : {0, world - 1, world / 2}) {
          for (bool in_place : {false, true}) {
            const auto name = case_name("broadcast", world, count, t, op::sum, in_place) + " root=" + std::to_string(root);
            const bool is_root = comm.rank() == root;
            out.reset(count * esz, output_fill);
            if (in_place) {
              if (is_root) fill_pattern(out.data(), t, root, count, op::sum);
              comm.broadcast(tensor_view(out.data(), count, t), root);
            } else {
              in.reset(count * esz, 0);
              fill_pattern(in.data(), t, root, count, op::sum);
              comm.broadcast(const_tensor_view(is_root ? in.data() : nullptr, is_root ? count : 0, t),
                             tensor_view(out.data(), count, t), root);
            }
            std::size_t first_bad = 0;
            const auto wrong = count_wrong_pattern(out.data(), t, root, count, op::sum, &first_bad);
            verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), true);
          }
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("reduce_conformance: reduce matches the reference", World, reduce_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    std::vector<unsigned char> pristine;
    for (dtype t : all_dtypes) {
      const std::size_t esz = size_of(t);
      for (op o : all_ops) {
        const auto expected = expected_period(t, world, o);
        for (std::size_t count : conformance_counts()) {
          if (!runs_at(count, t, o)) continue;
          const std::size_t bytes = count * esz;
          for (int root : {0, world - 1, world / 2}) {
            const bool is_root = comm.rank() == root;
            for (bool in_place : {false, true}) {
              const auto name = case_name("reduce", world, count, t, o, in_place) + " root=" + std::to_string(root);
              in.reset(bytes, 0);
              fill_pattern(in.data(), t, comm.rank(), count, o);
              pristine.assign(in.data(), in.data() + bytes);
              std::size_t first_bad = 0, wrong = 0;
              if (in_place) {
                comm.reduce(tensor_view(in.data(), count, t), o, root);
                if (is_root) wrong = count_wrong(in.data(), t, count, 0, expected, &first_bad);
                // a non-root's buffer is only its input: it must come back unchanged
                const bool intact = is_root || std::equal(pristine.begin(), pristine.end(), in.data());
                verify(log, comm.rank(), name, wrong, first_bad, in.guards_intact(), intact);
              } else {
                // Non-roots pass an empty output when root is 0 and a buffer that must stay untouched otherwise.
                out.reset(bytes, output_fill);
                const bool empty_out = !is_root && root == 0;
                comm.reduce(const_tensor_view(in.data(), count, t),
                            empty_out ? tensor_view(nullptr, 0, t) : tensor_view(out.data(), count, t), o, root);
                if (is_root) wrong = count_wrong(out.data(), t, count, 0, expected, &first_bad);
                const bool untouched =
                    is_root || std::all_of(out.data(), out.data() + bytes, [](unsigned char b) { return b == output_fill; });
                if (!untouched) log.record(comm.rank(), name + ": a non-root's output buffer was written");
                const bool intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
                verify(log, comm.rank(), name, wrong, first_bad, out.guards_intact(), intact);
              }
            }
          }
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("alltoall_conformance: alltoall matches the reference", World, alltoall_conformance) {
  using namespace tutti;
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    guarded_buffer in, out;
    std::vector<unsigned char> pristine;
    const auto n = static_cast<std::size_t>(world);
    const auto r = static_cast<std::size_t>(comm.rank());
    for (dtype t : all_dtypes) {
      const std::size_t esz = size_of(t);
      for (std::size_t count : conformance_counts()) {  // count: elements per block (per peer)
        if (!runs_at(count, t)) continue;
        for (bool in_place : {false, true}) {
          const auto name = case_name("alltoall", world, count, t, op::sum, in_place);
          // Rank q's input is its pattern over n*count elements; block r of it goes to rank r.
          in.reset(count * n * esz, 0);
          fill_pattern(in.data(), t, comm.rank(), count * n, op::sum);
          bool input_intact = true;
          unsigned char* result = in.data();
          if (in_place) {
            comm.alltoall(tensor_view(in.data(), count * n, t));
          } else {
            pristine.assign(in.data(), in.data() + count * n * esz);
            out.reset(count * n * esz, output_fill);
            comm.alltoall(const_tensor_view(in.data(), count * n, t), tensor_view(out.data(), count * n, t));
            input_intact = std::equal(pristine.begin(), pristine.end(), in.data()) && in.guards_intact();
            result = out.data();
          }
          for (int q = 0; q < world; ++q) {  // block q must be rank q's elements [r*count, (r+1)*count)
            std::size_t first_bad = 0;
            const auto wrong = count_wrong_pattern(result + static_cast<std::size_t>(q) * count * esz, t, q, count,
                                                   op::sum, &first_bad, r * count);
            verify(log, comm.rank(), name + " block " + std::to_string(q), wrong, first_bad, true, true);
          }
          verify(log, comm.rank(), name, 0, 0, in_place ? in.guards_intact() : out.guards_intact(), input_intact);
        }
      }
    }
  });
}

TEST_CASE_TEMPLATE_DEFINE("barrier_conformance: barrier does not return before every rank entered", World,
                          barrier_conformance) {
  using namespace tutti::testing;
  for_each_world<World>([](auto& comm, int world, failure_log& log) {
    // One rank (a different one each round) arrives late; nobody may leave before it arrived.
    // steady_clock is CLOCK_MONOTONIC, one clock for all threads and processes of a host.
    using clock = std::chrono::steady_clock;
    for (int round = 0; round < 4; ++round) {
      const int late = round % world;
      if (comm.rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      const std::int64_t entered = clock::now().time_since_epoch().count();
      comm.barrier();
      const std::int64_t left = clock::now().time_since_epoch().count();
      // allreduce(max), which every algorithm offers (tree has no allgather)
      std::int64_t last_entry = entered;
      comm.allreduce(std::span<std::int64_t>(&last_entry, 1), tutti::op::max);
      if (left < last_entry)
        log.record(comm.rank(), "barrier round " + std::to_string(round) + " returned " +
                                    std::to_string(last_entry - left) + " ns before rank " + std::to_string(late) + " entered");
    }
  });
}
