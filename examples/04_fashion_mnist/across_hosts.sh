#!/usr/bin/env bash
# Example 04 across hosts (network namespaces, tests/netns/lib.sh), the program unchanged: its
# transport comes from the launcher's variables (trainer/with_transport.hpp).
#   across_hosts.sh train EXE TUTTI_RUN [MPIRUN] — 200 batches of the README's experiment with 4 slots:
#       one host   tutti-run -n 4 (shm: the reference)
#       2 x 2      torchrun's variables, 2 ranks on each of 2 hosts (multi_node: shm + UCX)
#       2 x 2 sim  the same 4 ranks on ONE namespace host, tutti-run --ranks-per-node 2 simulating
#                  the same 2 x 2 node map: the final parameters must be bit-identical to
#                  2 x 2's (hierarchical<direct, ring> on 2 x 2 adds every element as (a+b)+(c+d),
#                  eager's recursive doubling too: commutative pairs, so no fusion timing changes a bit)
#       4 x 1      mpirun from host 0, one rank per host, no rendezvous variable (PMIx)
#     and each cross-host run's test accuracy within 1 point of one host's (different summation
#     orders: 4 ranks on shm add ((a+b)+c)+d; 200 SGD steps amplify a last-bit difference, so
#     the parameters are compared by the largest difference, printed, not bit for bit).
#   across_hosts.sh restarts EXE TUTTI_RUN MPIRUN — tutti-run --launcher --max-restarts around mpirun
#       (2 x 2): a run whose ranks are SIGKILLed at random ends bit-identical to one never killed.
#   across_hosts.sh uneven EXE TUTTI_RUN — 3 slots on 2 hosts (2 + 1): every rank refuses, naming
#       slots_per_trial, the slots per machine and the hosts (Determined's machine rule).
# Every rank runs under `timeout`; lib.sh removes the namespaces whatever happens.
source "$(dirname "$0")/../../tests/netns/lib.sh"
mode=${1:?mode} exe=${2:?program} tutti_run=${3:?tutti-run} mpirun=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
export TUTTI_TIMEOUT=${TUTTI_TIMEOUT:-30}
limit=240
work=$netns_tmp  # removed with the namespaces

