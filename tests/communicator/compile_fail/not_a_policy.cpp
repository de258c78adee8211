// A type that is no policy at all is refused, and named in the diagnostic.
#include <tutti/tutti.hpp>
struct my_settings {};
tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, my_settings>* p = nullptr;
static_assert(sizeof(*p) > 0);
