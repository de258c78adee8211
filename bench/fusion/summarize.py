#!/usr/bin/env python3
"""Summarises bench/fusion/run.sh's CSVs (the `fusion,` lines tutti-fusion-bench prints; every other
line is ignored) as Markdown, with plots.

  bench/fusion/summarize.py [--md OUT.md] [--png OUT.png] FUSION.csv [FUSION.csv ...]
      Per model: a table with a row per configuration (per-tensor, each threshold and cycle,
      autotuned) and a column per rank count; a cell is the median over repeats of each run's
      median step time, with the speed-up against per-tensor (per-tensor time / this time, above 1
      is faster). PNG (default FUSION.png beside the first CSV): step time against the threshold,
      one line per rank count (cycle 1 ms; other cycles as open markers), one panel per model,
      per-tensor (dashed) and autotuned (dotted) as horizontal lines; bars span the repeats.
  bench/fusion/summarize.py [--md OUT.md] --grid GRID.csv --autotune-log GRID-autotune.csv
                            [--convergence-png OUT.png] [FUSION.csv ...]
      Adds the exhaustive grid (run.sh --grid): step time per threshold x cycle, its best point and
      score (bytes_per_step / median step time, in bytes/s), and the autotuner's log against it: the
      first sample (warmup samples excluded) whose best-so-far score is within 10% of the grid's best.
      PNG (default GRID-convergence.png): score per sample and best-so-far against the sample index,
      the grid's best as a line and 0.9 x the grid's best dashed.
The autotune log's columns (header line present):
  sample,threshold_bytes,cycle_us,codec,algorithm,score_bytes_per_s,warmup,best_score_bytes_per_s
Markdown goes to stdout unless --md names a file; what was written where, to stderr."""
import argparse, csv, statistics, sys
from collections import defaultdict
from pathlib import Path

COLUMNS = ("fusion label model ranks threshold_bytes cycle_us autotune steps median_step_ms p10_step_ms "
           "p90_step_ms bytes_per_step tensors").split()
NEAR = 0.9   # "converged": the best-so-far within 10% of the grid's best


def size(b):
    """1048576 -> '1 MiB' (exact binary multiples), else bytes."""
    b = int(b)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def human(b):
    """437928960 -> '417.6 MiB': a byte count to read, not an exact setting."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):.1f} {unit}"
    return f"{b} B"


def ms(us):
    v = us / 1000
    return f"{v:g} ms"


def read_runs(paths):
    """Every `fusion,` line of the files as a dict; failed runs (`# ... rc=N`, N != 0) counted per file."""
    rows, failed = [], 0
    for p in paths:
        for line in Path(p).read_text(errors="replace").splitlines():
            if line.startswith("#") and " rc=" in line and " rc=0 " not in line:
                failed += 1
            if not line.startswith("fusion,"):
                continue
            f = next(csv.reader([line]))
            if len(f) != len(COLUMNS):
                raise SystemExit(f"{p}: {len(f)} columns, expected {len(COLUMNS)}: {line}")
            r = dict(zip(COLUMNS, f))
            for k in ("ranks", "threshold_bytes", "steps", "bytes_per_step", "tensors"):
                r[k] = int(r[k])
            for k in ("cycle_us", "median_step_ms", "p10_step_ms", "p90_step_ms"):
                r[k] = float(r[k])
            r["autotune"] = r["autotune"].strip().lower() in ("1", "true", "yes", "on")
            r["model"] = Path(r["model"]).stem   # a path to the .tsv or the bare name
            rows.append(r)
    return rows, failed


def config_key(r):
    """Sort key and name of a run's configuration: per-tensor first, thresholds up, autotuned last."""
    if r["autotune"]:
        # run.sh --joint: the autotuner over tuned<...>, leaving the algorithm to its table, or tuning it too.
        k, name = {"tuned-autotune": (1, "autotuned, tuned<...> (its table picks)"),
                   "joint-autotune": (2, "autotuned jointly (the algorithm too)")}.get(r["label"], (0, "autotuned"))
        return (2, k, 0, False), name
    # run.sh's NAME-inturn: the same setting with the engine's copies in turn (TUTTI_FUSION_OVERLAP=0).
    inturn = r["label"].endswith("-inturn")
    suffix = ", copies in turn" if inturn else ""
    if r["threshold_bytes"] == 0:
        name = "per-tensor" + ("" if r["cycle_us"] == 0 else f", cycle {ms(r['cycle_us'])}")
        return (0, 0, r["cycle_us"], inturn), name + suffix
    return (1, r["threshold_bytes"], r["cycle_us"], inturn), f"{size(r['threshold_bytes'])}, cycle {ms(r['cycle_us'])}{suffix}"


