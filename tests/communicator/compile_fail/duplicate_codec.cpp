// Two Codecs: the role is named as duplicated.
#include <tutti/tutti.hpp>
tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::codec::none, tutti::codec::none>* p = nullptr;
static_assert(sizeof(*p) > 0);
