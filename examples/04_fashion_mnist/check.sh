#!/usr/bin/env bash
# Example 04's tests against the real program (CTest runs them; each bounded in time):
#   check.sh codecs EXE TUTTI_RUN  — 2 slots, 2 epochs with gradient_compression none and fp16: the fp16
#                                    run's test accuracy is within 0.5 points of fp32's
#   check.sh resume EXE TUTTI_RUN  — rank 1 is killed mid-run: rank 0 ends naming it (peer_lost); a
#                                    relaunch resumes from the last checkpoint and finishes. A decoy
#                                    (same program name, TUTTI_RANK=1, started last) must survive
#   check.sh restarts EXE TUTTI_RUN — tutti-run --max-restarts: a run whose ranks are SIGKILLed 3 times
#                                    (TUTTI_RESTART_KILLS) at random ends bit-identical to one never
#                                    killed; a run out of restarts exits 1 naming the last failure
#   check.sh codec_refused EXE TUTTI_RUN — a codec the program was not built with (int8: main.cpp lists
#                                    none and fp16) is refused at once, naming it and the list
#   check.sh typo EXE TUTTI_RUN    — a misspelt hyperparameter is refused, on every rank, before any
#                                    communicator starts (no dataset needed: the data load after)
# CTest runs both side by side, and they run the same program: each touches only the processes and
# files it started itself (pids it was handed, its own job id, its own mktemp directory).
set -euo pipefail
mode=$1 exe=$2 tutti_run=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tutti-example04-XXXXXX")
# What this script started and has not waited for yet (emptied once waited: the pid may be reused).
launcher="" decoy=""
cleanup() {
  local p
  for p in $decoy $launcher; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The default config with a key changed: config KEY VALUE > file (a one-line sed on known lines).
config() {
  sed -e "s|host_path: .*|host_path: $work/ckpt|" -e "s|^\(  $1:\).*|\1 $2|" "$here/fashion_mnist.yaml"
}
accuracy() { sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$1" | tail -1; }

case $mode in
codecs)
  config gradient_compression false >"$work/fp32.yaml"
  config gradient_compression fp16 >"$work/fp16.yaml"
  for c in fp32 fp16; do
    rm -rf "$work/ckpt"
    timeout 240 "$tutti_run" -n 2 -- "$exe" --config "$work/$c.yaml" --out "$work/$c" --max-batches 936 >"$work/$c.log" 2>&1 ||
      { cat "$work/$c.log"; exit 1; }
  done
  a32=$(accuracy "$work/fp32.log") a16=$(accuracy "$work/fp16.log")
  echo "test accuracy after 2 epochs: fp32 $a32 %, fp16 $a16 %"
  python3 -c "import sys; d = abs($a32 - $a16); print(f'difference {d:.2f} points (limit 0.5)'); sys.exit(d > 0.5)"
  ;;
resume)
  # the default file, checkpoints in $work, one every 200 batches (min_checkpoint_period)
  config seed 1 | sed -e 's|^  epochs: 4$|  batches: 200|' >"$work/run.yaml"
  # Each rank writes its pid (sh's $$, kept by exec) into this test's directory before it becomes
  # the program, so the victim is picked by what this test started, never by name.
  job="ex04-resume-$$"
  timeout 240 "$tutti_run" -n 2 --job-id "$job" -- sh -c 'echo $$ >"$0/rank-$TUTTI_RANK.pid"; exec "$@"' "$work" \
    "$exe" --config "$work/run.yaml" --out "$work/a" --max-batches 1400 >"$work/a.log" 2>&1 &
  launcher=$!
  # Kill rank 1 once a checkpoint exists (or after 60 s): SIGKILL, no chance to say goodbye.
  for _ in $(seq 600); do
    ls "$work/ckpt"/ckpt-* >/dev/null 2>&1 && break
    sleep 0.1
  done
  # The decoy: what another test's rank 1 looks like to a search by name (same program in its
  # command line, TUTTI_RANK=1), started after ours so that such a search would find it last.
  TUTTI_RANK=1 TUTTI_JOB_ID=decoy-$$ bash -c 'exec -a "$0" sleep 300' "$exe" &
  decoy=$!
  # Rank 1's pid from its file, if that pid is still a process of this job (its environment has
  # this test's job id: a pid reused since would not).
  victim=""
  for _ in $(seq 100); do
    p=$(cat "$work/rank-1.pid" 2>/dev/null || true)
    if [[ $p =~ ^[0-9]+$ ]] && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TUTTI_JOB_ID=$job"; then
      victim=$p
      break
    fi
    sleep 0.1
  done
  [[ -n $victim ]] || { echo "rank 1 of job $job not found (no $work/rank-1.pid naming a live rank)"; cat "$work/a.log"; exit 1; }
  kill -9 "$victim"
  rc=0
  wait "$launcher" || rc=$?
  launcher=""
  echo "--- first run (rank 1 killed), exit $rc:"; { grep -E "peer|lost|rank 1" "$work/a.log" || true; } | head -5
  # Still running, so our SIGTERM ends it (143); 137 means someone SIGKILLed it, as a search by name did.
  kill "$decoy" 2>/dev/null || true
  decoy_rc=0
  wait "$decoy" || decoy_rc=$?
  decoy=""
  ((decoy_rc == 143)) || { echo "the decoy (another job's rank 1, by name) ended with status $decoy_rc before we stopped it"; exit 1; }
  ((rc != 0)) || { echo "the job did not fail"; exit 1; }
  grep -q "rank 1" "$work/a.log" && grep -qiE "peer_lost|is gone|was lost" "$work/a.log" || { echo "rank 1 not named"; cat "$work/a.log"; exit 1; }
  timeout 240 "$tutti_run" -n 2 -- "$exe" --config "$work/run.yaml" --out "$work/b" --max-batches 1400 >"$work/b.log" 2>&1 ||
    { cat "$work/b.log"; exit 1; }
  echo "--- relaunch:"; grep -E "resumed|test accuracy" "$work/b.log"
  grep -q "resumed from" "$work/b.log" || { echo "the relaunch did not resume"; exit 1; }
  ;;
