#!/usr/bin/env bash
# Large-batch practice, measured (issue 22): example 04's MLP on Fashion-MNIST at global batch 128,
# 1,024, 4,096 and 8,192, each with four recipes, the same number of epochs:
#   none     the base learning rate as is (0.05, tuned for batch 128), no warm-up
#   linear   linear scaling (lr = 0.05 * B / 128, Goyal et al.) with a warm-up of W epochs
#   sqrt     square-root scaling (lr = 0.05 * sqrt(B / 128), Hoffer et al.) with the same warm-up
#   lars     linear scaling + warm-up, SGD wrapped in LARS (You et al.; trust coefficient 0.001)
# Cosine decay after the warm-up, SGD with Nesterov momentum 0.9, weight decay 1e-4, as the
# example's own experiment. 2 slots (the global batch is split over them: 64 to 4,096 records per
# slot; no aggregation_frequency stand-in is needed on this machine, the MLP fits). One run per
# cell (each is deterministic: same seed, same data order), in an interleaved order.
#
#   bench/large_batch/run.sh [--epochs 12] [--warmup 2] [--batches "128 1024 4096 8192"] [--out DIR]
#     -> DIR (default bench/results/large-batch-YYYYMMDD/): one metrics.csv and log per run,
#        then bench/large_batch/summarize.py DIR writes table.md and accuracy.png there.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
exe=${EXAMPLE:-$repo/build/examples/04_fashion_mnist/tutti_example_04_fashion_mnist}
tutti_run=${TUTTI_RUN:-$repo/build/tools/tutti-run}
epochs=12 warmup=2 batches="128 1024 4096 8192" out=$repo/bench/results/large-batch-$(date +%Y%m%d)
while (($#)); do
  case $1 in
    --epochs) epochs=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --batches) batches=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -x $exe && -x $tutti_run ]] || { echo "build first: tools/run-training.sh builds $exe and $tutti_run" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
yaml=$repo/examples/04_fashion_mnist/fashion_mnist.yaml
# experiment B RECIPE > file: the example's experiment with global batch B and the recipe's keys.
experiment() {
  local b=$1 recipe=$2 scaling=linear w=$warmup lars=false
  case $recipe in
    none) scaling=none w=0 ;;
    linear) ;;
    sqrt) scaling=sqrt ;;
    lars) lars=true ;;
  esac
  sed -e "s|host_path: .*|host_path: $tmp/ckpt-$b-$recipe|" \
      -e "s|^\(    epochs:\) 12$|\1 $epochs|" \
      -e "s|^\(  global_batch_size:\).*|\1 $b|" \
      -e "s|^\(  lr_scaling:\).*|\1 $scaling|" \
      -e "s|^\(  warmup_epochs:\).*|\1 $w|" \
      -e "s|^\(  weight_decay:.*\)|\1\n  lars: $lars|" \
      -e "s|^min_checkpoint_period:|min_checkpoint_period_unused:|" "$yaml" |
    sed -e '/^min_checkpoint_period_unused:/,+1d'
}
runs=()
for recipe in none linear sqrt lars; do
  for b in $batches; do runs+=("$b:$recipe"); done
done
echo "large-batch study: ${#runs[@]} runs, $epochs epochs each, into $out"
for run in "${runs[@]}"; do
  b=${run%%:*} recipe=${run#*:}
  experiment "$b" "$recipe" >"$tmp/$b-$recipe.yaml"
  start=$(date +%s.%N)
  "$tutti_run" -n 2 -- "$exe" --config "$tmp/$b-$recipe.yaml" --out "$out/$b-$recipe" >"$out/$b-$recipe.log" 2>&1 ||
    echo "run $b $recipe failed (see $out/$b-$recipe.log)"
  echo "$b $recipe $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}')" >>"$out/seconds.txt"
  echo "  $b $recipe: $(grep -o 'test accuracy [0-9.]*%' "$out/$b-$recipe.log" | tail -1)"
done
echo "epochs=$epochs warmup=$warmup batches=$batches date=$(date -u +%F) commit=$(git -C "$repo" rev-parse --short HEAD)" >"$out/context.txt"
python3 "$repo/bench/large_batch/summarize.py" "$out"
