// A communicator without a Transport names the missing role.
#include <tutti/tutti.hpp>
tutti::communicator<tutti::algorithm::ring>* p = nullptr;
static_assert(sizeof(*p) > 0);
