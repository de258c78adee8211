# Finds tutti's optional backends. For each one found it defines an INTERFACE IMPORTED target that
# links tutti::tutti plus the dependency and defines TUTTI_HAVE_<NAME>=1:
#   tutti::cuda  CUDAToolkit (CUDA::cudart); the CUDA language is not enabled
#   tutti::nccl  nccl.h + libnccl (looked for under NCCL_HOME, NCCL_ROOT, the CUDA toolkit and
#                /usr/local/cuda); links tutti::cuda too, since nccl.h includes cuda_runtime.h
#   tutti::ucx   pkg-config `ucx`, else ucp/api/ucp.h + libucp, libuct, libucs (UCX_HOME, UCX_DIR)
#   tutti::eigen Eigen 3.3+ (find_package(Eigen3 NO_MODULE): Eigen3::Eigen, headers only)
#   tutti::yaml  yaml-cpp (find_package(yaml-cpp): yaml-cpp::yaml-cpp from 0.8, plain yaml-cpp before)
#
# Written once, used twice: cmake/tuttiTargets.cmake includes it in the build tree and the
# installed tuttiConfig.cmake includes it in a consumer, so both see the same targets.
# Expects tutti::tutti to exist. Sets TUTTI_OPTIONAL_BACKENDS_FOUND and
# TUTTI_OPTIONAL_BACKENDS_NOT_FOUND (lists, in the order ucx nccl cuda) and tutti_<name>_FOUND
# (so that find_package(tutti COMPONENTS nccl) can require one).
# With TUTTI_OPTIONAL_TARGETS_GLOBAL set, the targets are GLOBAL: the build tree needs that, so a
# project that add_subdirectory()s tutti sees them from its own directories.

if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)   # FindBoost is gone; irrelevant here but quiets CMake >= 3.30
endif()

if(TUTTI_OPTIONAL_TARGETS_GLOBAL)
  set(_tutti_global GLOBAL)
else()
  set(_tutti_global "")
endif()

# _tutti_define_backend(<name> <LINK items...>) — the one place the targets are made.
function(_tutti_define_backend name)
  string(TOUPPER "${name}" upper)
  if(NOT TARGET tutti::${name})
    add_library(tutti::${name} INTERFACE IMPORTED ${_tutti_global})
    set_target_properties(tutti::${name} PROPERTIES
      INTERFACE_LINK_LIBRARIES "tutti::tutti;${ARGN}"
      INTERFACE_COMPILE_DEFINITIONS "TUTTI_HAVE_${upper}=1")
  endif()
endfunction()

# CMake < 3.24 has no find_package(... GLOBAL): promote the imported targets a backend links,
# recursively, so that a GLOBAL tutti::<name> does not point at targets only this directory sees.
function(_tutti_promote_global target)
  if(NOT TARGET ${target})
    return()
  endif()
  get_target_property(imported ${target} IMPORTED)
  get_target_property(global ${target} IMPORTED_GLOBAL)
  if(imported AND NOT global)
    set_target_properties(${target} PROPERTIES IMPORTED_GLOBAL TRUE)
    get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
    if(deps)
      foreach(dep IN LISTS deps)
        if(dep MATCHES "::" AND NOT dep MATCHES "\\$<")
          _tutti_promote_global(${dep})
        endif()
      endforeach()
    endif()
  endif()
endfunction()

# --- CUDA --------------------------------------------------------------------------------------
set(_tutti_find_global "")
if(_tutti_global AND NOT CMAKE_VERSION VERSION_LESS 3.24)
  set(_tutti_find_global GLOBAL)
endif()
if(NOT CUDAToolkit_FOUND)
  find_package(CUDAToolkit QUIET ${_tutti_find_global})
endif()
set(tutti_cuda_FOUND FALSE)
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
  if(_tutti_global AND NOT _tutti_find_global)
    _tutti_promote_global(CUDA::cudart)
  endif()
  _tutti_define_backend(cuda CUDA::cudart)
  set(tutti_cuda_FOUND TRUE)
endif()