# config NAME SLOTS: the README's experiment with SLOTS slots and its own checkpoint directory.
config() {
  sed -e "s|host_path: .*|host_path: $work/ckpt-$1|" -e "s|^\(  slots_per_trial:\).*|\1 $2|" \
    "$here/fashion_mnist.yaml" >"$work/$1.yaml"
}
args() { echo --config "$work/$1.yaml" --out "$work/out-$1" --max-batches 200 --save-parameters "$work/$1.params"; }
# mpirun_from_h0 HOSTS NP: sets `mpi` to Open MPI's mpirun for HOSTS (--host syntax), reaching the
# other hosts through lib.sh's rsh agent, and `mpi_env` to the environment to start it with on host
# 0: no rendezvous variable (rank 0's store is found through PMIx).
mpirun_from_h0() {
  netns_rsh_agent "$work/agent.sh"
  mpi_env=(env -u TUTTI_STORE_ADDR -u TUTTI_JOB_KEY -u MASTER_ADDR -u MASTER_PORT OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  mpi=("$mpirun" --host "$1" -np "$2" --bind-to none --mca plm_rsh_agent "$work/agent.sh" --mca oob_tcp_if_include eth1
    --mca btl self,tcp -x TUTTI_TIMEOUT)
}

# torchrun_job NAME HOSTS PPN PORT [VAR=VALUE...]: ranks started with torchrun's variables, rank r
# on host r / PPN; waits for all; fails naming a rank that failed.
torchrun_job() {
  local name=$1 hosts=$2 ppn=$3 port=$4 r pids=() key
  shift 4
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  local world=$((hosts * ppn))
  for ((r = 0; r < world; r++)); do
    on_host $((r / ppn)) env RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn \
      MASTER_ADDR=10.213.1.1 MASTER_PORT=$port TUTTI_JOB_KEY="$key" "$@" \
      timeout $limit "$exe" $(args "$name") >"$work/$name.rank$r.log" 2>&1 &
    pids+=($!)
  done
  local failed=""
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || failed+=" $r"; done
  [[ -z $failed ]] || fail "$name: rank(s)$failed failed"
  cp "$work/$name.rank0.log" "$work/$name.log"
}

launcher=""
trap 'if [[ -n $launcher ]]; then kill "$launcher" 2>/dev/null || true; fi; netns_cleanup' EXIT

case $mode in
train)
  netns_hosts 4
  config one 4
  timeout $limit "$tutti_run" -n 4 -- "$exe" $(args one) >"$work/one.log" 2>&1 || fail "one host: the job failed"
  grep -q "transport shm (all 4 ranks on this host (launcher tutti-run))" "$work/one.log" || fail "one host: not shm"

  config x22 4
  torchrun_job x22 2 2 29500
  grep -q "transport multi_node (2 of the job's 4 ranks on this host (launcher torchrun)); hosts h0: ranks 0 1; h1: ranks 2 3; network 10.213.1.0/24:" \
    "$work/x22.log" || fail "2 x 2: rank 0 did not log multi_node over 10.213.1.0/24 with hosts h0 and h1"

  cp "$work/x22.yaml" "$work/sim.yaml"
  sed -i "s|host_path: .*|host_path: $work/ckpt-sim|" "$work/sim.yaml"
  on_host 0 timeout $limit "$tutti_run" -n 4 --ranks-per-node 2 -- "$exe" $(args sim) >"$work/sim.log" 2>&1 ||
    fail "2 x 2 simulated on one host: the job failed"
  grep -q "transport multi_node (2 of the job's 4 ranks on this host (launcher tutti-run)); hosts sim0: ranks 0 1; sim1: ranks 2 3" \
    "$work/sim.log" || fail "2 x 2 on one host: not multi_node over the simulated 2 x 2 node map"

  if [[ -n $mpirun && -x $mpirun ]]; then
    config x41 4
    mpirun_from_h0 h0:1,h1:1,h2:1,h3:1 4
    on_host 0 "${mpi_env[@]}" timeout $limit "${mpi[@]}" "$exe" $(args x41) >"$work/x41.log" 2>&1 || fail "4 x 1 (mpirun): the job failed"
    grep -q "transport multi_node (1 of the job's 4 ranks on this host (launcher Open MPI)); hosts h0: rank 0; h1: rank 1; h2: rank 2; h3: rank 3" \
      "$work/x41.log" || fail "4 x 1 (mpirun): rank 0 did not log multi_node over 4 hosts"
  else
    echo "4 x 1 under mpirun skipped: no mpirun.openmpi"
  fi

  cmp -s "$work/x22.params" "$work/sim.params" || fail "2 x 2 across hosts and simulated on one host differ"
  echo "2 x 2 across hosts = 2 x 2 simulated on one host, bit for bit ($(stat -c %s "$work/x22.params") bytes of parameters)"
  python3 - "$work" "$([[ -f $work/x41.params ]] && echo x41)" <<'PY' || fail "accuracy across hosts differs from one host's"
import sys, struct, pathlib
work, runs = pathlib.Path(sys.argv[1]), ["x22"] + [r for r in sys.argv[2:] if r]
def params(name): b = (work / f"{name}.params").read_bytes(); return struct.unpack(f"{len(b)//4}f", b)
def acc(name):
    lines = [l for l in (work / f"{name}.log").read_text().splitlines() if "test accuracy" in l]
    return float(lines[-1].split("test accuracy")[1].strip().rstrip("%"))
one, a1 = params("one"), acc("one")
bad = False
for r in runs:
    p, a = params(r), acc(r)
    worst = max(abs(x - y) for x, y in zip(one, p))
    print(f"{r}: test accuracy {a:.2f} % (one host {a1:.2f} %), largest parameter difference {worst:.3g}")
    bad |= len(p) != len(one) or abs(a - a1) > 1.0
sys.exit(bad)
PY
  ;;
