# After a rank fails, the others get --linger seconds (default 2) to notice and report it before
# tutti-run sends SIGTERM: a survivor that finishes in that time is not stopped and its output is
# kept; one that does not is stopped once the linger time is over, and tutti-run says so.
source "$(dirname "$0")/lib.sh"

survivor='if [ "$TUTTI_RANK" = 1 ]; then exit 3; fi; sleep 0.5; echo "survivor reported the loss"'
launch quick -n 2 sh -c "$survivor"
expect_status 1 "a failed rank"
expect_in "$tmp/quick.err" "tutti-run: rank 1 exited with status 3" "failure message"
expect_in "$tmp/quick.out" "[rank 0] survivor reported the loss" "the survivor's report"
grep -qF "SIGTERM" "$tmp/quick.err" && fail "a survivor that finished within the linger time was sent SIGTERM"

launch slow -n 2 --linger 0.3 sh -c 'if [ "$TUTTI_RANK" = 1 ]; then exit 3; fi; sleep 30'
expect_status 1 "a failed rank, a survivor that hangs"
expect_in "$tmp/slow.err" "stopping 1 rank still running" "the stop after the linger time"
expect_faster_than 10000 "stopping after a 0.3 s linger"
exit 0
