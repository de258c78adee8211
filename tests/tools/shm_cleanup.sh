# After the ranks are gone, tutti-run removes /dev/shm/tutti-<job id>.* files owned by the user
# (after success and after failure), and leaves other jobs' files alone, including a job whose id
# starts with this one's.
source "$(dirname "$0")/lib.sh"

if [[ ! -d /dev/shm || ! -w /dev/shm ]]; then
  echo "SKIP: /dev/shm is not a writable directory"
  exit 77
fi
shm=/dev/shm
id="tt_cleanup_$$_$RANDOM"
other="$shm/tutti-${id}-b.0"   # another job, whose id has ours as a prefix
touch "$other"
cleanup_hooks+=("rm -f '$other' $shm/tutti-$id.* $shm/tutti-j*.tt-test-$$-*")

# a. default job id, success.
launch a -n 2 sh -c 'echo "$TUTTI_JOB_ID"; touch "/dev/shm/tutti-$TUTTI_JOB_ID.tt-test-'$$'-$TUTTI_RANK"'
expect_status 0 "ranks creating segments"
job=$(sed -n 's/^\[rank 0\] //p' "$tmp/a.out")
[[ -n $job ]] || fail "no job id printed"
if compgen -G "$shm/tutti-$job.*" >/dev/null; then fail "segments of job $job left in $shm"; fi
expect_in "$tmp/a.err" "tutti-run: removed 2 leftover shared-memory segments of job $job" "cleanup message"
[[ -e $other ]] || fail "tutti-run removed $other, which belongs to another job"

# b. explicit job id, a failing rank.
launch b -n 2 --job-id "$id" sh -c 'if [ "$TUTTI_RANK" = 0 ]; then touch "/dev/shm/tutti-$TUTTI_JOB_ID.b"; exit 1; fi'
expect_status 1 "a rank failed"
if [[ -e $shm/tutti-$id.b ]]; then fail "segment of failed job $id left in $shm"; fi
expect_in "$tmp/b.err" "tutti-run: removed 1 leftover shared-memory segment of job $id" "cleanup message"
[[ -e $other ]] || fail "tutti-run removed $other, which belongs to another job"

# c. a file of the same job owned by someone else stays (only testable as root).
if [[ $(id -u) == 0 ]] && getent passwd nobody >/dev/null; then
  foreign="$shm/tutti-$id.foreign"
  touch "$foreign"
  chown nobody "$foreign"
  launch c -n 1 --job-id "$id" true
  expect_status 0 "job with a foreign file"
  [[ -e $foreign ]] || fail "tutti-run removed $foreign, which another user owns"
  rm -f "$foreign"
  if grep -q "removed" "$tmp/c.err"; then fail "tutti-run reported removing files it did not own"; fi
fi
