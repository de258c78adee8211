# A rank that exits while others run is reaped at once: no zombie children linger.
source "$(dirname "$0")/lib.sh"

export TT_DIR=$tmp
rank='if [ "$TUTTI_RANK" = 0 ]; then echo done; exit 0; fi
while [ ! -e "$TT_DIR/go" ]; do sleep 0.02; done'
"$run" -n 2 sh -c "$rank" >"$tmp/job.out" 2>"$tmp/job.err" & pid=$!
cleanup_hooks+=("kill -KILL $pid 2>/dev/null")

zombies() { ps -o stat= --ppid "$pid" | grep -c '^Z' || true; }
deadline=$(( $(now_ms) + 20000 ))
until grep -qxF "[rank 0] done" "$tmp/job.out" && [[ $(zombies) == 0 ]]; do
  (( $(now_ms) < deadline )) || fail "rank 0 exited but is still a zombie child of tutti-run"
  sleep 0.05
done
# Rank 1 is still running, so the check above looked at a live tutti-run.
[[ $(ps -o pid= --ppid "$pid" | wc -l) == 1 ]] || fail "expected exactly rank 1 left as a child"
touch "$tmp/go"
status=0
wait "$pid" || status=$?
expect_status 0 "all ranks exited 0"
