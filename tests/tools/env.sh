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

# --ranks-per-node K simulates nodes: node id, local rank and the node's local size per rank (the
# last node holds the remainder), and a TUTTI_NODE_ID in tutti-run's environment is replaced.
print_node='echo "$TUTTI_RANK $TUTTI_NODE_ID $TUTTI_LOCAL_RANK $TUTTI_LOCAL_SIZE"'
TUTTI_NODE_ID=stale launch nodes -n 5 --ranks-per-node 2 sh -c "$print_node"
expect_status 0 "--ranks-per-node 2"
for line in "0 sim0 0 2" "1 sim0 1 2" "2 sim1 0 2" "3 sim1 1 2" "4 sim2 0 1"; do
  grep -qxF "[rank ${line%% *}] $line" "$tmp/nodes.out" || fail "--ranks-per-node: no line '$line'"
done
# Without it, TUTTI_NODE_ID passes through untouched (the user's own node override).
TUTTI_NODE_ID=mine launch own_node -n 1 sh -c "$print_node"
grep -qxF "[rank 0] 0 mine 0 1" "$tmp/own_node.out" || fail "TUTTI_NODE_ID not passed through"

# The store's key and address: one fresh 64-hex-digit key and one 127.0.0.1 port shared by every
# rank, different per launch, never printed by tutti-run itself; a user's own values are kept.
print_store='echo "$TUTTI_JOB_KEY $TUTTI_STORE_ADDR"'
env -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u TUTTI_STORE_ADDR "$run" -n 2 sh -c "$print_store" \
  >"$tmp/store1.out" 2>&1 || fail "store variables: launch failed"
env -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u TUTTI_STORE_ADDR "$run" -n 1 sh -c "$print_store" \
  >"$tmp/store2.out" 2>&1 || fail "store variables: second launch failed"
[[ $(sed 's/^\[rank [0-9]\] //' "$tmp/store1.out" | sort -u | wc -l) == 1 ]] || fail "ranks saw different keys or addresses"
read -r key addr < <(sed -n 's/^\[rank 0\] //p' "$tmp/store1.out")
[[ $key =~ ^[0-9a-f]{64}$ ]] || fail "TUTTI_JOB_KEY '$key' is not 64 hex digits"
[[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "TUTTI_STORE_ADDR '$addr' is not 127.0.0.1:port"
read -r key2 _ < <(sed 's/^\[rank 0\] //' "$tmp/store2.out")
[[ $key != "$key2" ]] || fail "two launches got the same job key"
TUTTI_JOB_KEY=users-own-key-0123456789 TUTTI_STORE_ADDR=10.1.2.3:4567 "$run" -n 1 sh -c "$print_store" \
  >"$tmp/store3.out" 2>&1 || fail "store variables: third launch failed"
grep -qxF "[rank 0] users-own-key-0123456789 10.1.2.3:4567" "$tmp/store3.out" || fail "the user's key or address was replaced"
TUTTI_JOB_KEY_FILE=/some/file "$run" -n 1 sh -c 'echo "[$TUTTI_JOB_KEY]"' >"$tmp/store4.out" 2>&1
grep -qxF "[rank 0] []" "$tmp/store4.out" || fail "a key was generated although TUTTI_JOB_KEY_FILE is set"
