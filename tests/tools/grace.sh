# Ranks that ignore SIGTERM are killed with SIGKILL: after --grace seconds, or at once when
# tutti-run receives a second stop signal.
source "$(dirname "$0")/lib.sh"

export TT_DIR=$tmp
# a. rank 1 fails once rank 0 ignores SIGTERM; rank 0 must be SIGKILLed after the 1 s grace.
rank='if [ "$TUTTI_RANK" = 1 ]; then
  while [ ! -e "$TT_DIR/a-ready" ]; do sleep 0.02; done
  exit 4
fi
trap "" TERM
touch "$TT_DIR/a-ready"
while :; do sleep 0.05; done'
launch a -n 2 --grace 1 sh -c "$rank"
expect_status 1 "a rank failed"
expect_in "$tmp/a.err" "tutti-run: rank 1 exited with status 4" "failure message"
expect_in "$tmp/a.err" "still running 1 s after SIGTERM; sending SIGKILL" "escalation message"
(( elapsed_ms >= 1000 )) || fail "SIGKILL came before the grace period: $elapsed_ms ms"
expect_faster_than 10000 "SIGKILL after a 1 s grace"

# b. a second SIGTERM does not wait for a 60 s grace.
rank='trap "" TERM
touch "$TT_DIR/b-ready-$TUTTI_RANK"
while :; do sleep 0.05; done'
"$run" -n 2 --grace 60 sh -c "$rank" >"$tmp/b.out" 2>"$tmp/b.err" & pid=$!
cleanup_hooks+=("kill -KILL $pid 2>/dev/null")
wait_for_file "$tmp/b-ready-0"
wait_for_file "$tmp/b-ready-1"
start=$(now_ms)
kill -TERM "$pid"
sleep 0.2
kill -TERM "$pid" 2>/dev/null || true
status=0
wait "$pid" || status=$?
elapsed_ms=$(( $(now_ms) - start ))
expect_status 143 "tutti-run interrupted twice"
expect_in "$tmp/b.err" "while stopping; sending SIGKILL" "escalation message"
expect_faster_than 10000 "SIGKILL on the second signal"
