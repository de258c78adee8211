// 02_nodes: two-level collectives across nodes, and an alltoall for mixture-of-experts routing.
//
//   tutti-run -n 4 --ranks-per-node 2 -- ./tutti_example_02_nodes     (2 simulated nodes of 2)
//
// hierarchical<Intra, Inter> runs Intra among the ranks of a node and Inter among the ranks with
// the same local index on every node. Nodes come from hostname + boot id, or TUTTI_NODE_ID, which
// tutti-run --ranks-per-node sets to simulate nodes on one host. Every node must hold the same
// number of ranks.
#include <tutti/tutti.hpp>

#include <cstdio>
#include <vector>

int main() {
  namespace algo = tutti::algorithm;
  using comm_t = tutti::communicator<tutti::transport::shm, algo::hierarchical<algo::halving_doubling, algo::ring>>;
  try {
    auto comm = comm_t::from_env();
    const int n = comm.size(), me = comm.rank();

    // Gradient averaging: reduce-scatter inside the node, allreduce across nodes, allgather inside.
    std::vector<float> grads(1000, static_cast<float>(me));
    comm.allreduce(grads, tutti::op::avg);
    bool ok = grads.front() == static_cast<float>(n - 1) / 2.0f && grads.back() == grads.front();

    // Mixture of experts: rank me sends `tokens` values to every expert rank e (block e), tagged
    // with sender and destination, and receives one block from every rank.
    const std::size_t tokens = 4;
    std::vector<int> send(tokens * static_cast<std::size_t>(n)), recv(send.size());
    for (int e = 0; e < n; ++e)
      for (std::size_t t = 0; t < tokens; ++t) send[static_cast<std::size_t>(e) * tokens + t] = 100 * me + e;
    comm.alltoall(send, recv);
    for (int from = 0; from < n; ++from) ok = ok && recv[static_cast<std::size_t>(from) * tokens] == 100 * from + me;

    std::printf("rank %d of %d (node %s): average %.2f, alltoall %s\n", me, n, comm.transport().node_id().c_str(),
                grads[0], ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const tutti::error& e) {  // uneven nodes, for one, are refused here with a clear message
    std::fprintf(stderr, "tutti error: %s\n", e.what());
    return 1;
  }
}
