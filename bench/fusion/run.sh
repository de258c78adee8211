#!/usr/bin/env bash
# The tensor-fusion benchmark: tutti-fusion-bench replays one training step's gradients of a real model
# (bench/fusion/MODEL.tsv, one float32 tensor per line, enqueued last layer first as async allreduces)
# under several fusion strategies, chosen by environment:
#   per-tensor           TUTTI_FUSION_THRESHOLD=0 TUTTI_CYCLE_TIME=0    (one collective per tensor, no wait)
#   tNNN-c1ms            TUTTI_FUSION_THRESHOLD=NNN TUTTI_CYCLE_TIME=1  for NNN in 1M 4M 16M 64M 256M
#   t64M-c0ms            TUTTI_FUSION_THRESHOLD=64M TUTTI_CYCLE_TIME=0
#   NAME-inturn          any of the above with TUTTI_FUSION_OVERLAP=0 (packs and unpacks in turn with the
#                        collectives, not on the engine's copy thread); only when --only names it
#   autotune             TUTTI_AUTOTUNE=1 (threshold and cycle unset), TUTTI_AUTOTUNE_LOG per run
#   with --joint also (joint tuning, docs/fusion.md; --algorithm tuned: tutti-tune's candidates, its
#   table from TUTTI_TUNING_FILE or the built-in default):
#   tuned-autotune       --algorithm tuned, TUTTI_AUTOTUNE=1 TUTTI_AUTOTUNE_ALGORITHM=0 (the table picks)
#   joint-autotune       --algorithm tuned, TUTTI_AUTOTUNE=1 TUTTI_AUTOTUNE_ALGORITHM=1 (the tuner picks too)
# Runs are interleaved: each repeat runs every (model, ranks, configuration) once, in an order shuffled
# by a fixed seed (--seed + repeat), so drift on the machine spreads over all configurations. Every
# `fusion,` line rank 0 prints goes to one CSV, with `#` lines saying what ran (rc, seconds, load);
# the programs' full output goes to a .log beside it. Each run is bounded by `timeout 300`.
#
#   bench/fusion/run.sh [--ranks "2 4"] [--models "resnet50 bert_base"] [--repeats 3] [--steps 20]
#                       [--warmup 5] [--autotune-warmup 50] [--label NAME] [--out FILE.csv] [--seed 1]
#                       [--netns [--hosts 2] [--rate 1gbit]] [--joint] [--only "t64M-c0ms autotune"]
#     -> bench/results/fusion-NAME-YYYYMMDD.csv (NAME: --label, default the short hostname)
#   bench/fusion/run.sh --grid [--models resnet50] [--ranks 2] [--repeats 3] [--steps 20] [--warmup 5]
#                       [--autotune-steps 100] [--label NAME] [--out GRID.csv] [--netns ...]
#     -> bench/results/fusion-grid-NAME-MODEL-Rr-YYYYMMDD.csv: the exhaustive grid, thresholds
#        {0 1M 2M 4M 8M 16M 32M 64M 128M 256M} x cycle {0 1 5 10 25 50} ms, each point once per repeat,
#        then one autotuned run (--autotune-steps timed steps) logging its samples to
#        GRID-autotune.csv beside it (TUTTI_AUTOTUNE_LOG): what the autotuner finds against the grid.
#
# --only NAMES: only those configurations (names as above), e.g. for long models on slow links.
# --netns: ranks split over --hosts "hosts" (default 2; network namespaces, tests/netns/lib.sh, as
# bench/netns/run.sh), RANKS/HOSTS per host, the transport from FUSION_NETNS_ARGS (default "--transport multi_node"), the link
# shaped to --rate with tc tbf (default none). Root only; the namespaces are removed on exit.
# Environment: TUTTI_RUN (default build/tools/tutti-run), FUSION_BENCH (default
# build/bench/fusion/tutti-fusion-bench), RUN_TIMEOUT (seconds per run, default 300).
# Then: bench/fusion/summarize.py FILE.csv [...] (and --grid GRID.csv --autotune-log GRID-autotune.csv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tutti_run=${TUTTI_RUN:-$repo/build/tools/tutti-run}
bench=${FUSION_BENCH:-$repo/build/bench/fusion/tutti-fusion-bench}
run_timeout=${RUN_TIMEOUT:-300}
read -r -a netns_args <<<"${FUSION_NETNS_ARGS:---transport multi_node}"

