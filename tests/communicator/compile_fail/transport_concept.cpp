// A class that claims the Transport role but lacks its operations names the concept it misses.
#include <tutti/tutti.hpp>
struct half_a_transport {
  using tutti_role = tutti::role::transport;
  struct request {};
  int rank() const { return 0; }
};
tutti::communicator<half_a_transport, tutti::algorithm::ring>* p = nullptr;
static_assert(sizeof(*p) > 0);
