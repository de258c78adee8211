#!/usr/bin/env bash
# The longer kill campaign of docs/trainer.md's Restarts (CI runs one of each): example 04 under
# restarts, killed at random ranks and random times, compared bit for bit with a run never killed.
#   kill_campaign.sh EXE TUTTI_RUN MPIRUN OUT_DIR [ONE_HOST_RUNS] [CROSS_HOST_RUNS]
# One host: check.sh restarts, 3 kills per run (TUTTI_RESTART_KILLS), ONE_HOST_RUNS times (default 7);
# across hosts: across_hosts.sh restarts (2 x 2 namespace hosts under tutti-run --launcher around
# mpirun, root), 2 kills per run, CROSS_HOST_RUNS times (default 10). Each run's log goes to OUT_DIR;
# summary.txt counts runs, kills, restarts and bit-identical finals.
set -uo pipefail
exe=${1:?program} tutti_run=${2:?tutti-run} mpirun=${3:?mpirun} out=${4:?out dir}
one=${5:-7} cross=${6:-10}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
runs=0 passed=0 kills=0 restarts=0 identical=0
tally() {  # tally LOG: adds its kills, restarts and verdict
  local log=$1
  runs=$((runs + 1))
  kills=$((kills + $(grep -c "^run B, start [0-9]*: killed rank" "$log" || true)))
  restarts=$((restarts + $(grep -c "tutti-run: restart [0-9]* of [45]," "$log" || true)))
  if grep -q "ends bit-identical to run A" "$log"; then identical=$((identical + 1)); fi
  if grep -q "passed\|ends bit-identical to run A" "$log" && ! grep -q "^FAIL\|does not end bit-identical" "$log"; then
    passed=$((passed + 1))
  fi
}
for ((k = 0; k < one; k++)); do
  TUTTI_RESTART_KILLS=3 bash "$here/check.sh" restarts "$exe" "$tutti_run" >"$out/one-host-$k.log" 2>&1
  echo "one host run $k: exit $?" | tee -a "$out/runs.txt"
  tally "$out/one-host-$k.log"
done
for ((k = 0; k < cross; k++)); do
  TUTTI_RESTART_KILLS=2 bash "$here/across_hosts.sh" restarts "$exe" "$tutti_run" "$mpirun" >"$out/across-$k.log" 2>&1
  echo "across hosts run $k: exit $?" | tee -a "$out/runs.txt"
  tally "$out/across-$k.log"
done
{
  echo "runs $runs (one host $one, across hosts $cross), passed $passed"
  echo "kills in the compared runs $kills, restarts said in them $restarts"
  echo "finals bit-identical to the uninterrupted run: $identical of $runs"
} | tee "$out/summary.txt"
