"""The DDP communication hook (tutti_torch.codec_hook) on the "tutti" backend, 3 ranks on this host.

 1. Each bounded codec's average, element by element, within its written bound (docs/compression.md:
    each contribution x_i/n encoded once, the fp32 sum encoded once): fp16 and bf16 half an ulp at
    each (2^-11, 2^-8 of |v|; fp16's subnormals 2^-25), int8 half a quantisation step of each 256-element block (block max /
    254). The error must also be non-zero: the data really went through the codec.
 2. Error feedback (topk, onebit): the same gradient every step. topk: the running sum of the
    outputs stays within a bounded distance of T times the exact average (what was not sent waits
    in the residual), so that distance must not grow from 100 to 400 steps. onebit contracts far more
    slowly (sign and one scale per chunk), so its running mean must converge instead: its error
    after 400 steps under 0.8 of that after 100. Without error feedback neither holds (the error of
    the running mean stays what one step's is).
 3. DDP with the fp16 hook: an MLP trained 3 x 5 steps ends within 1e-3 of DDP without a hook, and
    not bit-identical to it (the hook ran).
 4. A bucket of float64 is refused naming the rank and the codec."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import tutti_torch
from harness import free_port, run_world

WORLD = 3
N = 10007  # prime: a partial int8 block at the end


def grads(rank, n=N):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(n, generator=g) * torch.logspace(-3, 3, n)  # six decades of magnitude


def block_max(v, block=256):
    pad = (-v.numel()) % block
    m = torch.nn.functional.pad(v.abs(), (0, pad)).view(-1, block).max(1).values
    return m.repeat_interleave(block)[: v.numel()]


def bound(codec, contributions, exact):
    """The written bound: every contribution's one encoding plus the sum's, each at its own value."""
    if codec in ("fp16", "bf16"):  # half an ulp at v, or of the subnormals' spacing (codec/float16.hpp)
        ulp, floor = (2.0 ** -11, 2.0 ** -25) if codec == "fp16" else (2.0 ** -8, 2.0 ** -134)
        one = lambda v: torch.clamp(v.abs() * ulp, min=floor)  # noqa: E731
        return (sum(one(c) for c in contributions) + one(exact)) * 1.001
    return (sum(block_max(c) for c in contributions) + block_max(exact)) / 254 * 1.001


def rank_main(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("tutti", rank=rank, world_size=world)
    pg = dist.distributed_c10d._get_default_group()
    contributions = [grads(r).double() / world for r in range(world)]
    exact = sum(contributions)

    for codec in ("fp16", "bf16", "int8"):  # 1.
        t = grads(rank)
        tutti_torch.codec_allreduce(pg, t, codec, 0).wait()
        err = (t.double() - exact).abs()
        b = bound(codec, contributions, exact)
        worst = (err / b).max().item()
        assert worst <= 1.0, f"{codec}: {int((err > b).sum())} elements outside the bound (worst {worst:.3g} of it)"
        assert err.max().item() > 0, f"{codec}: the average is exact: the codec did not run"
        if rank == 0:
            print(f"{codec}: within the written bound (largest error {worst:.3g} of it)", flush=True)

    for codec in ("topk", "onebit"):  # 2.
        g = torch.randn(1000, generator=torch.Generator().manual_seed(2000 + rank))  # one decade, not six
        avg = sum(torch.randn(1000, generator=torch.Generator().manual_seed(2000 + r)).double() for r in range(world)) / world
        total, gap = torch.zeros(1000, dtype=torch.float64), {}
        for step in range(1, 401):
            t = g.clone()
            tutti_torch.codec_allreduce(pg, t, codec, 7).wait()
            total += t.double()
            if step in (100, 400):
                gap[step] = (total - step * avg).abs().max().item()
        ref = avg.abs().max().item()
        if codec == "topk":  # exact values, a few per chunk each step: the residual settles quickly
            assert gap[400] <= 1.5 * gap[100] + 1e-6 * ref, f"topk: the running sum drifts: {gap[100]:.3g} at 100 steps, {gap[400]:.3g} at 400"
        else:  # sign and one scale per chunk contract slowly (by ~1/chunk): the running mean must still converge
            assert gap[400] / 400 < 0.8 * gap[100] / 100, f"onebit: the running mean does not converge: {gap[100] / 100:.3g} off after 100 steps, {gap[400] / 400:.3g} after 400"
        if rank == 0:
            print(f"{codec}: running sum within {gap[100]:.3g} of the exact one after 100 steps, {gap[400]:.3g} after 400",
                  flush=True)

    def train(hook):  # 3.
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)
        if hook:
            ddp.register_comm_hook(None, tutti_torch.codec_hook(hook))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(100 + rank)
        for _ in range(5):
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            opt.zero_grad()
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    plain, hooked = train(None), train("fp16")
    diff = (plain - hooked).abs().max().item()
    assert 0 < diff < 1e-3, f"DDP with the fp16 hook ends {diff:.3g} from DDP without it"
    if rank == 0:
        print(f"DDP with the fp16 hook: within {diff:.3g} of DDP without it after 5 steps", flush=True)

    try:  # 4.
        tutti_torch.codec_allreduce(pg, torch.ones(8, dtype=torch.float64), "int8", 0)
        raise AssertionError("a float64 bucket was not refused")
    except RuntimeError as e:
        assert f"tutti: rank {rank}: codec hook: codec int8 carries float32 gradients" in str(e), str(e)
    dist.destroy_process_group()


if __name__ == "__main__":
    problems = run_world(rank_main, WORLD, (free_port(),), 300.0)
    if problems:
        print("hook_test: FAILED\n" + "\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print("hook_test: passed")
