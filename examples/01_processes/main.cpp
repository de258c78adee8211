// 01_processes: ranks as processes on one host, over shared memory.
//
//   tutti-run -n 4 -- ./tutti_example_01_processes
//
// Each process is one rank. from_env() reads its rank, the world size and the job id from the
// launcher (tutti-run here; mpirun, srun and torchrun work too). algorithm::direct reduces
// straight out of the peers' shared memory; a gradient buffer allocated from the transport is
// read in place, without even the copy into shared memory.
#include <tutti/tutti.hpp>

#include <cstdio>
#include <span>

int main() {
  using comm_t = tutti::communicator<tutti::transport::shm, tutti::algorithm::direct>;
  try {
    auto comm = comm_t::from_env();
    const std::size_t n = 1 << 20;

    // Registered memory: lives in this rank's shared segment, which every peer has mapped.
    auto& shm = comm.transport();
    auto* grads = static_cast<float*>(shm.allocate(n * sizeof(float)));
    for (std::size_t i = 0; i < n; ++i) grads[i] = static_cast<float>(comm.rank());

    comm.allreduce(std::span(grads, n), tutti::op::avg);  // (0 + 1 + ... + (N-1)) / N everywhere

    const float expected = static_cast<float>(comm.size() - 1) / 2.0f;
    const bool ok = grads[0] == expected && grads[n - 1] == expected;
    std::printf("rank %d of %d: average %.2f (%s)\n", comm.rank(), comm.size(), grads[0], ok ? "ok" : "WRONG");
    shm.deallocate(grads);
    return ok ? 0 : 1;
  } catch (const tutti::error& e) {  // names the rank, the collective and what was wrong
    std::fprintf(stderr, "tutti error: %s\n", e.what());
    return 1;
  }
}
