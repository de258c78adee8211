#!/usr/bin/env bash
# The longer fuzz campaign (the suite runs each target for TUTTI_FUZZ_SECONDS only): every target of
# tests/fuzz/CMakeLists.txt for SECONDS each, JOBS at a time, each from its seeds plus what earlier
# campaigns in OUT found; one table of executions, corpus size and findings.
#   tests/fuzz/campaign.sh SECONDS OUT_DIR [JOBS]
# Findings (crash-*, timeout-*, oom-*) stay in OUT_DIR/<target>/; the table goes to OUT_DIR/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:?seconds per target} out=${2:?output directory} jobs=${3:-2}
mkdir -p "$out"
# target|flags, as the CMakeLists lists them (PROJECT_SOURCE_DIR spelled out).
mapfile -t entries < <(sed -n 's/^ *"\([a-z_]*_fuzz\)|\(.*\)"[)]*$/\1|\2/p' "$here/tests/fuzz/CMakeLists.txt" |
                       sed "s|\${PROJECT_SOURCE_DIR}|$here|g")
run_one() {
  local target=${1%%|*} flags=${1#*|}
  # shellcheck disable=SC2086
  bash "$here/tests/fuzz/run.sh" "$here/tests/fuzz/$target.cpp" "$here/include" "$out/$target" "$seconds" \
    "$here/tests/fuzz/corpus/$target" $flags >"$out/$target.log" 2>&1 && echo "$target ok" || echo "$target FAILED ($?)"
}
export -f run_one; export here out seconds
printf '%s\n' "${entries[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}
{
  echo "| target | seconds | executions | exec/s | corpus (files) | findings |"
  echo "|---|---:|---:|---:|---:|---|"
  for e in "${entries[@]}"; do
    t=${e%%|*}
    runs=$(sed -n 's/^stat::number_of_executed_units: //p' "$out/$t.log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t.log" | tail -1)
    files=$(find "$out/$t/corpus" -type f | wc -l)
    found=$(find "$out/$t" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | wc -l)
    echo "| $t | $seconds | ${runs:-?} | ${rate:-?} | $files | $found |"
  done
} >"$out/README.md"
cat "$out/README.md"
