#!/usr/bin/env python3
"""Medians of bench/netns/run.sh's runs: time (us) up to 4 KiB, busbw (GB/s) above, tutti/Open MPI
speed ratios (peer time / tutti time: above 1 means tutti is faster), and UCX's perftest as the
link's ceiling. Usage: bench/netns/summarize.py OUT_DIR [OUT_DIR ...] (prints markdown)."""
import re, statistics, sys
from pathlib import Path

ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)")

def table(path):
    rows = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m[1])] = (float(m[2]), float(m[4]), int(m[5]))
    return rows

for d in map(Path, sys.argv[1:]):
    runs = {}
    for f in sorted(d.glob("*.rep*.txt")):
        runs.setdefault(f.name.split(".rep")[0], []).append(table(f))
    peers = sorted(runs)
    sizes = sorted({s for rs in runs.values() for r in rs for s in r})
    print(f"### {d.name}: {(d / 'context.txt').read_text().strip() if (d / 'context.txt').exists() else ''}\n")
    print("| size | " + " | ".join(peers) + " | " + " | ".join(f"{p} / ompi" for p in peers if p != "ompi") + " |")
    print("|---:" * (len(peers) * 2) + "|")
    for s in sizes:
        med = {}
        for p in peers:
            vals = [r[s] for r in runs[p] if s in r]
            if vals:
                med[p] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals),
                          sum(v[2] for v in vals))
        cell = lambda p: "-" if p not in med else (f"{med[p][0]:.0f} us" if s <= 4096 else f"{med[p][1]:.3f} GB/s") + \
            (" WRONG" if p in med and med[p][2] else "")
        ratio = lambda p: f"{med['ompi'][0] / med[p][0]:.2f}" if p in med and "ompi" in med else "-"
        print(f"| {s} | " + " | ".join(cell(p) for p in peers) + " | " +
              " | ".join(ratio(p) for p in peers if p != "ompi") + " |")
    for t in ("tag_lat", "tag_bw"):
        f = d / f"ucx_perftest.{t}.txt"
        final = [l for l in f.read_text().splitlines() if l.startswith("Final")] if f.exists() else []
        if final:
            v = final[0].split()
            print(f"\nucx_perftest {t} (1 rank per host, UCX_TLS=tcp, eth1): latency {v[3]} us, bandwidth {v[6]} MB/s")
    print()