restarts)
  # tutti-run --max-restarts: 2000 batches (~13 s on 2 cores), a checkpoint every 100. Run A is never killed; run B's
  # ranks are SIGKILLed KILLS times (random rank, 0.5-2 s into each start: at most ~300 batches a
  # start here, so every kill lands before the end even on a machine twice as fast) under --max-restarts 5:
  # B must end as A did, bit for bit (deterministic data order, bit-identical resume), saying each
  # restart and why. Run C, --max-restarts 1 and 2 kills, must give up naming the last failure.
  kills=${TUTTI_RESTART_KILLS:-3}
  config seed 1 | sed -e 's|^  epochs: 4$|  batches: 100|' >"$work/run.yaml"
  # run_job NAME MAX: in the background; each rank writes "pid restart" to its file first.
  run_job() {
    sed -e "s|host_path: .*|host_path: $work/ckpt-$1|" "$work/run.yaml" >"$work/$1.yaml"
    timeout 400 "$tutti_run" -n 2 --job-id "ex04-restart-$1-$$" --max-restarts "$2" -- \
      sh -c 'echo "$$ $TUTTI_RESTART" >"$0/$1-rank-$TUTTI_RANK.pid"; shift; exec "$@"' "$work" "$1" \
      "$exe" --config "$work/$1.yaml" --out "$work/out-$1" --max-batches 2000 --save-parameters "$work/$1.params" \
      >"$work/$1.log" 2>&1 &
    launcher=$!
  }
  # kill_rank NAME START: SIGKILLs a random rank of start START once it runs (its pid file says so
  # and the pid is still that job's process), 0.5-2 s after.
  kill_rank() {
    local r=$((RANDOM % 2)) p="" s="" _
    for _ in $(seq 300); do
      p="" s=""
      read -r p s 2>/dev/null <"$work/$1-rank-$r.pid" || true
      [[ $s == "$2" && $p =~ ^[0-9]+$ ]] && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TUTTI_JOB_ID=ex04-restart-$1-$$" && break
      p=""
      sleep 0.1
    done
    [[ -n $p ]] || { echo "start $2 of run $1: rank $r not found"; cat "$work/$1.log"; exit 1; }
    local ms=$((500 + RANDOM % 1500))
    sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    if kill -9 "$p" 2>/dev/null; then echo "run $1, start $2: killed rank $r"; fi
  }
  run_job A 0
  rc=0; wait "$launcher" || rc=$?; launcher=""
  ((rc == 0)) || { cat "$work/A.log"; exit 1; }
  run_job B 5
  for ((k = 0; k < kills; k++)); do kill_rank B "$k"; done
  rc=0; wait "$launcher" || rc=$?; launcher=""
  grep -E "tutti-run: restart|resumed from|test accuracy" "$work/B.log" || true
  ((rc == 0)) || { echo "run B failed (exit $rc)"; cat "$work/B.log"; exit 1; }
  n=$(grep -cE "tutti-run: restart [0-9]+ of 5, after: rank [01] was killed by signal 9 \(SIGKILL\)" "$work/B.log" || true)
  ((n == kills)) || { echo "expected $kills restarts said with their reason, got $n"; exit 1; }
  cmp "$work/A.params" "$work/B.params" || { echo "run B ($kills kills) does not end bit-identical to run A"; exit 1; }
  echo "run B, killed $kills times, ends bit-identical to run A"
  run_job C 1
  kill_rank C 0
  kill_rank C 1
  rc=0; wait "$launcher" || rc=$?; launcher=""
  grep "tutti-run:" "$work/C.log" || true
  ((rc == 1)) || { echo "run C: expected exit status 1 after its restarts ran out, got $rc"; exit 1; }
  grep -qE "tutti-run: giving up: the job failed again after 1 restart \(--max-restarts 1\); the last failure: rank [01] was killed by signal 9" \
    "$work/C.log" || { echo "run C: no 'giving up' naming the last failure"; exit 1; }
  ;;
