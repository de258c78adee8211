# cmake -DSOURCE_DIR=<tutti sources> -DWORK_DIR=<scratch dir> -P readme_install.cmake
# The README's install recipe, followed literally: the ```sh block after "**Install**" is read from
# README.md and each command run from SOURCE_DIR, with only its build directory (`build`) and its
# prefix (`/opt/tutti`) moved into WORK_DIR. Then the build must be optimised and the install must
# hold the headers, the CMake package and tutti-run. Also: installing a configured but unbuilt tree
# must say to build first.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(READ "${SOURCE_DIR}/README.md" readme)
string(FIND "${readme}" "**Install**" at)
if(at LESS 0)
  message(FATAL_ERROR "README.md has no **Install** section")
endif()
string(SUBSTRING "${readme}" ${at} -1 readme)
if(NOT readme MATCHES "```sh\n([^`]*)```")
  message(FATAL_ERROR "README.md's install section has no ```sh block")
endif()
string(REPLACE "\n" ";" commands "${CMAKE_MATCH_1}")

function(run_line line)
  string(REGEX REPLACE "[ ]+#.*$" "" line "${line}")  # trailing comments
  string(STRIP "${line}" line)
  if(line STREQUAL "")
    return()
  endif()
  string(REPLACE " build" " ${WORK_DIR}/build" line " ${line}")
  string(REPLACE "/opt/tutti" "${WORK_DIR}/prefix" line "${line}")
  string(STRIP "${line}" line)
  message(STATUS "README: ${line}")
  execute_process(COMMAND sh -c "${line}" WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(last_output "${out}" PARENT_SCOPE)
  set(last_rc "${rc}" PARENT_SCOPE)
endfunction()

set(ran 0)
foreach(line IN LISTS commands)
  run_line("${line}")
  if(DEFINED last_rc)
    math(EXPR ran "${ran} + 1")
    if(NOT last_rc EQUAL 0)
      message(FATAL_ERROR "the README's install command failed (${last_rc}):\n${last_output}")
    endif()
    unset(last_rc)
  endif()
endforeach()
if(ran LESS 3)
  message(FATAL_ERROR "the README's install block has ${ran} commands, expected configure, build, install")
endif()
# tutti-run is a program users run: the recipe must build it optimised (a configure with no build
# type compiles without -O; issue 18).
file(STRINGS "${WORK_DIR}/build/CMakeCache.txt" build_type REGEX "^CMAKE_BUILD_TYPE:")
if(NOT build_type MATCHES "=(Release|RelWithDebInfo|MinSizeRel)$")
  message(FATAL_ERROR "the README's install recipe builds tutti-run without optimisation ('${build_type}'): "
                      "its configure command must choose -DCMAKE_BUILD_TYPE=Release")
endif()
foreach(file bin/tutti-run include/tutti/tutti.hpp share/cmake/tutti/tuttiConfig.cmake)
  if(NOT EXISTS "${WORK_DIR}/prefix/${file}")
    message(FATAL_ERROR "following the README, the install lacks ${file}")
  endif()
endforeach()

# Configured, not built: the install refuses, saying what to run.
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/unbuilt" -DTUTTI_BUILD_TESTS=OFF
                        -DTUTTI_BUILD_EXAMPLES=OFF -DTUTTI_BUILD_BENCH=OFF
                OUTPUT_QUIET RESULT_VARIABLE rc)
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${WORK_DIR}/unbuilt" --prefix "${WORK_DIR}/unbuilt-prefix"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "tutti-run is not built yet: run 'cmake --build")
  message(FATAL_ERROR "installing an unbuilt tree did not say to build first (${rc}):\n${out}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "the README's install recipe works")
