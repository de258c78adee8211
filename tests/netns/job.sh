# A job of fault_worker.cpp ranks across the namespace hosts, and reading what they said (sourced
# by faults.sh and soak.sh after lib.sh; they set `world` (ranks, 2 per host), `worker`,
# `per_rank_limit`). Each job's logs: $netns_tmp/run<RUN>.rank<R>.log (under mpirun, links to its
# per-rank files; mpirun's own output in run<RUN>.mpirun.log).
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
# start_mpi_job RUN PHASE [VAR=VALUE...]: the same job started by Open MPI's mpirun (`mpirun`, its
# path) from host 0, 2 ranks per host, with no tutti variable (PMIx rendezvous); sets
# `launcher_pid`. Each rank's output goes to mpirun's --output-filename files, linked as above.
start_mpi_job() {
  local run=$1 phase=$2 r v out=$netns_tmp/mpi$1 agent=$netns_tmp/agent.sh; shift 2
  [[ -x $agent ]] || netns_rsh_agent "$agent"
  for ((r = 0; r < world; r++)); do ln -sf "$out/1/rank.$r/stdout" "$netns_tmp/run$run.rank$r.log"; done
  local exports=(-x TUTTI_TIMEOUT -x TUTTI_STALL_WARN -x TUTTI_FAULT_SECONDS -x TUTTI_FAULT_PHASE)
  for v in "$@"; do exports+=(-x "${v%%=*}"); done
  on_host 0 env -u TUTTI_STORE_ADDR -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u MASTER_ADDR -u MASTER_PORT \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TUTTI_FAULT_PHASE="$phase" "$@" \
    timeout -s KILL "$per_rank_limit" "$mpirun" --host h0:2,h1:2 -np "$world" --bind-to none \
    --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include eth1 --mca btl self,tcp --output-filename "$out" \
    "${exports[@]}" "$worker" >"$netns_tmp/run$run.mpirun.log" 2>&1 &
  launcher_pid=$!
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