codec_refused)
  config gradient_compression int8 >"$work/int8.yaml"
  rc=0
  timeout 60 "$exe" --config "$work/int8.yaml" --out "$work/int8" >"$work/int8.log" 2>&1 || rc=$?
  cat "$work/int8.log"
  ((rc == 1)) || { echo "expected exit status 1, got $rc"; exit 1; }
  grep -qF "'int8' is not one of the codecs this program was built with (none, fp16)" "$work/int8.log" ||
    { echo "the refusal does not name int8 and the program's codecs"; exit 1; }
  ;;
typo)
  # A user's run reported the typo only after every communicator had started (and would have after
  # waiting for a missing rank): TUTTI_LOG=info prints a communicator's line as soon as one starts.
  sed -e 's|^  learning_rate:|  learnig_rate:|' "$here/fashion_mnist.yaml" >"$work/typo.yaml"
  rc=0
  TUTTI_LOG=info timeout 60 "$tutti_run" -n 2 -- "$exe" --config "$work/typo.yaml" --data "$work/no-data" \
    --out "$work/out" >"$work/typo.log" 2>&1 || rc=$?
  cat "$work/typo.log"
  ((rc != 0)) || { echo "the job did not fail"; exit 1; }
  n=$(grep -c "unknown hyperparameter 'learnig_rate' (did you mean 'learning_rate'?)" "$work/typo.log" || true)
  ((n == 2)) || { echo "expected the typo named by both ranks, got $n lines"; exit 1; }
  if grep -q "info: communicator:" "$work/typo.log"; then echo "a communicator started before the typo was reported"; exit 1; fi
  ;;
*) echo "check.sh: unknown mode $mode" >&2; exit 2 ;;
esac
