"""torch.distributed on "tutti" against "gloo", interleaved in one job (issue 25's benchmark).

    /usr/bin/python3 bench/torch/allreduce_vs_gloo.py OUT [--world 2] [--rounds 5]
        WORLD processes on this host (torch.multiprocessing), torch's store on loopback;
    RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. python3 allreduce_vs_gloo.py OUT
        one rank of a job started torchrun-style (bench/torch/across_hosts.sh: 2 x 2 namespace hosts).

Every rank joins both backends: the default group is tutti's, a second group gloo's, over the same
ranks. Then, ROUNDS times, for every size from 8 B to 64 MiB and both backends in turn (which goes
first alternates by round), it times a burst of blocking float32 all_reduce(SUM) calls; each
burst's time is the slowest rank's (one MAX all_reduce over gloo after the burst, not timed).
Reported like nccl-tests: time per call, algbw = bytes / time, busbw = algbw x 2 (n - 1) / n; the
median over the rounds. Then a DDP training step with each backend (an MLP and a small CNN on
synthetic data, DistributedDataParallel, 20 steps per burst, bursts interleaved): median step time
and images per second. Writes OUT/allreduce.csv, OUT/ddp.csv and OUT/table.md (rank 0)."""
import csv
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import tutti_torch  # noqa: F401  (registers the backend)

SIZES = [8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864]
BACKENDS = ["tutti", "gloo"]


def burst_calls(nbytes):
    """Calls per timed burst: enough to outlast the clock's and the barrier's noise, bounded in time."""
    return max(3, min(200, (64 << 20) // (nbytes * 16) or 3))


def slowest(seconds, gloo):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    return t.item()


def time_allreduce(group, gloo, nbytes):
    x = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
    calls = burst_calls(nbytes)
    for _ in range(2):  # warm-up: first-touch, the backend's own first-call work
        dist.all_reduce(x, group=group)
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(x, group=group)
    return slowest(time.perf_counter() - start, gloo) / calls


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 10))

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                 nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


def ddp_step_time(model, data, target, gloo, steps=20):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(data), target).backward()
        opt.step()

    step()
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return slowest(time.perf_counter() - start, gloo) / steps


def bench(rank, world, out, rounds):
    torch.set_num_threads(1)  # ranks share the host's cores; torch's own threads would fight them
    gloo = dist.new_group(backend="gloo")
    groups = {"tutti": dist.group.WORLD, "gloo": gloo}
    samples = {(b, n): [] for b in BACKENDS for n in SIZES}
    for k in range(rounds):
        for n in SIZES:
            for b in (BACKENDS if k % 2 == 0 else BACKENDS[::-1]):
                samples[(b, n)].append(time_allreduce(groups[b], gloo, n))
    torch.manual_seed(rank)
    models = {"mlp": (MLP, torch.randn(64, 1, 28, 28)), "cnn": (SmallCNN, torch.randn(32, 1, 28, 28))}
    steps = {}
    for name, (cls, data) in models.items():
        target = torch.randint(0, 10, (data.shape[0],))
        ddp = {}
        for b in BACKENDS:
            torch.manual_seed(0)
            ddp[b] = nn.parallel.DistributedDataParallel(cls(), process_group=groups[b])
        for k in range(rounds):
            for b in (BACKENDS if k % 2 == 0 else BACKENDS[::-1]):
                steps.setdefault((name, b), []).append(ddp_step_time(ddp[b], data, target, gloo))
        steps[(name, "batch")] = data.shape[0]
    if rank == 0:
        write(out, world, rounds, samples, steps)


def write(out, world, rounds, samples, steps):
    os.makedirs(out, exist_ok=True)
    factor = 2 * (world - 1) / world if world > 1 else 1.0
    rows = []
    with open(os.path.join(out, "allreduce.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["bytes", "backend", "median_us", "busbw_GBps", "samples_us"])
        for n in SIZES:
            med = {}
            for b in BACKENDS:
                s = samples[(b, n)]
                med[b] = statistics.median(s)
                w.writerow([n, b, f"{med[b] * 1e6:.2f}", f"{n / med[b] * factor / 1e9:.4f}",
                            " ".join(f"{x * 1e6:.2f}" for x in s)])
            rows.append((n, med["tutti"], med["gloo"]))
    with open(os.path.join(out, "ddp.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "backend", "batch_per_rank", "median_step_ms", "images_per_s", "samples_ms"])
        for name in ("mlp", "cnn"):
            for b in BACKENDS:
                s = steps[(name, b)]
                m = statistics.median(s)
                w.writerow([name, b, steps[(name, "batch")], f"{m * 1e3:.3f}",
                            f"{steps[(name, 'batch')] * world / m:.0f}", " ".join(f"{x * 1e3:.3f}" for x in s)])
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(f"all_reduce float32 SUM, {world} ranks, median of {rounds} interleaved rounds (slowest rank)\n\n")
        f.write("| bytes | tutti µs | gloo µs | tutti busbw GB/s | gloo busbw GB/s | gloo / tutti |\n")
        f.write("|---:|---:|---:|---:|---:|---:|\n")
        for n, t, g in rows:
            f.write(f"| {n} | {t * 1e6:.1f} | {g * 1e6:.1f} | {n / t * factor / 1e9:.3f} | {n / g * factor / 1e9:.3f} | "
                    f"{g / t:.2f} |\n")
        f.write(f"\nDDP training step, {world} ranks, median of {rounds} bursts of 20 steps\n\n")
        f.write("| model | batch per rank | tutti ms | gloo ms | tutti images/s | gloo images/s | gloo / tutti |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|\n")
        for name in ("mlp", "cnn"):
            t = statistics.median(steps[(name, "tutti")])
            g = statistics.median(steps[(name, "gloo")])
            b = steps[(name, "batch")]
            f.write(f"| {name} | {b} | {t * 1e3:.2f} | {g * 1e3:.2f} | {b * world / t:.0f} | {b * world / g:.0f} | "
                    f"{g / t:.2f} |\n")
    print(open(os.path.join(out, "table.md")).read())


def rank_main(rank, world, port, out, rounds):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("tutti", rank=rank, world_size=world)
    bench(rank, world, out, rounds)
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1]
    args = sys.argv[2:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
    if "RANK" in os.environ:
        dist.init_process_group("tutti")
        bench(dist.get_rank(), dist.get_world_size(), out, rounds)
        dist.destroy_process_group()
    else:
        world = int(args[args.index("--world") + 1]) if "--world" in args else 2
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integrations", "torch", "tests"))
        from harness import free_port
        mp.spawn(rank_main, args=(world, free_port(), out, rounds), nprocs=world, join=True)
