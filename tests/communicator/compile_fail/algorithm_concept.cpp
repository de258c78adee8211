// A class that claims the Algorithm role without a name names the concept it misses.
#include <tutti/tutti.hpp>
struct nameless { using tutti_role = tutti::role::algorithm; };
tutti::communicator<tutti::transport::inproc, nameless>* p = nullptr;
static_assert(sizeof(*p) > 0);
