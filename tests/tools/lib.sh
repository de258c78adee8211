# Shared by the tutti-run tests (sourced, not run). Each test is `bash <test>.sh <path of tutti-run>`.
set -euo pipefail

run=${1:?usage: $0 <path of tutti-run>}
[[ -x $run ]] || { echo "FAIL: '$run' is not an executable" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tutti-run-test.XXXXXX")
cleanup_hooks=()
on_exit() {
  local hook
  for hook in "${cleanup_hooks[@]}"; do eval "$hook" || true; done
  rm -rf "$tmp"
}
trap on_exit EXIT

fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$tmp"/*.out "$tmp"/*.err; do
    [[ -f $f ]] && { echo "--- ${f##*/}:" >&2; cat "$f" >&2; }
  done
  exit 1
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# launch NAME ARGS...: runs tutti-run ARGS with stdout in $tmp/NAME.out, stderr in $tmp/NAME.err;
# its exit status goes to $status and its duration to $elapsed_ms (set -e does not stop on failure).
launch() {
  local name=$1 start
  shift
  start=$(now_ms)
  status=0
  "$run" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || status=$?
  elapsed_ms=$(( $(now_ms) - start ))
}

expect_status() {  # expect_status WANT WHAT
  [[ $status == "$1" ]] || fail "$2: exit status $status, expected $1"
}

expect_in() {  # expect_in FILE FIXED-STRING WHAT
  grep -qF -- "$2" "$1" || fail "$3: '$2' not found in ${1##*/}"
}

expect_faster_than() {  # expect_faster_than MS WHAT
  (( elapsed_ms < $1 )) || fail "$2: took $elapsed_ms ms, expected under $1 ms"
}

# wait_for_file PATH [SECONDS]: until PATH exists (default 20 s, generous for a loaded machine).
wait_for_file() {
  local deadline=$(( $(now_ms) + ${2:-20} * 1000 ))
  until [[ -e $1 ]]; do
    (( $(now_ms) < deadline )) || fail "timed out waiting for $1"
    sleep 0.02
  done
}
