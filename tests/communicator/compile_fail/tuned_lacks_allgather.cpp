// algorithm::tuned<A...> has a collective when one of its candidates has it: tuned<tree> has no
// allgather, a compile-time error naming the collective, whose list of algorithms that have it
// offers tuned<A...> (it is listed like the others, core/listed.hpp).
#include <tutti/algorithm/tree.hpp>
#include <tutti/algorithm/tuned.hpp>
#include <tutti/tutti.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::tuned<tutti::algorithm::tree>>& c) {
  std::vector<float> in(4), out(4 * static_cast<std::size_t>(c.size()));
  c.allgather(in, out);
}
