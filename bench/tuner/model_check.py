#!/usr/bin/env python3
"""The cost model against measurement: fit a tuning table's samples, print the errors, plot them.

Runs tutti-model-check (bench/tuner/model_check.cpp: fits alpha, beta, gamma, the one-sided sync,
the per-call latency, the switch cost and the cache term to the table's samples by non-negative
least squares, the same name -> terms mapping that tuned<...> predicts with) and writes next to --out:
  OUT.md   the fitted parameters, every sample's measured and predicted time, per layout the RMS and
           largest error and how many samples are within 20 % (issue 20's bar)
  OUT.csv  one line per sample
  OUT.png  predicted against measured, log-log, one colour per algorithm, one marker per layout,
           with the +-20 % band

Computes only: the measuring is tutti-tune's (tools/tutti_tune.cpp), run on a quiet machine.

Examples (this 2-core VM, whose shm runs and namespace hosts all share 2 cores):
  T=tuning/vm-2core-20261126
  bench/tuner/model_check.py $T/shm.json --out /tmp/model-shm \\
      --machine-cores 2 --cache-bytes 2M --argument-check epoch
  bench/tuner/model_check.py $T/netns.json --out /tmp/model-netns \\
      --machine-cores 2 --cache-bytes 2M --network-on-cpus --node-from $T/shm.json --holdout 4x4x1
  bench/tuner/model_check.py $T/netns-1gbit.json --out /tmp/model-netns-1gbit \\
      --machine-cores 2 --cache-bytes 2M --network-on-cpus --links-shaped --node-from $T/shm.json
(--links-shaped: tc tbf's token bucket, --link-bucket bytes; tuner/shaped_link.hpp)
"""
import argparse
import csv
import os
import subprocess
import sys


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return float(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else float(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", help="a tuning table with samples (tutti-tune --output)")
    ap.add_argument("--out", required=True, help="path prefix of the .md, .csv and .png written")
    ap.add_argument("--tool", default=None, help="tutti-model-check (default: build/bench/tuner/tutti-model-check)")
    ap.add_argument("--machine-cores", type=float, default=0,
                    help="every node ran on one machine with this many cores (shm, simulated nodes, namespace hosts)")
    ap.add_argument("--cores-per-node", type=float, default=0, help="cores each node's ranks had (real nodes)")
    ap.add_argument("--cache-bytes", type=size_arg, default=0, help="a core's cache for the cache term (L2 here: 2M)")
    ap.add_argument("--node-links", type=float, default=1, help="network links per node")
    ap.add_argument("--network-on-cpus", action="store_true", help="the network is the same CPUs (namespace hosts)")
    ap.add_argument("--links-shaped", action="store_true",
                    help="with --network-on-cpus: the links are shaped (tc), so they pace the network's bytes")
    ap.add_argument("--link-bucket", type=size_arg, default=131072,
                    help="with --links-shaped: tc tbf's burst in bytes (default 131072: 'burst 1mbit', which tc reads as "
                         "1024*1024/8 bytes); a call takes max(the unshaped schedule, the link) (tuner/shaped_link.hpp)")
    ap.add_argument("--links-summed", action="store_true",
                    help="with --links-shaped: the first model instead, the link's bytes added to the other terms")
    ap.add_argument("--node-from", default=None,
                    help="a shm table of the same machine: hold the node's parameters (alpha_intra, beta_intra, gamma, "
                         "alpha_sync, base_latency, switch and cache costs) at its fit; fit only the network's")
    ap.add_argument("--argument-check", default="exchange", choices=["exchange", "epoch", "none"],
                    help="how the measured runs checked arguments: exchange (tutti-bench, TUTTI_CHECK=1), "
                         "epoch (tuned<...> with direct over shm: tutti-tune there), none (TUTTI_CHECK=0)")
    ap.add_argument("--dtype", default="float", choices=["float", "integer"])
    ap.add_argument("--holdout", action="append", default=[],
                    help="WxNxQ: leave this layout out of the fit and predict it from the others (repeatable)")
    args = ap.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tool = args.tool or os.path.join(root, "build", "bench", "tuner", "tutti-model-check")
    cmd = [tool, args.table, "--dtype", args.dtype, "--csv", args.out + ".csv", "--node-links", str(args.node_links),
           "--cache-bytes", str(args.cache_bytes), "--network-on-cpus", "1" if args.network_on_cpus else "0",
           "--links-shaped", "1" if args.links_shaped else "0", "--argument-check", args.argument_check]
    if args.links_shaped and not args.links_summed:
        cmd += ["--link-bucket", "%d" % args.link_bucket]
    if args.node_from:
        cmd += ["--node-from", args.node_from]
    if args.machine_cores:
        cmd += ["--machine-cores", str(args.machine_cores)]
    elif args.cores_per_node:
        cmd += ["--cores-per-node", str(args.cores_per_node)]
    for h in args.holdout:
        cmd += ["--holdout", h]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (" ".join(cmd), run.returncode, run.stderr))
    with open(args.out + ".md", "w") as md:
        md.write("# The cost model against %s\n\n`%s`\n\n" % (args.table, " ".join(cmd)))
        md.write(run.stdout)
    # the summary: the fitted parameters and the per-layout table
    lines = run.stdout.splitlines()
    head = lines[:lines.index(next(l for l in lines if l.startswith("| collective")))] if any(
        l.startswith("| collective") for l in lines) else lines[:4]
    print("\n".join(line for line in head if line))
    summary = lines[lines.index("| layout | samples | rms error | max error | within 20 % |"):] \
        if "| layout | samples | rms error | max error | within 20 % |" in lines else []
    print("\n".join(summary))

    with open(args.out + ".csv") as f:
        rows = list(csv.DictReader(f))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot (the .md and .csv are written)")
        return
    fig, ax = plt.subplots(figsize=(8, 7))
    algorithms = sorted({r["algorithm"] for r in rows})
    layouts = sorted({r["layout"] for r in rows})
    markers = "os^vD<>px*"
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, alg in enumerate(algorithms):
        for j, lay in enumerate(layouts):
            pts = [r for r in rows if r["algorithm"] == alg and r["layout"] == lay]
            if not pts:
                continue
            ax.scatter([float(r["measured_us"]) for r in pts], [float(r["predicted_us"]) for r in pts],
                       s=18, marker=markers[j % len(markers)], color=colours[i % len(colours)],
                       facecolors="none" if any(r["held_out"] == "1" for r in pts) else colours[i % len(colours)],
                       label="%s, %s" % (alg, lay))
    lo = min(min(float(r["measured_us"]), float(r["predicted_us"])) for r in rows)
    hi = max(max(float(r["measured_us"]), float(r["predicted_us"])) for r in rows)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
    ax.fill_between([lo, hi], [0.8 * lo, 0.8 * hi], [1.2 * lo, 1.2 * hi], color="grey", alpha=0.2, label="±20 %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured median (µs)")
    ax.set_ylabel("predicted (µs)")
    ax.set_title("cost model vs measurement: %s\n(hollow: layouts held out of the fit)" % os.path.basename(args.table),
                 fontsize=10)
    ax.legend(fontsize=5, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=130)
    print("wrote %s.md, %s.csv, %s.png" % (args.out, args.out, args.out))


if __name__ == "__main__":
    main()
