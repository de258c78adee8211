#!/usr/bin/env bash
# allreduce_vs_gloo.py across 2 namespace hosts of 2 ranks (tests/netns/lib.sh: veth, no shaping),
# started torchrun-style with no tutti variable; gloo on eth1 (GLOO_SOCKET_IFNAME). Root only.
#   bench/torch/across_hosts.sh OUT [ROUNDS]     (PYTHONPATH must reach tutti_torch; /usr/bin/python3)
# Writes what rank 0 writes (OUT/allreduce.csv, ddp.csv, table.md) and each rank's log in OUT.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tests/netns/lib.sh"
out=$(realpath -m "${1:?usage: across_hosts.sh OUT [ROUNDS]}") rounds=${2:-5}
mkdir -p "$out"
per_rank_limit=${TUTTI_NETNS_RANK_LIMIT:-900}
hosts=2 ppn=2 world=4
netns_hosts "$hosts"
pids=()
for ((r = 0; r < world; r++)); do
  on_host $((r / ppn)) env RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn \
    MASTER_ADDR=10.213.1.1 MASTER_PORT=29700 GLOO_SOCKET_IFNAME=eth1 PYTHONPATH="${PYTHONPATH:-}" \
    timeout "$per_rank_limit" /usr/bin/python3 "$here/allreduce_vs_gloo.py" "$out" --rounds "$rounds" \
    >"$out/rank$r.log" 2>&1 &
  pids[$r]=$!
done
for r in "${!pids[@]}"; do wait "${pids[$r]}" || fail "rank $r exited $? (its log: $out/rank$r.log)"; done
cat "$out/table.md"
