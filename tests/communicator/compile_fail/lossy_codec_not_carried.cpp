// algorithm::tree sums partial results at every level of its trees: it cannot carry a lossy codec,
// and allreduce says so at compile time, naming the algorithm and the codec.
#include <tutti/algorithm/tree.hpp>
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::tree, tutti::codec::fp16>& c) {
  std::vector<float> grads(16);
  c.allreduce(grads, tutti::op::avg);
}
