#!/usr/bin/env python3
"""Draws metrics.csv (written by example 04) as curves.png: loss and accuracy per step (training)
and per validation.  usage: plot.py metrics.csv curves.png"""
import csv
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py: matplotlib is not installed (pip install matplotlib)")

rows = list(csv.DictReader(open(sys.argv[1])))
train = [r for r in rows if r["kind"] == "train"]
val = [r for r in rows if r["kind"] == "validation"]
fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(11, 4))
epoch = lambda rs: [float(r["epoch"]) for r in rs]
loss_ax.plot(epoch(train), [float(r["loss"]) for r in train], lw=0.6, alpha=0.6, label="training (per step)")
loss_ax.plot(epoch(val), [float(r["loss"]) for r in val], "o-", label="validation")
acc_ax.plot(epoch(train), [100 * float(r["accuracy"]) for r in train], lw=0.6, alpha=0.6, label="training (per step)")
acc_ax.plot(epoch(val), [100 * float(r["accuracy"]) for r in val], "o-", label="validation")
acc_ax.axhline(88, ls="--", color="grey", lw=0.8, label="88 % target")
loss_ax.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
acc_ax.set(xlabel="epoch", ylabel="%", title="accuracy", ylim=(60, 100))
for ax in (loss_ax, acc_ax):
    ax.grid(alpha=0.3)
    ax.legend()
fig.suptitle("Fashion-MNIST MLP, tutti data_parallel_trainer")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print(f"plot.py: wrote {sys.argv[2]}")
