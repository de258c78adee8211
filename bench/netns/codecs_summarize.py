#!/usr/bin/env python3
"""Medians of bench/netns/codecs.sh's runs, as markdown: per algorithm, each codec's time and
busbw (nccl-tests' definition on the float32 bytes, so a codec's busbw is comparable with none's),
then each codec's speedup against none (none's time / the codec's time, medians of the same
interleaved reps), beside the goal and what the link alone predicts. Out of place, as
bench/netns/summarize.py. With --png FILE: busbw and speedup against size, one column per algorithm
(skipped, saying so, without matplotlib).
Usage: bench/netns/codecs_summarize.py [--png FILE] OUT_DIR"""
import re, statistics, sys
from pathlib import Path

# size count type redop root | time algbw busbw #wrong (out of place) | the same in place
ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+|N/A)\s+(\S+)\s+\S+\s+\S+\s+(\d+|N/A)")
CODECS = ("none", "fp16", "bf16", "int8")
GOAL = {"fp16": 1.8, "bf16": 1.8, "int8": 3.2}


def wire_fraction(codec):
    """Wire bytes per float32 byte."""
    return {"none": 1.0, "fp16": 0.5, "bf16": 0.5, "int8": (1 + 4 / 256) / 4}[codec]


def link_bytes(alg, codec, hosts=2, per_host=2):
    """Bytes each direction of the link carries per float32 byte of the buffer (S = 1), 2 hosts x 2.
    Exact ring: 2(n-1)/n S on each crossing edge. Lossy (algorithm/compressed.hpp): every rank sends
    each of its n-1 peers their segment (S/n) encoded, then its own reduced segment to each of them:
    2 (n-1)/n S c per rank, of which the peers on the other host get 2 (hosts-1) per_host / n S c;
    per_host ranks per host. Hierarchical: inside the host exact; across, local rank l allreduces
    S/per_host with its peer on the other host: ring (none) 2(h-1)/h S/per_host, lossy the same
    times c (two hosts: one peer, one segment each way), per_host ranks per host."""
    n = hosts * per_host
    c = wire_fraction(codec)
    if alg not in ("ring", "hierarchical", "automatic"):  # automatic across hosts: hierarchical<direct, ring>
        return None
    if alg in ("hierarchical", "automatic"):
        return per_host * 2 * (hosts - 1) / hosts / per_host * c
    if codec == "none":
        return 2 * (n - 1) / n
    return per_host * 2 * (hosts - 1) * per_host / n * c


RANKS = re.compile(r"^# ranks (\d+) ")


def table(path):
    """{size: (time_us, busbw, wrong, in_place_time_us)}; busbw from the time (tutti-bench prints 2 decimals)."""
    rows, n = {}, None
    for line in Path(path).read_text(errors="replace").splitlines():
        r = RANKS.match(line)
        if r:
            n = int(r[1])
        m = ROW.match(line)
        if m and n:
            wrong = sum(int(x) for x in (m[5], m[7]) if x != "N/A")
            t = float(m[2])
            rows[int(m[1])] = (t, int(m[1]) / t / 1e3 * 2 * (n - 1) / n, wrong, float(m[6]))
    return rows


def medians(d):
    """{(alg, codec): {size: (time_us, busbw, wrong_total, reps, in_place_time_us, spread)}}; spread:
    (slowest - fastest rep) / median, of the out-of-place time."""
    runs = {}
    for f in sorted(d.glob("*.rep*.txt")):
        alg, _, codec = f.name.split(".rep")[0].rpartition("_")
        runs.setdefault((alg, codec), []).append(table(f))
    out = {}
    for k, rs in runs.items():
        for s in sorted({s for r in rs for s in r}):
            vals = [r[s] for r in rs if s in r]
            t = statistics.median(v[0] for v in vals)
            out.setdefault(k, {})[s] = (t, statistics.median(v[1] for v in vals), sum(v[2] for v in vals), len(vals),
                                        statistics.median(v[3] for v in vals),
                                        (max(v[0] for v in vals) - min(v[0] for v in vals)) / t)
    return out


def mib(s):
    return f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"


