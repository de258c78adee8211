# SIGTERM sent to tutti-run reaches every rank; tutti-run then exits 128+15 even though the ranks
# handled it and exited 0.
source "$(dirname "$0")/lib.sh"

export TT_DIR=$tmp
rank='trap "echo \"rank $TUTTI_RANK got TERM\"; exit 0" TERM
touch "$TT_DIR/ready-$TUTTI_RANK"
sleep 30 &
wait'
"$run" -n 2 sh -c "$rank" >"$tmp/job.out" 2>"$tmp/job.err" & pid=$!
cleanup_hooks+=("kill -KILL $pid 2>/dev/null")
wait_for_file "$tmp/ready-0"
wait_for_file "$tmp/ready-1"
start=$(now_ms)
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
elapsed_ms=$(( $(now_ms) - start ))
expect_status 143 "tutti-run interrupted by SIGTERM"
expect_in "$tmp/job.out" "[rank 0] rank 0 got TERM" "rank 0 saw SIGTERM"
expect_in "$tmp/job.out" "[rank 1] rank 1 got TERM" "rank 1 saw SIGTERM"
expect_in "$tmp/job.err" "tutti-run: received SIGTERM" "tutti-run says what it received"
expect_faster_than 10000 "stopping after SIGTERM"
if grep -q "exited with status\|was killed by" "$tmp/job.err"; then fail "ranks that obeyed SIGTERM reported as failures"; fi
