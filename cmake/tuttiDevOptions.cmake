# tutti_dev_options: what tutti's own tests, examples and benchmarks compile with (never exported).
# Warnings on; and when no build type is chosen, -O2 rather than -O0, because the suites push large
# element counts through the reduction loops.
add_library(tutti_dev_options INTERFACE)
target_compile_options(tutti_dev_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall;-Wextra;-Wpedantic>
  $<$<AND:$<CXX_COMPILER_ID:GNU,Clang,AppleClang>,$<CONFIG:>>:-O2>)

# tutti_program_options: tutti's programs that tests run but that are not tests themselves
# (tutti-bench, tutti-tune, examples 00-02). TUTTI_PROGRAM_OPTIMIZATION comes after the build type's
# flags; tools/run-tests.sh sets -Og (tutti-bench compiles in 59 s instead of ~130 s at -O2 on 2
# cores; the tests check what the programs do, not how fast), tools/run-bench.sh and
# run-training.sh clear it. It applies only in a build of the test suite (TUTTI_BUILD_TESTS): a
# configure that installs (the README's recipe: tests off) builds the programs with the build
# type's flags alone, whatever an earlier run-tests.sh cached. Not the training example (its tests
# train: -O2 keeps them quick) nor tutti-run (seconds to build).
set(TUTTI_PROGRAM_OPTIMIZATION "" CACHE STRING
    "compile options of tutti-bench, tutti-tune and the small examples in a test build (e.g. -Og)")
add_library(tutti_program_options INTERFACE)
if(TUTTI_BUILD_TESTS)
  target_compile_options(tutti_program_options INTERFACE ${TUTTI_PROGRAM_OPTIMIZATION})
endif()
