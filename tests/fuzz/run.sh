#!/usr/bin/env bash
# Builds a libFuzzer target with clang++-14 (AddressSanitizer, UBSan) and runs it for a bounded time.
#   run.sh SOURCE INCLUDE_DIR WORK_DIR [SECONDS [SEEDS_DIR [LINK_FLAGS...]]]
# SEEDS_DIR (tests/fuzz/corpus/<target>, kept in the repository) is read as a second corpus:
# libFuzzer starts from its inputs and writes what it finds to WORK_DIR/corpus only.
# Exit 77 (CTest: skipped) when clang++ or its libFuzzer runtime is missing, saying which.
set -euo pipefail
source=$1 include=$2 work=$3 seconds=${4:-20} seeds=${5:-}
shift $(($# < 5 ? $# : 5))
clang=$(command -v clang++-14 || command -v clang++ || true)
if [[ -z $clang ]]; then
  echo "skipped: clang++-14 not found (tools/install-deps.sh installs clang-14 and libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$work/corpus"
exe=$work/$(basename "$source" .cpp)
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
     "$clang" -x c++ -fsanitize=fuzzer - -o "$work/probe" 2>"$work/probe.log"; then
  echo "skipped: $clang cannot link libFuzzer (install libclang-rt-14-dev):"; cat "$work/probe.log"
  exit 77
fi
"$clang" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I "$include" "$source" -o "$exe" "$@"
corpora=("$work/corpus")
[[ -n $seeds && -d $seeds ]] && corpora+=("$seeds")
# Bounded in time and in runs; -rss_limit keeps a runaway allocation from taking the machine. A
# finding exits 1 (libFuzzer's own default, 77, is CTest's "skipped" here) and leaves its input in
# WORK_DIR (crash-*, timeout-*, oom-*), not in the directory the suite runs from.
"$exe" -max_total_time="$seconds" -runs=5000000 -rss_limit_mb=1024 -max_len=8192 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$work/" "${corpora[@]}"
