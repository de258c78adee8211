# Included by the tutti-config.cmake that Conan's CMakeDeps writes (package_info's
# cmake_build_modules), after it has made tutti::tutti. Adds what package_info cannot say:
# Boost and Threads come from the system, not from Conan; C++20; and the optional backends,
# detected the same way as for find_package() of a CMake install.
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
set_property(TARGET tutti::tutti APPEND PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_20)
set_property(TARGET tutti::tutti APPEND PROPERTY INTERFACE_LINK_LIBRARIES Boost::boost Threads::Threads)
include("${CMAKE_CURRENT_LIST_DIR}/tuttiOptionalDeps.cmake")
