#!/usr/bin/env bash
# Runs Open MPI (mpirun in PATH, coll/tuned) with tutti's classic export and names, through an
# LD_PRELOAD shim, the ompi_coll_base_* algorithm each probe call ran on rank 0.
#   tests/tuner/peers/check_ompi.sh       (from the repository root; a few seconds, 2..5 ranks)
# Expected for Open MPI <= 5.0 (the v6.0 branch reads classic files one block later: use the JSON).
source "$(dirname "$0")/common.sh"
gcc -shared -fPIC -O1 "$here/ompi_shim.c" -o "$work/shim.so" -ldl
mpicc -O1 "$here/ompi_probe.c" -o "$work/probe"
run() {  # ranks [mca options...]: "collective bytes -> algorithm" lines, one per probe
  local n=$1
  shift
  mpirun --allow-run-as-root --oversubscribe -n "$n" --mca coll ^han,adapt,sm --mca btl self,vader "$@" \
    -x LD_PRELOAD="$work/shim.so" "$work/probe" 2>&1 |
    grep -E '^(PROBE|HOOK)' | awk '/^PROBE/{p=$2" "$3; next} {sub("ompi_coll_base_",""); print p" -> "$2}' | sort -u -k1,2
}
rules=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "$work/ompi.rules")
status=0
run 4 "${rules[@]}" > "$work/got4"
cat "$work/got4"
for want in "allreduce 1024 -> allreduce_intra_redscat_allgather" "allreduce 2044 -> allreduce_intra_redscat_allgather" \
            "allreduce 65536 -> allreduce_intra_ring" "allreduce 1048576 -> allreduce_intra_ring" \
            "bcast 65532 -> bcast_intra_binomial" "bcast 65536 -> bcast_intra_scatter_allgather" \
            "alltoall 2048 -> alltoall_intra_bruck" "alltoall 2064 -> alltoall_intra_pairwise" \
            "barrier 0 -> barrier_intra_tree" "reduce_scatter 4064 -> reduce_scatter_intra_basic_recursivehalving" \
            "reduce_scatter 4080 -> reduce_scatter_intra_ring" "allgather 16384 -> allgather_intra_ring"; do
  grep -qxF "$want" "$work/got4" || { echo "FAIL (4 ranks): expected $want"; status=1; }
done
# 2048..65535 B is direct's (no counterpart): the fixed decision, as without the file
run 4 > "$work/fixed4"
for size in 2048 65532; do
  diff <(grep "^allreduce $size " "$work/got4") <(grep "^allreduce $size " "$work/fixed4") > /dev/null ||
    { echo "FAIL (4 ranks): allreduce $size B should be the fixed decision"; status=1; }
done
run 2 "${rules[@]}" | grep '^allreduce' | grep -v nonoverlapping && { echo "FAIL (2 ranks): allreduce not nonoverlapping"; status=1; }
for n in 3 5; do  # sizes the table never measured: exactly Open MPI's fixed decision
  diff <(run "$n" "${rules[@]}") <(run "$n") > /dev/null || { echo "FAIL ($n ranks): not the fixed decision"; status=1; }
done
[ "$status" = 0 ] && echo PASS
exit "$status"
