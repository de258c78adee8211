// fp16 has no error feedback: passing one is refused rather than silently ignored.
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::codec::fp16>& c) {
  std::vector<float> grads(1000);
  tutti::error_feedback feedback;
  c.allreduce(grads, tutti::op::avg, feedback);
}
