#!/usr/bin/env python3
"""Runs tutti and its peers (Open MPI, MPICH, Gloo) through the same allreduce sweep, interleaved,
and reports medians and tutti/peer ratios per size.

Why it is shaped this way (see PEERS.md, the team notes on peers):
  - Every program prints the nccl-tests table (size count type redop root time algbw busbw #wrong)
    with the same method: warm-up, barrier, timed loop, time = max over ranks of the mean.
  - The host is noisy in distinct states that last seconds to minutes, so a comparison is only fair
    within one session and with repetitions interleaved: rep 1 of every peer, then rep 2, ...; the
    order of peers also rotates from one rep to the next, so no peer always runs right after the
    same neighbour. Medians over reps are reported; the per-rep spread is kept in the JSON and drawn
    as a band in the plot.
  - Every claim is a ratio against a peer measured in the same run. The ratio columns are speed
    ratios, peer time / tutti time (= tutti busbw / peer busbw): above 1 means tutti is faster.
  - Only loopback is used: Open MPI's TCP BTL and out-of-band channel are pinned to `lo`, UCX
    (MPICH's ch4 device) to `lo`, Gloo binds 127.0.0.1.

Outputs, in --out-dir: NAME.md (the table and the context), NAME.json (every run's rows), NAME.png.
Example (the stand-in for tutti until tutti's shm transport and launcher land):
  bench/peers/compare.py --reps 3 --max-bytes 64M \
      --tutti-cmd '/tmp/peerbuild/bench/tutti-bench -t {ranks} -b {min} -e {max} -f {factor} -n {iters} -w {warmup}'
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# Placeholders a --tutti-cmd may use; a command without them runs as given.
DEFAULT_TUTTI_CMD = ("build/tools/tutti-run -n {ranks} -- build/bench/tutti-bench --transport shm "
                     "-b {min} -e {max} -f {factor} -n {iters} -w {warmup}")
TIME_COLUMN_MAX_BYTES = 4096  # at and below this size latency, not bandwidth, is the story: show µs
ROW = re.compile(  # one table row, after an optional launcher prefix such as "[0] " or "rank 0: "
    r"^(?:\s*\[?[A-Za-z ]*\d*[\]:]\s*)?\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
    r"(?:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+))?")  # tutti-bench and nccl-tests add the in-place columns


@dataclasses.dataclass
class Peer:
    key: str      #: name on the command line (--peers)
    label: str    #: name in the table and the plot
    cmd: list[str]
    env: dict[str, str]


def parse_bytes(text: str) -> int:
    """A byte count with an optional binary K/M/G suffix, as the benchmarks' -b/-e take it."""
    m = re.fullmatch(r"(\d+)([KkMmGg]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}': not a byte size (like 8, 512K, 64M, 1G)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def size_label(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def make_peers(args: argparse.Namespace) -> list[Peer]:
    """Every peer, in the column order of PEERS.md after tutti."""
    sweep = ["-b", str(args.min_bytes), "-e", str(args.max_bytes), "-f", str(args.factor),
             "-n", str(args.iters), "-w", str(args.warmup)]
    ompi = ["mpirun.openmpi", "-np", str(args.ranks), "--bind-to", "none"]
    if os.geteuid() == 0:
        ompi.append("--allow-run-as-root")
    # Loopback only, for the TCP BTL (used by "Open MPI tcp") and the launcher's own channel.
    ompi += ["--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
    build = Path(args.build_dir)
    fields = dict(ranks=args.ranks, min=args.min_bytes, max=args.max_bytes, factor=args.factor,
                  iters=args.iters, warmup=args.warmup)
    tutti_like = [Peer("tutti", args.tutti_label, shlex.split(args.tutti_cmd.format(**fields)), {})]
    if args.tutti_registered_cmd:  # a second tutti variant, e.g. registered buffers, in the same run
        tutti_like.append(Peer("tutti-reg", args.tutti_registered_label,
                               shlex.split(args.tutti_registered_cmd.format(**fields)), {}))
    return tutti_like + [
        # Open MPI's default on one host: ob1 + vader (shared memory) + coll tuned.
        Peer("ompi", "Open MPI shm", ompi + [str(build / "mpi-allreduce-bench-openmpi")] + sweep, {}),
        # MPICH 4 from Debian is ch4:ucx; UCX uses shared memory within a host, network devices pinned to lo.
        Peer("mpich", "MPICH", ["mpirun.mpich", "-np", str(args.ranks), str(build / "mpi-allreduce-bench-mpich")]
             + sweep, {"UCX_NET_DEVICES": "lo"}),
        Peer("ompi-tcp", "Open MPI tcp",
             ompi + ["--mca", "btl", "tcp,self", str(build / "mpi-allreduce-bench-openmpi")] + sweep, {}),
        # Gloo takes rank and size from OMPI_COMM_WORLD_*: mpirun only starts it, MPI is not used.
        Peer("gloo", "Gloo tcp", ompi + [str(build / "gloo-allreduce-bench")] + sweep, {}),
    ]


def parse_table(stdout: str) -> tuple[list[str], list[dict]]:
    """The '#' comment lines and the rows with a numeric size."""
    comments, rows = [], []
    for line in stdout.splitlines():
        if line.lstrip().startswith("#"):
            comments.append(line.strip())
            continue
        m = ROW.match(line)
        if not m:
            continue
        try:
            wrong = None if m.group(9) == "N/A" else int(float(m.group(9)))
            row = dict(size=int(m.group(1)), count=int(m.group(2)), time_us=float(m.group(6)),
                       algbw=float(m.group(7)), busbw=float(m.group(8)), wrong=wrong)
            if m.group(13) is not None and m.group(13).replace(".", "").isdigit():  # in place, side by side
                row["in_place"] = dict(time_us=float(m.group(10)), algbw=float(m.group(11)),
                                       busbw=float(m.group(12)), wrong=int(float(m.group(13))))
            rows.append(row)
        except ValueError:
            continue  # not a table row after all
    return comments, rows


def cpu_busy(interval: float = 0.5) -> float:
    """Fraction of all cores busy over the next `interval` seconds (from /proc/stat).

    The load average lags by a minute; this says what the neighbours are doing right now, which on
    a shared 2-core host decides whether a spinning MPI rank gets its core (PEERS.md).
    """
    def snapshot() -> tuple[int, int]:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # all, idle + iowait

    total0, idle0 = snapshot()
    time.sleep(interval)
    total1, idle1 = snapshot()
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


def wait_for_quiet(limit: float, threshold: float = 0.15) -> tuple[float, float]:
    """Waits up to `limit` seconds for the host to be nearly idle; returns (busy fraction, seconds waited)."""
    t0 = time.monotonic()
    busy = cpu_busy()
    while busy > threshold and time.monotonic() - t0 < limit:
        busy = cpu_busy(1.0)
    return busy, time.monotonic() - t0


def run_once(peer: Peer, timeout: float, wait_idle: float) -> dict:
    """Runs one sweep of one peer; never raises: a failure is recorded and the session goes on."""
    busy, waited = wait_for_quiet(wait_idle)
    record = dict(peer=peer.key, label=peer.label, cmd=peer.cmd, env=peer.env, cpu_busy_before=round(busy, 3),
                  waited_for_quiet=round(waited, 1), loadavg_before=list(os.getloadavg()),
                  started=dt.datetime.now().isoformat(timespec="seconds"))
    t0 = time.monotonic()
    try:
        # A session of its own, so a timeout can end the launcher and every rank it started.
        proc = subprocess.Popen(peer.cmd, cwd=REPO, env={**os.environ, **peer.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as e:
        return {**record, "ok": False, "error": f"could not start: {e}", "rows": [], "header": [],
                "returncode": None, "seconds": 0.0, "stderr_tail": ""}
    try:
        out, err = proc.communicate(timeout=timeout)
        error = None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        error = f"timed out after {timeout:.0f} s"
    header, rows = parse_table(out or "")
    if error is None and proc.returncode != 0:
        error = f"exit status {proc.returncode}"
    if error is None and not rows:
        error = "no table rows in the output"
    return {**record, "ok": error is None, "error": error, "returncode": proc.returncode,
            "seconds": round(time.monotonic() - t0, 2), "header": header, "rows": rows,
            "stderr_tail": "\n".join((err or "").strip().splitlines()[-15:])}


def medians(runs: list[dict], peers: list[Peer], ranks: int) -> dict[str, dict[int, dict]]:
    """Per peer and size: the median time over reps, busbw from it, and the fastest and slowest rep.

    Rows with wrong results are left out: their time measures something other than an allreduce.
    Rows of a run that failed later (a crash at 256 MiB) still count for the sizes it finished.
    """
    bus_factor = 2.0 * (ranks - 1) / ranks
    out: dict[str, dict[int, dict]] = {}
    for peer in peers:
        times: dict[int, list[float]] = {}
        for run in runs:
            if run["peer"] != peer.key:
                continue
            for row in run["rows"]:
                if row["wrong"]:
                    continue
                times.setdefault(row["size"], []).append(row["time_us"])
        out[peer.key] = {}
        for size, ts in sorted(times.items()):
            med = statistics.median(ts)

            def busbw(t: float) -> float:
                return size / t / 1e3 * bus_factor if t > 0 else 0.0

            out[peer.key][size] = dict(time_us=med, busbw=busbw(med), reps=len(ts),
                                       busbw_min=busbw(max(ts)), busbw_max=busbw(min(ts)),
                                       spread=max(ts) / min(ts) if min(ts) > 0 else float("nan"))
    return out


def markdown_table(med: dict, peers: list[Peer]) -> str:
    """size | each peer (µs up to 4 KiB, busbw GB/s above) | tutti/best peer | tutti/Open MPI shm."""
    others = [p for p in peers if not p.key.startswith("tutti")]
    has_tutti = any(p.key == "tutti" for p in peers)
    cols = ["size"] + [p.label for p in peers]
    if has_tutti and others:
        cols.append("tutti/best peer")
    if has_tutti and any(p.key == "ompi" for p in peers):
        cols.append("tutti/Open MPI shm")
    has_reg = any(p.key == "tutti-reg" for p in peers)
    if has_reg and any(p.key == "ompi" for p in peers):
        cols.append("tutti registered/Open MPI shm")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    sizes = sorted({s for p in peers for s in med[p.key]})
    for size in sizes:
        as_time = size <= TIME_COLUMN_MAX_BYTES
        cells = [size_label(size) + (" (time)" if as_time else "")]
        for p in peers:
            m = med[p.key].get(size)
            if m is None:
                cells.append("–")
            elif as_time:
                cells.append(f"{m['time_us']:.3g} µs" if m["time_us"] < 1000 else f"{m['time_us']:.0f} µs")
            else:
                cells.append(f"{m['busbw']:.2f}")
        tutti = med.get("tutti", {}).get(size)
        if "tutti/best peer" in cols:
            done = [(med[p.key][size]["time_us"], p) for p in others if size in med[p.key]]
            if tutti and done:
                best_time, best = min(done, key=lambda x: x[0])
                cells.append(f"{best_time / tutti['time_us']:.2f} ({best.label})")
            else:
                cells.append("–")
        if "tutti/Open MPI shm" in cols:
            ompi = med["ompi"].get(size)
            cells.append(f"{ompi['time_us'] / tutti['time_us']:.2f}" if tutti and ompi else "–")
        if "tutti registered/Open MPI shm" in cols:
            reg, ompi = med["tutti-reg"].get(size), med["ompi"].get(size)
            cells.append(f"{ompi['time_us'] / reg['time_us']:.2f}" if reg and ompi else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(med: dict, peers: list[Peer], path: Path, title: str) -> None:
    """busbw against size (left) and time against size (right), median line and min–max band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter

    fig, (ax_bw, ax_t) = plt.subplots(1, 2, figsize=(14, 5.6), constrained_layout=True)
    all_sizes = sorted({s for p in peers for s in med[p.key]})
    for i, p in enumerate(peers):
        pts = sorted(med[p.key].items())
        if not pts:
            continue
        xs = [s for s, _ in pts]
        style = (dict(color="black", lw=2.4, zorder=5) if p.key == "tutti" else
                 dict(color="black", lw=2.0, ls="--", zorder=5) if p.key == "tutti-reg" else dict(color=f"C{i}", lw=1.6))
        ax_bw.plot(xs, [m["busbw"] for _, m in pts], marker="o", ms=3, label=p.label, **style)
        ax_bw.fill_between(xs, [m["busbw_min"] for _, m in pts], [m["busbw_max"] for _, m in pts],
                           color=style["color"], alpha=0.12, lw=0)
        ax_t.plot(xs, [m["time_us"] for _, m in pts], marker="o", ms=3, label=p.label, **style)
    if all_sizes:
        # Labelled ticks every 8x (8 B, 64 B, ... 4 KiB, ... 2 MiB, ...), a minor tick at every 2x.
        lo, hi = all_sizes[0], all_sizes[-1]
        majors = [1 << k for k in range(0, 41, 3) if lo <= 1 << k <= hi]
        minors = [1 << k for k in range(0, 41) if lo <= 1 << k <= hi]
        if majors and hi >= 4 * majors[-1]:
            majors.append(hi)  # label the largest size too when it is well past the last 8x tick
        for ax in (ax_bw, ax_t):
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_locator(FixedLocator(majors))
            ax.xaxis.set_minor_locator(FixedLocator(minors))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(majors, [size_label(s) for s in majors], rotation=45, ha="right")
            ax.set_xlim(lo / 1.2, hi * 1.2)
            ax.grid(True, which="major", alpha=0.35)
            ax.set_xlabel("message size (bytes per rank)")
    ax_bw.set_ylabel("busbw (GB/s), median over reps; band: fastest–slowest rep")
    ax_bw.set_ylim(bottom=0)
    ax_bw.legend(loc="upper left")
    ax_bw.set_title("bus bandwidth (higher is better)")
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time per allreduce (µs), median over reps")
    ax_t.set_title("time (lower is better)")
    ax_t.grid(True, which="minor", axis="y", alpha=0.15)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ensure_built(args: argparse.Namespace, peers: list[Peer]) -> None:
    """Builds the peer binaries with build.sh if any the chosen peers need is missing."""
    needed = [Path(a) for p in peers if not p.key.startswith("tutti") for a in p.cmd if a.startswith(str(args.build_dir))]
    if all(n.exists() for n in needed):
        return
    print(f"compare: building the peer benchmarks into {args.build_dir}", file=sys.stderr)
    result = subprocess.run([str(HERE / "build.sh"), str(args.build_dir)], cwd=REPO)
    if result.returncode != 0:
        print("compare: build.sh failed; the peers whose binary is missing will be reported as failed",
              file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    ap.add_argument("--min-bytes", type=parse_bytes, default=8, help="smallest size, K/M/G suffixes (default 8)")
    ap.add_argument("--max-bytes", type=parse_bytes, default=256 << 20, help="largest size (default 256M)")
    ap.add_argument("--factor", type=int, default=2, help="size step factor (default 2)")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per size (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    ap.add_argument("--ranks", type=int, default=2, help="processes per run (default 2)")
    ap.add_argument("--peers", default="tutti,tutti-reg,ompi,mpich,ompi-tcp,gloo",
                    help="comma-separated subset of tutti,ompi,mpich,ompi-tcp,gloo (default all)")
    ap.add_argument("--tutti-cmd", default=DEFAULT_TUTTI_CMD,
                    help="tutti's command, run from the repo root; may use {ranks} {min} {max} {factor} {iters} "
                         "{warmup} (default: %(default)s)")
    ap.add_argument("--tutti-registered-cmd", default="",
                    help="optional second tutti command run in the same interleaved session (same "
                         "placeholders), e.g. with registered buffers (-R 1)")
    ap.add_argument("--tutti-registered-label", default="tutti registered",
                    help="its name in the table and plot (default 'tutti registered')")
    ap.add_argument("--tutti-label", default="tutti",
                    help="tutti's name in the table and plot, e.g. 'tutti inproc (stand-in)' (default tutti)")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build" / "peers",
                    help="where build.sh put (or will put) the peer binaries (default build/peers)")
    ap.add_argument("--out-dir", type=Path, default=REPO / "bench" / "results",
                    help="where NAME.md, NAME.json and NAME.png go (default bench/results)")
    ap.add_argument("--name", default=None, help="file name stem (default allreduce-peers-<date>-<time>)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before one run is ended (default 1800)")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="before each run, wait up to SECONDS for the other processes on the host to use under "
                         "15%% of the CPUs (default 0: do not wait; the busy fraction is recorded anyway)")
    args = ap.parse_args()
    if args.reps < 1 or args.ranks < 2 or args.factor < 2 or args.min_bytes > args.max_bytes:
        ap.error("need --reps >= 1, --ranks >= 2, --factor >= 2 and --min-bytes <= --max-bytes")
    args.build_dir = args.build_dir.resolve()

    all_peers = make_peers(args)
    chosen = [k.strip() for k in args.peers.split(",") if k.strip()]
    chosen = [k for k in chosen if k != "tutti-reg" or args.tutti_registered_cmd]  # only when given
    unknown = sorted(set(chosen) - {p.key for p in all_peers})
    if unknown:
        ap.error(f"--peers: unknown {', '.join(unknown)} (known: {', '.join(p.key for p in all_peers)})")
    peers = [p for p in all_peers if p.key in chosen]
    ensure_built(args, peers)

    started = dt.datetime.now()
    cpus = os.cpu_count() or 0
    runs: list[dict] = []
    width = max(len(p.label) for p in peers)
    for rep in range(args.reps):
        order = peers[rep % len(peers):] + peers[:rep % len(peers)]
        for peer in order:
            print(f"compare: rep {rep + 1}/{args.reps}  {peer.label:<{width}} ", end="", file=sys.stderr, flush=True)
            run = run_once(peer, args.timeout, args.wait_idle)
            run["rep"] = rep + 1
            runs.append(run)
            status = "ok" if run["ok"] else f"FAILED: {run['error']}"
            print(f"{run['seconds']:7.1f} s  host busy before {100 * run['cpu_busy_before']:3.0f}%  {status}",
                  file=sys.stderr)
            if not run["ok"] and run["stderr_tail"]:
                print("    " + run["stderr_tail"].replace("\n", "\n    "), file=sys.stderr)

    med = medians(runs, peers, args.ranks)
    versions = {}
    for p in peers:
        first = next((r["header"][0] for r in runs if r["peer"] == p.key and r["header"]), None)
        versions[p.key] = first.lstrip("# ").strip() if first else None
    failures = [f"rep {r['rep']} {r['label']}: {r['error']}" for r in runs if not r["ok"]]
    wrong = [f"rep {r['rep']} {r['label']}: {row['wrong']} wrong at {size_label(row['size'])}"
             for r in runs for row in r["rows"] if row["wrong"]]
    spread = {p.label: statistics.median([m["spread"] for m in med[p.key].values()])
              for p in peers if med[p.key]}
    busy = [r["cpu_busy_before"] for r in runs]

    title = (f"allreduce float32 sum, {args.ranks} ranks, out of place — {started:%Y-%m-%d}, "
             f"{platform.node()} ({cpus} cores), median of {args.reps} interleaved reps")
    table = markdown_table(med, peers)
    notes = [f"Speed ratios are peer time / tutti time (= tutti busbw / peer busbw): above 1, tutti is faster. "
             f"Sizes up to {size_label(TIME_COLUMN_MAX_BYTES)} show time in µs, larger ones busbw in GB/s."]
    notes.append("Run-to-run spread (median over sizes of slowest rep / fastest rep): "
                 + ", ".join(f"{k} {v:.2f}×" for k, v in spread.items()))
    notes.append(f"CPUs busy with other processes just before each run: {100 * min(busy):.0f}% to "
                 f"{100 * max(busy):.0f}% of {cpus} cores"
                 + ("; where they were busy, a rank that spins waits for its core and the numbers measure the "
                    "neighbours too" if max(busy) > 0.25 else ""))
    notes += [f"Failed: {f}" for f in failures] + [f"Wrong results (left out of the medians): {w}" for w in wrong]

    print(table)
    print()
    for n in notes:
        print("- " + n)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    name = args.name or f"allreduce-peers-{started:%Y%m%d-%H%M%S}"
    md_path, json_path, png_path = (args.out_dir / f"{name}.{ext}" for ext in ("md", "json", "png"))
    meta = dict(title=title, started=started.isoformat(timespec="seconds"),
                finished=dt.datetime.now().isoformat(timespec="seconds"), host=platform.node(), cpus=cpus,
                kernel=platform.release(), reps=args.reps, ranks=args.ranks, min_bytes=args.min_bytes,
                max_bytes=args.max_bytes, factor=args.factor, iters=args.iters, warmup=args.warmup,
                peers={p.key: dict(label=p.label, cmd=shlex.join(p.cmd), env=p.env, version=versions[p.key])
                       for p in peers})
    with open(json_path, "w") as f:
        json.dump(dict(meta=meta, runs=runs,
                       median={k: {str(s): v for s, v in d.items()} for k, d in med.items()}), f, indent=1)
    with open(md_path, "w") as f:
        f.write(f"# {title}\n\n{table}\n\n" + "".join(f"- {n}\n" for n in notes) + "\nPeers and commands:\n\n")
        for p in peers:
            env = " ".join(f"{k}={v}" for k, v in p.env.items())
            f.write(f"- {p.label}: {versions[p.key] or 'no output'}\n  `{(env + ' ') if env else ''}"
                    f"{shlex.join(p.cmd)}`\n")
        f.write(f"\nRaw rows of every run: {json_path.name}; plot: {png_path.name}.\n")
    plot(med, peers, png_path, title)
    print(f"\ncompare: wrote {md_path}, {json_path}, {png_path}", file=sys.stderr)
    return 1 if failures or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
