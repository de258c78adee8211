#!/usr/bin/env python3
"""bench/cuda/plot.py DIR: draws DIR/pack.png (GB/s per op and model, the default chunk) and
DIR/native.png (native allreduce algbw against size) from gpu-check.sh's pack.json and native*.json.
Run wherever matplotlib is (the GPU machine returns at most 8 files, so gpu-check.sh does not draw)."""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
runs = json.loads((out / "pack.json").read_text())
default = [r for r in runs if r.get("chunk_elements") == 8192]
fig, axes = plt.subplots(1, len(default), figsize=(3.0 * len(default), 4.2), sharey=True)
for ax, r in zip(axes, default):
    rows = [row for row in r["rows"] if row["op"] != "peak copy"]
    ax.bar([row["op"] for row in rows], [row["gbps"] for row in rows],
           color=["grey" if row["op"] == "memcpy" else "C1" if "/tensor" in row["op"] else "C0" for row in rows])
    peak = next(row["gbps"] for row in r["rows"] if row["op"] == "peak copy")
    ax.axhline(peak, color="k", lw=0.8, ls="--")
    ax.set_title(f"{pathlib.Path(r['shapes']).stem}, wire {r['wire']}\n{r['tensors']} tensors", fontsize=8)
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
axes[0].set_ylabel("GB/s (bytes read + written); dashed: 1 GiB copy")
fig.suptitle(f"tutti::cuda kernels, {default[0]['device']}, chunk 8 Ki elements")
fig.tight_layout()
fig.savefig(out / "pack.png", dpi=110)

fig, ax = plt.subplots(figsize=(6.5, 4.2))
for name, label in (("native", "TUTTI_CHECK=1"), ("native-nocheck", "TUTTI_CHECK=0")):
    path = out / f"{name}.json"
    if not path.exists():
        continue
    r = json.loads(path.read_text())
    sizes = [row["bytes"] for row in r["rows"]]
    for mode, style in (("out_of_place", "-"), ("in_place", "--")):
        ax.plot(sizes, [row[mode]["algbw"] for row in r["rows"]], style, marker=".", label=f"{label}, {mode.replace('_', ' ')}")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("size (B)")
ax.set_ylabel("algbw (GB/s)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7)
ax.set_title("native allreduce, world of 1 (a copy within the GPU; busbw 0)", fontsize=9)
fig.tight_layout()
fig.savefig(out / "native.png", dpi=110)
print("wrote", out / "pack.png", out / "native.png")
