// A communicator without an Algorithm names the missing role.
#include <tutti/tutti.hpp>
tutti::communicator<tutti::transport::inproc>* p = nullptr;
static_assert(sizeof(*p) > 0);
