//! hierarchical over nodes of 3 and 2 ranks: every rank gets the same invalid_argument, at once,
//! on every collective — never a hang and never a wrong result.
#include <doctest/doctest.h>

#include <vector>

#include <tutti/testing/fork_world.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>

using two_level = tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::ring>;

TEST_CASE("hierarchical refuses 3+2 ranks per node with the same error on every rank") {
  auto results = tutti::testing::fork_ranks(5, [](tutti::rank_info info) {
    info.node_id = info.rank < 3 ? "big" : "small";
    tutti::communicator<tutti::transport::shm, two_level> comm(std::make_unique<tutti::transport::shm>(info));
    std::vector<float> v(10, 1.0f);
    for (int attempt = 0; attempt < 2; ++attempt) {  // refused again, not hung, on the next call
      try {
        comm.allreduce(v, tutti::op::sum);
        throw std::runtime_error("allreduce over uneven nodes returned");
      } catch (const tutti::invalid_argument& e) {
        const std::string what = e.what();
        const std::string want = "algorithm::hierarchical: hierarchical algorithms need the same number of ranks on "
                                 "every node; node 0 has 3 (ranks 0 1 2); node 1 has 2 (ranks 3 4)";
        if (what.find(want) == std::string::npos) throw std::runtime_error("unexpected message: " + what);
        const std::string where = "rank " + std::to_string(info.rank) + ": allreduce #" + std::to_string(attempt + 1) + ": ";
        if (what.rfind(where, 0) != 0) throw std::runtime_error("message does not begin with '" + where + "': " + what);
      }
    }
    if (v != std::vector<float>(10, 1.0f)) throw std::runtime_error("the refused allreduce wrote the buffer");
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("rank ", r, ": ", results[r].error);
    CHECK(results[r].exit_code == 0);
  }
}
