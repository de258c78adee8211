#!/usr/bin/env bash
# Tunes this machine the way issue 20 measures it, one layout after another, each merged into its
# table: shm with 2, 3 and 4 ranks -> OUT/shm.json; as root, namespace hosts 2x2 and 4x1 over
# multi_node -> OUT/netns.json (unshaped) and OUT/netns-1gbit.json (tc at 1 Gbit/s: another
# network, so another table); then OUT/measured.json = shm + unshaped netns, checked.
#   tools/tune/machine.sh OUT_DIR [-- TUTTI-TUNE-ARGS...]     (default args: --budget 300)
# Every sweep runs on this machine's cores (--machine-cores $(nproc) for the model's fit).
# BUILD names the build directory (default build/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD:-$repo/build}
out=${1:?usage: tools/tune/machine.sh OUT_DIR [-- TUTTI-TUNE-ARGS...]}; shift
[[ ${1:-} == -- ]] && shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--budget 300)
run=$build/tools/tutti-run
tune=$build/tools/tutti-tune
[[ -x $run && -x $tune ]] || { echo "build tutti-run and tutti-tune first: make -C $build tutti_run tutti_tune" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cores=$(nproc)
start=$(date +%s)

for n in 2 3 4; do
  echo "== shm, $n ranks"
  "$run" -n "$n" --no-prefix -- "$tune" --transport shm --machine-cores "$cores" "${args[@]}" \
    --merge "$out/shm.json" --output "$out/shm.json"
done
if [[ $(id -u) == 0 ]]; then
  for rate in none 1gbit; do
    table=$out/netns.json
    [[ $rate != none ]] && table=$out/netns-$rate.json
    for layout in 2x2 4x1; do
      echo "== namespace hosts $layout, link $rate"
      HOSTS=${layout%x*} PPN=${layout#*x} TUTTI_TUNE=$tune "$here/netns.sh" "$rate" -- --machine-cores "$cores" \
        "${args[@]}" --merge "$table" --output "$table"
    done
  done
  "$tune" --combine "$out/shm.json,$out/netns.json" --machine-cores "$cores" --output "$out/measured.json"
else
  echo "== not root: no namespace hosts (tools/tune/netns.sh needs root); measured.json is shm.json"
  cp "$out/shm.json" "$out/measured.json"
fi
"$tune" --check "$out/measured.json"
echo "== tuned in $(( $(date +%s) - start )) s: $out/measured.json (shm: $out/shm.json; namespace hosts: $out/netns*.json)"
