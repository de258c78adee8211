//! Disagreeing ranks over shm, for both ways of checking: the communicator's own round (ring) and
//! the check folded into the algorithm's first synchronisation (direct). Same verdicts, same text.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/testing/fork_world.hpp>

namespace {

using tutti::testing::fork_ranks;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

//! Runs body(comm) on `world` processes; each reports what it threw (its kind and what()) as its
//! error text, then proves the communicator still works with a correct allreduce.
template <class Algorithm>
std::vector<std::string> outcomes(int world, const std::function<void(tutti::communicator<tutti::transport::shm, Algorithm>&)>& body) {
  using comm_t = tutti::communicator<tutti::transport::shm, Algorithm>;
  auto results = fork_ranks(world, [&](const tutti::rank_info& info) {
    comm_t comm(std::make_unique<tutti::transport::shm>(info));
    std::string what = "nothing";
    try {
      body(comm);
    } catch (const tutti::mismatch& e) {
      what = std::string("mismatch: ") + e.what();
    } catch (const tutti::invalid_argument& e) {
      what = std::string("invalid_argument: ") + e.what();
    }
    std::vector<float> v(100, 1.0f);
    comm.allreduce(v, tutti::op::sum);
    if (v[99] != static_cast<float>(world)) what += " | communicator unusable afterwards";
    throw std::runtime_error(what);  // the only way out of a forked rank with text
  });
  std::vector<std::string> out;
  for (auto& r : results) out.push_back(r.error);
  return out;
}

template <class Algorithm>
void check_all() {
  using comm_t = tutti::communicator<tutti::transport::shm, Algorithm>;
  SUBCASE("different counts") {
    auto out = outcomes<Algorithm>(3, [](comm_t& c) {
      std::vector<float> v(c.rank() == 2 ? 6 : 7, 1.0f);
      c.allreduce(v, tutti::op::sum);
    });
    for (int r = 0; r < 3; ++r) {
      INFO(out[r]);
      CHECK(contains(out[r], "mismatch: rank " + std::to_string(r) + ": allreduce #1: ranks disagree: rank 0 has count=7, rank 2 has count=6"));
      CHECK_FALSE(contains(out[r], "unusable"));
    }
  }
  SUBCASE("zero elements on one rank") {
    auto out = outcomes<Algorithm>(2, [](comm_t& c) {
      std::vector<float> v(c.rank() == 1 ? 0 : 1000000, 1.0f);
      c.allreduce(v, tutti::op::sum);
    });
    for (int r = 0; r < 2; ++r) {
      INFO(out[r]);
      CHECK(contains(out[r], "rank 0 has count=1000000, rank 1 has count=0"));
    }
  }
  SUBCASE("different collectives") {
    auto out = outcomes<Algorithm>(2, [](comm_t& c) {
      std::vector<int> v(4, 1);
      if (c.rank() == 0) c.barrier();
      else c.broadcast(v, 0);
    });
    for (int r = 0; r < 2; ++r) {
      INFO(out[r]);
      CHECK(contains(out[r], "rank 0 has barrier #1, rank 1 has broadcast #1"));
    }
  }
  SUBCASE("a rank refusing its own arguments") {
    auto out = outcomes<Algorithm>(3, [](comm_t& c) {
      std::vector<float> in(8), o(c.rank() == 1 ? 9 : 8);
      c.allreduce(in, o, tutti::op::sum);
    });
    CHECK(contains(out[1], "invalid_argument: rank 1: allreduce #1: send has 8 elements but recv has 9"));
    for (int r : {0, 2}) {
      INFO(out[r]);
      CHECK(contains(out[r], "invalid_argument: rank " + std::to_string(r) + ": allreduce #1: rank 1 refused its arguments"));
    }
  }
}

}  // namespace

TEST_CASE("shm + ring: disagreements are reported on every rank, before data moves") {
  check_all<tutti::algorithm::ring>();
}
TEST_CASE("shm + direct: the check carried by the first synchronisation reports the same") {
  check_all<tutti::algorithm::direct>();
}
