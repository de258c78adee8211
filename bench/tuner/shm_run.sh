#!/usr/bin/env bash
# tutti-bench over transport::shm on this host for several algorithms, interleaved and rotated per
# rep like bench/netns/run.sh, with the same output files (OUT_DIR/tutti_ALG.repN.txt), so
# bench/tuner/tuned_vs_single.py and bench/netns/summarize.py read both.
#   bench/tuner/shm_run.sh OUT_DIR WORLD [REPS] [MAX_BYTES]
# PEERS="tutti_ring tutti_direct ..." (default: tuned and every single algorithm shm builds);
# TUTTI_TUNING_FILE passes through to tutti_tuned; BUILD (default build/) holds tutti-bench, tutti-run.
# ITERS (default 20) and WARMUP (5) are tutti-bench -n and -w: 20 is too few at 8-128 KiB over shm
# (2 ranks, direct, 32 KiB: 4.0 us with -n 20, 9.7 us with -n 200, 9.8 us by tutti-tune), so
# issue 20's comparison ran with ITERS=200 WARMUP=20.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?out dir}; world=${2:?world}; reps=${3:-3}; max=${4:-16M}
build=${BUILD:-$repo/build}
bench=$build/bench/tutti-bench; run=$build/tools/tutti-run
[[ -x $bench && -x $run ]] || { echo "build tutti-bench and tutti-run first (tools/run-bench.sh)"; exit 2; }
mkdir -p "$out"
args=(-b 8 -e "$max" -f 4 -n "${ITERS:-20}" -w "${WARMUP:-5}")  # ITERS, WARMUP: -n, -w
read -r -a peers <<<"${PEERS:-tutti_tuned tutti_ring tutti_direct tutti_halving_doubling tutti_tree tutti_automatic}"
export TUTTI_SHM_POOL_BYTES=${TUTTI_SHM_POOL_BYTES:-1G}
for ((rep = 0; rep < reps; rep++)); do
  for ((i = 0; i < ${#peers[@]}; i++)); do
    p=${peers[$(( (i + rep) % ${#peers[@]} ))]}   # rotated order per rep
    timeout 600 "$run" -n "$world" --no-prefix -- "$bench" --transport shm --algorithm "${p#tutti_}" "${args[@]}" \
      >"$out/$p.rep$rep.txt" 2>&1 || echo "rep $rep $p failed (see $out/$p.rep$rep.txt)"
    echo "rep $rep $p done"
  done
done
echo "transport=shm world=$world reps=$reps max=$max date=$(date -u +%F) commit=$(git -C "$repo" rev-parse --short HEAD) tuning=${TUTTI_TUNING_FILE:-default}" >"$out/context.txt"
