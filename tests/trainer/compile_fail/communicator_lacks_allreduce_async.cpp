// A communicator without allreduce_async (the fusion engine) is refused naming that call.
#include "fakes.hpp"
struct no_fusion {
  using codec_type = tutti::codec::none;
  int rank() const { return 0; }
  int size() const { return 1; }
  void broadcast(tutti::tensor_view, int) {}
  void barrier() {}
};
static_assert(sizeof(tutti::trainer::data_parallel_trainer<no_fusion, fakes::model, fakes::optimizer>) > 0);
