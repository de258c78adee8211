//! @file
//! First of two translation units that include the umbrella header; see odr_main.cpp.
#include <tutti/tutti.hpp>

const char* const* tutti_version_seen_by_a() { return &tutti::version; }
