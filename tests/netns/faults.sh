#!/usr/bin/env bash
# The fault campaign across hosts (issue 23): 2 namespace hosts of 2 ranks (tests/netns/lib.sh),
# started torchrun-style; each run works in one phase (fault_worker.cpp: allreduce, fusion, train)
# and the driver injects one fault at a random moment, then checks the reason every rank gives.
#   faults.sh RUNS SEED|random WORKER [TABLE]
# Runs cycle through the kinds (so RUNS = 8 tries each once; TUTTI_FAULT_KINDS="kill stop" picks);
# phase, victim and moment come from SEED (printed first). TABLE, when given, gets one line per run (for the longer campaign's counts). Kinds:
#   kill     the victim is SIGKILLed: every survivor gets peer_lost naming it
#   store    rank 0, which serves the job's store, is SIGKILLed: the same, naming rank 0
#   leave    the victim returns from its work early, without a word: peer_lost naming it
#   stop     the victim is SIGSTOPped (alive, stuck): every other rank fails with the stall verdict
#            naming it, at TUTTI_TIMEOUT; continued afterwards, it fails too
#   down     host 1's link taken down (kept down past TUTTI_TIMEOUT): every rank fails with a
#            timeout naming a rank on the other host, none waits longer than its deadline; the
#            link is brought back once they are gone
#   flap     host 1's link down for 1.5 s and back, well inside TUTTI_TIMEOUT: the job goes on, ok
#   slow     host 1's link slowed to 16 kbit/s mid-run: every rank fails with a timeout (or the
#            verdict) naming a rank across the link, within its deadline
#   late     (the 8th) the victim is SIGSTOPped for 1 s only: the job goes on, ok
# For every run: each rank ends within its bound, says the expected outcome naming the expected
# rank, the communicator's destructor returns ("gone"), and no process, shm segment
# (/dev/shm/tutti-<job>.*) or namespace is left.
source "$(dirname "$0")/lib.sh"
runs=${1:?runs} seed=${2:?seed} worker=${3:?worker} table=${4:-}
[[ $seed == random ]] && seed=$((RANDOM * 32768 + RANDOM))
echo "fault campaign: $runs runs, seed $seed (rerun: faults.sh $runs $seed WORKER)"
export TUTTI_TIMEOUT=6 TUTTI_STALL_WARN=2 TUTTI_FAULT_SECONDS=5
per_rank_limit=40
RANDOM=$seed
read -r -a kinds <<<"${TUTTI_FAULT_KINDS:-kill stop down slow leave store flap late}"
phases=(allreduce fusion train)
netns_hosts 2
world=4

pids=()
start_job() {  # start_job RUN PHASE [VAR=VALUE...]
  local run=$1 phase=$2 r key; shift 2
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  pids=()
  for ((r = 0; r < world; r++)); do
    on_host $((r / 2)) env RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR=10.213.1.1 MASTER_PORT=$((29600 + run % 200)) TUTTI_JOB_KEY="$key" TUTTI_FAULT_PHASE="$phase" "$@" \
      timeout -s KILL "$per_rank_limit" "$worker" >"$netns_tmp/run$run.rank$r.log" 2>&1 &
    pids[$r]=$!
  done
}
wait_ready() {  # wait_ready RUN: every rank printed `ready` (bounded: 20 s)
  local r _
  for _ in $(seq 200); do
    for ((r = 0; r < world; r++)); do grep -q ": ready job=" "$netns_tmp/run$1.rank$r.log" 2>/dev/null || break; done
    ((r == world)) && return 0
    sleep 0.1
  done
  fail "run $1: not every rank became ready within 20 s"
}
pid_of() { sed -n 's/.*: ready job=[^ ]* pid=\([0-9]*\).*/\1/p' "$netns_tmp/run$1.rank$2.log"; }
job_of() { sed -n 's/.*: ready job=\([^ ]*\) pid=.*/\1/p' "$netns_tmp/run$1.rank0.log"; }
status=()
wait_rank() { status[$1]=0; wait "${pids[$1]}" || status[$1]=$?; waited[$1]=1; }
wait_job() {
  local r
  for r in "${!pids[@]}"; do [[ -n ${waited[$r]:-} ]] || wait_rank "$r"; done
}
link() { ip -n "$(ns_of 1)" link set eth1 "$1"; }
slow_link() { ip netns exec "$(ns_of 1)" tc qdisc replace dev eth1 root tbf rate "$1" burst 4kbit latency 400ms; }
fast_link() { ip netns exec "$(ns_of 1)" tc qdisc del dev eth1 root 2>/dev/null || true; }
outcome() { sed -n "s/^fault-worker rank $2: \([a-z_]*\) peer=.*/\1/p" "$netns_tmp/run$1.rank$2.log"; }
line() { grep -h "^fault-worker rank $2: [a-z_]* peer=" "$netns_tmp/run$1.rank$2.log" || true; }
ended_after() { sed -n "s/^fault-worker rank $2: [a-z_]* peer=[-0-9]* after=\([0-9.]*\) .*/\1/p" "$netns_tmp/run$1.rank$2.log"; }
failed_after() { sed -n "s/^fault-worker rank $2: [a-z_]* peer=[-0-9]* after=[0-9.]* failed=\([0-9.]*\) .*/\1/p" "$netns_tmp/run$1.rank$2.log"; }

