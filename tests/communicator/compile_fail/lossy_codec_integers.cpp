// A lossy codec carries float only: integers are refused at compile time where the type is known.
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::codec::int8>& c) {
  std::vector<int> counts(16);
  c.allreduce(counts, tutti::op::sum);
}
