#!/usr/bin/env bash
# bench/cuda/gpu-check.sh: everything tutti can prove on one GPU, in one bounded run.
#
#   bash bench/cuda/gpu-check.sh build [BUILD_DIR] [ARCH]   any machine with nvcc, NCCL and tutti's
#        build dependencies: configures (Release, CUDA architecture ARCH, default 90 = H100/H200) and
#        builds only the CUDA/NCCL tests and benchmarks into BUILD_DIR (default build-gpu), then copies
#        what "run" needs (programs, CTest files, the CUDA runtime; about 5 MiB) to BUILD_DIR-carry.
#   bash bench/cuda/gpu-check.sh run OUT_DIR [BUILD_DIR]    the GPU machine: runs a build made by
#        "build" (here or elsewhere; default build-gpu-carry, else build-gpu) and writes under OUT_DIR:
#          env.txt            GPU, driver, CUDA, NCCL, CPU, date; the libraries each binary resolved
#          tests.txt          ctest -L gpu (the kernels bit for bit against the CPU reference; every
#                             collective of communicator<nccl, native>; the codecs over NCCL against
#                             the CPU path) and the host-side cuda./nccl. tests on a machine that has a GPU
#          sanitizer.txt      compute-sanitizer memcheck over the kernels test (bounded: 120 s)
#          pack.txt/.json     tutti-cuda-pack-bench over ResNet-50 and BERT-base, wires half,
#                             bfloat16, float (rows and the issue's goals)
#          native.txt/.json   tutti-cuda-native-bench, with and without the cross-rank check
#        Exit status: 0 when every test passed and every native row was right, 1 otherwise (the
#        benchmarks still run after a failed test: their tables are part of the evidence).
#   bash bench/cuda/gpu-check.sh all OUT_DIR [ARCH]          both, on a GPU machine that has the
#        build dependencies (tools/install-deps.sh's list; nvcc and NCCL).
#
# Why two steps: the lent GPU machines have nvcc but neither Boost.Hana, doctest nor a network to
# install them, and their time is counted; two cores here build the GPU targets for one architecture
# in minutes at no GPU cost. On paper, "run" takes about 2 minutes on an H100: the tests under a
# minute (tens of MiB per case), the pack benchmark 6 runs x 9 rows x 53 repetitions of at most a
# few milliseconds each plus CUDA start-up, the native benchmark 2 x 26 sizes x 25 calls of at most
# 256 MiB, compute-sanitizer at most 120 s; "build" on 16 cores another 2-3.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:-}"

gpu_targets=(tutti_cuda_kernels_test tutti_cuda_odr_test tutti_nccl_gpu_tests tutti_nccl_codecs_gpu_test
             tutti_cuda_pack_bench tutti_cuda_native_bench tutti_cuda_tests tutti_nccl_tests)

