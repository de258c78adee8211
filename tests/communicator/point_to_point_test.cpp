//! communicator::send / recv / wait / test (communicator/point_to_point.hpp): a ring of messages for world
//! sizes 2 to 5, counts 0, 1, prime and large (2^18), several dtypes, over threads (inproc) and processes
//! (shm); several tags between one pair; sends and receives between collectives; bad arguments
//! refused naming rank, operation and value; a receive nobody matches ends at the deadline; a dead
//! peer is peer_lost naming it, and the communicator's next call is refused with that loss.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <tutti/testing/fork_world.hpp>
#include <tutti/tutti.hpp>

using namespace tutti;

namespace {

using inproc_comm = communicator<transport::inproc, algorithm::ring>;
using shm_comm = communicator<transport::shm, algorithm::ring>;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

template <class T>
T value_of(int from, std::size_t i, std::uint32_t tag) {
  return static_cast<T>((from * 131 + static_cast<int>(i % 1000) * 7 + static_cast<int>(tag)) % 100);
}

//! Each rank sends `count` elements to its right neighbour and receives from its left, receive
//! posted first and polled on even ranks, posted second and waited on on odd ones; every element checked.
template <class T, class Comm>
void ring_exchange(Comm& comm, std::size_t count, std::uint32_t tag) {
  const int n = comm.size(), me = comm.rank();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<T> out(count), in(count, T{});
  for (std::size_t i = 0; i < count; ++i) out[i] = value_of<T>(me, i, tag);
  auto post_send = [&] { return comm.send(const_tensor_view(std::span<const T>(out)), right, tag); };
  auto post_recv = [&] { return comm.recv(tensor_view(std::span<T>(in)), left, tag); };
  if (me % 2 == 0) {  // polled with test(): what the torch backend's worker does
    auto r = post_recv();
    auto s = post_send();
    while (!comm.test(s) || !comm.test(r)) std::this_thread::yield();  // test's deadline bounds it
    comm.wait(s);  // a completed request's wait returns at once
  } else {
    auto s = post_send();
    auto r = post_recv();
    comm.wait(r);
    comm.wait(s);
  }
  for (std::size_t i = 0; i < count; ++i)
    require(in[i] == value_of<T>(left, i, tag), "rank " + std::to_string(me) + ": element " + std::to_string(i) +
                                                    " of " + std::to_string(count) + " from rank " +
                                                    std::to_string(left) + " is wrong");
}

template <class Comm>
void every_case(Comm& comm) {
  // 2^18: many of shm's ring fragments and UCX's rendezvous size (2^20 took 6.6 s over threads, -Og)
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1009}, std::size_t{1} << 18}) {
    ring_exchange<float>(comm, count, 7);
    ring_exchange<double>(comm, count, 0);
    ring_exchange<std::int64_t>(comm, count, 4000000000u);
    ring_exchange<std::uint8_t>(comm, count, 3);
  }
}

}  // namespace

TEST_CASE("point-to-point over threads: a ring of messages, world sizes 2-5, counts 0, 1, prime, large") {
  for (int world = 2; world <= 5; ++world) {
    CAPTURE(world);
    auto errors = transport::inproc::run(world, [](transport::inproc& t) {
      inproc_comm comm(t);
      every_case(comm);
    });
    for (auto& e : errors) CHECK_FALSE(e);
  }
}

TEST_CASE("point-to-point over processes: a ring, several tags in order, and between collectives") {
  for (int world : {2, 3, 4}) {
    CAPTURE(world);
    auto results = testing::fork_ranks(world, [](const rank_info& info) {
      shm_comm comm(std::make_unique<transport::shm>(info));
      every_case(comm);
      // Three messages with three tags from rank 0 to rank 1, received in the order sent, with an
      // allreduce on every rank between the sends and the waits.
      std::vector<float> v(5, 1.f);
      if (comm.rank() == 0) {
        std::vector<float> a(10, 1.f), b(20, 2.f), c(30, 3.f);
        auto sa = comm.send(const_tensor_view(std::span<const float>(a)), 1, 11);
        auto sb = comm.send(const_tensor_view(std::span<const float>(b)), 1, 12);
        auto sc = comm.send(const_tensor_view(std::span<const float>(c)), 1, 11);
        comm.allreduce(v, op::sum);
        comm.wait(sa), comm.wait(sb), comm.wait(sc);
      } else if (comm.rank() == 1) {
        std::vector<float> a(10), b(20), c(30);
        auto ra = comm.recv(tensor_view(std::span<float>(a)), 0, 11);
        auto rb = comm.recv(tensor_view(std::span<float>(b)), 0, 12);
        auto rc = comm.recv(tensor_view(std::span<float>(c)), 0, 11);
        comm.allreduce(v, op::sum);
        comm.wait(ra), comm.wait(rb), comm.wait(rc);
        require(a[9] == 1.f && b[19] == 2.f && c[29] == 3.f, "tagged messages arrived wrong");
      } else {
        comm.allreduce(v, op::sum);
      }
      require(v[0] == static_cast<float>(comm.size()), "the allreduce between them is wrong");
    });
    testing::throw_if_any_failed(results, "point-to-point over shm");
  }
}