host1_silent='(rank |ranks |, )[23] \([^;]*silent|silent \(stopped, or its host unreachable\): ranks? ([0-9]+, )*[23]'
host0_unreached='could not reach the tcp_store|(waited on|from) rank [01]'
for ((run = 0; run < runs; run++)); do
  kind=${kinds[$((run % ${#kinds[@]}))]}
  phase=${phases[$((RANDOM % 3))]}
  victim=$((RANDOM % world))
  [[ $kind == store ]] && victim=0
  ms=$((300 + RANDOM % 1200))  # the fault's moment after every rank is ready
  moment="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  extra=()
  [[ $kind == leave ]] && extra=(TUTTI_FAULT_LEAVE="$victim $moment")
  before=$(ls /dev/shm)
  waited=()
  started=$SECONDS
  start_job "$run" "$phase" "${extra[@]}"
  wait_ready "$run"
  ready_at=$(date +%s.%N) continued=0 ends=""
  job=$(job_of "$run")
  vpid=$(pid_of "$run" "$victim")
  sleep "$moment"
  case $kind in
    kill | store) kill -KILL "$vpid" ;;
    stop) kill -STOP "$vpid" ;;
    late) kill -STOP "$vpid"; sleep 1; kill -CONT "$vpid" ;;
    down) link down ;;
    flap) link down; sleep 1.5; link up ;;
    slow) slow_link 16kbit ;;
  esac
  if [[ $kind == stop ]]; then
    # The others' verdict comes at TUTTI_TIMEOUT; then the victim runs again and meets it.
    for r in 0 1 2 3; do [[ $r == "$victim" ]] || wait_rank "$r"; done
    continued=$(awk -v s="$(date +%s.%N)" -v r="$ready_at" 'BEGIN { print s - r }')
    kill -CONT "$vpid"
  fi
  wait_job
  took=$((SECONDS - started))
  [[ $kind == down ]] && link up
  [[ $kind == slow ]] && fast_link

  # The reasons.
  summary="run $run: $kind $phase victim=$victim at=${moment}s:"
  for ((r = 0; r < world; r++)); do
    o=$(outcome "$run" "$r")
    summary+=" r$r=${o:-none}(${status[$r]})"
    if [[ $kind =~ ^(kill|store)$ && $r == "$victim" ]]; then
      [[ ${status[$r]} == 137 ]] || fail "run $run: victim rank $r exited ${status[$r]}, not by SIGKILL"
      continue
    fi
    grep -q "^fault-worker rank $r: gone after=" "$netns_tmp/run$run.rank$r.log" ||
      fail "run $run ($kind): rank $r never got past its communicator's destructor (status ${status[$r]})"
    l=$(line "$run" "$r")
    case $kind in
      kill | store | leave)
        if [[ $r == "$victim" ]]; then
          [[ $o == left ]] || fail "run $run: the leaving rank said '$o'"
        else
          [[ $o == peer_lost && $l == *" peer=$victim "* ]] || fail "run $run ($kind): rank $r: expected peer_lost naming rank $victim: $l"
          [[ $l =~ rank(\(s\))?\ ([0-9]+,\ )*$victim([^0-9]|$) ]] || fail "run $run ($kind): rank $r's message does not name rank $victim: $l"
        fi ;;
      stop)
        [[ $o == timeout || $o == peer_lost ]] || fail "run $run (stop): rank $r: expected the stall verdict: $l"
        if [[ $r == "$victim" ]]; then  # continued after the others left: it may only have its own view
          [[ $l == *"the job stalled"* || $o == peer_lost ]] || fail "run $run (stop): the stopped rank did not tell the stall: $l"
        else
          # "missing: ranks 0, 1 (... alive); rank 3 (..., silent for 6.2 s (stopped, ...))": the
          # victim's own group says silent.
          # Rank 0 serves the store that holds the records: stopped, no verdict can be read or
          # written, and the message names it as the store's server that did not answer.
          [[ $l =~ the\ job\ stalled.*(rank\ |,\ )$victim\ \([^\;]*silent ||
             ($victim == 0 && $l == *"the job stalled"*"the job's store, served by rank 0, did not answer (rank 0 stopped, or its host unreachable)"*) ]] ||
            fail "run $run (stop): rank $r's message is not the verdict naming rank $victim missing and silent: $l"
        fi ;;
      down | slow)
        # A timeout within the deadline, with the job's verdict: host 1's ranks silent (decided on
        # host 0), or, on host 1, host 0's ranks or store out of reach.
        [[ $o == timeout || $o == peer_lost ]] || fail "run $run ($kind): rank $r: expected a timeout: $l"
        [[ $l == *"the job stalled"* ]] || fail "run $run ($kind): rank $r did not give the stall verdict: $l"
        [[ $l =~ $host1_silent || ($r -ge 2 && $l =~ $host0_unreached) ]] ||
          fail "run $run ($kind): rank $r does not name the ranks across the link: $l" ;;
      flap | late)
        [[ $o == ok ]] || fail "run $run ($kind): rank $r: expected the job to go on: $l" ;;
    esac
    # Within its deadline: TUTTI_TIMEOUT after the fault, plus the phase's own step, plus a margin.
    # Within its deadline: TUTTI_TIMEOUT after the fault (the stopped rank: after it runs again),
    # plus the failure path's bounded store calls (the verdict, the first loss, leaving: about
    # 4 s when the store is out of reach), plus a margin for 2 cores. A job that goes on ends when
    # rank 0 stops it (TUTTI_FAULT_SECONDS, 5 s), and must not then wait out a deadline in its shutdown.
    after=$(ended_after "$run" "$r")
    # With rank 0 stopped, its store accepts connections but never answers: each bounded store
    # call of the failure path waits out its own deadline (measured: the others end 12-19 s after
    # the fault), hence a second TUTTI_TIMEOUT there.
    limit=$(awk -v m="$moment" -v t=$TUTTI_TIMEOUT -v k="$kind" -v v=$((r == victim)) -v c="$continued" -v s=$((victim == 0)) \
      'BEGIN { if (k == "flap" || k == "late") print 5 + t / 2 + 1; else if (k == "stop" && v) print c + t + 6;
               else if (k == "stop" && s) print m + 2 * t + 8; else print m + t + 8 }')
    awk -v a="$after" -v l="$limit" 'BEGIN { exit !(a <= l) }' ||
      fail "run $run ($kind): rank $r ended ${after} s after ready, later than ${limit} s (fault at ${moment} s, TUTTI_TIMEOUT=$TUTTI_TIMEOUT)"
    ends+=" $(failed_after "$run" "$r")/$after"
  done
  # Nothing left: the job's processes, its shm segments.
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && fail "run $run: a rank's process is still there"; done
  left=$(comm -13 <(echo "$before") <(ls /dev/shm) | grep -F "tutti-$job" || true)
  [[ -z $left ]] || fail "run $run: shm segments left: $left"
  summary+=" failed/ended after ready:$ends s; ${took}s in all"
  echo "$summary"
  [[ -n $table ]] && echo "$summary" >>"$table"
  for ((r = 0; r < world; r++)); do line "$run" "$r"; done | sed 's/^/    /' | cut -c1-400
done
echo "fault campaign: $runs runs passed"