build() {
  local build_dir="$1" arch="$2"
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DTUTTI_CUDA_ARCHITECTURES="$arch" \
    -DTUTTI_BUILD_EXAMPLES=OFF -DTUTTI_BUILD_TOOLS=OFF -DTUTTI_BUILD_BENCH=ON -DTUTTI_BUILD_BENCH_EXTRAS=ON -DTUTTI_BUILD_TESTS=ON || return 1
  local start=$SECONDS
  cmake --build "$build_dir" -j "$(nproc)" --target "${gpu_targets[@]}" || return 1
  echo "gpu-check: built ${#gpu_targets[@]} targets for sm_$arch in $((SECONDS - start)) s on $(nproc) cores"
  # What "run" needs and nothing else (no objects): the programs, CTest's files, the cache, and the
  # CUDA runtime the programs were linked against (used there only if the loader finds none).
  local carry="$build_dir-carry"
  rm -rf "$carry" && mkdir -p "$carry/lib"
  (cd "$build_dir" && find . \( -name CTestTestfile.cmake -o -name CMakeCache.txt \) -print0 |
     xargs -0 cp --parents -t "$carry")
  local target exe
  for target in "${gpu_targets[@]}"; do
    exe="$(cd "$build_dir" && find . -type f -perm -u+x \( -name "$target" -o -name "${target//_/-}" \) -not -path '*/CMakeFiles/*' | head -1)"
    [ -n "$exe" ] && (cd "$build_dir" && cp --parents "$exe" "$carry")
  done
  local cudart
  cudart="$(ldd "$build_dir/tests/nccl/tutti_nccl_gpu_tests" | sed -n 's/.*libcudart.so.13 => \([^ ]*\).*/\1/p')"
  [ -n "$cudart" ] && cp -L "$cudart" "$carry/lib/"
  echo "gpu-check: $(du -sh "$carry" | cut -f1) to carry in $carry"
}

# NCCL: the system's if the loader knows one, else the one PyTorch's wheels ship (nvidia-nccl-cu13).
find_nccl() {
  ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2' && return 0
  local dir
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$dir/libnccl.so.2" ] && { export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; return 0; }
  done
  dir="$(python3 - 2>/dev/null <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("nvidia.nccl")
for base in (spec.submodule_search_locations or []) if spec else []:
    lib = pathlib.Path(base) / "lib"
    if (lib / "libnccl.so.2").exists():
        print(lib)
        break
PY
)"
  [ -n "$dir" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

run() {
  local out="$1" build_dir="$2" status=0 phase_times=()
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  # CTest's files name the absolute paths of the machine that configured the build: where this copy
  # lives elsewhere, the old source and build paths are made to lead here (only when they are free).
  local cache="$build_dir/CMakeCache.txt" old_src old_build
  old_src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")"
  old_build="$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$cache")"
  if [ -n "$old_src" ] && [ "$old_src" != "$root" ] && [ ! -e "$old_src" ]; then
    mkdir -p "$(dirname "$old_src")" && ln -s "$root" "$old_src"
  fi
  if [ -n "$old_build" ] && [ ! -e "$old_build" ]; then
    mkdir -p "$(dirname "$old_build")" && ln -s "$build_dir" "$old_build"
  fi
  find_nccl
  ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.13' || [ ! -d "$build_dir/lib" ] ||
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$build_dir/lib"
  export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.mem --format=csv
    nvidia-smi | head -12
    command -v nvcc >/dev/null && nvcc --version | tail -2
    echo "cudart linked: static (CMake's default for CUDA targets) or the libcudart the loader shows below"
    lscpu | grep -E '^(Model name|CPU\(s\)|Socket)'
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    local exe
    for exe in "$build_dir"/tests/cuda/tutti_cuda_kernels_test "$build_dir"/tests/nccl/tutti_nccl_gpu_tests \
               "$build_dir"/tests/nccl/tutti_nccl_codecs_gpu_test "$build_dir"/bench/cuda/tutti-cuda-native-bench; do
      echo "== ldd ${exe#"$build_dir"/}"
      ldd "$exe" | grep -E 'nccl|cuda|not found' || true
    done
  } > "$out/env.txt" 2>&1
  cat "$out/env.txt"

  phase_times+=("$SECONDS")
  echo "== ctest -L gpu, then the host-side cuda./nccl. tests (compile-fail tests need the build machine's headers: not here)"
  ctest --test-dir "$build_dir" -L gpu --output-on-failure --timeout 300 2>&1 | tee "$out/tests.txt" || status=1
  grep -q '100% tests passed' "$out/tests.txt" && ! grep -q 'Not Run\|\*\*\*Skipped' "$out/tests.txt" || status=1
  ctest --test-dir "$build_dir" -R '^(cuda|nccl)\.' -LE 'gpu|compile_fail' --output-on-failure --timeout 300 2>&1 |
    tee -a "$out/tests.txt" || status=1

  phase_times+=("$SECONDS")
  echo "== compute-sanitizer memcheck over cuda.kernels"
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")"
  if [ -x "$sanitizer" ]; then
    timeout 120 "$sanitizer" --tool memcheck --error-exitcode 3 "$build_dir/tests/cuda/tutti_cuda_kernels_test" \
      > "$out/sanitizer.txt" 2>&1
    echo "compute-sanitizer exit status: $? (124: stopped at 120 s)" | tee -a "$out/sanitizer.txt"
    tail -5 "$out/sanitizer.txt"
  else
    echo "compute-sanitizer: not installed" | tee "$out/sanitizer.txt"
  fi

  phase_times+=("$SECONDS")
  echo "== tutti-cuda-pack-bench"
  : > "$out/pack.txt"
  local model wire first=1
  echo "[" > "$out/pack.json"
  for model in resnet50 bert_base; do
    for wire in half bfloat16 float; do
      "$build_dir/bench/cuda/tutti-cuda-pack-bench" --shapes "$root/bench/fusion/$model.tsv" --wire "$wire" -n 50 \
        --json "$out/pack-one.json" 2>&1 | tee -a "$out/pack.txt" || status=1
      [ $first -eq 1 ] || echo "," >> "$out/pack.json"
      first=0
      cat "$out/pack-one.json" >> "$out/pack.json" 2>/dev/null
    done
  done
  # The chunk size (elements per CUDA block) is a runtime choice: the sweep around the default (8 Ki).
  local chunk
  for model in resnet50 bert_base; do
    for chunk in 2048 4096 16384 65536; do
      "$build_dir/bench/cuda/tutti-cuda-pack-bench" --shapes "$root/bench/fusion/$model.tsv" --wire half -n 30 \
        --chunk "$chunk" --json "$out/pack-one.json" 2>&1 | tee -a "$out/pack.txt" || status=1
      echo "," >> "$out/pack.json"
      cat "$out/pack-one.json" >> "$out/pack.json" 2>/dev/null
    done
  done
  echo "]" >> "$out/pack.json"
  rm -f "$out/pack-one.json"

  phase_times+=("$SECONDS")
  echo "== tutti-cuda-native-bench (TUTTI_CHECK=1, then 0)"
  "$build_dir/bench/cuda/tutti-cuda-native-bench" -e 256M -n 20 -w 5 --json "$out/native.json" 2>&1 |
    tee "$out/native.txt" || status=1
  TUTTI_CHECK=0 "$build_dir/bench/cuda/tutti-cuda-native-bench" -e 256M -n 20 -w 5 --json "$out/native-nocheck.json" 2>&1 |
    tee -a "$out/native.txt" || status=1

  echo "== summary (phases began at ${phase_times[*]} s)"
  grep -E 'tests passed|Failed|FAIL' "$out/tests.txt" | head -20
  grep -E '^# |^goal' "$out/pack.txt"
  echo "gpu-check: exit status $status"
  return "$status"
}

case "$mode" in
  build) build "$(realpath -m "${2:-$root/build-gpu}")" "${3:-90}" ;;
  run)
    [ -n "${2:-}" ] || { echo "usage: gpu-check.sh run OUT_DIR [BUILD_DIR]" >&2; exit 2; }
    default_build="$root/build-gpu-carry"
    [ -d "$default_build" ] || default_build="$root/build-gpu"
    run "$2" "$(realpath -m "${3:-$default_build}")" ;;
  all)
    [ -n "${2:-}" ] || { echo "usage: gpu-check.sh all OUT_DIR [ARCH]" >&2; exit 2; }
    arch="${3:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)}"
    build "$root/build-gpu" "${arch:-90}" && run "$2" "$root/build-gpu" ;;
  *) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac
