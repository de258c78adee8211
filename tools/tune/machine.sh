#!/usr/bin/env bash
# Tunes this machine the way issue 20 measures it: shm with 2, 3 and 4 ranks -> OUT/shm.json; as
# root, namespace hosts 2x2 and 4x1 over multi_node -> OUT/netns.json (unshaped) and
# OUT/netns-1gbit.json (tc at 1 Gbit/s: another network, so another table); then
# OUT/measured.json = shm + unshaped netns, checked.
#   tools/tune/machine.sh OUT_DIR [-- TUTTI-TUNE-ARGS...]     (default args: --budget 300)
# Every sweep runs on this machine's cores (--machine-cores $(nproc) for the model's fit), rank k
# bound to the (k mod cores)-th CPU (tutti-run --bind core; PIN=1 across namespace hosts): a launch
# whose ranks land elsewhere measures another machine.
# PASSES (default 3): every layout is measured once per pass, the passes one after another, so the
# launches of one layout are minutes apart; the last pass chooses its rows from all of them pooled
# (tutti-tune --pool: median over launches). Why: one launch can keep a slow state the next does
# not (shm 4 ranks, 8 B, direct: 18.3 us in one tune, 3.2-3.6 us in six later launches), and a table
# chosen from it loses to the algorithm it passed over. The pass tables stay in OUT/pass1..PASSES.
# LAYOUTS (default all): which of shm-2 shm-3 shm-4 netns-none-2x2 netns-none-4x1 netns-1gbit-2x2
# netns-1gbit-4x1 to tune, e.g. LAYOUTS="shm-4 netns-none-4x1" (the tables then hold only those).
# START_PASS=K reuses OUT/pass1..K-1 from an earlier run and measures passes K..PASSES.
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
passes=${PASSES:-3}
[[ $passes =~ ^[1-9][0-9]*$ ]] || { echo "PASSES must be a positive whole number, got '$passes'" >&2; exit 2; }
start=$(date +%s)

all_layouts="shm-2 shm-3 shm-4 netns-none-2x2 netns-none-4x1 netns-1gbit-2x2 netns-1gbit-4x1"
layouts=${LAYOUTS:-$all_layouts}
for l in $layouts; do
  [[ " $all_layouts " == *" $l "* ]] || { echo "LAYOUTS: '$l' is not one of $all_layouts" >&2; exit 2; }
done
wanted() { [[ " $layouts " == *" $1 "* ]]; }
# pool NAME PASS: --pool with the earlier passes' tables of NAME (none in the first pass).
pool() {
  local earlier=() p
  for ((p = 1; p < $2; p++)); do earlier+=("$out/pass$p/$1"); done
  [[ ${#earlier[@]} -gt 0 ]] && printf -- '--pool\n%s\n' "$(IFS=,; echo "${earlier[*]}")"
  return 0
}
start_pass=${START_PASS:-1}  # START_PASS=K: passes before K are already in OUT/pass1..K-1 (a tune resumed)
for ((pass = start_pass; pass <= passes; pass++)); do
  dir=$out/pass$pass
  mkdir -p "$dir"
  for n in 2 3 4; do
    wanted "shm-$n" || continue
    echo "== pass $pass of $passes: shm, $n ranks"
    mapfile -t pooling < <([[ $pass == "$passes" ]] && pool "shm-$n.json" "$pass")
    "$run" -n "$n" --bind core --no-prefix -- "$tune" --transport shm --machine-cores "$cores" "${args[@]}" \
      "${pooling[@]}" --output "$dir/shm-$n.json"
  done
  if [[ $(id -u) == 0 ]]; then  # namespace hosts need root
    for rate in none 1gbit; do
      for layout in 2x2 4x1; do
        wanted "netns-$rate-$layout" || continue
        echo "== pass $pass of $passes: namespace hosts $layout, link $rate"
        mapfile -t pooling < <([[ $pass == "$passes" ]] && pool "netns-$rate-$layout.json" "$pass")
        HOSTS=${layout%x*} PPN=${layout#*x} PIN=1 TUTTI_TUNE=$tune "$here/netns.sh" "$rate" -- --machine-cores "$cores" \
          "${args[@]}" "${pooling[@]}" --output "$dir/netns-$rate-$layout.json"
      done
    done
  fi
done
# The last pass's tables (pooled) become one per network, as algorithm::tuned reads them.
last=$out/pass$passes
# one OUTPUT TRANSPORT NAME...: the last pass's tables of those layouts (those tuned) in one table.
one() {
  local output=$1 transport=$2 files=() name
  shift 2
  for name in "$@"; do [[ -f $last/$name.json ]] && files+=("$last/$name.json"); done
  case ${#files[@]} in
    0) return 0 ;;
    1) cp "${files[0]}" "$output" ;;
    *) "$tune" --combine "$(IFS=,; echo "${files[*]}")" --transport "$transport" --machine-cores "$cores" --output "$output" ;;
  esac
}
one "$out/shm.json" shm shm-2 shm-3 shm-4
one "$out/netns.json" multi_node netns-none-2x2 netns-none-4x1
one "$out/netns-1gbit.json" multi_node netns-1gbit-2x2 netns-1gbit-4x1
measured=()
for f in "$out/shm.json" "$out/netns.json"; do [[ -f $f ]] && measured+=("$f"); done
case ${#measured[@]} in
  0) cp "$out/netns-1gbit.json" "$out/measured.json" ;;
  1) cp "${measured[0]}" "$out/measured.json" ;;
  *) "$tune" --combine "$out/shm.json,$out/netns.json" --machine-cores "$cores" --output "$out/measured.json" ;;
esac
"$tune" --check "$out/measured.json"
echo "== tuned in $(( $(date +%s) - start )) s: $out/measured.json (shm: $out/shm.json; namespace hosts: $out/netns*.json)"
