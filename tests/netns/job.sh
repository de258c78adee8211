# A job of fault_worker.cpp ranks across the namespace hosts, and reading what they said (sourced
# by faults.sh and soak.sh after lib.sh; they set `world` (ranks, 2 per host), `worker`,
# `per_rank_limit`). Each job's logs: $netns_tmp/run<RUN>.rank<R>.log.
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
  echo "run $1: not every rank became ready within 20 s" >&2
  return 1
}
pid_of() { sed -n 's/.*: ready job=[^ ]* pid=\([0-9]*\).*/\1/p' "$netns_tmp/run$1.rank$2.log"; }
job_of() { sed -n 's/.*: ready job=\([^ ]*\) pid=.*/\1/p' "$netns_tmp/run$1.rank0.log"; }
status=()
wait_rank() { status[$1]=0; wait "${pids[$1]}" || status[$1]=$?; waited[$1]=1; }
wait_job() {
  local r
  for r in "${!pids[@]}"; do [[ -n ${waited[$r]:-} ]] || wait_rank "$r"; done
}
outcome() { sed -n "s/^fault-worker rank $2: \([a-z_]*\) peer=.*/\1/p" "$netns_tmp/run$1.rank$2.log"; }
line() { grep -h "^fault-worker rank $2: [a-z_]* peer=" "$netns_tmp/run$1.rank$2.log" || true; }
ended_after() { sed -n "s/^fault-worker rank $2: [a-z_]* peer=[-0-9]* after=\([0-9.]*\) .*/\1/p" "$netns_tmp/run$1.rank$2.log"; }
failed_after() { sed -n "s/^fault-worker rank $2: [a-z_]* peer=[-0-9]* after=[0-9.]* failed=\([0-9.]*\) .*/\1/p" "$netns_tmp/run$1.rank$2.log"; }

