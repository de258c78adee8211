#!/usr/bin/env bash
# tutti-tune across "hosts" on this machine: HOSTS network namespaces (tests/netns/lib.sh) of PPN
# ranks each, started with torchrun-style variables like bench/netns/run.sh, --transport
# multi_node (shm inside a host, UCX between). Rank 0's output (progress, errors) comes here; the
# table goes where --output says (the namespaces share this file system). Root only; the
# namespaces are removed on exit.
#   HOSTS=2 PPN=2 tools/tune/netns.sh [RATE|none] [-- TUTTI-TUNE-ARGS...]     (RATE: tc's, e.g. 1gbit)
# e.g. HOSTS=4 PPN=1 tools/tune/netns.sh none -- --budget 600 --merge tuning.json --output tuning.json
# TUTTI_TUNE names the program (default build/tools/tutti-tune). PIN=1 binds rank r to CPU r mod
# nproc (taskset), as tutti-run --bind core does on one host.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/tests/netns/lib.sh"
tune=${TUTTI_TUNE:-$repo/build/tools/tutti-tune}
[[ -x $tune ]] || { echo "build tutti-tune first (cmake --build build --target tutti_tune), or set TUTTI_TUNE" >&2; exit 2; }
rate=none
if [[ $# -gt 0 && $1 != -- ]]; then rate=$1; shift; fi
[[ ${1:-} == -- ]] && shift
hosts=${HOSTS:-2}; ppn=${PPN:-2}; world=$((hosts * ppn))
netns_hosts "$hosts"
[[ $rate != none ]] && shape_links "$rate"
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
pids=()
rank() {  # rank R: tutti-tune as rank R on its host
  on_host $(($1 / ppn)) env RANK=$1 WORLD_SIZE=$world LOCAL_RANK=$(($1 % ppn)) LOCAL_WORLD_SIZE=$ppn \
    MASTER_ADDR=10.213.1.1 MASTER_PORT=29500 TUTTI_JOB_KEY="$key" ${PIN:+taskset -c $(($1 % $(nproc)))} "$tune" --transport multi_node "${args[@]}"
}
args=("$@")
rank 0 &
pids+=($!)
for ((r = 1; r < world; r++)); do
  rank "$r" >"$netns_tmp/rank$r.log" 2>&1 &
  pids+=($!)
done
status=0
for q in "${pids[@]}"; do wait "$q" || status=1; done
if [[ $status != 0 ]]; then
  for ((r = 1; r < world; r++)); do echo "--- rank $r:" >&2; tail -n 20 "$netns_tmp/rank$r.log" >&2; done
fi
exit $status
