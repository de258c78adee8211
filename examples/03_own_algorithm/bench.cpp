//! The user's algorithm benchmarked like tutti's own (tutti/testing/benchmark.hpp): the
//! nccl-tests allreduce table, 4 ranks as threads, star against tutti's ring side by side in
//! one run. Usage: star_bench [max_bytes]
#include <tutti/testing/benchmark.hpp>

#include <cstdlib>
#include <cstdio>

#include "star.hpp"

int main(int argc, char** argv) {
  tutti::testing::benchmark_options o;
  o.max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{1} << 20;
  o.step_factor = 8;
  double wrong = 0;
  for (bool mine : {true, false}) {
    std::printf("# %s\n", mine ? "my_project::star" : "tutti::algorithm::ring");
    tutti::transport::inproc::run(4, [&](tutti::transport::inproc& t) {
      if (mine) {
        tutti::communicator<tutti::transport::inproc, my_project::star> comm(t);
        const double w = tutti::testing::benchmark_allreduce(comm, o);
        if (comm.rank() == 0) wrong += w;
      } else {
        tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring> comm(t);
        const double w = tutti::testing::benchmark_allreduce(comm, o);
        if (comm.rank() == 0) wrong += w;
      }
    });
  }
  return wrong == 0 ? 0 : 1;
}
