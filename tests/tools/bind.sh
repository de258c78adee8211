# --bind core: rank k runs on exactly one CPU, the (k mod C)-th of the C that tutti-run may use
# (its own affinity, e.g. under taskset); without it ranks keep tutti-run's whole set; a wrong
# value is a usage error.
source "$(dirname "$0")/lib.sh"

# Our CPUs, in order, from the kernel's list ("0-3,6" -> 0 1 2 3 6).
cpus=()
list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
IFS=, read -r -a parts <<<"$list"
for part in "${parts[@]}"; do
  if [[ $part == *-* ]]; then for ((c = ${part%-*}; c <= ${part#*-}; c++)); do cpus+=("$c"); done
  else cpus+=("$part"); fi
done
(( ${#cpus[@]} > 0 )) || fail "could not read this process's CPUs from /proc/self/status"

show='echo "$TUTTI_RANK $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
launch bound -n 5 --bind core --no-prefix sh -c "$show"
expect_status 0 "--bind core"
for k in 0 1 2 3 4; do
  want=${cpus[$(( k % ${#cpus[@]} ))]}
  grep -qxF "$k $want" "$tmp/bound.out" || fail "rank $k is not bound to CPU $want alone (ours: $list)"
done

launch free -n 2 --no-prefix sh -c "$show"
expect_status 0 "no --bind"
for k in 0 1; do
  grep -qxF "$k $list" "$tmp/free.out" || fail "without --bind rank $k does not keep tutti-run's CPUs ($list)"
done

launch wrong -n 2 --bind cores true
expect_status 2 "--bind cores"
expect_in "$tmp/wrong.err" "--bind takes core or none, got 'cores'" "the usage error"
exit 0
