// Must not compile: long double is not an element type tutti carries, and dtype_of says so.
// Registered by tests/packaging/CMakeLists.txt with tutti_add_compile_fail_test().
#include <tutti/core/dtype.hpp>

auto unsupported = tutti::dtype_of<long double>;
