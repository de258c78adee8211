# Bad command lines exit 2 with a message and the synopsis; --help exits 0.
source "$(dirname "$0")/lib.sh"

id64=$(printf 'a%.0s' $(seq 64))
i=0
while IFS= read -r line; do
  eval "args=($line)"
  i=$((i + 1))
  launch "bad$i" "${args[@]}"
  expect_status 2 "tutti-run $line"
  expect_in "$tmp/bad$i.err" "usage: tutti-run -n N" "tutti-run $line"
  if [[ -s $tmp/bad$i.out ]]; then fail "tutti-run $line wrote to stdout"; fi
done <<EOT
-n 0 true
-n 3
-n 3 --
true
-n x true
-n 2x true
-n 99999999 true
-n
--bogus -n 1 true
-n 1 --job-id 'bad id' true
-n 1 --job-id '' true
-n 1 --job-id a/b true
-n 1 --job-id ${id64}b true
-n 1 --grace -1 true
-n 1 --grace soon true
-n 2 --ranks-per-node 0 true
-n 2 --ranks-per-node x true
EOT

launch help --help
expect_status 0 "--help"
expect_in "$tmp/help.out" "usage: tutti-run -n N" "--help"

# Boundaries that are valid.
launch ok -n1 --job-id "$id64" --grace=0.5 true
expect_status 0 "-n1 --job-id <64 chars> --grace=0.5"
