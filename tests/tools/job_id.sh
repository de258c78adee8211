# Two launches, concurrent or one after the other, get different default job ids.
source "$(dirname "$0")/lib.sh"

show_id='echo "$TUTTI_JOB_ID"; sleep 0.5'
"$run" -n 1 sh -c "$show_id" >"$tmp/a.out" 2>"$tmp/a.err" & a=$!
"$run" -n 1 sh -c "$show_id" >"$tmp/b.out" 2>"$tmp/b.err" & b=$!
wait "$a" || fail "first launch failed"
wait "$b" || fail "second launch failed"
"$run" -n 1 sh -c "$show_id" >"$tmp/c.out" 2>"$tmp/c.err" || fail "third launch failed"

ids=$(sed -n 's/^\[rank 0\] //p' "$tmp/a.out" "$tmp/b.out" "$tmp/c.out")
[[ $(wc -l <<<"$ids") == 3 ]] || fail "expected one id per launch, got: $ids"
if grep -qvE '^[A-Za-z0-9_-]{1,64}$' <<<"$ids"; then fail "malformed job id in: $ids"; fi
[[ $(sort -u <<<"$ids" | wc -l) == 3 ]] || fail "job ids repeat: $ids"
