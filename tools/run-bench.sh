#!/usr/bin/env bash
# The benchmark: builds tutti-bench and tutti-run, then runs the allreduce benchmark across 2 local
# processes over shared memory (transport::shm, algorithm::direct), printing the nccl-tests table.
# Extra arguments go to tutti-bench (e.g. -e 256M, -d half, -o avg, -R 1 for registered buffers,
# --algorithm ring, --collective reduce_scatter, --membw 1 for this machine's memory bandwidth). TUTTI_RANKS sets the
# number of processes (default 2).
# The build directory (TUTTI_BUILD_DIR, default build/) is shared with the README's other commands,
# so this script turns on, explicitly, every option its targets need: a value cached there before
# (the install recipe's TUTTI_BUILD_BENCH=OFF, say) cannot turn them off, and what the others built
# is reused. TUTTI_CONFIGURE_ONLY=1 configures and stops (no dependencies, no build; for the tests).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TUTTI_BUILD_DIR:-$here/build}
ranks=${TUTTI_RANKS:-2}

[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] || "$here/tools/install-deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG" -DTUTTI_PROGRAM_OPTIMIZATION= -DTUTTI_BUILD_BENCH=ON -DTUTTI_BUILD_BENCH_EXTRAS=ON -DTUTTI_BUILD_TOOLS=ON >/dev/null
[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] && exit 0
cmake --build "$build" --target tutti_bench tutti_run -j "$(nproc)"
# Registered buffers (-R 1) of up to 2 x 256 MiB per rank need a pool that large.
export TUTTI_SHM_POOL_BYTES=${TUTTI_SHM_POOL_BYTES:-1G}
"$build/tools/tutti-run" -n "$ranks" --no-prefix -- \
  "$build/bench/tutti-bench" --transport shm --algorithm direct -b 8 -e 128M -f 4 -n 20 -w 5 "$@"
