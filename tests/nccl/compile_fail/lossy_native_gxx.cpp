// A lossy codec over native runs CUDA kernels: from a translation unit g++ compiles, one sentence.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/native.hpp>
#include <tutti/transport/nccl.hpp>
void f(tutti::communicator<tutti::transport::nccl, tutti::algorithm::native, tutti::codec::fp16>& comm, float* grads) {
  comm.allreduce(tutti::tensor_view(std::span(grads, 16)), tutti::op::avg);
}
