# A rank exiting with status 3 fails the job: tutti-run names the rank and the status, stops the
# other ranks (and what they started) at once, and exits 1.
source "$(dirname "$0")/lib.sh"

marker="30.$$1"  # the sleeps' duration: with their pid files, tells our sleeps from a reused pid
export TT_DIR=$tmp TT_SLEEP=$marker
# Each rank's background sleep writes its pid to a file of this test's own: the check below looks
# only at those pids, never for sleeps by name (another test may run the same script beside us).
rank='if [ "$TUTTI_RANK" = 1 ]; then
  while [ ! -e "$TT_DIR/started-0" ] || [ ! -e "$TT_DIR/started-2" ]; do sleep 0.02; done
  echo "rank 1 gives up" >&2
  exit 3
fi
sleep "$TT_SLEEP" &
echo $! >"$TT_DIR/sleep-$TUTTI_RANK"
touch "$TT_DIR/started-$TUTTI_RANK"
wait'
launch job -n 3 sh -c "$rank"
expect_status 1 "a rank exited with 3"
expect_in "$tmp/job.err" "tutti-run: rank 1 exited with status 3" "failure message"
expect_in "$tmp/job.err" "[rank 1] rank 1 gives up" "the rank's own last words"
expect_faster_than 10000 "stopping the other ranks"
if grep -q "rank [02] exited\|rank [02] was killed" "$tmp/job.err"; then fail "ranks stopped by tutti-run reported as failures"; fi

# The sleeps the other ranks started in the background are gone too: their pids are free, or
# name another program (a reused pid; zombies have no cmdline either).
ours() { [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") == "sleep $marker " ]]; }
sleeps=$(cat "$tmp/sleep-0" "$tmp/sleep-2")
for _ in $(seq 100); do
  left=""
  for p in $sleeps; do ours "$p" && left+=" $p"; done
  [[ -z $left ]] && exit 0
  sleep 0.05
done
fail "sleep $marker (pid$left), started by a stopped rank, is still running"
