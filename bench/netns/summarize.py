#!/usr/bin/env python3
"""Medians of bench/netns/run.sh's runs, as markdown: time (us) up to 4 KiB and busbw (GB/s) above
for every peer; each tutti algorithm against the best peer (Open MPI or Gloo: peer time / tutti
time, above 1 means tutti is faster); node-aware hierarchical against flat ring next to the
alpha-beta prediction; UCX's perftest as the link's ceiling. With --png FILE, busbw against size,
one panel per OUT_DIR (skipped, saying so, without matplotlib).
Usage: bench/netns/summarize.py [--png FILE] OUT_DIR [OUT_DIR ...]"""
import re, statistics, sys
from pathlib import Path

ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)")
PEERS = ("ompi", "gloo")


def table(path):
    rows = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m[1])] = (float(m[2]), float(m[4]), int(m[5]))
    return rows


def medians(d):
    """{peer: {size: (time_us, busbw_GBs, wrong_total)}} over the reps in d."""
    runs = {}
    for f in sorted(d.glob("*.rep*.txt")):
        runs.setdefault(f.name.split(".rep")[0], []).append(table(f))
    out = {}
    for p, rs in runs.items():
        for s in sorted({s for r in rs for s in r}):
            vals = [r[s] for r in rs if s in r]
            out.setdefault(p, {})[s] = (statistics.median(v[0] for v in vals),
                                        statistics.median(v[1] for v in vals), sum(v[2] for v in vals))
    return out


def cell(med, p, s):
    if s not in med.get(p, {}):
        return "-"
    t, bw, wrong = med[p][s]
    return (f"{t:.0f} us" if s <= 4096 else f"{bw:.3f} GB/s") + (" WRONG" if wrong else "")


def summarize(d):
    med = medians(d)
    peers = sorted(med, key=lambda p: (p in PEERS, p))
    tutti = [p for p in peers if p not in PEERS]
    sizes = sorted({s for m in med.values() for s in m})
    ctx = (d / "context.txt").read_text().strip() if (d / "context.txt").exists() else ""
    # run.sh writes collective=NAME first (COLLECTIVE); results from before it are allreduce.
    coll = re.search(r"collective=(\S+)", ctx)
    collective = coll[1] if coll else "allreduce"
    print(f"### {d.name}: {ctx}\n")
    print("| size | " + " | ".join(peers) + " |")
    print("|---:" * (len(peers) + 1) + "|")
    for s in sizes:
        print(f"| {s} | " + " | ".join(cell(med, p, s) for p in peers) + " |")

    print("\nAgainst the best peer at each size (peer time / tutti time; which peer in brackets):\n")
    print("| size | " + " | ".join(tutti) + " |")
    print("|---:" * (len(tutti) + 1) + "|")
    for s in sizes:
        best = min((med[p][s][0], p) for p in PEERS if s in med.get(p, {})) if any(
            s in med.get(p, {}) for p in PEERS) else None
        row = []
        for p in tutti:
            row.append("-" if best is None or s not in med[p] else f"{best[0] / med[p][s][0]:.2f} ({best[1]})")
        print(f"| {s} | " + " | ".join(row) + " |")

    # 2 hosts x 2 ranks: flat ring sends 2(n-1)/n = 1.5 S per direction across the link; the
    # node-aware schedule reduces inside the host first and sends S/2 per rank, S per host: 1.5x
    # fewer bytes on the link, so 1.5x where the link's bandwidth dominates. allgather and
    # reduce_scatter are each half of that on both sides (0.75 S against S/2): 1.5x too. broadcast
    # depends on how each side pipelines the root's data: no prediction is printed.
    predicted = "1.50" if collective in ("allreduce", "allgather", "reduce_scatter") else None
    flat = "tutti_ring"
    hier = [p for p in ("tutti_hierarchical", "tutti_hierarchical_direct") if p in med]
    if flat in med and hier:
        big = [s for s in sizes if s >= 1 << 20 and s in med[flat]]
        if big:
            print("\nNode-aware hierarchical against flat ring (flat time / hierarchical time; " +
                  (f"alpha-beta prediction where the link dominates: {predicted}):\n" if predicted
                   else f"no alpha-beta prediction for {collective}):\n"))
            print("| size | " + " | ".join(f"{h} / ring" for h in hier) + " |")
            print("|---:" * (len(hier) + 1) + "|")
            for s in big:
                print(f"| {s} | " + " | ".join(
                    f"{med[flat][s][0] / med[h][s][0]:.2f}" if s in med[h] else "-" for h in hier) + " |")
    for t in ("tag_lat", "tag_bw"):
        f = d / f"ucx_perftest.{t}.txt"
        final = [l for l in f.read_text().splitlines() if l.startswith("Final")] if f.exists() else []
        if final:
            v = final[0].split()
            print(f"\nucx_perftest {t} (1 rank per host, UCX_TLS=tcp, eth1): latency {v[3]} us, "
                  f"bandwidth {v[6]} MB/s")
    print()
    return med


def plot(png, dirs, meds):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(plot {png} skipped: matplotlib is not installed; pip install -r bench/peers/requirements-pip.txt)")
        return
    fig, axes = plt.subplots(1, len(dirs), figsize=(6 * len(dirs), 4.5), squeeze=False)
    for ax, d, med in zip(axes[0], dirs, meds):
        for p in sorted(med):
            xs = sorted(s for s in med[p] if s > 4096)
            ax.plot(xs, [med[p][s][1] for s in xs], marker="o", ms=3, label=p,
                    linestyle="--" if p in PEERS else "-")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(d.name, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"(plot written to {png})")


def main(argv):
    png = None
    if len(argv) > 1 and argv[0] == "--png":
        png, argv = argv[1], argv[2:]
    if not argv:
        sys.exit(__doc__)
    dirs = [Path(a) for a in argv]
    meds = [summarize(d) for d in dirs]
    if png:
        plot(png, dirs, meds)


if __name__ == "__main__":
    main(sys.argv[1:])
