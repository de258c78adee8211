// Two Transports: the role is named as duplicated.
#include <tutti/tutti.hpp>
tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::transport::inproc>* p = nullptr;
static_assert(sizeof(*p) > 0);
