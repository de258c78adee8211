// algorithm::native hands collectives to NCCL: over another transport it is one sentence.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/native.hpp>
#include <vector>
void f(tutti::communicator<tutti::transport::inproc, tutti::algorithm::native>& comm, std::vector<float>& v) {
  comm.allreduce(v, tutti::op::sum);
}
