# stdout and stderr of each rank reach tutti-run's stdout and stderr as whole lines prefixed
# "[rank k] "; a last line without newline is completed; lines written in many small pieces by
# several ranks at once are never mixed; --no-prefix passes the bytes through unchanged.
source "$(dirname "$0")/lib.sh"

launch basic -n 2 sh -c 'echo "out $TUTTI_RANK"; echo "err $TUTTI_RANK" >&2; printf "partial $TUTTI_RANK"'
expect_status 0 "basic"
printf '%s\n' '[rank 0] out 0' '[rank 0] partial 0' '[rank 1] out 1' '[rank 1] partial 1' >"$tmp/want.out"
printf '%s\n' '[rank 0] err 0' '[rank 1] err 1' >"$tmp/want.err"
sort "$tmp/basic.out" | cmp -s - "$tmp/want.out" || fail "stdout is not the prefixed lines of stdout"
sort "$tmp/basic.err" | cmp -s - "$tmp/want.err" || fail "stderr is not the prefixed lines of stderr"
# Per rank, lines keep their order.
grep -F '[rank 1]' "$tmp/basic.out" | head -1 | grep -qxF '[rank 1] out 1' || fail "rank 1's lines out of order"

# 4 ranks, 40 lines each of 30 one-character writes (dash's printf builtin writes at once).
pieces='i=0
while [ $i -lt 40 ]; do
  j=0
  while [ $j -lt 30 ]; do printf "%s" "$TUTTI_RANK"; printf "%s" "$TUTTI_RANK" >&2; j=$((j+1)); done
  echo; echo >&2
  i=$((i+1))
done'
launch pieces -n 4 sh -c "$pieces"
expect_status 0 "pieces"
for stream in out err; do
  [[ $(wc -l <"$tmp/pieces.$stream") == 160 ]] || fail "pieces: expected 160 lines on std$stream"
  bad=$(grep -cvE '^\[rank ([0-3])\] (\1){30}$' "$tmp/pieces.$stream" || true)
  [[ $bad == 0 ]] || fail "pieces: $bad lines of std$stream mix ranks or lost their prefix"
  for k in 0 1 2 3; do
    [[ $(grep -c "^\[rank $k\] " "$tmp/pieces.$stream") == 40 ]] || fail "pieces: rank $k lost lines of std$stream"
  done
done

launch raw -n 1 --no-prefix sh -c 'printf "a\nb"; printf "c\nd" >&2'
expect_status 0 "--no-prefix"
printf 'a\nb' | cmp -s - "$tmp/raw.out" || fail "--no-prefix: stdout bytes changed"
printf 'c\nd' | cmp -s - "$tmp/raw.err" || fail "--no-prefix: stderr bytes changed"
