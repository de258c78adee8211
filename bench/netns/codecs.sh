#!/usr/bin/env bash
# Lossy codecs across two "hosts" (network namespaces, tests/netns/lib.sh), 2 ranks each: the float32
# sum allreduce of tutti-bench --transport multi_node --codec none|fp16|bf16|int8 for each algorithm,
# every (algorithm, codec) run interleaved and the order rotated from one rep to the next, the link
# shaped with tc tbf on both ends (each host's eth1 and its switch port). Root only; the namespaces
# are removed on exit, also on failure or interruption (lib.sh's trap).
#   bench/netns/codecs.sh OUT_DIR [RATE|none] [REPS] [MIN_BYTES] [MAX_BYTES]   (defaults: 1gbit 3 1M 256M)
# Environment: ALGORITHMS (default "ring hierarchical"), CODECS (default "none fp16 bf16 int8"),
# BENCH_ARGS (tutti-bench's other flags; default "-f 4 -n 3 -w 1"), TUTTI_BENCH (the program; default
# build/bench/tutti-bench), RUN_TIMEOUT (seconds per run, default 900), BUDGET (seconds for all runs,
# default 1500: runs that would start later are skipped, and context.txt says so).
# Then: bench/netns/codecs_summarize.py [--png FILE] OUT_DIR prints medians and speedups against none.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/tests/netns/lib.sh"
out=${1:?out dir}; rate=${2:-1gbit}; reps=${3:-3}; min=${4:-1M}; max=${5:-256M}
bench=${TUTTI_BENCH:-$repo/build/bench/tutti-bench}
read -r -a algorithms <<<"${ALGORITHMS:-ring hierarchical}"
read -r -a codecs <<<"${CODECS:-none fp16 bf16 int8}"
read -r -a extra <<<"${BENCH_ARGS:--f 4 -n 3 -w 1}"
run_timeout=${RUN_TIMEOUT:-900}; budget=${BUDGET:-1500}
[[ -x $bench ]] || { echo "build tutti-bench first (or set TUTTI_BENCH): $bench"; exit 2; }
# A build without UCX or without --codec refuses here; one with both stops later, at -t 3 (no launcher).
probe=$("$bench" --transport multi_node --algorithm ring --codec fp16 -t 3 2>&1 || true)
[[ $probe == *"every process is one rank"* ]] ||
  { echo "$bench cannot run --transport multi_node --codec fp16 (built without UCX and OpenSSL, or too old)"; exit 2; }
(( reps >= 1 && reps <= 20 )) || { echo "REPS must be 1..20"; exit 2; }
mkdir -p "$out"
netns_hosts 2
[[ $rate != none ]] && shape_links "$rate"
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
args=(-b "$min" -e "$max" "${extra[@]}")

run_codec() {  # run_codec ALG CODEC LOG PORT: 4 ranks, 2 per host; rank 0's table in LOG, the others' output kept on failure
  local r q status=0 pids=()
  for r in 0 1 2 3; do
    on_host $((r / 2)) env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 MASTER_ADDR=10.213.1.1 \
      MASTER_PORT="$4" TUTTI_JOB_KEY="$key" timeout "$run_timeout" "$bench" --transport multi_node --algorithm "$1" \
      --codec "$2" "${args[@]}" >"$3.rank$r" 2>&1 &
    pids+=($!)
  done
  for q in "${pids[@]}"; do wait "$q" || status=$?; done
  mv "$3.rank0" "$3"
  if (( status == 0 )); then rm -f "$3".rank*; else echo "exit status $status (timeout: 124)" >>"$3"; fi
}

configs=()
for a in "${algorithms[@]}"; do for c in "${codecs[@]}"; do configs+=("$a:$c"); done; done
started=$SECONDS skipped=0 run=0
for ((rep = 0; rep < reps; rep++)); do
  for ((i = 0; i < ${#configs[@]}; i++)); do
    cfg=${configs[$(( (i + rep) % ${#configs[@]} ))]}   # rotated order per rep
    a=${cfg%%:*} c=${cfg#*:}
    if (( SECONDS - started > budget )); then skipped=$((skipped + 1)); echo "rep $rep $a $c skipped (budget ${budget} s spent)"; continue; fi
    t0=$SECONDS
    echo "loadavg before: $(cat /proc/loadavg)" >"$out/${a}_$c.rep$rep.load"
    run_codec "$a" "$c" "$out/${a}_$c.rep$rep.txt" $((29500 + run % 400))
    echo "loadavg after: $(cat /proc/loadavg)  seconds $((SECONDS - t0))" >>"$out/${a}_$c.rep$rep.load"
    run=$((run + 1))
    echo "rep $rep $a $c done in $((SECONDS - t0)) s"
  done
done
# The link: UCX tag bandwidth at 4 MiB between one rank per host over eth1 (as run.sh).
case $rate in none) bw_iters=2000 ;; 10gbit) bw_iters=400 ;; *) bw_iters=40 ;; esac
on_host 1 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest -p 13337 >/dev/null 2>&1 &
sleep 1
on_host 0 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest 10.213.1.2 -p 13337 -t tag_bw -s 4194304 \
  -n "$bw_iters" >"$out/ucx_perftest.tag_bw.txt" 2>&1 || true
wait
echo "rate=$rate reps=$reps sizes=$min..$max args=${extra[*]} algorithms=${algorithms[*]} codecs=${codecs[*]} ranks=2x2" \
  "runs=$run skipped=$skipped seconds=$((SECONDS - started)) date=$(date -u +%F) commit=$(git -C "$repo" rev-parse --short HEAD)" \
  "(work tree: $(git -C "$repo" status --porcelain -- include bench | wc -l) changed files under include/ bench/)" >"$out/context.txt"
