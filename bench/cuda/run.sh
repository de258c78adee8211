#!/usr/bin/env bash
# bench/cuda/run.sh: on a machine with a GPU, builds tutti-cuda-pack-bench (and the GPU tests) and
# runs it over ResNet-50's and BERT-base's gradient lists for each wire type, writing
# OUT/<model>-<wire>.txt (the table), .json (the rows) and OUT/pack.png (GB/s per op); then
# tutti-cuda-native-bench (native allreduce over every visible GPU, nccl-tests' table, 8 B..256 MiB),
# as shipped (TUTTI_CHECK=1) and without the cross-rank check, writing OUT/native-allreduce.txt/.json,
# OUT/native-allreduce-nocheck.txt/.json and OUT/native.png (busbw and algbw against size).
#   bash bench/cuda/run.sh [OUT] [ARCH]     (OUT default bench/results/cuda-<date>; ARCH: 80 A100, 90 H100)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/bench/results/cuda-$(date +%Y%m%d)}"
arch="${2:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)}"
arch="${arch:-80}"
build="$root/build-cuda-bench"
mkdir -p "$out"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTUTTI_CUDA_ARCHITECTURES="$arch" \
  -DTUTTI_BUILD_EXAMPLES=OFF -DTUTTI_BUILD_BENCH=ON -DTUTTI_BUILD_TESTS=ON
cmake --build "$build" --target tutti_cuda_pack_bench tutti_cuda_native_bench tutti_cuda_kernels_test tutti_cuda_odr_test tutti_cuda_tests -j"$(nproc)"
# The kernels must agree with the CPU reference before their speed means anything.
ctest --test-dir "$build" -R '^cuda\.' --output-on-failure | tee "$out/tests.txt"
for model in resnet50 bert_base; do
  for wire in half bfloat16 float; do
    "$build/bench/cuda/tutti-cuda-pack-bench" --shapes "$root/bench/fusion/$model.tsv" --wire "$wire" -n 50 \
      --json "$out/$model-$wire.json" | tee "$out/$model-$wire.txt"
  done
done
# native allreduce: the table even when a row has wrong elements (the exit status says so at the end).
native_status=0
"$build/bench/cuda/tutti-cuda-native-bench" --json "$out/native-allreduce.json" | tee "$out/native-allreduce.txt" ||
  native_status=$?
TUTTI_CHECK=0 "$build/bench/cuda/tutti-cuda-native-bench" --json "$out/native-allreduce-nocheck.json" |
  tee "$out/native-allreduce-nocheck.txt" || native_status=$?
python3 - "$out" <<'PY'
import json, pathlib, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out = pathlib.Path(sys.argv[1])
runs = sorted(p for p in out.glob("*.json") if not p.stem.startswith("native-"))
fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 4), sharey=True)
for ax, path in zip(axes if len(runs) > 1 else [axes], runs):
    r = json.loads(path.read_text())
    ops = [row["op"] for row in r["rows"]]
    ax.bar(ops, [row["gbps"] for row in r["rows"]], color=["grey", "C0", "C1", "C0", "C1"][: len(ops)])
    ax.set_title(f"{path.stem}\n{r['tensors']} tensors", fontsize=8)
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
axes[0].set_ylabel("GB/s (bytes read + written)") if len(runs) > 1 else axes.set_ylabel("GB/s")
fig.suptitle(f"tutti::cuda pack/unpack, {json.loads(runs[0].read_text())['device']}")
fig.tight_layout()
fig.savefig(out / "pack.png", dpi=120)
print("wrote", out / "pack.png")
PY
python3 - "$out" <<'PY'
import json, pathlib, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out = pathlib.Path(sys.argv[1])
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
first = None
for name, label in (("native-allreduce", "TUTTI_CHECK=1"), ("native-allreduce-nocheck", "TUTTI_CHECK=0")):
    path = out / f"{name}.json"
    if not path.exists():
        continue
    r = json.loads(path.read_text())
    first = first or r
    sizes = [row["bytes"] for row in r["rows"]]
    for mode, style in (("out_of_place", "-"), ("in_place", "--")):
        for ax, key in zip(axes, ("busbw", "algbw")):
            ax.plot(sizes, [row[mode][key] for row in r["rows"]], style, marker=".",
                    label=f"{label}, {mode.replace('_', ' ')}")
for ax, key in zip(axes, ("busbw", "algbw")):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (B)")
    ax.set_ylabel(f"{key} (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
axes[0].set_title("busbw = algbw x 2(n-1)/n" + (" (0: world of 1)" if first and first["ranks"] == 1 else ""), fontsize=9)
axes[1].set_title("algbw = size / time", fontsize=9)
if first:
    fig.suptitle(f"tutti native allreduce (float sum), {first['ranks']} x {first['device']}, NCCL {first['nccl']}")
fig.tight_layout()
fig.savefig(out / "native.png", dpi=120)
print("wrote", out / "native.png")
PY
exit "$native_status"
