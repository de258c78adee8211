#!/usr/bin/env bash
# The main job: builds tutti-bench and runs the ring allreduce across in-process ranks, printing
# the nccl-tests table. Extra arguments go to tutti-bench (e.g. -t 4 -e 256M -d half).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TUTTI_BUILD_DIR:-$here/build}

"$here/tools/install-deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target tutti_bench -j "$(nproc)"
exe=$(find "$build" -name tutti-bench -type f -perm -u+x | head -n 1)
"$exe" -t 2 -b 8 -e 64M -f 4 "$@"
