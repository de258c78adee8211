# Defines tutti::tutti (always) and the optional tutti::ucx, tutti::nccl, tutti::cuda targets
# (only where their dependency is found), and the install/export rules.
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)   # use Boost's own BoostConfig.cmake (FindBoost is deprecated)
endif()
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
set_target_properties(tutti PROPERTIES EXPORT_NAME tutti)

# include/tutti/version.hpp must say what project(VERSION) says (conanfile.py reads the latter).
set(_tutti_version_header "${CMAKE_CURRENT_SOURCE_DIR}/include/tutti/version.hpp")
if(EXISTS "${_tutti_version_header}")
  file(STRINGS "${_tutti_version_header}" _tutti_version_lines
       REGEX "^#define TUTTI_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(_tutti_header_version "")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "TUTTI_VERSION_${_part} +([0-9]+)" _ "${_tutti_version_lines}")
    list(APPEND _tutti_header_version "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN _tutti_header_version "." _tutti_header_version)
  if(NOT _tutti_header_version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "tutti: include/tutti/version.hpp says ${_tutti_header_version} but "
                        "CMakeLists.txt project(VERSION) says ${PROJECT_VERSION}; keep them equal")
  endif()
endif()

# Optional backends; GLOBAL so that a parent project using add_subdirectory(tutti) sees them.
set(TUTTI_OPTIONAL_TARGETS_GLOBAL ON)
include("${CMAKE_CURRENT_LIST_DIR}/tuttiOptionalDeps.cmake")
unset(TUTTI_OPTIONAL_TARGETS_GLOBAL)
# One line per optional library: found or not, its target, and what it enables in tutti today.
# Keep the feature texts true as features land (issue 13): a target that enables nothing says so.
set(_tutti_feature_net "OpenSSL libcrypto -> tutti::net: bootstrap::tcp_store (authenticated rendezvous store)")
set(_tutti_feature_ucx "UCX -> tutti::ucx: transport::ucx; with tutti::net, transport::multi_node (shm + UCX across hosts)")
set(_tutti_feature_pmix "PMIx -> tutti::pmix: rendezvous under mpirun / srun --mpi=pmix with no variable set")
set(_tutti_feature_cuda "CUDA runtime -> tutti::cuda: the multi-tensor pack/unpack, decode-reduce and int8 kernels (tutti/cuda/*.cuh, compiled by your nvcc)")
set(_tutti_feature_nccl "NCCL -> tutti::nccl: transport::nccl and algorithm::native (GPU collectives)")
set(_tutti_feature_eigen "Eigen 3 -> tutti::eigen: fusion::autotuned (Bayesian optimisation of fusion threshold and cycle time)")
set(_tutti_feature_yaml "yaml-cpp -> tutti::yaml: trainer::experiment_config (Determined-style YAML)")
message(STATUS "tutti ${PROJECT_VERSION}: optional libraries, and the tutti features they enable:")
foreach(_tutti_b net ucx pmix eigen yaml cuda nccl)
  if(_tutti_b IN_LIST TUTTI_OPTIONAL_BACKENDS_FOUND)
    message(STATUS "  found     ${_tutti_feature_${_tutti_b}}")
  else()
    message(STATUS "  not found ${_tutti_feature_${_tutti_b}}")
  endif()
endforeach()
unset(_tutti_b)

# --- install -----------------------------------------------------------------------------------
# Everything a consumer of the headers needs is in the component tutti_development; header-only,
# so the package lives under share/ (architecture independent).
include(CMakePackageConfigHelpers)
set(TUTTI_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/tutti"
    CACHE STRING "Where tuttiConfig.cmake is installed, relative to the prefix")
mark_as_advanced(TUTTI_INSTALL_CMAKEDIR)

install(TARGETS tutti EXPORT tutti-targets COMPONENT tutti_development)
install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/include/tutti"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT tutti_development)
install(EXPORT tutti-targets NAMESPACE tutti:: FILE tutti-targets.cmake
        DESTINATION "${TUTTI_INSTALL_CMAKEDIR}" COMPONENT tutti_development)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/tuttiConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/tuttiConfig.cmake"
  INSTALL_DESTINATION "${TUTTI_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/tuttiConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/tuttiConfig.cmake"
              "${PROJECT_BINARY_DIR}/tuttiConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/tuttiOptionalDeps.cmake"
        DESTINATION "${TUTTI_INSTALL_CMAKEDIR}" COMPONENT tutti_development)
