//! @file main.cpp  Example 00: average a gradient vector across 4 ranks with one allreduce.
//!
//! Each rank is a thread here (transport::inproc); swapping the transport for shm or ucx changes
//! one line, the communicator type, and nothing else.
#include <tutti/tutti.hpp>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <vector>

// The communicator type names how gradients travel: which transport, which algorithm.
using comm_t = tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring>;

int main() {
  constexpr int world = 4;
  constexpr std::size_t count = 1000;  // does not divide by 4: the library does not care

  auto errors = tutti::transport::inproc::run(world, [&](tutti::transport::inproc& t) {
    comm_t comm(t);  // settings from TUTTI_* variables (timeout, chunk size, argument checks)
    const int r = comm.rank();

    // Rank r's gradient: element i is r + i, so the average over ranks is 1.5 + i.
    std::vector<float> grads(count);
    for (std::size_t i = 0; i < count; ++i) grads[i] = static_cast<float>(r) + static_cast<float>(i);

    try {
      comm.allreduce(grads, tutti::op::avg);  // in place: every rank ends with the same average
    } catch (const tutti::error& e) {
      // Every tutti failure (bad arguments, ranks that disagree, a timeout, a lost peer) is a
      // tutti::error whose message names the rank, the collective and what was wrong.
      std::fprintf(stderr, "allreduce failed: %s\n", e.what());
      throw;  // let run() report this rank as failed
    }

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += grads[i] != 1.5f + static_cast<float>(i);
    std::printf("rank %d: grads[0] = %.2f, grads[%zu] = %.2f, %zu wrong\n", r, grads[0], count - 1,
                grads[count - 1], wrong);
    if (wrong != 0) throw std::runtime_error("wrong average");
  });

  for (const auto& e : errors)
    if (e) return 1;  // run() returns one exception_ptr per rank, null where the rank succeeded
  return 0;
}