def summarize(d):
    med = medians(d)
    ctx = (d / "context.txt").read_text().strip() if (d / "context.txt").exists() else ""
    print(f"### {d.name}: {ctx}\n")
    algs = sorted({a for a, _ in med}, key=lambda a: (a != "ring", a))
    for alg in algs:
        codecs = [c for c in CODECS if (alg, c) in med]
        sizes = sorted({s for c in codecs for s in med[(alg, c)]})
        print(f"#### {alg}: time (ms; ± half the range over reps) and busbw (GB/s, float32 bytes); medians\n")
        print("| size | " + " | ".join(codecs) + " |")
        print("|---:" * (len(codecs) + 1) + "|")
        for s in sizes:
            cells = []
            for c in codecs:
                v = med[(alg, c)].get(s)
                cells.append("-" if v is None else
                             f"{v[0] / 1e3:.1f} ms ±{50 * v[5]:.0f}%, {v[1]:.3f} GB/s" +
                             (f" **{v[2]} WRONG**" if v[2] else "") +
                             (f" [{v[3]}]" if v[3] != max(x[3] for x in med[(alg, c)].values()) else ""))
            print(f"| {mib(s)} | " + " | ".join(cells) + " |")
        reps = {c: max(v[3] for v in med[(alg, c)].values()) for c in codecs}
        print("\nreps per codec: " + ", ".join(f"{c} {r}" for c, r in reps.items()))
        lossy = [c for c in codecs if c != "none"]
        if "none" in codecs and lossy:
            print(f"\n#### {alg}: speedup against none (none's time / codec's time)\n")
            model = link_bytes(alg, "none") is not None
            print("| size | " + " | ".join(
                f"{c} (goal {GOAL[c]}" + (f", link alone {link_bytes(alg, 'none') / link_bytes(alg, c):.2f})" if model else ")")
                for c in lossy) + " |")
            print("|---:" * (len(lossy) + 1) + "|")
            for s in sizes:
                base = med[(alg, "none")].get(s)
                row = []
                for c in lossy:
                    v = med[(alg, c)].get(s)
                    row.append("-" if v is None or base is None else f"{base[0] / v[0]:.2f}")
                print(f"| {mib(s)} | " + " | ".join(row) + " |")
        print()
    if "ring" in algs and "hierarchical" in algs:
        print("#### hierarchical against ring, same codec (ring's time / hierarchical's time)\n")
        codecs = [c for c in CODECS if ("ring", c) in med and ("hierarchical", c) in med]
        print("| size | " + " | ".join(codecs) + " |")
        print("|---:" * (len(codecs) + 1) + "|")
        for s in sorted(med[("ring", codecs[0])]):
            print(f"| {mib(s)} | " + " | ".join(
                f"{med[('ring', c)][s][0] / med[('hierarchical', c)][s][0]:.2f}" if s in med[("hierarchical", c)] else "-"
                for c in codecs) + " |")
        print()
    f = d / "ucx_perftest.tag_bw.txt"
    final = [l for l in f.read_text().splitlines() if l.startswith("Final")] if f.exists() else []
    if final:
        v = final[0].split()
        print(f"ucx_perftest tag_bw 4 MiB (1 rank per host, UCX_TLS=tcp, eth1): {v[6]} MB/s\n")
    return med


def plot(png, d, med):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(plot {png} skipped: matplotlib is not installed; pip install matplotlib)")
        return
    algs = sorted({a for a, _ in med}, key=lambda a: (a != "ring", a))
    fig, axes = plt.subplots(2, len(algs), figsize=(6 * len(algs), 8), squeeze=False)
    for j, alg in enumerate(algs):
        codecs = [c for c in CODECS if (alg, c) in med]
        for c in codecs:
            xs = sorted(med[(alg, c)])
            axes[0][j].plot(xs, [med[(alg, c)][s][1] for s in xs], marker="o", ms=3, label=c)
            if c != "none" and (alg, "none") in med:
                xs = [s for s in xs if s in med[(alg, "none")]]
                axes[1][j].plot(xs, [med[(alg, "none")][s][0] / med[(alg, c)][s][0] for s in xs], marker="o", ms=3,
                                label=f"{c} (goal {GOAL[c]})")
        for c in ("fp16", "int8"):
            axes[1][j].axhline(GOAL[c], linestyle=":", color="gray", linewidth=1)
        axes[0][j].set_title(f"{alg}: busbw (float32 bytes)", fontsize=9)
        axes[0][j].set_ylabel("busbw (GB/s)")
        axes[1][j].set_title(f"{alg}: speedup against none", fontsize=9)
        axes[1][j].set_ylabel("none time / codec time")
        for ax in (axes[0][j], axes[1][j]):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bytes (float32)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(d.name, fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"(plot written to {png})")


def main(argv):
    png = None
    if len(argv) > 1 and argv[0] == "--png":
        png, argv = argv[1], argv[2:]
    if len(argv) != 1:
        sys.exit(__doc__)
    d = Path(argv[0])
    med = summarize(d)
    if png:
        plot(png, d, med)


if __name__ == "__main__":
    main(sys.argv[1:])
