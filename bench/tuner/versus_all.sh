#!/usr/bin/env bash
# Issue 20's measured goal, every layout: algorithm::tuned reading the tables tools/tune/machine.sh
# wrote against each single algorithm, interleaved in one run per layout (tutti-tune --versus),
# ranks bound to cores as when tuning. shm 2, 3, 4 ranks read TABLES/measured.json; as root,
# namespace hosts 2x2 and 4x1 read TABLES/measured.json unshaped and TABLES/netns-1gbit.json at
# 1 Gbit/s. One markdown report per layout in OUT_DIR (versus-shm-N.md, versus-netns-HxP-RATE.md);
# exit 1 when any layout missed the goal (tutti-tune --versus's own verdict), after running all.
#   bench/tuner/versus_all.sh TABLES OUT_DIR [-- TUTTI-TUNE-ARGS...]
#       (default args: --reps 9 --max-bytes 64M --target-ms 30 --budget 240)
# LAYOUTS (default all): a subset of shm-2 shm-3 shm-4 netns-none-2x2 netns-none-4x1
# netns-1gbit-2x2 netns-1gbit-4x1. BUILD names the build directory (default build/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD:-$repo/build}
tables=${1:?usage: bench/tuner/versus_all.sh TABLES OUT_DIR [-- TUTTI-TUNE-ARGS...]}
out=${2:?usage: bench/tuner/versus_all.sh TABLES OUT_DIR [-- TUTTI-TUNE-ARGS...]}
shift 2
[[ ${1:-} == -- ]] && shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--reps 9 --max-bytes 64M --target-ms 30 --budget 240)
run=$build/tools/tutti-run
tune=$build/tools/tutti-tune
[[ -x $run && -x $tune ]] || { echo "build tutti-run and tutti-tune first: make -C $build tutti_run tutti_tune" >&2; exit 2; }
mkdir -p "$out"
layouts=${LAYOUTS:-shm-2 shm-3 shm-4 netns-none-2x2 netns-none-4x1 netns-1gbit-2x2 netns-1gbit-4x1}
status=0
start=$(date +%s)
for l in $layouts; do
  echo "== $l"
  case $l in
    shm-[0-9]*)
      "$run" -n "${l#shm-}" --bind core --no-prefix -- "$tune" --transport shm --versus "$tables/measured.json" \
        "${args[@]}" --output "$out/versus-$l.md" || status=1 ;;
    netns-*-*x*)
      rate=${l#netns-}; rate=${rate%-*}; shape=${l##*-}
      table=$tables/measured.json
      [[ $rate != none ]] && table=$tables/netns-$rate.json
      [[ $(id -u) == 0 ]] || { echo "$l: namespace hosts need root; skipped"; continue; }
      HOSTS=${shape%x*} PPN=${shape#*x} PIN=1 TUTTI_TUNE=$tune "$repo/tools/tune/netns.sh" "$rate" -- \
        --versus "$table" "${args[@]}" --output "$out/versus-netns-$shape-$rate.md" || status=1 ;;
    *) echo "unknown layout '$l'" >&2; exit 2 ;;
  esac
done
echo "== versus_all: $(( $(date +%s) - start )) s, status $status (1: some layout missed the goal; see $out)"
exit $status
