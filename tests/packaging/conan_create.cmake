# cmake -DSOURCE_DIR=<tutti sources> -DCONAN_HOME=<dir> -DTEST_BUILD_DIR=<dir> -DCMAKE_PROGRAM=<cmake>
#       -P conan_create.cmake
# `conan create` of tutti's recipe (which runs test_package/), in a Conan home of its own so that
# neither the user's ~/.conan2 nor its profiles play a part. Conan builds with CMAKE_PROGRAM, the
# cmake that configured this build, and never asks a remote (no network here: Boost comes from the
# system). test_package/ builds under the tree's build/ (its layout()); afterwards test_package/
# must hold exactly its three sources: `conan create .` leaves nothing untracked in the tree.
# Skipped (exit 77 / "TUTTI_SKIP:") when conan is not on PATH.
find_program(CONAN_PROGRAM conan)
if(NOT CONAN_PROGRAM)
  message("TUTTI_SKIP: conan is not on PATH (python3 -m pip install conan); not testing the recipe")
  if(NOT CMAKE_VERSION VERSION_LESS 3.29)
    cmake_language(EXIT 77)
  endif()
  return()
endif()

set(ENV{CONAN_HOME} "${CONAN_HOME}")
function(conan)
  list(JOIN ARGN " " shown)
  message(STATUS "conan ${shown}")
  execute_process(COMMAND "${CONAN_PROGRAM}" ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "conan ${shown} failed (${rc}); CONAN_HOME=${CONAN_HOME}")
  endif()
endfunction()


conan(profile detect --exist-ok)
conan(create "${SOURCE_DIR}" --build=missing --no-remote
      -s compiler.cppstd=20
      -c "tools.cmake:cmake_program=${CMAKE_PROGRAM}"
      -c tools.build:jobs=2)

file(GLOB_RECURSE left RELATIVE "${SOURCE_DIR}/test_package" "${SOURCE_DIR}/test_package/*")
list(SORT left)
if(NOT left STREQUAL "CMakeLists.txt;conanfile.py;main.cpp")
  message(FATAL_ERROR "conan create left files in test_package/: ${left}")
endif()
