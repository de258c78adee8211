// Something that is no communicator at all: the first thing it lacks, in one sentence.
#include "fakes.hpp"
static_assert(sizeof(tutti::trainer::data_parallel_trainer<int, fakes::model, fakes::optimizer>) > 0);
