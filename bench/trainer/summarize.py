#!/usr/bin/env python3
"""Summarises bench/trainer/run.sh's runs: per configuration (ranks, codec, fusion threshold) the
median over steps (after the first 30) and over repeats of the step time and its split into compute,
exposed communication and overlapped communication; writes DIR.md and DIR.png.
usage: summarize.py bench/results/trainer-LABEL-DATE"""
import csv
import glob
import os
import re
import statistics
import sys

d = sys.argv[1].rstrip("/")
runs = {}
for path in sorted(glob.glob(f"{d}/*.csv")):
    m = re.match(r"r(\d+)-(\w+)-t(\d+)-rep(\d+)\.csv", os.path.basename(path))
    if not m:
        continue
    key = (int(m[1]), m[2], int(m[3]))
    rows = [r for r in csv.DictReader(open(path)) if r["kind"] == "train"][30:]
    if not rows:
        continue
    med = lambda col: statistics.median(float(r[col]) for r in rows)
    runs.setdefault(key, []).append({c: med(c) for c in ("step_ms", "compute_ms", "exposed_comm_ms", "overlapped_comm_ms", "images_per_s")})

lines = [f"# Example 04's training step, split (from {os.path.basename(d)})", "",
         "Median over steps (the first 30 skipped) and over interleaved repeats; ms per step of one global batch of 128.",
         "compute: forward + backward on the slot's share; exposed: waiting for gradients after backward; "
         "overlapped: reduction time hidden under backward (from the first gradient handed over to the last reduced, minus exposed).", "",
         "| ranks | codec | fusion | step ms | compute ms | exposed comm ms | overlapped comm ms | images/s | repeats |",
         "|---:|:---|:---|---:|---:|---:|---:|---:|---:|"]
for key in sorted(runs):
    r, codec, t = key
    agg = {c: statistics.median(x[c] for x in runs[key]) for c in runs[key][0]}
    lines.append(f"| {r} | {codec} | {'per tensor' if t == 0 else f'{t} MiB'} | {agg['step_ms']:.2f} | {agg['compute_ms']:.2f} | "
                 f"{agg['exposed_comm_ms']:.2f} | {agg['overlapped_comm_ms']:.2f} | {agg['images_per_s']:.0f} | {len(runs[key])} |")
text = "\n".join(lines) + "\n"
open(f"{d}.md", "w").write(text)
print(text)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted(runs)
    labels = [f"{r}r {c}\n{'per-t' if t == 0 else str(t) + 'M'}" for r, c, t in keys]
    comp = [statistics.median(x["compute_ms"] for x in runs[k]) for k in keys]
    expo = [statistics.median(x["exposed_comm_ms"] for x in runs[k]) for k in keys]
    over = [statistics.median(x["overlapped_comm_ms"] for x in runs[k]) for k in keys]
    rest = [max(0, statistics.median(x["step_ms"] for x in runs[k]) - c - e) for k, c, e in zip(keys, comp, expo)]
    fig, ax = plt.subplots(figsize=(max(6, len(keys) * 0.9), 4))
    ax.bar(labels, comp, label="compute")
    ax.bar(labels, expo, bottom=comp, label="exposed communication")
    ax.bar(labels, rest, bottom=[c + e for c, e in zip(comp, expo)], label="optimiser, metrics, data")
    ax.plot(labels, over, "k_", markersize=20, label="communication hidden under backward")
    ax.set(ylabel="ms per step", title="Fashion-MNIST MLP, one step of global batch 128")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{d}.png", dpi=110)
    print(f"(plot written to {d}.png)")
except ImportError:
    print("(no PNG: matplotlib is not installed)")
