"""DistributedDataParallel, unchanged, on the "tutti" backend: the same MLP trained 2 x 5 steps
with DDP over "tutti" and over "gloo" ends with the same parameters within fp32 rounding, and
they differ from each rank's own (unsynchronised) training, so the test can fail.

With RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (torchrun-style; across_hosts.sh), this
process is one rank: it trains on tutti (MASTER_PORT) and on gloo (MASTER_PORT + 1) and checks
that its own parameters agree within 1e-6."""
import os
import sys
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import tutti_torch  # noqa: F401
from harness import free_port


def train(backend, rank, world, port, steps=5):
    """backend None: this rank alone, no DDP (what the synchronised runs must differ from)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = model
    if backend:
        os.environ.update(MASTER_ADDR=os.environ.get("MASTER_ADDR", "127.0.0.1"), MASTER_PORT=str(port))
        dist.init_process_group(backend, rank=rank, world_size=world)
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    for _ in range(steps):
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    if backend:
        dist.destroy_process_group()
    return params.tolist()  # plain numbers through the queue, not a tensor in shared memory


def rank_main(rank, world, ports, results, failures):
    try:
        results.put((rank, "tutti", train("tutti", rank, world, ports[0])))
        results.put((rank, "gloo", train("gloo", rank, world, ports[1])))
    except BaseException:
        failures.put(f"rank {rank}:\n{traceback.format_exc()}")


if __name__ == "__main__":
    if "RANK" in os.environ:  # one rank of a torchrun-style job
        rank, world, port = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["MASTER_PORT"])
        on_tutti = torch.tensor(train("tutti", rank, world, port))
        on_gloo = torch.tensor(train("gloo", rank, world, port + 1))
        diff = (on_tutti - on_gloo).abs().max().item()
        if diff > 1e-6:
            print(f"rank {rank}: FAILED: DDP on tutti differs from DDP on gloo by {diff}", file=sys.stderr)
            sys.exit(1)
        print(f"rank {rank}: DDP on tutti equals DDP on gloo within 1e-6 ({world} ranks; largest difference {diff:.3g})")
        sys.exit(0)
    ctx = mp.get_context("spawn")
    world = 2
    results, failures = ctx.Queue(), ctx.Queue()
    ports = (free_port(), free_port())
    procs = [ctx.Process(target=rank_main, args=(r, world, ports, results, failures)) for r in range(world)]
    for p in procs:
        p.start()
    got = {}
    for _ in range(2 * world):
        try:
            rank, backend, params = results.get(timeout=180)
        except Exception:
            break
        got[(rank, backend)] = params
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    msgs = []
    while not failures.empty():
        msgs.append(failures.get())
    if msgs or len(got) != 2 * world:
        print("ddp_test: FAILED\n" + "\n".join(msgs), file=sys.stderr)
        sys.exit(1)
    ref = torch.tensor(got[(0, "gloo")])
    for (rank, backend), params in got.items():
        diff = (torch.tensor(params) - ref).abs().max().item()
        if diff > 1e-6:
            print(f"ddp_test: FAILED: rank {rank} on {backend} differs from gloo's rank 0 by {diff}", file=sys.stderr)
            sys.exit(1)
    alone = (torch.tensor(train(None, 0, world, 0)) - ref).abs().max().item()
    if alone < 1e-4:
        print(f"ddp_test: FAILED: training alone ends as close as {alone} to DDP's: the test cannot tell", file=sys.stderr)
        sys.exit(1)
    print(f"ddp_test: passed ({world} ranks, every rank's parameters on tutti equal gloo's within 1e-6; "
          f"rank 0 alone would differ by {alone:.3g})")
