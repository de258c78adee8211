# A program that cannot be executed fails every rank with status 127 and the job with status 1.
source "$(dirname "$0")/lib.sh"

launch path -n 2 -- /nonexistent/tutti-no-such-program --flag
expect_status 1 "a program path that does not exist"
expect_in "$tmp/path.err" "tutti-run: cannot execute '/nonexistent/tutti-no-such-program': No such file or directory" "exec error"
grep -qE "tutti-run: rank [01] exited with status 127" "$tmp/path.err" || fail "no rank reported status 127"

launch search -n 1 "tutti-no-such-program-$$"
expect_status 1 "a program name not on PATH"
expect_in "$tmp/search.err" "cannot execute 'tutti-no-such-program-$$'" "exec error"
