// native_wire_sum lets NCCL add 16-bit floats: int8's per-block scales cannot be added, one sentence.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/native.hpp>
#include <tutti/transport/nccl.hpp>
void f(tutti::communicator<tutti::transport::nccl, tutti::algorithm::native_wire_sum, tutti::codec::int8>& comm,
       float* grads) {
  comm.allreduce(tutti::tensor_view(std::span(grads, 16)), tutti::op::sum);
}
