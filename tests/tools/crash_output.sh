# What a rank printed just before it crashed reaches the output: tutti-run sets
# TUTTI_LINE_BUFFERED=1 and tutti's headers make stdout line-buffered. With the switch off the
# line dies in the pipe's buffer, as it would without tutti (which shows the test can fail).
# Usage: crash_output.sh <tutti-run> <crash_rank program>
source "$(dirname "$0")/lib.sh"
crash=${2:?crash_rank program}

launch on -n 2 "$crash"  # default linger: rank 0 exits by itself
expect_status 1 "a rank that aborted"
expect_in "$tmp/on.out" "[rank 1] last words of rank 1" "the crashed rank's last line"
expect_in "$tmp/on.out" "[rank 0] last words of rank 0" "the other rank's line"
expect_in "$tmp/on.err" "rank 1 was killed by signal 6 (SIGABRT" "failure message"

TUTTI_LINE_BUFFERED=0 launch off -n 2 "$crash"
expect_status 1 "a rank that aborted, switch off"
grep -qF "[rank 1] last words" "$tmp/off.out" && fail "TUTTI_LINE_BUFFERED=0: the line survived, so the test proves nothing"
exit 0
