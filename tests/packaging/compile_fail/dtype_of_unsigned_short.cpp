// Must not compile: tutti has no unsigned 16-bit dtype; the diagnostic names the C++ type that was
// refused. Registered by tests/packaging/CMakeLists.txt with tutti_add_compile_fail_test().
#include <tutti/core/dtype.hpp>

auto unsupported = tutti::dtype_of<unsigned short>;
