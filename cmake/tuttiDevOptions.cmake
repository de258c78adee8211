# tutti_dev_options: what tutti's own tests, examples and benchmarks compile with (never exported).
# Warnings on; and when no build type is chosen, -O2 rather than -O0, because the suites push large
# element counts through the reduction loops.
add_library(tutti_dev_options INTERFACE)
target_compile_options(tutti_dev_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall;-Wextra;-Wpedantic>
  $<$<AND:$<CXX_COMPILER_ID:GNU,Clang,AppleClang>,$<CONFIG:>>:-O2>)
