# tutti-bench behaves like nccl-tests where it looks like it (issue 13): under a launcher each
# process is one rank of one job (one table, transport shm), never N independent in-process runs;
# out-of-place and in-place print side by side; nccl-tests' flags keep their meanings and the old
# tutti meanings of -a and -T are refused with the long option to use instead.
# Usage: bench_launcher.sh <tutti-run> <tutti-bench>
source "$(dirname "$0")/lib.sh"
bench=${2:?tutti-bench}

launch job -n 3 --no-prefix -- "$bench" -b 8 -e 1K -f 4 -n 3 -w 1
expect_status 0 "tutti-bench under tutti-run"
[[ $(grep -c "^# tutti-bench:" "$tmp/job.out") == 1 ]] || fail "under tutti-run -n 3: expected one table, got $(grep -c "^# tutti-bench:" "$tmp/job.out")"
expect_in "$tmp/job.out" "transport shm (ranks are processes)" "the transport under a launcher"
expect_in "$tmp/job.out" "# ranks 3 " "the job's world size"
expect_in "$tmp/job.out" "out-of-place                       in-place" "side-by-side columns"
expect_in "$tmp/job.out" "# time: the mean over ranks of each rank's mean time per collective" "how time is aggregated"
rows=$(grep -cE "^ +[0-9]+ +[0-9]+ +float +sum +-1( +[0-9.]+){3} +0( +[0-9.]+){3} +0$" "$tmp/job.out")
[[ $rows == 4 ]] || fail "expected 4 rows (8 B .. 512 B by 4) with both modes checked, got $rows"

# nccl-tests' flags: -i steps in bytes, -m aggregates, -a 3 takes the maximum over ranks.
"$bench" -t 2 -b 100 -e 300 -i 100 -m 2 -a 3 -n 2 -w 1 >"$tmp/flags.out" 2>"$tmp/flags.err" || fail "nccl-tests flags"
expect_in "$tmp/flags.out" "step: 100(bytes)" "-i"
expect_in "$tmp/flags.out" "agg iters: 2" "-m"
expect_in "$tmp/flags.out" "the maximum over ranks" "-a 3"
[[ $(grep -cE "^ +(100|200|300) " "$tmp/flags.out") == 3 ]] || fail "-i 100 from 100 to 300: expected 3 rows"

# The old meanings are refused, naming the long option.
status=0; "$bench" -a ring >"$tmp/a.out" 2>"$tmp/a.err" || status=$?
expect_status 2 "-a ring"
expect_in "$tmp/a.err" "the algorithm is --algorithm ring" "-a ring's message"
status=0; "$bench" -T shm >"$tmp/t.out" 2>"$tmp/t.err" || status=$?
expect_status 2 "-T shm"
expect_in "$tmp/t.err" "the transport is --transport shm" "-T shm's message"
exit 0
