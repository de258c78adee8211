// The fusion engine packs on the host: allreduce_async over transport::nccl is refused.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/native.hpp>
#include <tutti/transport/nccl.hpp>
void f(tutti::communicator<tutti::transport::nccl, tutti::algorithm::native>& comm, float* grads) {
  auto h = comm.allreduce_async("w", tutti::tensor_view(std::span(grads, 16)), tutti::op::sum);
}
