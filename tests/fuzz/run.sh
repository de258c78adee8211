#!/usr/bin/env bash
# Builds a libFuzzer target with clang++-14 (AddressSanitizer, UBSan) and runs it for a bounded time.
#   run.sh SOURCE INCLUDE_DIR WORK_DIR [SECONDS]
# Exit 77 (CTest: skipped) when clang++ or its libFuzzer runtime is missing, saying which.
set -euo pipefail
source=$1 include=$2 work=$3 seconds=${4:-20}
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
  -I "$include" "$source" -o "$exe"
# Bounded in time and in runs; -rss_limit keeps a runaway allocation from taking the machine.
"$exe" -max_total_time="$seconds" -runs=5000000 -rss_limit_mb=1024 -max_len=8192 -print_final_stats=1 "$work/corpus"
