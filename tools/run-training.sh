#!/usr/bin/env bash
# The main job: builds example 04 and tutti-run, then trains the MLP on Fashion-MNIST with tutti's
# data-parallel trainer across 2 local processes (shared memory), configured by
# examples/04_fashion_mnist/fashion_mnist.yaml (Determined's keys): a progress bar, a validation
# line per epoch, metrics.csv and curves.png in ./fashion-mnist-run. Extra arguments go to the
# program (e.g. --config FILE, --out DIR, --max-batches N); TUTTI_RANKS must match the config's
# resources.slots_per_trial (2 here).
# The build directory (TUTTI_BUILD_DIR, default build/) is shared with the README's other commands,
# so this script turns on, explicitly, every option its targets need: a value cached there before
# (the install recipe's TUTTI_BUILD_BENCH=OFF, say) cannot turn them off, and what the others built
# is reused. TUTTI_CONFIGURE_ONLY=1 configures and stops (no dependencies, no build; for the tests).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TUTTI_BUILD_DIR:-$here/build}
ranks=${TUTTI_RANKS:-2}

[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] || "$here/tools/install-deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG" -DTUTTI_PROGRAM_OPTIMIZATION= -DTUTTI_BUILD_EXAMPLES=ON -DTUTTI_BUILD_TOOLS=ON >/dev/null
[[ ${TUTTI_CONFIGURE_ONLY:-0} == 1 ]] && exit 0
cmake --build "$build" --target tutti_example_04_fashion_mnist tutti_run -j "$(nproc)"
# A fresh run each time: the example's checkpoints would otherwise resume the previous one.
rm -rf /tmp/tutti-fashion-mnist-checkpoints
"$build/tools/tutti-run" -n "$ranks" --max-restarts 3 -- "$build/examples/04_fashion_mnist/tutti_example_04_fashion_mnist" \
  --config "$here/examples/04_fashion_mnist/fashion_mnist.yaml" --out fashion-mnist-run "$@"
