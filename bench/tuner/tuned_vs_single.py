#!/usr/bin/env python3
"""algorithm::tuned against every single algorithm, point by point (issue 20's bench): reads the
runs of bench/tuner/shm_run.sh or bench/netns/run.sh (OUT_DIR/tutti_ALG.repN.txt, out-of-place
times), takes medians over reps, and prints per size each algorithm's median time, the best single
one, and tuned's speed against it (best single time / tuned time: 1 is parity, above 1 tuned is
faster); then tuned's geometric-mean speed against each single algorithm over all sizes.
The goal: never below 0.95 at any point, and above 1 in geometric mean against every single one.
Usage: bench/tuner/tuned_vs_single.py OUT_DIR [OUT_DIR ...]      (exit 1 if a goal is missed)"""
import math, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "netns"))
from summarize import medians  # noqa: E402  (bench/netns/summarize.py)

SINGLE_EXCLUDED = {"tutti_tuned", "tutti_automatic"}  # automatic is a fixed rule, not one algorithm


def label(n):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k} {unit}"
    return f"{n} B"


def report(d):
    med = medians(Path(d))
    if "tutti_tuned" not in med:
        print(f"{d}: no tutti_tuned runs"); return False
    singles = sorted(p for p in med if p.startswith("tutti_") and p not in SINGLE_EXCLUDED)
    ctx = Path(d, "context.txt")
    print(f"## {d}\n\n{ctx.read_text().strip() if ctx.exists() else ''}\n")
    names = [p.removeprefix("tutti_") for p in singles]
    print("| size | tuned µs | " + " | ".join(f"{n} µs" for n in names) + " | best single | tuned / best |")
    print("|---|---|" + "---|" * len(names) + "---|---|")
    ok, worst, logs = True, math.inf, {p: [] for p in singles}
    for s in sorted(med["tutti_tuned"]):
        t = med["tutti_tuned"][s][0]
        times = {p: med[p][s][0] for p in singles if s in med[p] and med[p][s][2] == 0}
        if not times or t <= 0:
            continue
        best = min(times, key=times.get)
        speed = times[best] / t
        worst = min(worst, speed)
        ok &= speed >= 0.95
        for p, v in times.items():
            logs[p].append(math.log(v / t))
        cells = " | ".join(f"{times[p]:.1f}" if p in times else "-" for p in singles)
        print(f"| {label(s)} | {t:.1f} | {cells} | {best.removeprefix('tutti_')} | {speed:.3f}{'' if speed >= 0.95 else ' **<0.95**'} |")
    print()
    for p in singles:
        if logs[p]:
            g = math.exp(sum(logs[p]) / len(logs[p]))
            ok &= g > 1.0
            print(f"- geometric mean, tuned against {p.removeprefix('tutti_')}: {g:.3f} over {len(logs[p])} sizes")
    print(f"- worst point: {worst:.3f} of the best single algorithm; goal {'met' if ok else 'MISSED'}\n")
    return ok


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results = [report(d) for d in sys.argv[1:]]
    sys.exit(0 if all(results) else 1)
