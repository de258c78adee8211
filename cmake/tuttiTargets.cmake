# Defines tutti::tutti (always) and the optional tutti::ucx, tutti::nccl, tutti::cuda targets
# (only where their dependency is found), and the install/export rules.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)   # header-only use: Hana

add_library(tutti INTERFACE)
add_library(tutti::tutti ALIAS tutti)
target_compile_features(tutti INTERFACE cxx_std_20)
target_include_directories(tutti INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(tutti INTERFACE Boost::boost Threads::Threads)
