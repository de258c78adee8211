#!/usr/bin/env bash
# The whole test suite from a fresh checkout: installs dependencies, configures, builds on all
# cores and runs every CTest test (unit, conformance, compile-fail and packaging tests).
# The build directory (TUTTI_BUILD_DIR, default build/) is shared with the README's other commands,
# so this script turns on, explicitly, every option its targets need: a value cached there before
# (the install recipe's TUTTI_BUILD_BENCH=OFF, say) cannot turn them off, and what the others built
# is reused. TUTTI_CONFIGURE_ONLY=1 configures and stops (no dependencies, no build; for the tests).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TUTTI_BUILD_DIR:-$here/build}
jobs=${TUTTI_JOBS:-$(nproc)}

[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] || "$here/tools/install-deps.sh"
start=$(date +%s)
# CUDA: the tests compile the kernels for one architecture (80; its PTX is JIT-compiled on newer
# GPUs), not the users' default of three: nvcc on two cores is slow and the code is the same.
# The suite includes the examples', the benchmark's and the torch backend's tests: all five parts on, but not the
# benchmark programs no test runs (TUTTI_BUILD_BENCH_EXTRAS=OFF: fusion, codecs, the cost model's
# tools, the GPU benches; about 100 s of the 2-core build, which had reached 997 s).
# -O2, not Release's -O3: the same code paths and vectoriser (g++ 12 vectorises at -O2), a quarter
# less compile time (tutti_bench.cpp: 91 s against 120 s); run-bench.sh and run-training.sh build
# their programs at -O3, and each passes its flags, so whichever runs next rebuilds what it needs.
# The test executables themselves at -Og (TUTTI_TEST_OPTIMIZATION, tests/CMakeLists.txt: half the
# compile time of -O2 for their template-heavy suites), and so are the programs the tests run
# (TUTTI_PROGRAM_OPTIMIZATION, cmake/tuttiDevOptions.cmake: tutti-bench, tutti-tune, examples 00-02;
# tutti-bench alone took 130-160 s at -O2, 59 s at -Og); the training example and tutti-run at -O2.
# packaging.header_check compiles a rotating third of the public headers and those the last three
# commits changed (TUTTI_HEADER_CHECK, tests/packaging/CMakeLists.txt; all of them took 320 s of CPU).
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DTUTTI_BUILD_TESTS=ON -DTUTTI_BUILD_EXAMPLES=ON \
      -DTUTTI_BUILD_BENCH=ON -DTUTTI_BUILD_BENCH_EXTRAS=OFF -DTUTTI_BUILD_TOOLS=ON -DTUTTI_BUILD_TORCH=ON \
      -DTUTTI_CUDA_ARCHITECTURES="${TUTTI_CUDA_ARCHITECTURES:-80}" \
      -DTUTTI_TEST_OPTIMIZATION="${TUTTI_TEST_OPTIMIZATION:--Og}" \
      -DTUTTI_PROGRAM_OPTIMIZATION="${TUTTI_PROGRAM_OPTIMIZATION:--Og}" \
      -DTUTTI_HEADER_CHECK="${TUTTI_HEADER_CHECK:-rotation}"
[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] && exit 0
cmake --build "$build" -j "$jobs"
echo "tutti: build took $(( $(date +%s) - start )) s"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
echo "tutti: build and tests took $(( $(date +%s) - start )) s"
