# A rank killed by a signal fails the job: tutti-run names the rank and the signal, exits 1.
source "$(dirname "$0")/lib.sh"

launch job -n 2 sh -c 'if [ "$TUTTI_RANK" = 1 ]; then kill -9 $$; fi; sleep 30'
expect_status 1 "a rank killed by SIGKILL"
expect_in "$tmp/job.err" "tutti-run: rank 1 was killed by signal 9 (SIGKILL)" "failure message"
expect_faster_than 10000 "stopping rank 0"
