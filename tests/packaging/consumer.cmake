# cmake -DSOURCE_DIR=... -DBINARY_DIR=... -DGENERATOR=... -DCXX_COMPILER=... -DBUILD_TYPE=...
#       -DRUN=<exe>[,<exe>...] -DEXPECTED_OUTPUT=<regex> [-DEXPECTED_BACKENDS=a,b]
#       [-DPREFIX_PATH=... -DEXPECTED_TUTTI_DIR_PREFIX=...] [-DTUTTI_SOURCE_DIR=...]
#       [-DCUDA_COMPILER=nvcc -DCUDA_ARCHITECTURES=80] [-DOPTIMIZATION=-Og]
#       -P consumer.cmake
# Configures, builds and runs a consumer project from scratch, as a user of tutti would.

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " shown)
    message(FATAL_ERROR "${what} failed (${rc}):\n  ${shown}")
  endif()
endfunction()

file(REMOVE_RECURSE "${BINARY_DIR}")
set(configure_args
  -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  "-DTUTTI_EXPECTED_BACKENDS=${EXPECTED_BACKENDS}"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(PREFIX_PATH)
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}")
endif()
if(TUTTI_SOURCE_DIR)
  list(APPEND configure_args "-DTUTTI_SOURCE_DIR=${TUTTI_SOURCE_DIR}")
endif()
if(OPTIMIZATION AND BUILD_TYPE)  # in place of the build type's optimisation flags (-O3 for Release)
  string(TOUPPER "${BUILD_TYPE}" upper)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS_${upper}=${OPTIMIZATION} -DNDEBUG")
endif()
if(CUDA_COMPILER)  # the consumer also builds its CUDA program (find_package/cuda_main.cu)
  list(APPEND configure_args -DTUTTI_CONSUMER_CUDA=ON "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}"
       "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
endif()
step("configure" "${CMAKE_COMMAND}" ${configure_args})

if(EXPECTED_TUTTI_DIR_PREFIX)
  # The consumer must have found the install, not some other tutti on the machine.
  file(STRINGS "${BINARY_DIR}/CMakeCache.txt" tutti_dir REGEX "^tutti_DIR:")
  string(REGEX REPLACE "^tutti_DIR:[A-Z]+=" "" tutti_dir "${tutti_dir}")
  string(FIND "${tutti_dir}" "${EXPECTED_TUTTI_DIR_PREFIX}" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "found tutti at '${tutti_dir}', expected under '${EXPECTED_TUTTI_DIR_PREFIX}'")
  endif()
endif()

step("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --config "${BUILD_TYPE}")

string(REPLACE "," ";" executables "${RUN}")
foreach(exe IN LISTS executables)
  set(path "${BINARY_DIR}/${exe}")
  if(NOT EXISTS "${path}" AND EXISTS "${BINARY_DIR}/${BUILD_TYPE}/${exe}")
    set(path "${BINARY_DIR}/${BUILD_TYPE}/${exe}")   # multi-config generators
  endif()
  execute_process(COMMAND "${path}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${exe}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${exe} exited with ${rc}")
  endif()
  if(NOT out MATCHES "${EXPECTED_OUTPUT}")
    message(FATAL_ERROR "${exe} printed '${out}', expected a match of '${EXPECTED_OUTPUT}'")
  endif()
endforeach()
