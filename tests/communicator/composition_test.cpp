//! Policies compose in any order, with defaults for the roles left out.
#include <doctest/doctest.h>

#include <type_traits>

#include <tutti/tutti.hpp>

namespace {
using tutti::communicator;
namespace tr = tutti::transport;
namespace al = tutti::algorithm;

using a = communicator<tr::inproc, al::ring>;
using b = communicator<al::ring, tutti::codec::none, tr::inproc>;
using c = communicator<tutti::fusion::none, al::ring, tr::inproc, tutti::codec::none>;
}  // namespace

TEST_CASE("communicator sorts policies by role, whatever their order") {
  CHECK(std::is_same_v<a::transport_type, tr::inproc>);
  CHECK(std::is_same_v<a::algorithm_type, al::ring>);
  CHECK(std::is_same_v<b::transport_type, tr::inproc>);
  CHECK(std::is_same_v<b::algorithm_type, al::ring>);
  CHECK(std::is_same_v<c::transport_type, tr::inproc>);
  CHECK(std::is_same_v<c::fusion_type, tutti::fusion::none>);
}

TEST_CASE("roles left out get their defaults: codec::none, fusion::none") {
  CHECK(std::is_same_v<a::codec_type, tutti::codec::none>);
  CHECK(std::is_same_v<a::fusion_type, tutti::fusion::none>);
}

TEST_CASE("the concepts accept tutti's own policies and refuse other types") {
  CHECK(tutti::transport_policy<tr::inproc>);
  CHECK(tutti::algorithm_policy<al::ring>);
  CHECK(tutti::codec_policy<tutti::codec::none>);
  CHECK(tutti::fusion_policy<tutti::fusion::none>);
  CHECK_FALSE(tutti::transport_policy<al::ring>);
  CHECK_FALSE(tutti::algorithm_policy<tr::inproc>);
  CHECK_FALSE(tutti::codec_policy<int>);
}

TEST_CASE("one communicator can run every collective ring offers, in sequence") {
  auto errors = tr::inproc::run(3, [](tr::inproc& t) {
    a comm(t);
    std::vector<int> v(10, comm.rank());
    comm.allreduce(v, tutti::op::max);
    CHECK(v[9] == 2);
    std::vector<int> all(30);
    comm.allgather(std::vector<int>(10, comm.rank()), all);
    CHECK(all[25] == 2);
    std::vector<int> mine(10);
    comm.reduce_scatter(all, mine, tutti::op::sum);  // block r of all is 10 x r on every rank
    CHECK(mine[0] == 3 * comm.rank());
    comm.broadcast(v, 1);
    comm.barrier();
  });
  for (auto& e : errors) CHECK_FALSE(e);
}

TEST_CASE("algorithm::automatic over inproc is ring, and works") {
  using auto_comm = communicator<tr::inproc, al::automatic>;
  CHECK(std::is_same_v<al::automatic::for_transport<tr::inproc>, al::ring>);
  auto errors = tr::inproc::run(3, [](tr::inproc& t) {
    auto_comm comm(t);
    std::vector<double> v(1001, comm.rank() + 0.5);
    comm.allreduce(v, tutti::op::sum);
    CHECK(v[1000] == 4.5);
  });
  for (auto& e : errors) CHECK_FALSE(e);
}

TEST_CASE("sub-communicators over transport::group: two disjoint groups and the parent, in turn") {
  using sub_comm = communicator<tr::group<tr::inproc>, al::ring>;
  auto errors = tr::inproc::run(4, [](tr::inproc& t) {
    a parent(t);
    const bool even = t.rank() % 2 == 0;
    tr::group<tr::inproc> g(t, even ? std::vector<int>{0, 2} : std::vector<int>{1, 3});
    sub_comm sub(g);
    CHECK(sub.size() == 2);
    CHECK(sub.rank() == t.rank() / 2);
    for (int round = 0; round < 3; ++round) {
      std::vector<int> v(1001, t.rank() + round);
      sub.allreduce(v, tutti::op::sum);  // evens: 0+2, odds: 1+3 (plus 2 x round)
      CHECK(v[1000] == (even ? 2 : 4) + 2 * round);
      std::vector<int> w(7, t.rank());
      parent.allreduce(w, tutti::op::sum);
      CHECK(w[6] == 6);
      sub.broadcast(w, 1);  // the group's rank 1: parent rank 2 or 3
      CHECK(w[0] == 6);
    }
    std::vector<int> z(5, 1);
    sub.allreduce(z, tutti::op::sum);
    CHECK(z[4] == 2);
  });
  for (auto& e : errors) CHECK_FALSE(e);
}
