// A job that uses what tutti-tune wrote: algorithm::tuned over the same candidates tutti-tune
// measures on shm reads TUTTI_TUNING_FILE, and allreduce (float sum) at each size given on the
// command line must be correct and run the candidate the table's row names. Prints, on rank 0,
// one line per size: "allreduce <bytes> B ran <algorithm>". Exit 0 when every result is right.
#include <tutti/algorithm/direct.hpp>
#include <tutti/algorithm/halving_doubling.hpp>
#include <tutti/algorithm/hierarchical.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/shm.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace alg = tutti::algorithm;
using candidates = alg::tuned<alg::ring, alg::direct, alg::halving_doubling, alg::tree,
                              alg::hierarchical<alg::direct, alg::ring>>;  // tutti-tune's shm list

int main(int argc, char** argv) {
  try {
    auto comm = tutti::communicator<tutti::transport::shm, candidates>::from_env();
    const int n = comm.size();
    int wrong = 0;
    for (int i = 1; i < argc; ++i) {
      const std::size_t count = std::stoull(argv[i]) / sizeof(float);
      std::vector<float> data(count, static_cast<float>(comm.rank() + 1));
      comm.allreduce(data, tutti::op::sum);
      const float want = static_cast<float>(n * (n + 1) / 2);
      for (float v : data) wrong += v != want;
      const auto ran = comm.algorithm_control().last_run();
      if (comm.rank() == 0)
        std::printf("allreduce %zu B ran %s\n", count * sizeof(float), std::string(candidates::control::names[ran]).c_str());
    }
    if (comm.rank() == 0) std::printf("table %s: %s\n", comm.algorithm_control().table().source.c_str(), wrong ? "WRONG" : "ok");
    comm.barrier();
    return wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_reader: %s\n", e.what());
    return 1;
  }
}
