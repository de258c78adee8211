#!/usr/bin/env python3
"""The large-batch study's table and plot (bench/large_batch/run.sh): final test accuracy and wall
time per (global batch, recipe), and each run's validation accuracy by epoch.
Usage: bench/large_batch/summarize.py DIR   -> DIR/table.md, DIR/accuracy.png (matplotlib)"""
import csv, sys
from pathlib import Path

RECIPES = ("none", "linear", "sqrt", "lars")
NAMES = {"none": "no scaling", "linear": "linear + warm-up", "sqrt": "sqrt + warm-up", "lars": "LARS + linear + warm-up"}


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    out = Path(argv[0])
    seconds = {}
    for line in (out / "seconds.txt").read_text().splitlines():
        b, recipe, s = line.split()
        seconds[(int(b), recipe)] = float(s)
    curves = {}
    for b, recipe in seconds:
        rows = []
        path = out / f"{b}-{recipe}" / "metrics.csv"
        if path.exists():
            rows = [r for r in csv.DictReader(path.open()) if r["kind"] == "validation"]
        curves[(b, recipe)] = [(float(r["epoch"]), 100 * float(r["accuracy"])) for r in rows]
    batches = sorted({b for b, _ in seconds})
    context = (out / "context.txt").read_text().strip() if (out / "context.txt").exists() else ""
    lines = [f"Test accuracy (%) after the last epoch, and wall time (s) of the run; {context}", "",
             "| global batch | " + " | ".join(NAMES[r] for r in RECIPES) + " |", "|---:" * (len(RECIPES) + 1) + "|"]
    for b in batches:
        cells = []
        for r in RECIPES:
            c = curves.get((b, r))
            if not c:
                cells.append("failed" if (b, r) in seconds else "-")
                continue
            cells.append(f"{c[-1][1]:.2f} ({seconds[(b, r)]:.0f} s)")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    (out / "table.md").write_text(text)
    print(text)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no accuracy.png: matplotlib is not installed")
        return
    fig, axes = plt.subplots(1, len(batches), figsize=(4 * len(batches), 3.6), sharey=True)
    for ax, b in zip(axes if len(batches) > 1 else [axes], batches):
        for r in RECIPES:
            c = curves.get((b, r))
            if c:
                ax.plot([e for e, _ in c], [a for _, a in c], marker=".", label=NAMES[r])
        ax.set_title(f"global batch {b}")
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    (axes[0] if len(batches) > 1 else axes).set_ylabel("test accuracy (%)")
    (axes[0] if len(batches) > 1 else axes).legend(fontsize=8)
    fig.suptitle("Fashion-MNIST MLP, 2 slots: large-batch recipes (bench/large_batch/run.sh)")
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=110)
    print(f"wrote {out / 'accuracy.png'}")


if __name__ == "__main__":
    main(sys.argv[1:])
