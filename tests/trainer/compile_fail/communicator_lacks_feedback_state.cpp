// With an error-feedback codec (topk) the trainer checkpoints the residuals: a communicator that
// cannot hand them over is refused naming the two calls.
#include <tutti/codec/topk.hpp>

#include "fakes.hpp"
static_assert(sizeof(tutti::trainer::data_parallel_trainer<fakes::communicator<tutti::codec::topk>, fakes::model,
                                                           fakes::optimizer>) > 0);
