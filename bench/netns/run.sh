#!/usr/bin/env bash
# A collective's benchmark across "hosts" (network namespaces, tests/netns/lib.sh), HOSTS x PPN ranks
# (environment; default 2 x 2), COLLECTIVE (environment; allreduce, allgather, reduce_scatter or
# broadcast; default allreduce: tutti-bench --collective, the MPI program's -C),
# tutti (--transport multi_node: ring, tree, halving_doubling, hierarchical<ring,ring>, hierarchical_direct)
# against Open MPI (btl self,vader,tcp) and Gloo (its TCP transport on eth1), interleaved and
# rotated, plus UCX's own ucx_perftest between the hosts as the link's ceiling. Gloo's program is
# allreduce only: with another COLLECTIVE it is skipped, saying so. Root only; namespaces removed on exit.
#   bench/netns/run.sh OUT_DIR [RATE|none] [REPS] [MAX_BYTES]     (RATE: tc's, e.g. 10gbit, 1gbit)
# PEERS="tutti_ring ompi ..." runs a subset; any tutti-bench --algorithm works as tutti_NAME
# (tutti_tuned: algorithm::tuned, with TUTTI_TUNING_FILE passed through when set);
# tutti_NAME+VAR=VALUE[+VAR=VALUE...] runs it with those variables set (A/B of settings in one
# interleaved run, e.g. PEERS="tutti_automatic tutti_automatic+UCX_TLS=tcp ompi"; the result file keeps
# the whole entry as its name, so a VALUE has no '/', '+' or space). Needs build/bench/tutti-bench and, from
# bench/peers/build.sh, build/peers/mpi-allreduce-bench-openmpi and build/peers/gloo-allreduce-bench.
# MIN (default 8), ITERS, WARMUP: tutti-bench's and the MPI program's -b, -n, -w (sizes MIN..MAX by 4x).
# Then: bench/netns/summarize.py OUT_DIR prints medians and ratios.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/tests/netns/lib.sh"
out=${1:?out dir}; rate=${2:-none}; reps=${3:-3}; max=${4:-16M}
mkdir -p "$out"
bench=$repo/build/bench/tutti-bench
ompi=$repo/build/peers/mpi-allreduce-bench-openmpi
gloo=$repo/build/peers/gloo-allreduce-bench
collective=${COLLECTIVE:-allreduce}
case $collective in
  allreduce | allgather | reduce_scatter | broadcast) ;;
  *) echo "run.sh: COLLECTIVE=$collective: one of allreduce, allgather, reduce_scatter, broadcast" >&2; exit 2 ;;
esac
parse_tutti_peer() {  # parse_tutti_peer tutti_ALG[+VAR=VALUE...]: sets peer_alg and peer_env (VAR=VALUE words)
  local kv parts=()
  IFS=+ read -r -a parts <<<"${1#tutti_}"
  peer_alg=${parts[0]-} peer_env=()
  [[ -n $peer_alg ]] || { echo "run.sh: PEERS entry '$1': no algorithm after tutti_" >&2; return 1; }
  for kv in "${parts[@]:1}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*=[^/[:space:]]*$ ]] || { echo "run.sh: PEERS entry '$1': '$kv' is not VAR=VALUE (no '/' or space in VALUE)" >&2; return 1; }
    peer_env+=("$kv")
  done
}
read -r -a peers <<<"${PEERS:-tutti_ring tutti_tree tutti_halving_doubling tutti_hierarchical tutti_hierarchical_direct ompi gloo}"
kept=()
for p in "${peers[@]}"; do
  case $p in
    tutti_*) parse_tutti_peer "$p" || exit 2 ;;
    gloo) [[ $collective == allreduce ]] || { echo "run.sh: gloo skipped: its program is allreduce only (COLLECTIVE=$collective)" >&2; continue; } ;;
  esac
  kept+=("$p")
