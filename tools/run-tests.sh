#!/usr/bin/env bash
# The whole test suite from a fresh checkout: installs dependencies, configures, builds on all
# cores and runs every CTest test (unit, conformance, compile-fail and packaging tests).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TUTTI_BUILD_DIR:-$here/build}
jobs=${TUTTI_JOBS:-$(nproc)}

"$here/tools/install-deps.sh"
start=$(date +%s)
# CUDA: the tests compile the kernels for one architecture (80; its PTX is JIT-compiled on newer
# GPUs), not the users' default of three: nvcc on two cores is slow and the code is the same.
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DTUTTI_CUDA_ARCHITECTURES="${TUTTI_CUDA_ARCHITECTURES:-80}"
cmake --build "$build" -j "$jobs"
echo "tutti: build took $(( $(date +%s) - start )) s"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
echo "tutti: build and tests took $(( $(date +%s) - start )) s"
