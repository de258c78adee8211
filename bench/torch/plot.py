"""Plots allreduce_vs_gloo.py's results: busbw against message size, tutti and gloo, one panel per run.

    python3 bench/torch/plot.py OUT.png DIR [DIR ...]      (each DIR holds an allreduce.csv; matplotlib)"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, dirs = sys.argv[1], sys.argv[2:]
fig, axes = plt.subplots(1, len(dirs), figsize=(6 * len(dirs), 4.2), squeeze=False)
for ax, d in zip(axes[0], dirs):
    rows = list(csv.DictReader(open(os.path.join(d, "allreduce.csv"))))
    for backend, style in (("tutti", "o-"), ("gloo", "s--")):
        pts = [(int(r["bytes"]), float(r["median_us"])) for r in rows if r["backend"] == backend]
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, label=backend)
    ax.set_title(os.path.basename(os.path.normpath(d)))
    ax.set_xlabel("bytes per rank (float32 SUM)")
    ax.set_ylabel("time per all_reduce (µs, median, slowest rank)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=110)
print(out)
