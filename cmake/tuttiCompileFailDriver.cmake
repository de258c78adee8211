# cmake -DTUTTI_CF_ARGS=<file> -P tuttiCompileFailDriver.cmake
# Driver of tutti_add_compile_fail_test() (cmake/tuttiCompileFail.cmake): compiles the source and
# succeeds only if the compiler fails AND its output matches the expected regular expression.
include("${TUTTI_CF_ARGS}")

execute_process(
  COMMAND "${TUTTI_CF_COMPILER}" ${TUTTI_CF_FLAGS} "${TUTTI_CF_SOURCE}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
list(JOIN TUTTI_CF_FLAGS " " flags_shown)
set(command_shown "${TUTTI_CF_COMPILER} ${flags_shown} ${TUTTI_CF_SOURCE}")

if(rc EQUAL 0)
  message(FATAL_ERROR "${TUTTI_CF_NAME}: compiled, but it must not.\n  ${command_shown}\n${output}")
endif()
if(NOT output MATCHES "${TUTTI_CF_REGEX}")
  message(FATAL_ERROR "${TUTTI_CF_NAME}: failed to compile as expected (exit ${rc}), but the "
                      "diagnostics do not match the regex\n  ${TUTTI_CF_REGEX}\n"
                      "  ${command_shown}\n${output}")
endif()
foreach(also IN LISTS TUTTI_CF_ALSO)
  if(NOT output MATCHES "${also}")
    message(FATAL_ERROR "${TUTTI_CF_NAME}: failed to compile with the expected message, but the "
                        "diagnostics do not also match\n  ${also}\n  ${command_shown}\n${output}")
  endif()
endforeach()
string(REGEX MATCH "${TUTTI_CF_REGEX}" matched "${output}")
message(STATUS "${TUTTI_CF_NAME}: failed to compile, as it must (matched \"${matched}\")")
