#!/usr/bin/env python3
"""Runs every tutti algorithm through the same size sweep at several world sizes, interleaved, and
says which algorithm wins at each (size, world size).

What it runs: tutti-bench over transport::shm, one process per rank started by tutti-run, for each
world ("4" = tutti-run -n 4, all ranks on one node; "4x2" = tutti-run -n 4 --ranks-per-node 2, two
simulated nodes of two ranks, which is where the hierarchical algorithms differ from flat ones), each
collective (--collectives) and each algorithm (--algorithms). An algorithm that lacks a collective
(tree has no reduce_scatter, allgather or alltoall) is reported as such and not run again.

Method, as bench/peers/compare.py (whose helpers this imports) and PEERS.md: the host is noisy in
states that last seconds to minutes, so repetitions are interleaved: rep 1 of every (world,
collective, algorithm), then rep 2, ..., the order rotated from one rep to the next so no run always
sits at the same point of the session. Medians over reps are reported; rows with wrong results are
left out. The CPU use of other processes just before each run is recorded, and the report says when
it was high (then the numbers measure the neighbours too: rerun when the host is quiet).

Outputs, in --out-dir, stem NAME (default sweep-<date>-<time>):
  NAME.log          for each world, collective and algorithm, the nccl-tests table as tutti-bench
                    prints it, with median times over reps (and every rep's raw table after it)
  NAME.md           winner by (size, world): best algorithm, its busbw (time up to 4 KiB), the
                    runner-up and how much slower it is; then each world's medians per algorithm
  NAME.json         every run (command, rows, stderr tail, host load) and every median
  NAME-w<W>.png     per world: busbw and time against size, log-log, one line per algorithm

Binaries: --tutti-run and --tutti-bench, or --build-dir (default build/, as tools/run-bench.sh),
which is configured (Release, no tests or examples) and built (targets tutti_bench, tutti_run) unless
--no-build.

Examples:
  bench/sweep.py --reps 2 --max-bytes 1M                       # smoke run
  bench/sweep.py --reps 5 --wait-idle 60                       # the full allreduce sweep, 16 B .. 64 MiB by 4
  bench/sweep.py --collectives allreduce,reduce_scatter,allgather,broadcast,reduce,alltoall
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
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "peers"))
from compare import Peer, parse_bytes, run_once, size_label  # noqa: E402  (bench/peers/compare.py)

ALGORITHMS = ["ring", "direct", "tree", "halving_doubling", "hierarchical", "hierarchical_hd", "hierarchical_direct"]
KNOWN_ALGORITHMS = ALGORITHMS + ["automatic"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"]
ROOTED = {"broadcast", "reduce"}
TIME_COLUMN_MAX_BYTES = 4096  # at and below this size latency is the story: tables show µs, not GB/s
UNSUPPORTED = re.compile(r"does not implement (\w+)")


@dataclasses.dataclass(frozen=True)
class World:
    """One launch shape: `ranks` processes, on simulated nodes of `per_node` ranks (0: one node)."""
    ranks: int
    per_node: int = 0

    @property
    def key(self) -> str:  # "4", "4x2"; also the PNG suffix (-w4x2)
        return f"{self.ranks}x{self.per_node}" if self.per_node else str(self.ranks)

    @property
    def label(self) -> str:
        if not self.per_node:
            return f"{self.ranks} ranks"
        return f"{self.ranks} ranks ({self.ranks // self.per_node} nodes x {self.per_node})"


def parse_world(text: str) -> World:
    m = re.fullmatch(r"(\d+)(?:x(\d+))?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}': a world is N (N ranks, one node) or NxK (nodes of K ranks)")
    ranks, per_node = int(m.group(1)), int(m.group(2) or 0)
    if ranks < 2 or (per_node and (per_node < 1 or ranks % per_node)):
        raise argparse.ArgumentTypeError(f"'{text}': need N >= 2 and K dividing N")
    return World(ranks, per_node)


def bus_factor(collective: str, n: int) -> float:
    """busbw / algbw, as tutti-bench (bench/support/table.hpp) and nccl-tests compute it."""
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("reduce_scatter", "allgather", "alltoall"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce


@dataclasses.dataclass
class Job:
    world: World
    collective: str
    algorithm: str
    peer: Peer  # compare.py's runnable: key, label, cmd, env


def make_jobs(args: argparse.Namespace) -> list[Job]:
    env = {"TUTTI_TIMEOUT": str(int(args.rank_timeout))}
    if args.registered:  # send + recv at the largest size, rounded up, with room to spare
        env["TUTTI_SHM_POOL_BYTES"] = str(max(256 << 20, ((2 * args.max_bytes + (64 << 20)) >> 20) << 20))
    jobs = []
    for w in args.worlds:
        for c in args.collectives:
            for a in args.algorithms:
                cmd = [str(args.tutti_run), "-n", str(w.ranks)]
                if w.per_node:
                    cmd += ["--ranks-per-node", str(w.per_node)]
                cmd += ["--no-prefix", "--", str(args.tutti_bench), "--transport", "shm", "--algorithm", a,
                        "--collective", c,
                        "-b", str(first_size(args)), "-e", str(args.max_bytes), "-f", str(args.factor),
                        "-n", str(args.iters), "-w", str(args.warmup), "-d", args.dtype]
                if c not in ("allgather", "broadcast", "alltoall"):
                    cmd += ["-o", args.op]
                if c in ROOTED:
                    cmd += ["-r", str(args.root % w.ranks)]
                if args.registered:
                    cmd += ["-R", "1"]
                key = f"{w.key}/{c}/{a}"
                jobs.append(Job(w, c, a, Peer(key, f"w{w.key} {c} {a}", cmd, dict(env))))
    return jobs


def ensure_built(args: argparse.Namespace) -> None:
    """Configures and builds tutti-bench and tutti-run in --build-dir; exits on failure.

    The directory may be shared with the README's commands (build/): the options these targets need
    are passed every time, so a value cached there (the install recipe's TUTTI_BUILD_BENCH=OFF)
    cannot turn them off; tests and examples are left off only in a directory this creates."""
    build = args.build_dir
    jobs = str(args.jobs or os.cpu_count() or 1)
    cfg = ["cmake", "-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG", "-DTUTTI_BUILD_BENCH=ON",
           "-DTUTTI_BUILD_TOOLS=ON"]
    if not (build / "CMakeCache.txt").exists():
        cfg += ["-DTUTTI_BUILD_TESTS=OFF", "-DTUTTI_BUILD_EXAMPLES=OFF"]
    print(f"sweep: configuring {build}", file=sys.stderr)
    if subprocess.run(cfg, cwd=REPO, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("sweep: cmake configure failed")
    print(f"sweep: building tutti-bench and tutti-run in {build} (-j {jobs})", file=sys.stderr)
    if subprocess.run(["cmake", "--build", str(build), "--target", "tutti_bench", "tutti_run", "-j", jobs],
                      cwd=REPO).returncode != 0:
        sys.exit("sweep: build failed")


# ---- medians ---------------------------------------------------------------------------------------

def first_size(args: argparse.Namespace) -> int:
    """The -b that makes the series end exactly at --max-bytes: --max-bytes / factor^k, the smallest
    such size not below --min-bytes (8 B .. 64 MiB by 4 runs 16 B, 64 B, ... 64 MiB)."""
    s = args.max_bytes
    while s % args.factor == 0 and s // args.factor >= args.min_bytes:
        s //= args.factor
    return s


def requested_sizes(args: argparse.Namespace) -> list[int]:
    """-b, -b*f, ... up to -e: tutti-bench's rows, in order (bench/support/table.hpp sizes_of)."""
    sizes, s = [], first_size(args)
    while True:
        sizes.append(s)
        if s > args.max_bytes // args.factor:
            return sizes
        s *= args.factor


def medians(runs: list[dict], jobs: list[Job], requested: list[int]) -> dict[str, dict[int, dict]]:
    """Per job key and requested size: median time over reps, algbw and busbw from it, fastest and
    slowest rep.

    Rows are keyed by the size asked for (-b, -b*f, ...), not the size printed, which reduce_scatter,
    allgather and alltoall round down to whole elements per rank or block, differently per world
    size; busbw uses the printed bytes. Rows of 0 bytes (fewer elements than blocks) and rows with
    wrong results are left out.
    """
    out: dict[str, dict[int, dict]] = {}
    for job in jobs:
        times: dict[int, list[float]] = {}
        actual: dict[int, tuple[int, int]] = {}
        for run in runs:
            if run["peer"] != job.peer.key:
                continue
            for asked, row in zip(requested, run["rows"]):
                if row["wrong"] or row["size"] == 0:
                    continue
                times.setdefault(asked, []).append(row["time_us"])
                actual[asked] = (row["size"], row["count"])
        factor = bus_factor(job.collective, job.world.ranks)
        out[job.peer.key] = {}
        for asked, ts in sorted(times.items()):
            med = statistics.median(ts)
            nbytes, count = actual[asked]

            def algbw(t: float, nbytes: int = nbytes) -> float:
                return nbytes / t / 1e3 if t > 0 else 0.0

            out[job.peer.key][asked] = dict(
                bytes=nbytes, count=count, time_us=med, algbw=algbw(med), busbw=algbw(med) * factor, reps=len(ts),
                busbw_min=algbw(max(ts)) * factor, busbw_max=algbw(min(ts)) * factor,
                spread=max(ts) / min(ts) if min(ts) > 0 else float("nan"))
    return out


def winners(med: dict, jobs: list[Job], world: World, collective: str) -> dict[int, list[tuple[str, dict]]]:
    """Per size: (algorithm, median) of every algorithm that ran it, fastest first."""
    by_size: dict[int, list[tuple[str, dict]]] = {}
    for job in jobs:
        if job.world != world or job.collective != collective:
            continue
        for size, m in med.get(job.peer.key, {}).items():
            by_size.setdefault(size, []).append((job.algorithm, m))
    return {s: sorted(v, key=lambda x: x[1]["time_us"]) for s, v in sorted(by_size.items())}


# ---- reports ---------------------------------------------------------------------------------------

def figure(size: int, m: dict) -> str:
    """µs up to 4 KiB, busbw GB/s above."""
    if size <= TIME_COLUMN_MAX_BYTES:
        return f"{m['time_us']:.3g} µs" if m["time_us"] < 1000 else f"{m['time_us']:.0f} µs"
    return f"{m['busbw']:.2f} GB/s"


def winner_matrix(med: dict, jobs: list[Job], worlds: list[World], collective: str) -> str:
    """size | one column per world: winner (its figure), runner-up xratio."""
    cols = ["size"] + [w.label for w in worlds]
    lines = ["| " + " | ".join(cols) + " |", "|---:|" + ":---|" * len(worlds)]
    per_world = {w: winners(med, jobs, w, collective) for w in worlds}
    sizes = sorted({s for w in worlds for s in per_world[w]})
    for size in sizes:
        cells = [size_label(size)]
        for w in worlds:
            ranked = per_world[w].get(size, [])
            if not ranked:
                cells.append("–")
                continue
            best, bm = ranked[0]
            cell = f"**{best}** {figure(size, bm)}"
            if len(ranked) > 1:
                second, sm = ranked[1]
                cell += f"; {second} ×{sm['time_us'] / bm['time_us']:.2f}"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def winner_long(med: dict, jobs: list[Job], worlds: list[World], collective: str) -> str:
    """One row per (world, size): best, busbw, time, runner-up, ratio, last place."""
    lines = ["| world | size | best | busbw (GB/s) | time (µs) | runner-up | runner-up slower by | slowest |",
             "|:---|---:|:---|---:|---:|:---|---:|:---|"]
    for w in worlds:
        for size, ranked in winners(med, jobs, w, collective).items():
            best, bm = ranked[0]
            second, ratio, last = "–", "–", "–"
            if len(ranked) > 1:
                second = ranked[1][0]
                ratio = f"×{ranked[1][1]['time_us'] / bm['time_us']:.2f}"
                last = f"{ranked[-1][0]} ×{ranked[-1][1]['time_us'] / bm['time_us']:.2f}"
            lines.append(f"| {w.label} | {size_label(size)} | {best} | {bm['busbw']:.3f} | {bm['time_us']:.2f} | "
                         f"{second} | {ratio} | {last} |")
    return "\n".join(lines)


def world_table(med: dict, jobs: list[Job], world: World, collective: str) -> str:
    """size | each algorithm's median (µs up to 4 KiB, busbw GB/s above) | best."""
    algs = [j.algorithm for j in jobs if j.world == world and j.collective == collective and med.get(j.peer.key)]
    key = {j.algorithm: j.peer.key for j in jobs if j.world == world and j.collective == collective}
    lines = ["| size | " + " | ".join(algs) + " | best |", "|---:|" + "---:|" * len(algs) + ":---|"]
    for size, ranked in winners(med, jobs, world, collective).items():
        as_time = size <= TIME_COLUMN_MAX_BYTES
        cells = [size_label(size) + (" (µs)" if as_time else " (GB/s)")]
        for a in algs:
            m = med[key[a]].get(size)
            cells.append("–" if m is None else (f"{m['time_us']:.3g}" if as_time else f"{m['busbw']:.2f}"))
        cells.append(ranked[0][0])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def nccl_table(job: Job, args: argparse.Namespace, header: list[str], med_rows: dict[int, dict], wrong: int) -> str:
    """tutti-bench's own table (its header from the first rep), rows with median figures."""
    out = [h for h in header if not h.startswith(("# Out of bounds", "# Avg bus", "# Heap")) and h != "#"]
    redop = args.op if job.collective in ("allreduce", "reduce_scatter", "reduce") else "none"
    root = args.root % job.world.ranks if job.collective in ROOTED else -1
    for m in med_rows.values():
        out.append(f"{m['bytes']:12d}  {m['count']:12d}  {args.dtype:>8s}  {redop:>6s}  {root:6d}  "
                   f"{m['time_us']:7.2f}  {m['algbw']:6.2f}  {m['busbw']:6.2f}  {wrong:5d}")
    busbws = [m["busbw"] for m in med_rows.values()]
    out.append(f"# median over {max((m['reps'] for m in med_rows.values()), default=0)} reps (rows with wrong "
               f"results or 0 bytes left out); #wrong: all reps together")
    out.append(f"# Avg bus bandwidth : {statistics.mean(busbws) if busbws else 0:g}")
    return "\n".join(out)


def plot(med: dict, jobs: list[Job], world: World, collectives: list[str], algorithms: list[str], path: Path,
         title: str) -> None:
    """One row per collective: busbw (left) and time (right) against size, log-log, band = rep range."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    colours = {a: f"C{i}" for i, a in enumerate(KNOWN_ALGORITHMS)}
    styles = {"hierarchical": "--", "hierarchical_hd": "--", "hierarchical_direct": "--"}
    fig, axes = plt.subplots(len(collectives), 2, figsize=(14, 5.2 * len(collectives)), squeeze=False,
                             constrained_layout=True)
    for row, c in enumerate(collectives):
        ax_bw, ax_t = axes[row]
        sizes: set[int] = set()
        for a in algorithms:
            job = next((j for j in jobs if j.world == world and j.collective == c and j.algorithm == a), None)
            pts = sorted(med.get(job.peer.key, {}).items()) if job else []
            if not pts:
                continue
            xs = [s for s, _ in pts]
            sizes.update(xs)
            style = dict(color=colours.get(a, "black"), ls=styles.get(a, "-"), lw=1.8, marker="o", ms=3)
            ax_bw.plot(xs, [m["busbw"] for _, m in pts], label=a, **style)
            ax_bw.fill_between(xs, [m["busbw_min"] for _, m in pts], [m["busbw_max"] for _, m in pts],
                               color=style["color"], alpha=0.10, lw=0)
            ax_t.plot(xs, [m["time_us"] for _, m in pts], label=a, **style)
        for ax in (ax_bw, ax_t):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            if sizes:  # a labelled tick at every measured size
                lo, hi = min(sizes), max(sizes)
                ticks = sorted(sizes)
                ax.xaxis.set_major_locator(FixedLocator(ticks))
                ax.xaxis.set_minor_locator(NullLocator())
                ax.xaxis.set_minor_formatter(NullFormatter())
                ax.set_xticks(ticks, [size_label(s) for s in ticks], rotation=45, ha="right")
                ax.set_xlim(lo / 1.3, hi * 1.3)
            ax.grid(True, which="major", alpha=0.35)
            ax.set_xlabel("size (bytes asked of tutti-bench: -b, -b·f, ... -e)")
        ax_bw.set_ylabel("busbw (GB/s), median; band: fastest–slowest rep")
        ax_bw.set_title(f"{c}: bus bandwidth (higher is better)")
        ax_t.set_ylabel("time (µs), median over reps")
        ax_t.set_title(f"{c}: time (lower is better)")
        ax_bw.legend(loc="upper left", fontsize=9)
    fig.suptitle(title)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- main ------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", default="2,3,4,4x2",
                    help="comma-separated worlds: N = tutti-run -n N (one node), NxK = -n N --ranks-per-node K "
                         "(default 2,3,4,4x2)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS),
                    help=f"comma-separated, of {', '.join(KNOWN_ALGORITHMS)} (default: all but automatic, "
                         "which is direct on shm)")
    ap.add_argument("--collectives", default="allreduce",
                    help=f"comma-separated, of {', '.join(COLLECTIVES)}, or 'all' (default allreduce)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    ap.add_argument("--min-bytes", type=parse_bytes, default=8,
                    help="no size below this, K/M/G suffixes (default 8); sizes are --max-bytes / factor^k, so the "
                         "largest is always run (8 B .. 64 MiB by 4: 16 B, 64 B, ... 64 MiB)")
    ap.add_argument("--max-bytes", type=parse_bytes, default=64 << 20, help="largest size (default 64M)")
    ap.add_argument("--factor", type=int, default=4, help="size step factor (default 4)")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per size (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    ap.add_argument("--dtype", default="float", help="tutti-bench -d (default float)")
    ap.add_argument("--op", default="sum", help="tutti-bench -o for reducing collectives (default sum)")
    ap.add_argument("--root", type=int, default=0, help="root of broadcast and reduce, modulo the world (default 0)")
    ap.add_argument("--registered", action="store_true",
                    help="-R 1: registered buffers (TUTTI_SHM_POOL_BYTES raised to fit --max-bytes)")
    ap.add_argument("--in-place", action="store_true",
                    help="report tutti-bench's in-place columns (every row runs both ways)")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build",
                    help="where tools/tutti-run and bench/tutti-bench are, or are built (default build/)")
    ap.add_argument("--tutti-run", type=Path, default=None, help="tutti-run to use (default BUILD_DIR/tools/tutti-run)")
    ap.add_argument("--tutti-bench", type=Path, default=None,
                    help="tutti-bench to use (default BUILD_DIR/bench/tutti-bench)")
    ap.add_argument("--no-build", action="store_true",
                    help="do not configure or build (default: build both targets in BUILD_DIR unless both paths "
                         "are given)")
    ap.add_argument("--jobs", type=int, default=0, help="build parallelism (default: all cores)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "results", help="default bench/results")
    ap.add_argument("--name", default=None, help="file name stem (default sweep-<date>-<time>)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before one run is ended (default 900)")
    ap.add_argument("--rank-timeout", type=float, default=120,
                    help="TUTTI_TIMEOUT for the ranks: a stuck collective fails after this long (default 120)")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="before each run wait up to SECONDS for the host to be under 15%% busy (default 0: do "
                         "not wait; the busy fraction is recorded anyway)")
    args = ap.parse_args()

    try:
        args.worlds = [parse_world(w) for w in args.worlds.split(",") if w.strip()]
    except argparse.ArgumentTypeError as e:
        ap.error(f"--worlds: {e}")
    args.algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    args.collectives = COLLECTIVES if args.collectives == "all" else [
        c.strip() for c in args.collectives.split(",") if c.strip()]
    bad = [a for a in args.algorithms if a not in KNOWN_ALGORITHMS] + [
        c for c in args.collectives if c not in COLLECTIVES]
    if bad:
        ap.error(f"unknown algorithm or collective: {', '.join(bad)}")
    if args.reps < 1 or args.factor < 2 or args.min_bytes < 1 or args.min_bytes > args.max_bytes:
        ap.error("need --reps >= 1, --factor >= 2 and 1 <= --min-bytes <= --max-bytes")
    if not args.worlds or not args.algorithms or not args.collectives:
        ap.error("nothing to run")

    args.build_dir = args.build_dir.resolve()
    explicit = args.tutti_run is not None and args.tutti_bench is not None
    args.tutti_run = (args.tutti_run or args.build_dir / "tools" / "tutti-run").resolve()
    args.tutti_bench = (args.tutti_bench or args.build_dir / "bench" / "tutti-bench").resolve()
    if not args.no_build and not explicit:
        ensure_built(args)
    for p in (args.tutti_run, args.tutti_bench):
        if not p.exists():
            sys.exit(f"sweep: {p} does not exist (build it, or pass --tutti-run/--tutti-bench)")

    jobs = make_jobs(args)
    started = dt.datetime.now()
    cpus = os.cpu_count() or 0
    runs: list[dict] = []
    unsupported: dict[str, str] = {}  # job key -> tutti-bench's message
    width = max(len(j.peer.label) for j in jobs)
    for rep in range(args.reps):
        shift = rep * len(jobs) // args.reps  # rotate: each rep starts a different part of the list
        for job in jobs[shift:] + jobs[:shift]:
            if job.peer.key in unsupported:
                continue
            print(f"sweep: rep {rep + 1}/{args.reps}  {job.peer.label:<{width}} ", end="", file=sys.stderr, flush=True)
            run = run_once(job.peer, args.timeout, args.wait_idle)
            if args.in_place:  # the in-place figures of each row, printed beside the out-of-place ones
                run["rows"] = [{**r, **r["in_place"]} for r in run["rows"] if "in_place" in r]
            run.update(rep=rep + 1, world=job.world.key, collective=job.collective, algorithm=job.algorithm)
            m = UNSUPPORTED.search(run.get("stderr_tail") or "")
            if not run["ok"] and m:
                unsupported[job.peer.key] = m.group(0)
                print("not implemented: skipped", file=sys.stderr)
                continue
            runs.append(run)
            status = "ok" if run["ok"] else f"FAILED: {run['error']}"
            print(f"{run['seconds']:7.1f} s  host busy before {100 * run['cpu_busy_before']:3.0f}%  {status}",
                  file=sys.stderr)
            if not run["ok"] and run["stderr_tail"]:
                print("    " + run["stderr_tail"].replace("\n", "\n    "), file=sys.stderr)
    jobs_run = [j for j in jobs if j.peer.key not in unsupported]
    med = medians(runs, jobs_run, requested_sizes(args))

    # ---- the report ----
    failures = [f"rep {r['rep']} {r['label']}: {r['error']}" for r in runs if not r["ok"]]
    wrong = [f"rep {r['rep']} {r['label']}: {row['wrong']} wrong at {size_label(row['size'])}"
             for r in runs for row in r["rows"] if row["wrong"]]
    busy = [r["cpu_busy_before"] for r in runs] or [0.0]
    spreads = [m["spread"] for d in med.values() for m in d.values() if m["reps"] > 1]
    what = (f"{args.dtype} {args.op}, {'in place' if args.in_place else 'out of place'}"
            f"{', registered buffers' if args.registered else ''}")
    title = (f"tutti algorithms over shm, {what} — {started:%Y-%m-%d}, {platform.node()} ({cpus} cores), "
             f"median of {args.reps} interleaved reps")
    notes = [
        "Winner = lowest median time (= highest busbw) at that size and world; 'runner-up ×r': the second "
        "fastest takes r times as long. Sizes up to 4 KiB show time, larger ones busbw (nccl-tests' bus "
        "bandwidth: allreduce algbw·2(n-1)/n, reduce_scatter/allgather/alltoall algbw·(n-1)/n, broadcast/reduce "
        "algbw). Sizes are those asked of tutti-bench (-b, -e, -f: allreduce's buffer, alltoall's send buffer per "
        "rank); reduce_scatter, allgather and alltoall round them down to whole elements per rank or block, and "
        "busbw uses the bytes moved (the .log file has them).",
        "On one node (worlds without 'nodes') hierarchical degenerates to its Intra algorithm (ring; "
        "halving_doubling for hierarchical_hd) plus its grouping; 'N nodes x K' are simulated nodes on this "
        "host (tutti-run --ranks-per-node K), so 'across nodes' is still shared memory.",
        f"Run-to-run spread (median over rows of slowest rep / fastest rep): "
        f"{statistics.median(spreads):.2f}×" if spreads else "Run-to-run spread: one rep only.",
        f"CPUs busy with other processes just before each run: {100 * min(busy):.0f}% to {100 * max(busy):.0f}% "
        f"of {cpus} cores (median {100 * statistics.median(busy):.0f}%)"
        + ("; the host was busy: these numbers measure the neighbours too and only the full sweep on a quiet "
           "host should be quoted" if max(busy) > 0.25 else ""),
    ]
    notes += [f"{k}: {v} (not run)" for k, v in unsupported.items()]
    notes += [f"Failed: {f}" for f in failures] + [f"Wrong results (left out of the medians): {w}" for w in wrong]

    args.out_dir.mkdir(parents=True, exist_ok=True)
    name = args.name or f"sweep-{started:%Y%m%d-%H%M%S}"
    md_path, json_path, log_path = (args.out_dir / f"{name}.{ext}" for ext in ("md", "json", "log"))
    png_paths = {w: args.out_dir / f"{name}-w{w.key}.png" for w in args.worlds}

    md = [f"# {title}\n"]
    md.append(f"Sizes {size_label(first_size(args))} to {size_label(args.max_bytes)} (×{args.factor}), "
              f"{args.iters} iterations after {args.warmup} warm-up, worlds {', '.join(w.label for w in args.worlds)}, "
              f"algorithms {', '.join(args.algorithms)}.\n")
    for c in args.collectives:
        md.append(f"## {c}: winner by size and world\n\n{winner_matrix(med, jobs_run, args.worlds, c)}\n")
    md.append("## Notes\n\n" + "".join(f"- {n}\n" for n in notes))
    for c in args.collectives:
        md.append(f"## {c}: every algorithm, per world (median; µs up to 4 KiB, busbw GB/s above)\n")
        for w in args.worlds:
            md.append(f"### {w.label}\n\n{world_table(med, jobs_run, w, c)}\n\n![{w.label}]({png_paths[w].name})\n")
        md.append(f"### {c}: winners in detail\n\n{winner_long(med, jobs_run, args.worlds, c)}\n")
    md.append("## Commands\n\n" + "".join(f"- `{' '.join(f'{k}={v}' for k, v in j.peer.env.items())} "
                                         f"{shlex.join(j.peer.cmd)}`\n" for j in jobs))
    md.append(f"\nRaw tables: {log_path.name}; every run and median: {json_path.name}.\n")
    md_text = "\n".join(md)

    log = [f"# {title}", f"# sweep.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}", ""]
    for w in args.worlds:
        for c in args.collectives:
            for j in [j for j in jobs if j.world == w and j.collective == c]:
                log.append(f"########## world {w.label}, {c}, {j.algorithm}")
                if j.peer.key in unsupported:
                    log += [f"# {unsupported[j.peer.key]}", ""]
                    continue
                mine = [r for r in runs if r["peer"] == j.peer.key]
                first = next((r for r in mine if r["rows"]), None)
                nwrong = sum(row["wrong"] or 0 for r in mine for row in r["rows"])
                if first:
                    log.append(nccl_table(j, args, first["header"], med.get(j.peer.key, {}), nwrong))
                for r in mine:
                    log.append(f"# rep {r['rep']}: {'ok' if r['ok'] else 'FAILED: ' + str(r['error'])}, "
                               f"{r['seconds']} s, host busy before {100 * r['cpu_busy_before']:.0f}%; rows: "
                               + " ".join(f"{row['size']}:{row['time_us']}us" for row in r["rows"]))
                log.append("")

    meta = dict(title=title, started=started.isoformat(timespec="seconds"),
                finished=dt.datetime.now().isoformat(timespec="seconds"), host=platform.node(), cpus=cpus,
                kernel=platform.release(), argv=sys.argv[1:], reps=args.reps, worlds=[w.key for w in args.worlds],
                collectives=args.collectives, algorithms=args.algorithms, min_bytes=args.min_bytes,
                max_bytes=args.max_bytes, factor=args.factor, iters=args.iters, warmup=args.warmup,
                dtype=args.dtype, op=args.op, registered=args.registered, in_place=args.in_place,
                tutti_run=str(args.tutti_run), tutti_bench=str(args.tutti_bench), unsupported=unsupported)
    median_json: dict = {}
    for j in jobs_run:
        median_json.setdefault(j.collective, {}).setdefault(j.world.key, {})[j.algorithm] = {
            str(s): v for s, v in med.get(j.peer.key, {}).items()}
    winners_json = {c: {w.key: {str(s): [a for a, _ in ranked] for s, ranked in winners(med, jobs_run, w, c).items()}
                        for w in args.worlds} for c in args.collectives}
    with open(json_path, "w") as f:
        json.dump(dict(meta=meta, median=median_json, ranking=winners_json, runs=runs), f, indent=1)
    md_path.write_text(md_text)
    log_path.write_text("\n".join(log) + "\n")
    try:
        import matplotlib  # noqa: F401  (the plots are optional; the tables above are the result)
        have_matplotlib = True
    except ImportError:
        have_matplotlib = False
        notes.append("plots skipped: matplotlib is not installed (pip install -r bench/peers/requirements-pip.txt); "
                     "the tables and the JSON are complete")
    for w in args.worlds:
        if have_matplotlib:
            plot(med, jobs_run, w, args.collectives, args.algorithms, png_paths[w], f"{w.label} — {title}")

    for c in args.collectives:
        print(f"{c}: winner by size and world\n\n{winner_matrix(med, jobs_run, args.worlds, c)}\n")
    for n in notes:
        print("- " + n)
    pngs = ", ".join(str(p) for p in png_paths.values()) if have_matplotlib else "no plots"
    print(f"\nsweep: wrote {md_path}, {json_path}, {log_path}, {pngs}", file=sys.stderr)
    return 1 if failures or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
