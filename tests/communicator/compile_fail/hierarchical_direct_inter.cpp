// direct needs a one-sided transport; hierarchical gives Inter a two-sided group view, so
// hierarchical<ring, direct> is refused at compile time in a sentence saying what to use instead.
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::shm, tutti::algorithm::hierarchical<tutti::algorithm::ring, tutti::algorithm::direct>>& c) {
  std::vector<float> v(4);
  c.allreduce(v, tutti::op::sum);
}
