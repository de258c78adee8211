// algorithm::tree has no allgather by design: calling it is a compile-time error naming the
// collective, and the diagnostic's context names the algorithm.
#include <tutti/algorithm/tree.hpp>
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::tree>& c) {
  std::vector<float> in(4), out(4 * static_cast<std::size_t>(c.size()));
  c.allgather(in, out);
}
