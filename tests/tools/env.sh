# Each rank sees TUTTI_RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_SIZE for itself and one shared TUTTI_JOB_ID;
# stale TUTTI_* values in tutti-run's own environment do not leak through; --job-id overrides the id.
source "$(dirname "$0")/lib.sh"

print_env='echo "$TUTTI_RANK $TUTTI_WORLD_SIZE $TUTTI_LOCAL_RANK $TUTTI_LOCAL_SIZE $TUTTI_JOB_ID"'

TUTTI_RANK=7 TUTTI_WORLD_SIZE=9 TUTTI_JOB_ID=stale launch env -n 3 sh -c "$print_env"
expect_status 0 "-n 3"
[[ $(wc -l <"$tmp/env.out") == 3 ]] || fail "expected 3 lines of output"
id=$(awk '{print $NF}' "$tmp/env.out" | sort -u)
[[ $(wc -l <<<"$id") == 1 ]] || fail "ranks saw different job ids: $id"
[[ $id =~ ^[A-Za-z0-9_-]{1,64}$ ]] || fail "job id '$id' is not 1..64 of [A-Za-z0-9_-]"
[[ $id != stale ]] || fail "TUTTI_JOB_ID from tutti-run's environment leaked into the ranks"
for k in 0 1 2; do
  grep -qxF "[rank $k] $k 3 $k 3 $id" "$tmp/env.out" || fail "no correct line for rank $k"
done

launch explicit -n 2 --job-id my_Job-42 sh -c "$print_env"
expect_status 0 "--job-id"
for k in 0 1; do
  grep -qxF "[rank $k] $k 2 $k 2 my_Job-42" "$tmp/explicit.out" || fail "--job-id: no correct line for rank $k"
done

# Exactly one of each variable: a duplicate would be resolved differently by different programs.
TUTTI_RANK=7 TUTTI_JOB_ID=stale launch dup -n 1 env
expect_status 0 "env"
for var in TUTTI_RANK TUTTI_WORLD_SIZE TUTTI_LOCAL_RANK TUTTI_LOCAL_SIZE TUTTI_JOB_ID; do
  [[ $(grep -c "^\[rank 0\] $var=" "$tmp/dup.out") == 1 ]] || fail "$var is not set exactly once"
done
grep -qxF "[rank 0] TUTTI_RANK=0" "$tmp/dup.out" || fail "TUTTI_RANK is not 0 for rank 0"

# The program's own arguments, after --, are not taken for options.
launch args -n 1 -- sh -c 'printf "<%s>" "$@"; echo' sh -n 5 --grace x
expect_status 0 "arguments after --"
grep -qxF '[rank 0] <-n><5><--grace><x>' "$tmp/args.out" || fail "arguments after -- not passed through"
