// topk needs the tensor's error feedback: allreduce without it does not compile, naming the codec.
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::codec::topk>& c) {
  std::vector<float> grads(1000);
  c.allreduce(grads, tutti::op::avg);
}