done
peers=("${kept[@]}")
[[ -x $bench ]] || { echo "build tutti-bench first"; exit 2; }  # and only the programs the chosen peers need
[[ " ${peers[*]} " != *" ompi "* || -x $ompi ]] || { echo "build the peers first (bench/peers/build.sh): $ompi"; exit 2; }
[[ " ${peers[*]} " != *" gloo "* || -x $gloo ]] || { echo "build the peers first (bench/peers/build.sh): $gloo"; exit 2; }
hosts=${HOSTS:-2}; ppn=${PPN:-2}; world=$((hosts * ppn))
netns_hosts "$hosts"
[[ $rate != none ]] && shape_links "$rate"
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
# tutti-bench -a 3: a row's time is the slowest rank's, as the MPI program's (MPI_MAX over ranks);
# results before 2026-11-27 used tutti-bench's default, the mean over ranks.
args=(-b "${MIN:-8}" -e "$max" -f 4 -n "${ITERS:-20}" -w "${WARMUP:-5}")  # MIN, ITERS, WARMUP: -b, -n, -w
# -C only when not allreduce: a peer binary built before -C still runs the allreduce sweep.
ompi_collective=()
[[ $collective == allreduce ]] || ompi_collective=(-C "$collective")
agent=$netns_tmp/agent.sh
netns_rsh_agent "$agent"

run_tutti() {  # run_tutti ALG LOG [VAR=VALUE...]: the variables are set for every rank, after the others
  local r q pids=()
  for ((r = 0; r < world; r++)); do
    on_host $((r / ppn)) env RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn \
      MASTER_ADDR=10.213.1.1 MASTER_PORT=29500 TUTTI_JOB_KEY="$key" ${TUTTI_TUNING_FILE:+TUTTI_TUNING_FILE=$TUTTI_TUNING_FILE} \
      "${@:3}" timeout 300 ${PIN:+taskset -c $((r % $(nproc)))} "$bench" --transport multi_node --algorithm "$1" \
      --collective "$collective" -a 3 "${args[@]}" \
      >"$2.rank$r" 2>&1 &
    pids+=($!)
  done
  for q in "${pids[@]}"; do wait "$q" || true; done
  mv "$2.rank0" "$2"; rm -f "$2".rank*
}
run_ompi() {
  on_host 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun.openmpi \
    --host "$(for ((k = 0; k < hosts; k++)); do printf '%sh%d:%d' "${k:+,}" "$k" "$ppn"; done | sed 's/^,//')" -np "$world" --bind-to none --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include eth1 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include eth1 --mca mpi_yield_when_idle 1 \
    "$ompi" "${ompi_collective[@]}" "${args[@]}" >"$1" 2>&1 || true
}
run_gloo() {  # run_gloo LOG: a fresh FileStore per run (shared /tmp), each rank bound to its host's eth1
  local r q pids=() store=$netns_tmp/gloo-store.$RANDOM$RANDOM
  mkdir -p "$store"
  for ((r = 0; r < world; r++)); do
    on_host $((r / ppn)) env TUTTI_RANK=$r TUTTI_WORLD_SIZE=$world timeout 300 "$gloo" -s "$store" \
      -H "10.213.1.$((r / ppn + 1))" "${args[@]}" >"$1.rank$r" 2>&1 &
    pids+=($!)
  done
  for q in "${pids[@]}"; do wait "$q" || true; done
  mv "$1.rank0" "$1"; rm -f "$1".rank*; rm -rf "$store"
}
for ((rep = 0; rep < reps; rep++)); do
  for ((i = 0; i < ${#peers[@]}; i++)); do
    p=${peers[$(( (i + rep) % ${#peers[@]} ))]}   # rotated order per rep
    case $p in
      tutti_*) parse_tutti_peer "$p" && run_tutti "$peer_alg" "$out/$p.rep$rep.txt" "${peer_env[@]}" ;;
      ompi) run_ompi "$out/$p.rep$rep.txt" ;;
      gloo) run_gloo "$out/$p.rep$rep.txt" ;;
    esac
    echo "rep $rep $p done"
  done
done
# The link: UCX tag latency (8 B) and bandwidth (4 MiB) between one rank per host over eth1.
# Iterations so that the bandwidth test moves ~400 MiB unshaped and stays within its time limit shaped.
case $rate in none) bw_iters=2000 ;; 10gbit) bw_iters=400 ;; *) bw_iters=40 ;; esac
for test in "tag_lat 8 2000" "tag_bw 4194304 $bw_iters"; do
  set -- $test
  on_host 1 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest -p 13337 >/dev/null 2>&1 &
  sleep 1
  on_host 0 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest 10.213.1.2 -p 13337 -t "$1" -s "$2" -n "$3" \
    >"$out/ucx_perftest.$1.txt" 2>&1 || true
  wait
done
echo "collective=$collective rate=$rate reps=$reps max=$max ranks=${hosts}x${ppn} date=$(date -u +%F) commit=$(git -C "$repo" rev-parse --short HEAD)" >"$out/context.txt"