ranks_list="2 4" models="" repeats=3 steps=20 warmup=5 autotune_warmup=45 autotune_steps=100
label="" out="" seed=1 grid=0 netns=0 hosts=2 rate=none joint=0 only=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --ranks) ranks_list=${2:?}; shift ;;
    --models | --model) models=${2:?}; shift ;;
    --repeats) repeats=${2:?}; shift ;;
    --steps) steps=${2:?}; shift ;;
    --warmup) warmup=${2:?}; shift ;;
    --autotune-warmup) autotune_warmup=${2:?}; shift ;;
    --autotune-steps) autotune_steps=${2:?}; shift ;;
    --label) label=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --seed) seed=${2:?}; shift ;;
    --grid) grid=1 ;;
    --netns) netns=1 ;;
    --hosts) hosts=${2:?}; shift ;;
    --only) only=${2:?}; shift ;;
    --joint) joint=1 ;;
    --rate) rate=${2:?}; shift ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
read -r -a ranks_all <<<"$ranks_list"
if ((grid)); then read -r -a models_all <<<"${models:-resnet50}"; else read -r -a models_all <<<"${models:-resnet50 bert_base}"; fi
for n in "$repeats" "$steps" "$warmup" "$autotune_warmup" "$autotune_steps" "$seed" "$hosts" "${ranks_all[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "run.sh: '$n' is not a whole number" >&2; exit 2; }
done
((repeats >= 1 && repeats <= 20)) || { echo "run.sh: --repeats must be 1..20" >&2; exit 2; }
if ((grid)); then
  ((${#models_all[@]} == 1 && ${#ranks_all[@]} >= 1)) || { echo "run.sh --grid: one model (--models NAME)" >&2; exit 2; }
  ranks_all=("${ranks_all[0]}")   # the grid is for one rank count: the first of --ranks
fi
# A model is a name (bench/fusion/NAME.tsv) or a path; runs start in the repository, so the bench reads
# (and prints) bench/fusion/NAME.tsv, and a path of the caller's is made absolute first.
tsv_of() { [[ $1 == */* || $1 == *.tsv ]] && realpath -m "$1" || echo "bench/fusion/$1.tsv"; }
name_of() { local b=${1##*/}; echo "${b%.tsv}"; }
for i in "${!models_all[@]}"; do models_all[i]=$(tsv_of "${models_all[i]}"); done
[[ -n $out ]] && out=$(realpath -m "$out")
cd "$repo"
for m in "${models_all[@]}"; do [[ -f $m ]] || { echo "run.sh: no shape list $m (python3 bench/fusion/shapes.py)" >&2; exit 2; }; done
if ((netns)); then
  ((hosts >= 2)) || { echo "run.sh --hosts: at least 2, got $hosts" >&2; exit 2; }
  for r in "${ranks_all[@]}"; do ((r >= hosts && r % hosts == 0)) || { echo "run.sh --netns: ranks must be a multiple of --hosts ($hosts), got $r" >&2; exit 2; }; done
  [[ -x $bench ]] || { echo "run.sh: build tutti-fusion-bench first (or set FUSION_BENCH): $bench" >&2; exit 2; }
else
  [[ -x $bench && -x $tutti_run ]] || { echo "run.sh: build tutti-fusion-bench and tutti-run first (or set FUSION_BENCH, TUTTI_RUN): $bench $tutti_run" >&2; exit 2; }
fi

label=${label:-$(hostname -s 2>/dev/null || hostname)}
day=$(date -u +%Y%m%d)
if ((grid)); then
  out=${out:-$repo/bench/results/fusion-grid-$label-$(name_of "${models_all[0]}")-${ranks_all[0]}r-$day.csv}
else
  out=${out:-$repo/bench/results/fusion-$label-$day.csv}
fi
mkdir -p "$(dirname "$out")"
log=${out%.csv}.log
autotune_dir=${out%.csv}-autotune   # main mode: one autotune log per autotuned run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tutti-fusion.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if ((netns)); then
  # lib.sh: root only (exit 77 otherwise), set -euo pipefail, and its EXIT trap removes the namespaces
  # (and its own temporary folder); the trap below removes ours as well.
  source "$repo/tests/netns/lib.sh"
  trap 'rm -rf "$tmp"; netns_cleanup' EXIT
  netns_hosts "$hosts"
  [[ $rate != none ]] && shape_links "$rate"
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
fi

# Configurations, "name|threshold|cycle_ms|autotune[|tuned or joint]".
configs=()
if ((grid)); then
  for t in 0 1M 2M 4M 8M 16M 32M 64M 128M 256M; do
    for c in 0 1 5 10 25 50; do configs+=("t$t-c${c}ms|$t|$c|0"); done
  done
else
  configs+=("per-tensor|0|0|0")
  for t in 1M 4M 16M 64M 256M; do configs+=("t$t-c1ms|$t|1|0"); done
  configs+=("t64M-c0ms|64M|0|0" "autotune|||1")
  ((joint)) && configs+=("tuned-autotune|||1|tuned" "joint-autotune|||1|joint")
  if [[ -n $only ]]; then  # --only: the configurations named, in the list's order
    # and, only when named, the fixed ones with the fusion engine's copies in turn (TUTTI_FUSION_OVERLAP=0)
    for c in "${configs[@]}"; do
      IFS='|' read -r n t cy a _ <<<"$c"
      [[ $a == 0 ]] && configs+=("$n-inturn|$t|$cy|0||TUTTI_FUSION_OVERLAP=0")
    done
    kept=()
    for c in "${configs[@]}"; do [[ " $only " == *" ${c%%|*} "* ]] && kept+=("$c"); done
    ((${#kept[@]})) || { echo "run.sh --only: none of '$only' is a configuration (${configs[*]%%|*})" >&2; exit 2; }
    configs=("${kept[@]}")
  fi
fi

# shuffled SEED ITEM...: the items, one a line, in an order SEED fixes (Python's Random, stable across versions).
shuffled() {
  python3 -c 'import random, sys; a = sys.argv[2:]; random.Random(int(sys.argv[1])).shuffle(a); print("\n".join(a))' "$@"
}

runs_done=0 runs_failed=0
# run_one MODEL RANKS CONFIG TAG [STEPS WARMUP AUTOTUNE_LOG]: one run; its fusion line (rank 0's) into
# the CSV, a "#" line saying how it went, the programs' output into the .log.
run_one() {
  local model=$1 ranks=$2 tag=$4 name thr cyc auto algo extra rc=0 t0=$SECONDS load0 r q
  local nsteps=${5:-$steps} nwarm=${6:-$warmup} alog=${7:-}
  IFS='|' read -r name thr cyc auto algo extra <<<"$3"
  local envs=(-u TUTTI_FUSION_THRESHOLD -u TUTTI_CYCLE_TIME -u TUTTI_AUTOTUNE -u TUTTI_AUTOTUNE_LOG
              -u TUTTI_AUTOTUNE_STEPS_PER_SAMPLE -u TUTTI_AUTOTUNE_WARMUP_SAMPLES -u TUTTI_AUTOTUNE_MAX_SAMPLES
              -u TUTTI_AUTOTUNE_ALGORITHM -u TUTTI_FUSION_OVERLAP)
  [[ -n $extra ]] && envs+=("$extra")
  if ((auto)); then
    # Samples of 2 steps, 2 discarded, 16 scored: the tuner settles within 36 steps, inside the
    # default --autotune-warmup; AUTOTUNE_* override.
    envs+=(TUTTI_AUTOTUNE=1 TUTTI_AUTOTUNE_STEPS_PER_SAMPLE="${AUTOTUNE_STEPS_PER_SAMPLE:-2}"
           TUTTI_AUTOTUNE_WARMUP_SAMPLES="${AUTOTUNE_WARMUP_SAMPLES:-2}" TUTTI_AUTOTUNE_MAX_SAMPLES="${AUTOTUNE_MAX_SAMPLES:-16}")
    if [[ -n $alog ]]; then rm -f "$alog"; envs+=(TUTTI_AUTOTUNE_LOG="$alog"); fi
  else
    envs+=(TUTTI_AUTOTUNE=0 TUTTI_FUSION_THRESHOLD="$thr" TUTTI_CYCLE_TIME="$cyc")
  fi
  local args=(--model "$model" --steps "$nsteps" --warmup "$nwarm" --label "$name")
  if [[ -n $algo ]]; then
    args+=(--algorithm tuned)
    envs+=(TUTTI_AUTOTUNE_ALGORITHM=$([[ $algo == joint ]] && echo 1 || echo 0))
  fi
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "$tag: $(name_of "$model") ranks=$ranks $name ..." >&2
  rm -f "$tmp"/out* "$tmp"/err*
  if ((netns)); then
    # RANKS/HOSTS ranks per host, launched as bench/netns/run.sh does (multi_node reads RANK, WORLD_SIZE,
    # LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT, TUTTI_JOB_KEY); a fresh port per run.
    local per=$((ranks / hosts)) pids=() port=$((29500 + runs_done % 400))
    for ((r = 0; r < ranks; r++)); do
      on_host $((r / per)) env "${envs[@]}" RANK=$r WORLD_SIZE="$ranks" LOCAL_RANK=$((r % per)) LOCAL_WORLD_SIZE=$per \
        MASTER_ADDR=10.213.1.1 MASTER_PORT=$port TUTTI_JOB_KEY="$key" \
        timeout -k 10 "$run_timeout" "$bench" "${netns_args[@]}" "${args[@]}" >"$tmp/out.$r" 2>"$tmp/err.$r" &
      pids+=($!)
    done
    for q in "${pids[@]}"; do wait "$q" || rc=$?; done
    mv "$tmp/out.0" "$tmp/out"
    for ((r = 0; r < ranks; r++)); do cat "$tmp/out.$r" "$tmp/err.$r" 2>/dev/null || true; done >"$tmp/err"
  else
    timeout -k 10 "$run_timeout" env "${envs[@]}" "$tutti_run" -n "$ranks" --no-prefix -- "$bench" "${args[@]}" \
      >"$tmp/out" 2>"$tmp/err" || rc=$?
  fi
  local lines; lines=$(grep -c '^fusion,' "$tmp/out" || true)
  grep '^fusion,' "$tmp/out" >>"$out" || true
  echo "# $tag model=$(name_of "$model") ranks=$ranks config=$name rc=$rc$( ((rc == 124)) && echo ' (timeout)') fusion_lines=$lines" \
    "seconds=$((SECONDS - t0)) load_before=${load0// /,} load_after=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)" \
    "${alog:+autotune_log=$alog}" | sed 's/ *$//' >>"$out"
  { echo "=== $tag $(name_of "$model") ranks=$ranks $name rc=$rc: env ${envs[*]} ${args[*]}"; cat "$tmp/out" "$tmp/err"; } >>"$log"
  runs_done=$((runs_done + 1))
  if ((rc != 0 || lines != 1)); then
    runs_failed=$((runs_failed + 1))
    echo "$tag: FAILED (rc=$rc, $lines fusion lines); the last lines of its output (all in $log):" >&2
    tail -n 5 "$tmp/err" >&2 || true
  else
    echo "$tag: done in $((SECONDS - t0)) s: $(grep '^fusion,' "$tmp/out" | cut -d, -f9) ms/step (median)" >&2
  fi
}

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$repo" status --porcelain -- include bench 2>/dev/null | wc -l)
{
  echo "# bench/fusion/run.sh $( ((grid)) && echo '--grid ')started $(date -u +%FT%TZ) on $(hostname -s 2>/dev/null || hostname) ($(nproc) cores)," \
    "commit $commit ($dirty changed files under include/ bench/); label=$label models=${models_all[*]} ranks=${ranks_all[*]}" \
    "repeats=$repeats steps=$steps warmup=$warmup autotune_warmup=$autotune_warmup seed=$seed timeout=$run_timeout" \
    "transport=$( ((netns)) && echo "netns $hosts hosts, rate $rate, ${netns_args[*]}" || echo "tutti-run (one host)")"
  echo "# columns: fusion,label,model,ranks,threshold_bytes,cycle_us,autotune,steps,median_step_ms,p10_step_ms,p90_step_ms,bytes_per_step,tensors"
} >>"$out"

started=$SECONDS
for ((rep = 0; rep < repeats; rep++)); do
  items=()
  for m in "${models_all[@]}"; do for r in "${ranks_all[@]}"; do for c in "${configs[@]}"; do items+=("$m;$r;$c"); done; done; done
  mapfile -t order < <(shuffled $((seed + rep)) "${items[@]}")
  ((${#order[@]} == ${#items[@]})) || { echo "run.sh: shuffling the runs failed (python3?)" >&2; exit 1; }
  for ((i = 0; i < ${#order[@]}; i++)); do
    IFS=';' read -r m r c <<<"${order[$i]}"
    tag="rep $rep run $((i + 1))/${#order[@]}"
    IFS='|' read -r cname _ _ is_auto _ <<<"$c"
    if [[ $is_auto == 1 ]]; then  # autotuned: its own log, and warmup steps for the tuner to settle before timing
      mkdir -p "$autotune_dir"
      [[ $cname == autotune ]] && cname="" || cname="-$cname"  # --joint's two have their own logs
      run_one "$m" "$r" "$c" "$tag" "$steps" "$autotune_warmup" "$autotune_dir/$(name_of "$m")-${r}r-rep$rep$cname.csv"
    else
      run_one "$m" "$r" "$c" "$tag"
    fi
  done
done
if ((grid)); then
  # The autotuner against the grid: one run from the start (no settling warmup beyond --warmup), every
  # sample it takes logged, so summarize.py can say after how many it came within 10% of the grid's best.
  run_one "${models_all[0]}" "${ranks_all[0]}" "autotune|||1" "autotune run" "$autotune_steps" "$warmup" "${out%.csv}-autotune.csv"
fi
echo "# finished $(date -u +%FT%TZ): $runs_done runs, $runs_failed failed, $((SECONDS - started)) s" >>"$out"
echo "$runs_done runs ($runs_failed failed) in $((SECONDS - started)) s: $out (output of the programs: $log)" >&2
if ((grid)); then
  echo "then: bench/fusion/summarize.py --grid $out --autotune-log ${out%.csv}-autotune.csv" >&2
else
  echo "then: bench/fusion/summarize.py $out" >&2
fi