def group(rows):
    """{model: {(sortkey, name): {ranks: [median_step_ms of each repeat]}}}"""
    g = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows:
        g[r["model"]][config_key(r)][r["ranks"]].append(r["median_step_ms"])
    return g


def spread(values_lists):
    """Median over cells of slowest repeat / fastest repeat (cells with 2 or more repeats)."""
    ratios = [max(v) / min(v) for v in values_lists if len(v) > 1 and min(v) > 0]
    return f"{statistics.median(ratios):.2f}×" if ratios else "-"


def model_tables(rows, failed, out):
    g = group(rows)
    for model in sorted(g):
        cfgs = g[model]
        ranks = sorted({n for c in cfgs.values() for n in c})
        base = next((cfgs[k] for k in sorted(cfgs) if k[1] == "per-tensor"), {})
        med = {k: {n: statistics.median(v) for n, v in c.items()} for k, c in cfgs.items()}
        fused = {n: min((m[n] for k, m in med.items() if k[1] != "per-tensor" and n in m), default=None) for n in ranks}
        mr = [r for r in rows if r["model"] == model]
        out.append(f"## {model}: {mr[0]['tensors']} tensors, {human(mr[0]['bytes_per_step'])} "
                   f"({mr[0]['bytes_per_step']:,} B) per step\n")
        out.append("Median step time (ms) over repeats; in brackets the speed-up against per-tensor "
                   "(above 1: faster). Bold: the fastest in each column.\n")
        out.append("| configuration | " + " | ".join(f"{n} ranks" for n in ranks) + " |")
        out.append("|:---" + "|---:" * len(ranks) + "|")
        for k in sorted(cfgs):
            cells = []
            for n in ranks:
                if n not in med[k]:
                    cells.append("-")
                    continue
                t = med[k][n]
                c = f"{t:.1f}"
                if n in base:
                    c += f" ({statistics.median(base[n]) / t:.2f}×)"
                if t == min(m[n] for m in med.values() if n in m):
                    c = f"**{c}**"
                cells.append(c)
            out.append(f"| {k[1]} | " + " | ".join(cells) + " |")
        reps = sorted({len(v) for c in cfgs.values() for v in c.values()})
        bw = [f"{n} ranks {mr[0]['bytes_per_step'] / fused[n] / 1e6:.2f} GB/s" for n in ranks if fused[n]]
        out.append("")
        out.append(f"- Repeats per cell: {', '.join(map(str, reps))}; run-to-run spread (median over cells of "
                   f"slowest / fastest repeat): {spread([v for c in cfgs.values() for v in c.values()])}; "
                   f"steps timed per run: {', '.join(str(s) for s in sorted({r['steps'] for r in mr}))}.")
        if bw:
            out.append(f"- Bytes per step / best fused step time (algbw, nccl-tests' sense): {'; '.join(bw)}.")
        out.append("")
    if failed:
        out.append(f"Failed runs (rc != 0 in the CSVs' `#` lines): {failed}; see the .log beside each CSV.\n")
    return g


