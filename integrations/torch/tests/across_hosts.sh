#!/usr/bin/env bash
# The torch backend across hosts: 2 namespace hosts of 2 ranks (tests/netns/lib.sh), started the way
# torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
# with no tutti variable: torch's TCPStore on host 0 is the only rendezvous.
#   across_hosts.sh PYTHON
# Checks: every rank passes collectives_test.py's checks (every collective, dtype and op against
# the reference) and ddp_test.py's (DDP on tutti equals DDP on gloo within 1e-6); rank 0 logs that
# it chose multi_node for 4 ranks on 2 hosts and where tutti's store went (through torch's store,
# on eth1, not the decoy eth0). Skipped (77) without root or namespaces, like the netns tests.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../../tests/netns/lib.sh"
python=${1:?usage: across_hosts.sh PYTHON}
per_rank_limit=${TUTTI_NETNS_RANK_LIMIT:-240}
export TUTTI_TIMEOUT=${TUTTI_TIMEOUT:-30}
hosts=2 ppn=2 world=4
netns_hosts "$hosts"

# run_job NAME PORT SCRIPT: the four ranks of SCRIPT, then each rank's exit status checked.
run_job() {
  local name=$1 port=$2 script=$3 r pids=()
  for ((r = 0; r < world; r++)); do
    on_host $((r / ppn)) env RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn \
      MASTER_ADDR=10.213.1.1 MASTER_PORT="$port" GLOO_SOCKET_IFNAME=eth1 TUTTI_LOG=info \
      timeout "$per_rank_limit" "$python" "$here/$script" >"$netns_tmp/$name$r.log" 2>&1 &
    pids[$r]=$!
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}" || fail "$name: rank $r exited $?"
  done
}

run_job collectives 29500 collectives_test.py
for ((r = 0; r < world; r++)); do
  grep -q "^rank $r: every collective, dtype and op as the reference (4 ranks)" "$netns_tmp/collectives$r.log" ||
    fail "collectives: rank $r did not report its checks passed"
done
grep -q "torch backend: transport multi_node (4 ranks on 2 hosts)" "$netns_tmp/collectives0.log" ||
  fail "collectives: rank 0 did not log multi_node for 4 ranks on 2 hosts"
grep -qE "rendezvous through torch's store: store at 10\.213\.1\.1:[0-9]+ on eth1" "$netns_tmp/collectives0.log" ||
  fail "collectives: rank 0 did not log tutti's store on eth1, found through torch's store"
grep -h "torch backend: transport\|rendezvous through" "$netns_tmp/collectives0.log"

run_job ddp 29600 ddp_test.py
for ((r = 0; r < world; r++)); do
  grep -q "^rank $r: DDP on tutti equals DDP on gloo within 1e-6 (4 ranks" "$netns_tmp/ddp$r.log" ||
    fail "ddp: rank $r did not report DDP on tutti equal to gloo's"
done
grep -h "^rank" "$netns_tmp"/ddp*.log
echo "torch across hosts: passed"
