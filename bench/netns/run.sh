#!/usr/bin/env bash
# The allreduce benchmark across two "hosts" (network namespaces, tests/netns/lib.sh), 2 ranks each,
# tutti (-T multi_node) against Open MPI (btl self,vader,tcp), interleaved, plus UCX's own
# ucx_perftest between the hosts as the link's ceiling. Root only; namespaces removed on exit.
#   bench/netns/run.sh OUT_DIR [RATE|none] [REPS] [MAX_BYTES]
# Needs build/bench/tutti-bench and build/peers/mpi-allreduce-bench-openmpi (bench/peers/build.sh).
# Then: bench/netns/summarize.py OUT_DIR prints medians and ratios.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/tests/netns/lib.sh"
out=${1:?out dir}; rate=${2:-none}; reps=${3:-3}; max=${4:-16M}
mkdir -p "$out"
bench=$repo/build/bench/tutti-bench
ompi=$repo/build/peers/mpi-allreduce-bench-openmpi
[[ -x $bench && -x $ompi ]] || { echo "build tutti-bench and the peers first"; exit 2; }
netns_hosts 2
[[ $rate != none ]] && shape_links "$rate"
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
args=(-b 8 -e "$max" -f 4 -n 20 -w 5)
agent=$netns_tmp/agent.sh
cat >"$agent" <<AGENT
#!/bin/bash
while [[ \$1 == -* ]]; do shift; done
host=\$1; shift
exec ip netns exec "${netns_tag}\$host" unshare --uts sh -c 'hostname "\$0"; eval "\$1"' "\$host" "\$*"
AGENT
chmod +x "$agent"

run_tutti() {  # run_tutti ALG LOG
  local r q pids=()
  for r in 0 1 2 3; do
    on_host $((r / 2)) env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 MASTER_ADDR=10.213.1.1 \
      MASTER_PORT=29500 TUTTI_JOB_KEY="$key" timeout 300 "$bench" -T multi_node -a "$1" "${args[@]}" \
      >"$2.rank$r" 2>&1 &
    pids+=($!)
  done
  for q in "${pids[@]}"; do wait "$q" || true; done
  mv "$2.rank0" "$2"; rm -f "$2".rank*
}
run_ompi() {
  on_host 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun.openmpi \
    --host h0:2,h1:2 -np 4 --bind-to none --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include eth1 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include eth1 --mca mpi_yield_when_idle 1 \
    "$ompi" "${args[@]}" >"$1" 2>&1 || true
}
peers=(tutti_ring tutti_hierarchical_direct tutti_halving_doubling ompi)
for ((rep = 0; rep < reps; rep++)); do
  for ((i = 0; i < ${#peers[@]}; i++)); do
    p=${peers[$(( (i + rep) % ${#peers[@]} ))]}   # rotated order per rep
    case $p in
      tutti_*) run_tutti "${p#tutti_}" "$out/$p.rep$rep.txt" ;;
      ompi) run_ompi "$out/$p.rep$rep.txt" ;;
    esac
    echo "rep $rep $p done"
  done
done
# The link: UCX tag latency (8 B) and bandwidth (4 MiB) between one rank per host over eth1.
for test in "tag_lat 8" "tag_bw 4194304"; do
  set -- $test
  on_host 1 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest -p 13337 >/dev/null 2>&1 &
  sleep 1
  on_host 0 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest 10.213.1.2 -p 13337 -t "$1" -s "$2" -n 2000 \
    >"$out/ucx_perftest.$1.txt" 2>&1 || true
  wait
done
echo "rate=$rate reps=$reps max=$max ranks=2x2 date=$(date -u +%F) commit=$(git -C "$repo" rev-parse --short HEAD)" >"$out/context.txt"
