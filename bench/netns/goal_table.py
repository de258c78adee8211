#!/usr/bin/env python3
"""Issue 21's goal table from a campaign of bench/netns/run.sh runs: for each collective, tutti's
speed against Open MPI's (Open MPI's time / tutti's, medians over the runs' repeats; above 1 means
tutti is faster) at every size, one column per layout and link.

The campaign's layout: ROOT/COLLECTIVE/LAYOUT-RATE-PART/ (one run.sh OUT_DIR each; LAYOUT like 2x2,
RATE none/10gbit/1gbit, PART any name, e.g. small and large sweeps of one configuration), with
PEERS="tutti_automatic ompi" (another tutti peer: --tutti NAME). Sizes a part lacks are left out.
Usage: bench/netns/goal_table.py [--tutti tutti_automatic] ROOT"""
import re, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize import medians  # noqa: E402

LAYOUTS = ("2x1", "2x2", "4x1")
RATES = ("none", "10gbit", "1gbit")


def size_text(s):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if s >= 1 << shift and s % (1 << shift) == 0:
            return f"{s >> shift} {unit}"
    return f"{s} B"


def main(argv):
    tutti = "tutti_automatic"
    if len(argv) > 1 and argv[0] == "--tutti":
        tutti, argv = argv[1], argv[2:]
    if len(argv) != 1:
        sys.exit(__doc__)
    root = Path(argv[0])
    for coll_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        cols = {}  # (layout, rate) -> {size: (tutti_us, ompi_us)}
        for part in sorted(p for p in coll_dir.iterdir() if p.is_dir()):
            m = re.match(r"(\d+x\d+)-(none|\d+gbit)-", part.name)
            if not m:
                continue
            med = medians(part)
            if tutti not in med or "ompi" not in med:
                continue
            col = cols.setdefault((m[1], m[2]), {})
            for s, (t, _, _) in med[tutti].items():
                # A size below one element per rank (allgather, reduce_scatter) moves nothing: no ratio.
                if s > 0 and s in med["ompi"] and t > 0 and med["ompi"][s][0] > 0:
                    col[s] = (t, med["ompi"][s][0])
        if not cols:
            continue
        keys = [(l, r) for l in LAYOUTS for r in RATES if (l, r) in cols]
        sizes = sorted({s for c in cols.values() for s in c})
        print(f"### {coll_dir.name}: Open MPI time / {tutti} time (medians; > 1: tutti faster)\n")
        print("| size | " + " | ".join(f"{l} {r}" for l, r in keys) + " |")
        print("|---:" * (len(keys) + 1) + "|")
        worst = {}
        for s in sizes:
            row = []
            for k in keys:
                if s in cols[k]:
                    t, o = cols[k][s]
                    ratio = o / t
                    worst[k] = min(worst.get(k, ratio), ratio)
                    row.append(f"**{ratio:.2f}**" if ratio < 1 else f"{ratio:.2f}")
                else:
                    row.append("-")
            print(f"| {size_text(s)} | " + " | ".join(row) + " |")
        print("| lowest | " + " | ".join(f"{worst[k]:.2f}" for k in keys) + " |\n")


if __name__ == "__main__":
    main(sys.argv[1:])
