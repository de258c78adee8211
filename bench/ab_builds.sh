#!/usr/bin/env bash
# Before/after of two builds of tutti, for a change that must not slow anything (issue 19's bound):
# tutti-bench over shm, 2 ranks, each algorithm given, 8 B .. 128 MiB, both builds in one
# interleaved run (bench/peers/compare.py: reps alternate, order rotated; medians; speed ratios),
# then a fused ResNet-50 step (tutti-fusion-bench, default fusion settings), interleaved the same way.
#
#   bench/ab_builds.sh BEFORE_DIR AFTER_DIR [OUT_DIR]
# Each DIR holds tutti-run, tutti-bench and tutti-fusion-bench (copy them out of two build trees,
# both Release -O3). Env: REPS (default 3), ALGORITHMS (default "direct ring"), MAX (default 128M),
# ITERS (timed iterations per size, default 20), FUSION (0: skip the fused step).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
before=$(cd "$1" && pwd); after=$(cd "$2" && pwd)
out=${3:-$here/bench/results}
reps=${REPS:-3}; max=${MAX:-128M}; iters=${ITERS:-20}
stamp=$(date +%Y%m%d-%H%M)
mkdir -p "$out"
for algorithm in ${ALGORITHMS:-direct ring}; do
  cmd() { echo "$1/tutti-run -n {ranks} -- $1/tutti-bench --transport shm --algorithm $algorithm -b {min} -e {max} -f {factor} -n {iters} -w {warmup}"; }
  python3 "$here/bench/peers/compare.py" --peers tutti,tutti-reg --ranks 2 --reps "$reps" \
    --min-bytes 8 --max-bytes "$max" --factor 4 --iters "$iters" --warmup 5 \
    --tutti-cmd "$(cmd "$after")" --tutti-label "after" \
    --tutti-registered-cmd "$(cmd "$before")" --tutti-registered-label "before" \
    --out-dir "$out" --name "ab-$algorithm-$stamp"
done
[[ ${FUSION:-1} == 0 ]] && exit 0
# The fused step: rank 0 prints one `fusion,` line per run; median_step_ms is its 9th field.
csv="$out/ab-fusion-$stamp.csv"
: > "$csv"
for rep in $(seq 1 "$reps"); do
  for side in before after; do
    dir=$before; [[ $side == after ]] && dir=$after
    timeout 300 "$dir/tutti-run" -n 2 --no-prefix -- "$dir/tutti-fusion-bench" --model "$here/bench/fusion/resnet50.tsv" \
      --label "$side" --steps 20 --warmup 5 | grep '^fusion,' >> "$csv"
  done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1]))]
by = {}
for r in rows: by.setdefault(r[1], []).append(float(r[8]))
for k, v in by.items(): print(f"fused ResNet-50 step, {k}: median {statistics.median(v):.2f} ms over {len(v)} runs {sorted(v)}")
if len(by) == 2: print(f"after/before time: {statistics.median(by['after']) / statistics.median(by['before']):.3f}")
PY