restarts)
  # Restarts across hosts: the layer that restarts is the launcher's loop, here tutti-run --launcher
  # around mpirun (2 x 2 from host 0). 1600 batches, a checkpoint every 100. Run A is never killed;
  # run B's ranks are SIGKILLed KILLS times (random rank on either host, 0.5-2 s into each start)
  # under --max-restarts 4: B must end bit-identical to A (2 x 2 adds (a+b)+(c+d): no fusion timing
  # changes a bit), each restart said with mpirun's failure.
  [[ -n $mpirun && -x $mpirun ]] || skip "mpirun.openmpi not found"
  kills=${TUTTI_RESTART_KILLS:-2}
  netns_hosts 2
  mpirun_from_h0 h0:2,h1:2 4
  config restarts 4
  sed -i -e 's|^  epochs: 4$|  batches: 100|' "$work/restarts.yaml"
  run_job() {  # run_job NAME MAX: in the background; each rank writes "pid restart" to its file first
    sed -e "s|host_path: .*|host_path: $work/ckpt-$1|" "$work/restarts.yaml" >"$work/$1.yaml"
    on_host 0 "${mpi_env[@]}" timeout 400 "$tutti_run" --launcher --max-restarts "$2" -- "${mpi[@]}" -x TUTTI_RESTART \
      sh -c 'echo "$$ $TUTTI_RESTART" >"$0/$1-rank-$OMPI_COMM_WORLD_RANK.pid"; shift; exec "$@"' "$work" "$1" \
      "$exe" --config "$work/$1.yaml" --out "$work/out-$1" --max-batches 1600 --save-parameters "$work/$1.params" \
      >"$work/$1.log" 2>&1 &
    launcher=$!
  }
  kill_rank() {  # kill_rank NAME START: a random rank of that start, once it runs, 0.5-2 s after
    local r=$((RANDOM % 4)) p="" s="" _
    for _ in $(seq 300); do
      p="" s=""
      read -r p s 2>/dev/null <"$work/$1-rank-$r.pid" || true
      [[ $s == "$2" && $p =~ ^[0-9]+$ && -e /proc/$p ]] && break
      p=""
      sleep 0.1
    done
    [[ -n $p ]] || fail "run $1, start $2: rank $r not found"
    local ms=$((500 + RANDOM % 1500))
    sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    if kill -9 "$p" 2>/dev/null; then echo "run $1, start $2: killed rank $r (host h$((r / 2)))"; fi
  }
  run_job A 0
  wait "$launcher" || fail "run A (never killed) failed"
  launcher=""
  run_job B 4
  for ((k = 0; k < kills; k++)); do kill_rank B "$k"; done
  wait "$launcher" || fail "run B failed"
  launcher=""
  grep -E "tutti-run: restart|resumed from|test accuracy" "$work/B.log" || true
  n=$(grep -c "tutti-run: restart [0-9]* of 4, after: the launcher $mpirun exited with status" "$work/B.log" || true)
  ((n == kills)) || fail "run B: expected $kills restarts said with mpirun's failure, got $n"
  cmp -s "$work/A.params" "$work/B.params" || fail "run B ($kills kills across hosts) does not end bit-identical to run A"
  echo "run B, killed $kills times across 2 hosts, ends bit-identical to run A"
  ;;
uneven)
  netns_hosts 2
  config uneven 3
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  pids=()
  for r in 0 1 2; do
    on_host $((r / 2)) env RANK=$r WORLD_SIZE=3 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=$((r < 2 ? 2 : 1)) \
      MASTER_ADDR=10.213.1.1 MASTER_PORT=29502 TUTTI_JOB_KEY="$key" timeout $limit "$exe" $(args uneven) \
      >"$work/uneven.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2; do
    st=0
    wait "${pids[$r]}" || st=$?
    [[ $st != 0 && $st != 124 ]] || fail "uneven: rank $r exited $st (want a refusal)"
    grep -q "rank $r.*resources.slots_per_trial 3 is not a multiple of the slots per machine: the job's 2 hosts hold different numbers of slots (h0: ranks 0 1; h1: rank 2)" \
      "$work/uneven.rank$r.log" || fail "uneven: rank $r did not refuse with the machine rule"
  done
  grep -h "slots per machine" "$work/uneven.rank0.log"
  ;;
*) echo "unknown mode '$mode'" >&2; exit 2 ;;
esac
echo "example 04 across hosts, $mode: passed"
