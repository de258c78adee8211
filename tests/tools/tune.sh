# tutti-tune end to end, in seconds (issue 20 point 7): a tiny sweep under tutti-run writes a table;
# --check accepts it and refuses a broken copy with its row and line; --explain prints the row; a
# job with algorithm::tuned reads it through TUTTI_TUNING_FILE, runs what its rows say and gets the
# right sums; --versus compares its choices with each candidate alone; --export writes NCCL's CSV; --rechoose chooses the same rows again; a second sweep (3 ranks) --merge'd into it keeps the
# first layout.
# Usage: tune.sh <tutti-run> <tutti-tune> <tune_reader>
source "$(dirname "$0")/lib.sh"
tune=${2:?tutti-tune}
reader=${3:?tune_reader}
table=$tmp/table.json
sizes=8,64K,1M

launch sweep -n 2 --no-prefix -- "$tune" --sizes "$sizes" --reps 2 --target-ms 1 --budget 20 --output "$table"
expect_status 0 "tutti-tune under tutti-run -n 2"
[[ -f $table ]] || fail "tutti-tune wrote no table at $table"
expect_in "$table" '"format": "tutti-tuning-table", "version": 1' "the table's header"
expect_in "$table" '"transport": "shm"' "the provenance's transport"
expect_in "$table" '"max_bytes": "inf"' "a last range"
samples=$(grep -c '"median_us"' "$table")
(( samples >= 3 * 5 )) || fail "expected a sample per size and candidate (at least 15), got $samples lines"
grep -q '"direct.one_shot_bytes"' "$table" || fail "no knob variant of direct was measured"

"$tune" --check "$table" >"$tmp/check.out" 2>"$tmp/check.err" || fail "--check refused tutti-tune's own table"
expect_in "$tmp/check.out" "a valid tutti tuning table" "--check's verdict"
expect_in "$tmp/check.out" "1x2 (world 2)" "--check's layout"

# A hand edit that names an algorithm nobody compiled: refused with the row and its line.
sed '0,/"algorithm": "[a-z_<>, ]*"/s//"algorithm": "rnig"/' "$table" >"$tmp/broken.json"
status=0; "$tune" --check "$tmp/broken.json" >"$tmp/broken.out" 2>"$tmp/broken.err" || status=$?
expect_status 2 "--check of a table naming algorithm 'rnig'"
grep -qE "row [0-9]+ \(line [0-9]+\).*rnig" "$tmp/broken.err" || fail "--check's refusal does not name the row and line"

"$tune" --explain 64K --table "$table" >"$tmp/explain.out" 2>"$tmp/explain.err" || fail "--explain 64K"
[[ -s $tmp/explain.out ]] || fail "--explain printed nothing"

launch read -n 2 --no-prefix -- env TUTTI_TUNING_FILE="$table" "$reader" 8 65536 1048576 3000
expect_status 0 "a tuned<...> job reading the table"
expect_in "$tmp/read.out" "table $table: ok" "the job's results"
# What ran at 64 KiB is what --explain 64K says the table's row chose ("row 1 (line 6): 0 B..inf -> direct",
# with the row's tuning values as "{...}" after the name).
ran=$(sed -n 's/^allreduce 65536 B ran //p' "$tmp/read.out")
row=$(sed -n 's/^ *row [0-9]* (line [0-9]*): .* -> //p' "$tmp/explain.out" | head -n 1)
[[ -n $ran && -n $row ]] || fail "the job did not say what ran at 64 KiB, or --explain named no row"
echo "64 KiB: ran $ran, row $row"
[[ ${row%%\{*} == "$ran" ]] || fail "at 64 KiB the job ran $ran, but --explain says the row chose $row"

# --versus: the table's choices against each candidate alone, in one interleaved run. Whether the
# goal is met here is the machine's business (exit 0 or 1); the report must have a row per size,
# name at 64 KiB the candidate the row chose, and a geometric mean per candidate.
launch versus -n 2 --no-prefix -- "$tune" --versus "$table" --sizes "$sizes" --reps 2 --target-ms 1 --budget 20 \
  --output "$tmp/versus.md"
[[ $status == 0 || $status == 1 ]] || fail "tutti-tune --versus exited with $status (0: goal met, 1: missed)"
expect_in "$tmp/versus.md" "| size | tuned µs | tuned runs |" "--versus's columns"
versus_ran=$(awk -F' [|] ' '$1 == "| 64 KiB" {print $3}' "$tmp/versus.md")
[[ $versus_ran == "${row%%\{*}" ]] || fail "--versus says tuned ran '$versus_ran' at 64 KiB, the row chose $row"
(( $(grep -c '^| [0-9]* [KM]*i*B |' "$tmp/versus.md") == 3 )) || fail "--versus: expected a row for each of 3 sizes"
expect_in "$tmp/versus.md" "geometric mean, tuned against ring" "--versus's geometric means"

# The same choices for NCCL's tuner plugin (tuner/export.hpp writes it; its own tests read it back).
"$tune" --export nccl --table "$table" >"$tmp/export.out" 2>"$tmp/export.err" || fail "--export nccl"
expect_in "$tmp/export.out" "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks" "--export nccl's columns"

# Another layout merged in: both are in the table, and --check reads it.
launch merge -n 3 --no-prefix -- "$tune" --sizes 8 --reps 2 --target-ms 1 --budget 10 --no-knobs \
  --merge "$table" --output "$tmp/merged.json"
expect_status 0 "tutti-tune -n 3 --merge"
"$tune" --check "$tmp/merged.json" >"$tmp/merged_check.out" 2>&1 || fail "--check of the merged table"
expect_in "$tmp/merged_check.out" "1x2 (world 2)" "the merged table's first layout"
expect_in "$tmp/merged_check.out" "1x3 (world 3)" "the merged table's second layout"

# --rechoose: the rows chosen again from the samples (nothing measured) are the rows the sweep
# chose (same rule), with the samples kept; a table without --output is refused.
"$tune" --rechoose "$tmp/merged.json" --output "$tmp/rechosen.json" 2>"$tmp/rechoose.err" || fail "--rechoose"
"$tune" --check "$tmp/rechosen.json" >"$tmp/rechosen_check.out" 2>&1 || fail "--check of the re-chosen table"
diff <(grep -v '^measured\|command:\|a valid' "$tmp/merged_check.out") \
     <(grep -v '^measured\|command:\|a valid' "$tmp/rechosen_check.out") >/dev/null ||
  fail "--rechoose chose other rows than the sweep under the same rule"
expect_in "$tmp/rechosen_check.out" "a valid tutti tuning table" "--rechoose's table"
status=0; "$tune" --rechoose "$tmp/merged.json" >/dev/null 2>&1 || status=$?
expect_status 2 "--rechoose without --output"
exit 0
