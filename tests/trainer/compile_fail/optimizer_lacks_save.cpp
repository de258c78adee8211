// An optimiser that cannot save its state cannot be checkpointed: refused naming save and load.
#include "fakes.hpp"
struct stateless_sgd {
  void step(std::span<const tutti::trainer::parameter>, double) {}
};
static_assert(sizeof(tutti::trainer::data_parallel_trainer<fakes::communicator<>, fakes::model, stateless_sgd>) > 0);
