#!/usr/bin/env bash
# Time per training step of example 04 (Fashion-MNIST MLP), split into compute (forward+backward),
# communication exposed after backward, and communication hidden under backward, for 1, 2 and 4
# slots, without and with fp16 compression, one collective per tensor and fused (64 MiB, 1 ms).
# Runs are interleaved over --repeats; each writes the example's metrics.csv, then
# bench/trainer/summarize.py makes the table and the PNG.
#
#   bench/trainer/run.sh [--ranks "1 2 4"] [--repeats 2] [--batches 300] [--label NAME]
#     -> bench/results/trainer-NAME-YYYYMMDD/  (one metrics.csv per run) and its summary .md/.png
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
exe=${EXAMPLE:-$repo/build/examples/04_fashion_mnist/tutti_example_04_fashion_mnist}
tutti_run=${TUTTI_RUN:-$repo/build/tools/tutti-run}
ranks_list="1 2 4" repeats=2 batches=300 label=$(hostname -s)
while (($#)); do
  case $1 in
    --ranks) ranks_list=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --batches) batches=$2; shift ;;
    --label) label=$2; shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out=$repo/bench/results/trainer-$label-$(date +%Y%m%d)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=()
for r in $ranks_list; do
  for codec in none fp16; do
    for fusion in 0 64; do configs+=("$r:$codec:$fusion"); done
  done
done
for ((rep = 0; rep < repeats; rep++)); do
  mapfile -t order < <(printf '%s\n' "${configs[@]}" | python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random($rep).shuffle(l); print('\n'.join(l))")
  for c in "${order[@]}"; do
    IFS=: read -r r codec fusion <<<"$c"
    name="r${r}-${codec}-t${fusion}-rep${rep}"
    sed -e "s|slots_per_trial: .*|slots_per_trial: $r|" -e "s|gradient_compression: .*|gradient_compression: $codec|" \
        -e "s|tensor_fusion_threshold: .*|tensor_fusion_threshold: $fusion|" -e "s|host_path: .*|host_path: $tmp/ckpt-$name|" \
        -e "s|^min_checkpoint_period:|#|" -e "s|^  epochs: 4$|#|" "$repo/examples/04_fashion_mnist/fashion_mnist.yaml" >"$tmp/$name.yaml"
    echo "rep $rep: $r ranks, codec $codec, threshold ${fusion} MB ..." >&2
    timeout 300 "$tutti_run" -n "$r" -- "$exe" --config "$tmp/$name.yaml" --out "$tmp/$name" --max-batches "$batches" \
      >"$tmp/$name.log" 2>&1 || { echo "run $name failed:" >&2; tail -5 "$tmp/$name.log" >&2; continue; }
    cp "$tmp/$name/metrics.csv" "$out/$name.csv"
  done
done
python3 "$repo/bench/trainer/summarize.py" "$out"
