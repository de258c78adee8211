// Error-feedback codecs (topk, onebit) are not carried over NCCL: one sentence, even from g++.
#include <tutti/tutti.hpp>
#include <tutti/algorithm/native.hpp>
#include <tutti/transport/nccl.hpp>
void f(tutti::communicator<tutti::transport::nccl, tutti::algorithm::native, tutti::codec::topk>& comm, float* grads,
       tutti::error_feedback& feedback) {
  comm.allreduce(tutti::tensor_view(std::span(grads, 16)), tutti::op::sum, feedback);
}
