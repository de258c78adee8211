// A host-memory algorithm over transport::nccl (device memory) is refused by the communicator.
#include <tutti/tutti.hpp>
#include <tutti/transport/nccl.hpp>
tutti::communicator<tutti::transport::nccl, tutti::algorithm::ring>* p = nullptr;
static_assert(sizeof(*p) > 0);
