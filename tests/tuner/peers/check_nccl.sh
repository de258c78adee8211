#!/usr/bin/env bash
# Reads tutti's NCCL export with NCCL's own example tuner plugin (plugins/tuner/example/plugin.c),
# compiled on the CPU: no GPU, no NCCL library needed.
#   tests/tuner/peers/check_nccl.sh NCCL_SOURCE_DIR     (a clone of github.com/NVIDIA/nccl)
# Run from the repository root. Prints each probe and PASS, or the first difference and exits 1.
nccl=${1:?usage: $0 NCCL_SOURCE_DIR}
example=$nccl/plugins/tuner/example
source "$(dirname "$0")/common.sh"
gcc -O1 -I"$example" -I"$example/nccl" "$here/nccl_driver.c" -o "$work/driver"
# nNodes nRanks func(0 broadcast, 2 allgather, 3 reducescatter, 4 allreduce) bytes -> preferred
cat > "$work/expected" <<'END'
1 2 4 8 -> tree/simple
1 2 4 1073741824 -> tree/simple
1 4 4 2047 -> tree/simple
1 4 4 2048 -> none
1 4 4 65535 -> none
1 4 4 65536 -> ring/simple
1 4 4 18446744073709551615 -> ring/simple
1 4 3 4079 -> none
1 4 3 4080 -> ring/simple
1 4 2 16384 -> ring/simple
2 4 2 0 -> ring/simple
2 4 2 100000000 -> ring/simple
2 4 4 4095 -> tree/simple
2 4 4 4096 -> ring/simple
4 4 4 77 -> ring/simple
4 4 3 4092 -> pat/simple
4 4 0 1024 -> ring/simple
2 6 4 100 -> none
END
sed 's/ ->.*//' "$work/expected" | NCCL_TUNER_CONFIG_FILE="$work/nccl.csv" "$work/driver" > "$work/got"
cat "$work/got"
diff "$work/expected" "$work/got" && echo PASS
