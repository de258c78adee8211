//! Registered buffers: memory from transport::shm::allocate() that peers read in place.
#include <doctest/doctest.h>

#include <csignal>
#include <string>
#include <vector>

#include <tutti/algorithm/direct.hpp>
#include <tutti/transport/shm/allocator.hpp>
#include <tutti/transport/shm/pool.hpp>
#include <tutti/transport/shm/registered_buffer.hpp>
#include <tutti/testing/fork_world.hpp>
#include <tutti/testing/pattern.hpp>

namespace {
using tutti::testing::fork_ranks;
using shm = tutti::transport::shm;
using comm_t = tutti::communicator<shm, tutti::algorithm::direct>;
}  // namespace

TEST_CASE("offset_pool: first fit, alignment, coalescing, and refusals") {
  tutti::transport::shm_detail::offset_pool pool(1 << 20);
  const auto a = pool.allocate(100);
  const auto b = pool.allocate(1000);
  const auto c = pool.allocate(64);
  CHECK(a == 0);
  CHECK(b == 128);  // 100 rounded up to 64-byte alignment
  CHECK(c == 128 + 1024);
  CHECK(pool.contains(b, 1000));
  CHECK(pool.contains(b + 10, 900));
  CHECK_FALSE(pool.contains(b, 1025));
  CHECK_FALSE(pool.contains(5000, 1));
  pool.deallocate(b);
  CHECK_FALSE(pool.contains(b, 1));
  CHECK(pool.allocate(500) == b);  // first fit reuses the hole
  pool.deallocate(a);
  pool.deallocate(b);
  pool.deallocate(c);
  CHECK(pool.in_use() == 0);
  CHECK(pool.allocate(1 << 20) == 0);  // everything coalesced back into one block
  CHECK_THROWS_AS((void)pool.allocate(1), tutti::invalid_argument);
  CHECK_THROWS_AS(pool.deallocate(12345), tutti::invalid_argument);
}

TEST_CASE("direct allreduce from registered buffers: in place and out of place, across chunks, every op") {
  using namespace tutti;
  using namespace tutti::testing;
  for (int world : {2, 3, 4}) {
    auto results = fork_ranks(world, [world](const rank_info& info) {
      transport::shm_options o = transport::shm_options::from_env();
      o.stage_bytes = 8192;  // many chunks per message
      comm_t comm(std::make_unique<shm>(info, o));
      auto& tr = comm.transport();
      for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{20011}, std::size_t{300007}, std::size_t{300008},
                                 std::size_t{300009}}) {
        for (op reduction : all_ops) {
          const dtype t = dtype::f32;
          const auto expected = expected_period(t, world, reduction);
          auto* in = static_cast<float*>(tr.allocate(count * sizeof(float)));
          auto* out = static_cast<float*>(tr.allocate(count * sizeof(float)));
          if (tr.registered_offset(in, count * 4) == shm::not_registered) throw std::runtime_error("not registered");
          // Registered on one side only: the other side goes through the staging buffers.
          std::vector<float> heap_in(count), heap_out(count);
          const int mix = static_cast<int>(count % 3);  // 0: both registered, 1: input only, 2: output only
          float* plain_in = mix == 2 ? heap_in.data() : in;
          float* plain_out = mix == 1 ? heap_out.data() : out;
          for (bool in_place : {false, true}) {
            float* src = in_place ? in : plain_in;
            float* dst = in_place ? in : plain_out;
            fill_pattern(src, t, info.rank, count, reduction);
            if (in_place) comm.allreduce(tensor_view(src, count, t), reduction);
            else comm.allreduce(const_tensor_view(src, count, t), tensor_view(dst, count, t), reduction);
            std::size_t first_bad = 0;
            const auto wrong = count_wrong(dst, t, count, 0, expected, &first_bad);
            if (wrong)
              throw std::runtime_error("count " + std::to_string(count) + " " + std::string(name_of(reduction)) +
                                       (in_place ? " in place" : " out of place") + ": " + std::to_string(wrong) +
                                       " wrong, first at " + std::to_string(first_bad));
            if (!in_place) {  // a registered input is read in place by peers, never written
              std::vector<float> again(count);
              fill_pattern(again.data(), t, info.rank, count, reduction);
              if (std::memcmp(again.data(), src, count * 4) != 0) throw std::runtime_error("input modified");
            }
          }
          tr.deallocate(in);
          tr.deallocate(out);
        }
      }
    });
    for (std::size_t r = 0; r < results.size(); ++r) {
      INFO("world ", world, " rank ", r, ": ", results[r].error);
      CHECK(results[r].exit_code == 0);
    }
  }
}

TEST_CASE("allocate refuses what the pool cannot hold, naming the setting") {
  auto results = fork_ranks(1, [](const tutti::rank_info& info) {
    tutti::transport::shm_options o;
    o.pool_bytes = 1 << 20;
    shm t(info, o);
    void* p = t.allocate(1 << 19);
    try {
      (void)t.allocate(1 << 20);
    } catch (const tutti::invalid_argument& e) {
      if (std::string(e.what()).find("TUTTI_SHM_POOL_BYTES") == std::string::npos) throw;
      t.deallocate(p);
      return;
    }
    throw std::runtime_error("allocation beyond the pool did not throw");
  });
  INFO(results[0].error);
  CHECK(results[0].exit_code == 0);
}