TEST_CASE("point-to-point refuses bad arguments naming rank, operation and value") {
  auto errors = transport::inproc::run(2, [](transport::inproc& t) {
    inproc_comm comm(t);
    std::vector<float> v(4);
    const auto refused = [&](auto&& f, const std::string& want) {
      try {
        f();
      } catch (const invalid_argument& e) {
        CHECK_MESSAGE(std::string(e.what()).find(want) != std::string::npos, e.what());
        return;
      }
      FAIL("not refused: " << want);
    };
    const std::string me = "rank " + std::to_string(comm.rank()) + ": ";
    refused([&] { (void)comm.send(const_tensor_view(std::span<const float>(v)), 2, 1); },
            me + "send to rank 2 (tag 1, 16 bytes): the peer must be another rank of the 2");
    refused([&] { (void)comm.recv(tensor_view(std::span<float>(v)), -1, 1); }, me + "recv from rank -1");
    refused([&] { (void)comm.send(const_tensor_view(std::span<const float>(v)), comm.rank(), 1); },
            "a rank does not send to itself");
    refused([&] { (void)comm.recv(tensor_view(nullptr, 4, dtype::f32), 1 - comm.rank(), 1); }, "null buffer");
    comm.barrier();  // still usable: nothing was posted
  });
  for (auto& e : errors) CHECK_FALSE(e);
}

TEST_CASE("point-to-point: a receive nobody matches ends at the deadline, naming it") {
  auto errors = transport::inproc::run(2, [](transport::inproc& t) {
    auto options = communicator_options::from_env();
    options.timeout = std::chrono::milliseconds(200);
    inproc_comm comm(t, options);
    if (comm.rank() != 0) {  // alive, but sends nothing (leaving would be a loss, not a stall)
      std::this_thread::sleep_for(std::chrono::milliseconds(1200));
      return;
    }
    std::vector<float> v(4);
    auto r = comm.recv(tensor_view(std::span<float>(v)), 1, 5);
    const auto started = std::chrono::steady_clock::now();
    try {
      comm.wait(r);
      FAIL("the receive completed");
    } catch (const timeout& e) {
      CHECK_MESSAGE(std::string(e.what()).find("rank 0: recv from rank 1 (tag 5, 16 bytes)") != std::string::npos,
                    e.what());
    }
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  });
  for (auto& e : errors) CHECK_FALSE(e);
}

TEST_CASE("point-to-point over processes: a dead peer is peer_lost naming it, and so is the next call") {
  auto results = testing::fork_ranks(3, [](const rank_info& info) {
    shm_comm comm(std::make_unique<transport::shm>(info));
    comm.barrier();
    if (comm.rank() == 2) std::_Exit(0);
    if (comm.rank() == 1) return;  // leaves cleanly: only rank 0 waits on rank 2
    std::vector<float> v(1000);
    auto r = comm.recv(tensor_view(std::span<float>(v)), 2, 1);
    try {
      comm.wait(r);
      throw std::runtime_error("received from a dead rank");
    } catch (const peer_lost& e) {
      require(e.peer() == 2, std::string("blamed rank ") + std::to_string(e.peer()) + ": " + e.what());
      require(std::string(e.what()).find("recv from rank 2 (tag 1, 4000 bytes)") != std::string::npos, e.what());
    }
    try {
      (void)comm.send(const_tensor_view(std::span<const float>(v)), 1, 1);
      throw std::runtime_error("a send after the loss was posted");
    } catch (const peer_lost& e) {
      require(e.peer() == 2 && std::string(e.what()).find("unusable after an earlier failure") != std::string::npos,
              e.what());
    }
  });
  testing::throw_if_any_failed(results, "a dead peer");
}