# nvcc and C++20: CMake before 3.26 or so knows no cuda_std_20 for nvcc 12/13 and passes its own
# -std=c++17 after any option a target sets, so tutti's headers (C++20) fail in .cu files. Where the
# calling project has enabled CUDA and its CMake lacks the feature, make the dialect flag CMake
# emits say c++20. A macro: it must set the variables in the caller's scope (find_package() and
# tutti's own top level both include this file there).
macro(tutti_cuda_dialect_fix)
  if(CMAKE_CUDA_COMPILER_LOADED AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
     AND NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    set(CMAKE_CUDA17_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA17_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endmacro()
tutti_cuda_dialect_fix()
if(tutti_cuda_FOUND)
  # Device code calls tutti's constexpr helpers (std::bit_cast through core/host_device.hpp).
  set_property(TARGET tutti::cuda APPEND PROPERTY INTERFACE_COMPILE_OPTIONS
               "$<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>")
  # A consumer that enabled CUDA gets C++20 for its .cu files: cuda_std_20 where CMake knows it;
  # else -std=c++20 itself (CMake 3.25 then passes no -std of its own, since nvcc's default, 17, is
  # all it knows; a target that sets CUDA_STANDARD gets the flag tutti_cuda_dialect_fix() rewrote).
  if(CMAKE_CUDA_COMPILER_LOADED)
    if("cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
      set_property(TARGET tutti::cuda APPEND PROPERTY INTERFACE_COMPILE_FEATURES cuda_std_20)
    elseif(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
      set_property(TARGET tutti::cuda APPEND PROPERTY INTERFACE_COMPILE_OPTIONS
                   "$<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>")
    endif()
  endif()
endif()

# --- NCCL --------------------------------------------------------------------------------------
find_path(TUTTI_NCCL_INCLUDE_DIR nccl.h
  HINTS ENV NCCL_HOME ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS}
  PATHS /usr/local/cuda
  PATH_SUFFIXES include)
find_library(TUTTI_NCCL_LIBRARY nccl
  HINTS ENV NCCL_HOME ENV NCCL_ROOT ${CUDAToolkit_LIBRARY_DIR}
  PATHS /usr/local/cuda
  PATH_SUFFIXES lib lib64)
mark_as_advanced(TUTTI_NCCL_INCLUDE_DIR TUTTI_NCCL_LIBRARY)
set(tutti_nccl_FOUND FALSE)
if(tutti_cuda_FOUND AND TUTTI_NCCL_INCLUDE_DIR AND TUTTI_NCCL_LIBRARY)
  _tutti_define_backend(nccl tutti::cuda "${TUTTI_NCCL_LIBRARY}")
  set_property(TARGET tutti::nccl PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${TUTTI_NCCL_INCLUDE_DIR}")
  set(tutti_nccl_FOUND TRUE)
endif()

# --- UCX ---------------------------------------------------------------------------------------
set(tutti_ucx_FOUND FALSE)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  set(_tutti_pc_global "")
  if(_tutti_global)
    set(_tutti_pc_global GLOBAL)
  endif()
  pkg_check_modules(TUTTI_UCX QUIET IMPORTED_TARGET ${_tutti_pc_global} ucx)
  if(TUTTI_UCX_FOUND AND TARGET PkgConfig::TUTTI_UCX)
    _tutti_define_backend(ucx PkgConfig::TUTTI_UCX)
    set(tutti_ucx_FOUND TRUE)
  endif()
endif()
if(NOT tutti_ucx_FOUND)
  find_path(TUTTI_UCX_INCLUDE_DIR ucp/api/ucp.h HINTS ENV UCX_HOME ENV UCX_DIR PATH_SUFFIXES include)
  foreach(_tutti_lib ucp uct ucs)
    string(TOUPPER ${_tutti_lib} _tutti_LIB)
    find_library(TUTTI_${_tutti_LIB}_LIBRARY ${_tutti_lib}
      HINTS ENV UCX_HOME ENV UCX_DIR PATH_SUFFIXES lib lib64)
    mark_as_advanced(TUTTI_${_tutti_LIB}_LIBRARY)
  endforeach()
  mark_as_advanced(TUTTI_UCX_INCLUDE_DIR)
  if(TUTTI_UCX_INCLUDE_DIR AND TUTTI_UCP_LIBRARY AND TUTTI_UCT_LIBRARY AND TUTTI_UCS_LIBRARY)
    _tutti_define_backend(ucx "${TUTTI_UCP_LIBRARY}" "${TUTTI_UCT_LIBRARY}" "${TUTTI_UCS_LIBRARY}")
    set_property(TARGET tutti::ucx PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${TUTTI_UCX_INCLUDE_DIR}")
    set(tutti_ucx_FOUND TRUE)
  endif()
endif()

# --- summary -----------------------------------------------------------------------------------
set(TUTTI_OPTIONAL_BACKENDS_FOUND "")
set(TUTTI_OPTIONAL_BACKENDS_NOT_FOUND "")
foreach(_tutti_backend ucx nccl cuda)
  if(tutti_${_tutti_backend}_FOUND)
    list(APPEND TUTTI_OPTIONAL_BACKENDS_FOUND ${_tutti_backend})
  else()
    list(APPEND TUTTI_OPTIONAL_BACKENDS_NOT_FOUND ${_tutti_backend})
  endif()
endforeach()
unset(_tutti_backend)
unset(_tutti_lib)
unset(_tutti_LIB)
unset(_tutti_find_global)
unset(_tutti_pc_global)

# --- net (helper "store", issue 8): tutti::net = tutti::tutti + OpenSSL::Crypto + Threads --------
# What the authenticated tcp_store (bootstrap/tcp_store.hpp) and the job key need: libcrypto for
# HMAC-SHA256, RAND_bytes and OPENSSL_cleanse, and a thread for the server. Defines TUTTI_HAVE_NET=1.
# Kept after the summary above and self-contained (it appends itself to the summary lists).
set(tutti_net_FOUND FALSE)
set(_tutti_net_global "")
if(TUTTI_OPTIONAL_TARGETS_GLOBAL AND NOT CMAKE_VERSION VERSION_LESS 3.24)
  set(_tutti_net_global GLOBAL)
endif()
if(NOT TARGET OpenSSL::Crypto)
  find_package(OpenSSL COMPONENTS Crypto QUIET ${_tutti_net_global})
endif()
if(NOT TARGET Threads::Threads)
  set(THREADS_PREFER_PTHREAD_FLAG ON)
  find_package(Threads QUIET)
endif()
if(TARGET OpenSSL::Crypto AND TARGET Threads::Threads)
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL AND NOT _tutti_net_global)
    _tutti_promote_global(OpenSSL::Crypto)
  endif()
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL)
    _tutti_promote_global(Threads::Threads)
  endif()
  _tutti_define_backend(net OpenSSL::Crypto Threads::Threads)
  set(tutti_net_FOUND TRUE)
  list(APPEND TUTTI_OPTIONAL_BACKENDS_FOUND net)
else()
  list(APPEND TUTTI_OPTIONAL_BACKENDS_NOT_FOUND net)
endif()
unset(_tutti_net_global)

# --- pmix (issue 8): tutti::pmix = tutti::net + libpmix (pkg-config `pmix`) ----------------------
# The rendezvous under mpirun and srun --mpi=pmix with no variable set (bootstrap/pmix.hpp,
# bootstrap/pmix_rendezvous.hpp). Defines TUTTI_HAVE_PMIX=1. Self-contained like net above.
set(tutti_pmix_FOUND FALSE)
if(TARGET tutti::net)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    if(TUTTI_OPTIONAL_TARGETS_GLOBAL)
      pkg_check_modules(TUTTI_PMIX QUIET IMPORTED_TARGET GLOBAL pmix)
    else()
      pkg_check_modules(TUTTI_PMIX QUIET IMPORTED_TARGET pmix)
    endif()
  endif()
  if(TARGET PkgConfig::TUTTI_PMIX)
    _tutti_define_backend(pmix tutti::net PkgConfig::TUTTI_PMIX)
  endif()
  if(TARGET tutti::pmix)
    set(tutti_pmix_FOUND TRUE)
  endif()
endif()
if(tutti_pmix_FOUND)
  list(APPEND TUTTI_OPTIONAL_BACKENDS_FOUND pmix)
else()
  list(APPEND TUTTI_OPTIONAL_BACKENDS_NOT_FOUND pmix)
endif()

# --- eigen: tutti::eigen = tutti::tutti + Eigen3::Eigen ------------------------------------------
# Headers only: the Gaussian process of fusion/bayesian_optimizer.hpp (Cholesky, triangular
# solves). Defines TUTTI_HAVE_EIGEN=1. Self-contained like net above.
set(tutti_eigen_FOUND FALSE)
if(NOT TARGET Eigen3::Eigen)
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL AND NOT CMAKE_VERSION VERSION_LESS 3.24)
    find_package(Eigen3 3.3 QUIET NO_MODULE GLOBAL)
  else()
    find_package(Eigen3 3.3 QUIET NO_MODULE)
  endif()
endif()
if(TARGET Eigen3::Eigen)
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL)
    _tutti_promote_global(Eigen3::Eigen)
  endif()
  _tutti_define_backend(eigen Eigen3::Eigen)
  set(tutti_eigen_FOUND TRUE)
  list(APPEND TUTTI_OPTIONAL_BACKENDS_FOUND eigen)
else()
  list(APPEND TUTTI_OPTIONAL_BACKENDS_NOT_FOUND eigen)
endif()

# --- yaml: tutti::yaml = tutti::tutti + yaml-cpp ---------------------------------------------------
# Reads Determined-style experiment files (trainer/config.hpp). yaml-cpp 0.8 names its target
# yaml-cpp::yaml-cpp and keeps yaml-cpp as a deprecated alias; 0.7 (Debian 12) has only yaml-cpp.
# Defines TUTTI_HAVE_YAML=1. Self-contained like net above.
set(tutti_yaml_FOUND FALSE)
if(NOT TARGET yaml-cpp::yaml-cpp AND NOT TARGET yaml-cpp)
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL AND NOT CMAKE_VERSION VERSION_LESS 3.24)
    find_package(yaml-cpp QUIET GLOBAL)
  else()
    find_package(yaml-cpp QUIET)
  endif()
endif()
set(_tutti_yaml_target "")
if(TARGET yaml-cpp::yaml-cpp)
  set(_tutti_yaml_target yaml-cpp::yaml-cpp)
elseif(TARGET yaml-cpp)
  set(_tutti_yaml_target yaml-cpp)
endif()
if(_tutti_yaml_target)
  if(TUTTI_OPTIONAL_TARGETS_GLOBAL)
    _tutti_promote_global(${_tutti_yaml_target})
  endif()
  _tutti_define_backend(yaml ${_tutti_yaml_target})
  set(tutti_yaml_FOUND TRUE)
  list(APPEND TUTTI_OPTIONAL_BACKENDS_FOUND yaml)
else()
  list(APPEND TUTTI_OPTIONAL_BACKENDS_NOT_FOUND yaml)
endif()
unset(_tutti_yaml_target)
unset(_tutti_global)