def plot_models(g, png):
    plt = pyplot()
    if plt is None:
        return f"(plot {png} skipped: matplotlib is not installed; pip install matplotlib)"
    fig, axes = plt.subplots(1, len(g), figsize=(6.5 * len(g), 4.5), squeeze=False)
    for ax, model in zip(axes[0], sorted(g)):
        cfgs = g[model]
        ranks = sorted({n for c in cfgs.values() for n in c})
        for i, n in enumerate(ranks):
            color = f"C{i}"
            pts = sorted((k[0][1], k[0][2], v[n]) for k, v in cfgs.items() if k[0][0] == 1 and n in v)
            line = [(t, v) for t, c, v in pts if c == 1000]
            if line:
                xs = [t for t, _ in line]
                ys = [statistics.median(v) for _, v in line]
                err = [[y - min(v) for (_, v), y in zip(line, ys)], [max(v) - y for (_, v), y in zip(line, ys)]]
                ax.errorbar(xs, ys, yerr=err, marker="o", ms=4, capsize=2, color=color,
                            label=f"{n} ranks, cycle 1 ms")
            for t, c, v in pts:
                if c != 1000:
                    ax.plot([t], [statistics.median(v)], marker="s", ms=6, mfc="none", color=color, linestyle="none")
                    ax.annotate(f"cycle {ms(c)}", (t, statistics.median(v)), fontsize=6, color=color,
                                xytext=(4, -8), textcoords="offset points")
            for name, style in (("per-tensor", "--"), ("autotuned", ":")):
                v = next((c[n] for k, c in cfgs.items() if k[1] == name and n in c), None)
                if v:
                    ax.axhline(statistics.median(v), color=color, linestyle=style, lw=1.2, label=f"{n} ranks, {name}")
        ax.set_xscale("log", base=2)
        ticks = sorted({k[0][1] for k in cfgs if k[0][0] == 1})
        ax.set_xticks(ticks, [size(t).replace(" ", "") for t in ticks], fontsize=7)
        ax.set_xlabel("fusion threshold")
        ax.set_ylabel("median step time (ms)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{model}: one step's gradients, allreduced", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return f"(plot written to {png})"


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def read_log(path):
    """The autotune log: [{sample, threshold_bytes, cycle_us, codec, algorithm, score, warmup, best}]."""
    lines = [l for l in Path(path).read_text().splitlines() if l.strip() and not l.startswith("#")]
    out = []
    for r in csv.DictReader(lines):
        out.append({"sample": int(r["sample"]), "threshold_bytes": int(float(r["threshold_bytes"])),
                    "cycle_us": float(r["cycle_us"]), "codec": r["codec"], "algorithm": r["algorithm"],
                    "score": float(r["score_bytes_per_s"]), "best": float(r["best_score_bytes_per_s"]),
                    "warmup": r["warmup"].strip().lower() in ("1", "true", "yes", "on")})
    return out


def grid_section(grid_csv, log_csv, png, out):
    rows, failed = read_runs([grid_csv])
    points = [r for r in rows if not r["autotune"]]
    tuned = [r for r in rows if r["autotune"]]
    if not points:
        raise SystemExit(f"{grid_csv}: no grid points (fusion lines with autotune 0)")
    model, ranks = points[0]["model"], points[0]["ranks"]
    others = {(r["model"], r["ranks"]) for r in points} - {(model, ranks)}
    if others:
        out.append(f"(the grid has other (model, ranks) too, ignored here: {sorted(others)})\n")
        points = [r for r in points if (r["model"], r["ranks"]) == (model, ranks)]
    bytes_per_step = points[0]["bytes_per_step"]
    runs = defaultdict(list)
    for r in points:
        runs[(r["threshold_bytes"], r["cycle_us"])].append(r["median_step_ms"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    best = min(med, key=med.get)
    best_bps = bytes_per_step / med[best] * 1000
    thresholds = sorted({t for t, _ in med})
    cycles = sorted({c for _, c in med})
    out.append(f"## Grid: {model}, {ranks} ranks, {len(med)} points ({len(thresholds)} thresholds × "
               f"{len(cycles)} cycle times), {human(bytes_per_step)} per step\n")
    out.append(f"Median step time (ms) over repeats ({', '.join(map(str, sorted({len(v) for v in runs.values()})))} "
               f"per point; spread {spread(runs.values())}); bold: the best point. From `{Path(grid_csv).name}`.\n")
    out.append("| threshold | " + " | ".join(f"cycle {ms(c)}" for c in cycles) + " |")
    out.append("|---:" + "|---:" * len(cycles) + "|")
    for t in thresholds:
        cells = []
        for c in cycles:
            v = med.get((t, c))
            cells.append("-" if v is None else (f"**{v:.1f}**" if (t, c) == best else f"{v:.1f}"))
        out.append(f"| {'0 (per tensor)' if t == 0 else size(t)} | " + " | ".join(cells) + " |")
    out.append("")
    out.append(f"- Best grid point: threshold {size(best[0])}, cycle {ms(best[1])}: {med[best]:.1f} ms per step, "
               f"score {best_bps / 1e9:.3f} GB/s (bytes_per_step / median step time).")
    for r in tuned:
        out.append(f"- Autotuned run in the grid file ({r['steps']} steps): {r['median_step_ms']:.1f} ms per step, "
                   f"{med[best] / r['median_step_ms']:.2f}× the best grid point's speed.")
    if failed:
        out.append(f"- Failed runs in the grid file: {failed}.")

    log = read_log(log_csv)
    timed = [s for s in log if not s["warmup"]]
    running, so_far = [], 0.0
    for s in timed:
        so_far = max(so_far, s["score"])
        running.append(so_far)
    hit = next((i for i, b in enumerate(running) if b >= NEAR * best_bps), None)
    out.append(f"- Autotune log `{Path(log_csv).name}`: {len(log)} samples, {len(log) - len(timed)} of them warmup.")
    if timed:
        top = max(timed, key=lambda s: s["score"])
        where = med.get((top["threshold_bytes"], top["cycle_us"]))
        rank = (sorted(med.values()).index(where) + 1) if where is not None else None
        out.append(f"- The autotuner's best sample: {top['score'] / 1e9:.3f} GB/s "
                   f"({top['score'] / best_bps:.0%} of the grid's best) at threshold {size(top['threshold_bytes'])}, "
                   f"cycle {ms(top['cycle_us'])}, codec {top['codec']}, algorithm {top['algorithm']}"
                   + (f"; that point is {rank} of {len(med)} in the grid ({where:.1f} ms)." if rank else
                      "; that point is not on the grid."))
        if abs(timed[-1]["best"] - running[-1]) > 1e-6 * max(1.0, running[-1]):
            out.append(f"- Note: the log's own best_score_bytes_per_s ends at {timed[-1]['best'] / 1e9:.3f} GB/s, "
                       f"the running maximum of its non-warmup scores at {running[-1] / 1e9:.3f} GB/s "
                       "(the log's counts warmup samples, or scores differently); the latter is used here.")
    if hit is None:
        out.append(f"- **Within 10% of the grid's best: not reached** in {len(timed)} non-warmup samples "
                   f"(best-so-far {running[-1] / best_bps:.0%} of it)." if timed else "- No non-warmup samples.")
    else:
        out.append(f"- **Within 10% of the grid's best ({NEAR * best_bps / 1e9:.3f} GB/s) at sample "
                   f"{timed[hit]['sample']}**, non-warmup sample number {hit + 1}; the exhaustive search ran {len(med)} "
                   "grid points (times the repeats).")
    out.append("")

    plt = pyplot()
    if plt is None:
        print(f"(plot {png} skipped: matplotlib is not installed; pip install matplotlib)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    warm = [s for s in log if s["warmup"]]
    if warm:
        ax.plot([s["sample"] for s in warm], [s["score"] / 1e9 for s in warm], "o", ms=3, color="0.6", label="warmup sample")
    ax.plot([s["sample"] for s in timed], [s["score"] / 1e9 for s in timed], "o", ms=3, color="C0", label="sample score")
    ax.step([s["sample"] for s in timed], [b / 1e9 for b in running], where="post", color="C1", label="best so far")
    ax.axhline(best_bps / 1e9, color="C2", label=f"grid best ({size(best[0])}, cycle {ms(best[1])})")
    ax.axhline(NEAR * best_bps / 1e9, color="C2", linestyle="--", label="0.9 × grid best")
    if hit is not None:
        ax.axvline(timed[hit]["sample"], color="0.4", lw=0.8, linestyle=":")
    ax.set_xlabel("autotune sample")
    ax.set_ylabel("score (GB/s)")
    ax.set_ylim(0, 1.08 * max([best_bps] + [s["score"] for s in log]) / 1e9)
    ax.set_title(f"autotuner convergence: {model}, {ranks} ranks", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"(plot written to {png})", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="*", help="fusion CSVs from bench/fusion/run.sh")
    ap.add_argument("--md", help="write the Markdown here (default: stdout)")
    ap.add_argument("--png", help="step time against threshold (default: FIRST_CSV.png)")
    ap.add_argument("--grid", help="the grid CSV from run.sh --grid")
    ap.add_argument("--autotune-log", help="the autotuner's sample log (TUTTI_AUTOTUNE_LOG) beside the grid")
    ap.add_argument("--convergence-png", help="autotuner convergence plot (default: GRID-convergence.png)")
    a = ap.parse_args()
    if not a.csv and not a.grid:
        ap.error("give fusion CSVs, or --grid GRID.csv --autotune-log LOG.csv")
    if bool(a.grid) != bool(a.autotune_log):
        ap.error("--grid and --autotune-log go together")
    out = []
    if a.csv:
        rows, failed = read_runs(a.csv)
        if not rows:
            raise SystemExit(f"no fusion lines in {' '.join(a.csv)}")
        g = model_tables(rows, failed, out)
        png = a.png or str(Path(a.csv[0]).with_suffix(".png"))
        print(plot_models(g, png), file=sys.stderr)
    if a.grid:
        grid_section(a.grid, a.autotune_log, a.convergence_png or str(Path(a.grid).with_suffix("")) + "-convergence.png", out)
    text = "\n".join(out).rstrip() + "\n"
    if a.md:
        Path(a.md).write_text(text)
        print(f"(markdown written to {a.md})", file=sys.stderr)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