TEST_CASE("shm_allocator: a std::vector of registered memory, averaged by direct without a copy-in") {
  auto results = fork_ranks(3, [](const tutti::rank_info& info) {
    comm_t comm(std::make_unique<shm>(info));
    using alloc = tutti::transport::shm_allocator<float>;
    std::vector<float, alloc> grads(100003, static_cast<float>(info.rank), alloc(comm.transport()));
    if (comm.transport().registered_offset(grads.data(), grads.size() * sizeof(float)) == shm::not_registered)
      throw std::runtime_error("vector memory is not registered");
    comm.allreduce(grads, tutti::op::avg);  // (0 + 1 + 2) / 3
    for (float g : grads)
      if (g != 1.0f) throw std::runtime_error("wrong average " + std::to_string(g));
    grads.resize(200000);  // reallocation returns the old block to the pool
    grads.clear();
    grads.shrink_to_fit();
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].error);
    CHECK(results[r].exit_code == 0);
  }
}

TEST_CASE("offset_pool: a bad deallocate says which mistake it is") {
  tutti::transport::shm_detail::offset_pool pool(1 << 20);
  const auto a = pool.allocate(1000);
  (void)pool.allocate(64);
  const auto message = [&](std::size_t offset) {
    try {
      pool.deallocate(offset);
    } catch (const tutti::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(a + 64).find("inside the block handed out at pool offset 0") != std::string::npos);
  CHECK(message(500000).find("never handed out, or its block was already returned") != std::string::npos);
  pool.deallocate(a);
  CHECK(message(a) == "this block was already returned (double free)");
}

TEST_CASE("offset_pool, debug mode: page-sized blocks, and a freed block waits in quarantine") {
  tutti::transport::shm_detail::offset_pool pool(1 << 20, true);
  const auto a = pool.allocate(100);
  const auto b = pool.allocate(5000);
  CHECK(a == 0);
  CHECK(b == 4096);
  CHECK(pool.block_size(b) == 8192);
  pool.deallocate(a);
  CHECK(pool.allocate(100) != a);  // not handed out again at once: a kept pointer would alias it
  std::string text;
  try {
    pool.deallocate(a);
  } catch (const tutti::invalid_argument& e) {
    text = e.what();
  }
  CHECK(text == "this block was already returned (double free)");
  // When the pool is otherwise full, the quarantine gives way rather than failing.
  tutti::transport::shm_detail::offset_pool small(3 * 4096, true);
  const auto x = small.allocate(4096);
  (void)small.allocate(8192);
  small.deallocate(x);
  CHECK(small.allocate(4096) == x);
}

TEST_CASE("deallocate errors name the rank and the pointer") {
  auto results = fork_ranks(1, [](const tutti::rank_info& info) {
    shm t(info);
    void* p = t.allocate(256);
    t.deallocate(p);
    const auto expect = [&](void* q, const std::string& why) {
      try {
        t.deallocate(q);
      } catch (const tutti::invalid_argument& e) {
        const std::string what = e.what();
        char ptr[40];
        std::snprintf(ptr, sizeof ptr, "%p", q);
        if (what.rfind("rank 0: transport::shm::deallocate(" + std::string(ptr) + "): ", 0) != 0 ||
            what.find(why) == std::string::npos)
          throw std::runtime_error("unexpected message: " + what);
        return;
      }
      throw std::runtime_error("deallocate did not throw for " + why);
    };
    expect(p, "double free");
    int local = 0;
    expect(&local, "not in this rank's registered pool");
  });
  INFO(results[0].error);
  CHECK(results[0].exit_code == 0);
}

TEST_CASE("registered_buffer: RAII registered memory, movable, used by a collective in place") {
  auto results = fork_ranks(2, [](const tutti::rank_info& info) {
    comm_t comm(std::make_unique<shm>(info));
    auto& t = comm.transport();
    for (int round = 0; round < 50; ++round) {  // 50 x 8 MiB from a 256 MiB pool: blocks come back
      tutti::transport::registered_buffer<float> grads(t, 2 << 20);
      for (auto& g : grads) g = static_cast<float>(info.rank + round);
      if (t.registered_offset(grads.data(), grads.size() * sizeof(float)) == shm::not_registered)
        throw std::runtime_error("registered_buffer memory is not registered");
      auto moved = std::move(grads);
      if (grads.data() != nullptr || grads.size() != 0) throw std::runtime_error("moved-from buffer not empty");
      comm.allreduce(moved, tutti::op::sum);
      if (moved[12345] != static_cast<float>(1 + 2 * round)) throw std::runtime_error("wrong sum");
    }
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].error);
    CHECK(results[r].exit_code == 0);
  }
}

TEST_CASE("TUTTI_DEBUG_POOL: writing through a pointer kept after deallocate faults at the write") {
  auto results = fork_ranks(1, [](const tutti::rank_info& info) {
    tutti::transport::shm_options o;
    o.debug_pool = true;
    shm t(info, o);
    auto* p = static_cast<float*>(t.allocate(1000 * sizeof(float)));
    p[999] = 1.0f;
    t.deallocate(p);
    auto* next = static_cast<float*>(t.allocate(1000 * sizeof(float)));
    if (next == p) throw std::runtime_error("the freed block was handed out again at once");
    std::signal(SIGSEGV, SIG_DFL);
    *reinterpret_cast<volatile float*>(p + 10) = 2.0f;  // must die here (SIGSEGV), not corrupt `next`
    throw std::runtime_error("the write after deallocate did not fault");
  });
  INFO(results[0].error);
  CHECK(results[0].exit_code == 128 + SIGSEGV);
}
