# The CUDA language for tutti's own kernels' tests, examples and benchmarks (never for users: a
# consumer enables CUDA itself and find_package(tutti) then fixes the dialect, see
# tuttiOptionalDeps.cmake). Sets TUTTI_CUDA_ENABLED (ON when nvcc was found and works).
#
#   TUTTI_CUDA          ON (default) looks for nvcc; OFF builds no .cu file at all.
#   TUTTI_CUDA_ARCHITECTURES  what .cu files are compiled for. Default "80;90;100" (A100, H100,
#                       B200): explicit, because CMake 3.25's default for nvcc 13 is an architecture
#                       CUDA 13 no longer supports. CI's test build passes 80 alone (three
#                       architectures triple nvcc's time on two cores; the code is the same).
option(TUTTI_CUDA "Compile tutti's CUDA kernels' tests and benchmarks when nvcc is found" ON)
set(TUTTI_CUDA_ARCHITECTURES "80;90;100" CACHE STRING "CUDA architectures tutti's .cu files are built for")
set(TUTTI_CUDA_ENABLED OFF)
if(TUTTI_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc")
  endif()
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    # check_language() and enable_language() compile a test program: give them a supported target.
    set(CMAKE_CUDA_ARCHITECTURES ${TUTTI_CUDA_ARCHITECTURES})
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(TUTTI_CUDA_ENABLED ON)
    tutti_cuda_dialect_fix()
    message(STATUS "tutti: CUDA kernels' tests and benchmarks built with ${CMAKE_CUDA_COMPILER} "
                   "${CMAKE_CUDA_COMPILER_VERSION} for architectures ${TUTTI_CUDA_ARCHITECTURES}")
  else()
    message(STATUS "tutti: no working nvcc: the CUDA kernels' tests are not built (host-side tests still are)")
  endif()
endif()

# tutti_cuda_target(<target>): a target with .cu sources that include tutti's kernels.
# C++20 for nvcc: where CMake knows no cuda_std_20 (3.25), a target without a CUDA_STANDARD gets no
# -std at all (nvcc's default is C++17), so it asks for 17, the option tutti_cuda_dialect_fix()
# rewrote to -std=c++20.
function(tutti_cuda_target target)
  if("cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    set(standard 20)
  else()
    set(standard 17)
  endif()
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${TUTTI_CUDA_ARCHITECTURES}"
                        CUDA_STANDARD ${standard} CUDA_STANDARD_REQUIRED ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
endfunction()
