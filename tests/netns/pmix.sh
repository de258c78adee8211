#!/bin/bash
# PMIx rendezvous on one host (no root, no namespaces): pmix.sh SCENARIO TESTS_EXE MPIRUN
#   n3       mpirun starts 3 ranks with no tutti variable at all (env -u removes any the caller
#            had): the job must pass, every rank must report success, rank 0 must log that it
#            found its store through PMIx
#   missing  the job's second process is `sleep`, never a tutti rank: rank 0 must fail at the
#            deadline (TUTTI_TIMEOUT=3) naming the PMIx fence, and the job must end well before
#            the test's limit (no hang)
set -u
scenario=${1:?scenario}
exe=${2:?tests executable}
mpirun=${3:?mpirun}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() { echo "pmix $scenario: FAILED: $*" >&2; cat "$log" >&2; exit 1; }
run_mpirun() {
  env -u TUTTI_STORE_ADDR -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u MASTER_ADDR -u MASTER_PORT \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TUTTI_LOG=info \
    timeout 120 "$mpirun" --oversubscribe --bind-to none --mca btl self,vader --mca oob_tcp_if_include lo "$@" \
    >"$log" 2>&1
}
case $scenario in
  n3)
    run_mpirun -np 3 "$exe" --no-colors=true --test-case='allreduce*algorithm::ring? *,barrier*algorithm::ring? *' ||
      fail "the job failed"
    [[ $(grep -c "Status: SUCCESS" "$log") == 3 ]] || fail "not every rank reported success"
    grep -qE "test cases: +0 [|]" "$log" && fail "a rank ran no test case"
    grep -qE "^\[tutti 0\] info: rendezvous through PMIx \(job [^)]+\): store at [0-9.]+:[0-9]+ on " "$log" ||
      fail "rank 0 did not log a PMIx rendezvous"
    ;;
  missing)
    start=$SECONDS
    TUTTI_TIMEOUT=3 run_mpirun -np 1 "$exe" --no-colors=true --test-case='allreduce*algorithm::ring? *' \
      : -np 1 sleep 60 && fail "the job passed without its second rank"
    (( SECONDS - start < 45 )) || fail "the job took $((SECONDS - start)) s: the fence's deadline was not honoured"
    grep -q "rank 0 (launched by Open MPI): PMIx fence (tutti: host interfaces) not reached by every process" "$log" ||
      fail "rank 0's error does not name the PMIx fence"
    ;;
  *) echo "unknown scenario '$scenario'" >&2; exit 2 ;;
esac
echo "pmix $scenario: passed"
