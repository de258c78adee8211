"""torch.distributed on the "tutti" backend against a reference computed here.

    PYTHONPATH=<build>/integrations/torch/python python3 collectives_test.py
        worlds of 1-4 ranks on this host, each a set of processes (harness.run_world); every rank
        checks its own results and the parent that every rank ended cleanly;
    RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. python3 collectives_test.py
        one rank of a job started torchrun-style (across_hosts.sh: 2 x 2 ranks on namespace hosts);
        it prints "rank R: every collective ... as the reference" when its checks pass."""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import tutti_torch  # noqa: F401  (registers the backend)
from harness import free_port, run_world

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8, torch.int8]
OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX,
       "product": dist.ReduceOp.PRODUCT}
COUNTS = [0, 1, 1009, 65537]


def value(rank, n, dtype):
    """Small integers, exact in every dtype and under every op for up to 4 ranks."""
    v = (torch.arange(n, dtype=torch.int64) + rank) % 3 + 1
    return v.to(dtype)


def reference(world, n, dtype, op):
    vals = torch.stack([value(r, n, dtype).to(torch.float64) for r in range(world)])
    if op == "sum":
        out = vals.sum(0)
    elif op == "avg":
        out = vals.sum(0) / world
    elif op == "min":
        out = vals.min(0).values
    elif op == "max":
        out = vals.max(0).values
    else:
        out = vals.prod(0)
    return out


def check(got, want, what, tol=0.0):
    """Exact, but for avg (a quotient: within `tol` of the largest value, the dtype's rounding)."""
    got = got.to(torch.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}")
    if want.numel() and (got - want).abs().max().item() > tol * max(1.0, want.abs().max().item()):
        raise AssertionError(f"{what}: got {got[:8].tolist()} want {want[:8].tolist()}")


def rows_sent(src, dst):
    """How many rows rank `src` sends rank `dst` in the unequal all_to_all_single: 0 to 4, skewed."""
    return (3 * src + dst) % 5


def block(src, dst, dtype):
    """The rows `src` sends `dst`: 3 columns, values naming both ranks and the row."""
    n = rows_sent(src, dst)
    rows = torch.arange(n, dtype=torch.int64).unsqueeze(1) * 3 + torch.arange(3, dtype=torch.int64)
    return ((rows + 10 * src + 50 * dst) % 120).to(dtype)


def check_unequal_alltoall(rank, world):
    """all_to_all_single with unequal split sizes against the blocks it must deliver; disagreeing
    split sizes fail on every rank, naming the pair on the rank that sees it."""
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8):
        src = torch.cat([block(rank, k, dtype) for k in range(world)])
        dst = torch.empty(sum(rows_sent(r, rank) for r in range(world)), 3, dtype=dtype)
        dist.all_to_all_single(dst, src, [rows_sent(r, rank) for r in range(world)],
                               [rows_sent(rank, k) for k in range(world)])
        check(dst, torch.cat([block(r, rank, dtype) for r in range(world)]).to(torch.float64),
              f"all_to_all_single unequal {dtype}")
    if world > 1:
        # Rank 0 expects one row too many from the last rank; everyone else is right.
        expect = [rows_sent(r, rank) for r in range(world)]
        if rank == 0:
            expect[-1] += 1
        dst = torch.empty(sum(expect), 3)
        src = torch.cat([block(rank, k, torch.float32) for k in range(world)])
        try:
            dist.all_to_all_single(dst, src, expect, [rows_sent(rank, k) for k in range(world)])
            raise AssertionError("disagreeing split sizes were not refused")
        except RuntimeError as e:
            assert f"tutti: rank {rank}: all_to_all_single: the ranks' split sizes disagree, nothing was moved" in str(e), str(e)
            if rank == 0:
                assert (f"rank {world - 1} sends {rows_sent(world - 1, 0)} rows here, output_split_sizes expects "
                        f"{rows_sent(world - 1, 0) + 1}") in str(e), str(e)
        try:
            dist.all_to_all_single(torch.empty(world + 1), torch.ones(world + 1), [1] * world, [1] * world)
            raise AssertionError("split sizes that do not add up were not refused")
        except RuntimeError as e:
            assert f"tutti: rank {rank}: all_to_all_single: input_split_sizes add up to {world} rows" in str(e), str(e)


def check_rooted_and_lists(rank, world):
    """gather, scatter (every root) and the list form of reduce_scatter against the reference."""
    for dtype in (torch.float32, torch.int32, torch.float16):
        for n in (0, 1, 1009):
            for root in range(world):
                outs = [torch.empty(n, dtype=dtype) for _ in range(world)] if rank == root else None
                dist.gather(value(rank, n, dtype), outs, dst=root)
                if rank == root:
                    for r in range(world):
                        check(outs[r], value(r, n, dtype).to(torch.float64), f"gather {dtype} n={n} to {root} from {r}")
                got = torch.empty(n, dtype=dtype)
                dist.scatter(got, [value(root + 10 * k, n, dtype) for k in range(world)] if rank == root else None,
                             src=root)
                check(got, value(root + 10 * rank, n, dtype).to(torch.float64), f"scatter {dtype} n={n} from {root}")
            part = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(part, [value(rank + k, n, dtype) for k in range(world)], op=dist.ReduceOp.SUM)
            want = sum(value(r + rank, n, dtype).to(torch.float64) for r in range(world))
            check(part, want, f"reduce_scatter {dtype} n={n}")


def check_point_to_point(rank, world):
    """send/recv around a ring (blocking, then isend/irecv through batch_isend_irecv: every rank
    sends before it receives), two tags in order between two ranks, and bad peers refused."""
    if world == 1:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    for dtype in (torch.float32, torch.int64, torch.float16, torch.uint8):
        for n in (0, 1, 1009, 1 << 18):
            got = torch.empty(n, dtype=dtype)
            if rank % 2 == 0:
                dist.send(value(rank, n, dtype), dst=right, tag=3)
                dist.recv(got, src=left, tag=3)
            else:
                dist.recv(got, src=left, tag=3)
                dist.send(value(rank, n, dtype), dst=right, tag=3)
            check(got, value(left, n, dtype).to(torch.float64), f"send/recv {dtype} n={n} from {left}")
            got = torch.empty(n, dtype=dtype)
            mine = value(rank + 100, n, dtype)
            works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, right), dist.P2POp(dist.irecv, got, left)])
            for w in works:
                w.wait()
            check(got, value(left + 100, n, dtype).to(torch.float64), f"batch_isend_irecv {dtype} n={n} from {left}")
    if rank == 0:
        a, b = torch.full((10,), 1.0), torch.full((20,), 2.0)
        works = [dist.isend(a, 1, tag=11), dist.isend(b, 1, tag=12)]
        for w in works:
            w.wait()
    elif rank == 1:
        a, b = torch.empty(10), torch.empty(20)
        works = [dist.irecv(a, 0, tag=11), dist.irecv(b, 0, tag=12)]
        for w in works:
            w.wait()
        check(a, torch.full((10,), 1.0, dtype=torch.float64), "tag 11")
        check(b, torch.full((20,), 2.0, dtype=torch.float64), "tag 12")
    for call, words in ((lambda: dist.send(torch.ones(2), dst=rank), f"send: dst={rank} is not another rank"),
                        (lambda: dist.recv(torch.ones(2)), "recv: a receive from any source is not supported")):
        try:
            call()
            raise AssertionError(f"not refused: {words}")
        except ValueError as e:  # torch 2 refuses a send to this rank itself before the backend sees it
            assert "destination rank should not be the same" in str(e), str(e)
        except RuntimeError as e:
            assert f"tutti: rank {rank}: {words}" in str(e), str(e)


def rank_main(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("tutti", rank=rank, world_size=world)
    check_collectives(rank, world)
    dist.destroy_process_group()


def rendezvous_main(rank, world, form, where):
    """One rank joining by tcp:// or through a Store it was handed (FileStore), then a few calls."""
    if form == "tcp":
        dist.init_process_group("tutti", init_method=f"tcp://127.0.0.1:{where}", rank=rank, world_size=world)
    else:
        dist.init_process_group("tutti", store=dist.FileStore(where, world), rank=rank, world_size=world)
    t = value(rank, 1009, torch.float32)
    dist.all_reduce(t)
    check(t, reference(world, 1009, torch.float32, "sum"), f"all_reduce after {form} rendezvous")
    t = value(rank, 17, torch.int64)
    dist.broadcast(t, src=world - 1)
    check(t, value(world - 1, 17, torch.int64).to(torch.float64), f"broadcast after {form} rendezvous")
    dist.barrier()
    dist.destroy_process_group()


def check_collectives(rank, world):
    for dtype in DTYPES:
        for n in COUNTS:
            for name, op in OPS.items():
                if name == "avg" and not dtype.is_floating_point:
                    continue
                t = value(rank, n, dtype)
                dist.all_reduce(t, op=op)
                tol = 1e-2 if name == "avg" and dtype in (torch.float16, torch.bfloat16) else 1e-12 if name == "avg" else 0.0
                check(t, reference(world, n, dtype, name), f"all_reduce {dtype} n={n} {name}", tol)
            t = value(rank, n, dtype)
            dist.broadcast(t, src=world - 1)
            check(t, value(world - 1, n, dtype).to(torch.float64), f"broadcast {dtype} n={n}")
            outs = [torch.empty(n, dtype=dtype) for _ in range(world)]
            dist.all_gather(outs, value(rank, n, dtype))
            for r in range(world):
                check(outs[r], value(r, n, dtype).to(torch.float64), f"all_gather {dtype} n={n} from {r}")
            flat = torch.empty(n * world, dtype=dtype)
            dist.all_gather_into_tensor(flat, value(rank, n, dtype))
            check(flat, torch.cat([value(r, n, dtype) for r in range(world)]).to(torch.float64), f"all_gather_into_tensor {dtype} n={n}")
            full = torch.cat([value(rank + k, n, dtype) for k in range(world)])
            part = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(part, full, op=dist.ReduceOp.SUM)
            want = sum(value(r + rank, n, dtype).to(torch.float64) for r in range(world))
            check(part, want, f"reduce_scatter_tensor {dtype} n={n}")
            t = value(rank, n, dtype)
            dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
            if rank == 0:
                check(t, reference(world, n, dtype, "max"), f"reduce {dtype} n={n}")
            if n:  # all_to_all_single: block k of rank r's input goes to rank k
                src = torch.cat([value(rank * world + k, n, dtype) for k in range(world)])
                dst = torch.empty_like(src)
                dist.all_to_all_single(dst, src)
                check(dst, torch.cat([value(r * world + rank, n, dtype) for r in range(world)]).to(torch.float64),
                      f"all_to_all_single {dtype} n={n}")
                outs = [torch.empty(n, dtype=dtype) for _ in range(world)]
                dist.all_to_all(outs, [value(rank * world + k, n, dtype) for k in range(world)])
                for r in range(world):
                    check(outs[r], value(r * world + rank, n, dtype).to(torch.float64), f"all_to_all {dtype} n={n} from {r}")
    check_unequal_alltoall(rank, world)
    check_rooted_and_lists(rank, world)
    check_point_to_point(rank, world)
    work = dist.all_reduce(torch.ones(4), async_op=True)
    work.wait()
    dist.barrier()
    try:
        dist.all_reduce(torch.ones(4, 4).t())
        raise AssertionError("a non-contiguous tensor was not refused")
    except RuntimeError as e:
        assert f"tutti: rank {rank}: allreduce: the tensor must be contiguous" in str(e), str(e)


if __name__ == "__main__":
    if "RANK" in os.environ:  # one rank of a torchrun-style job
        dist.init_process_group("tutti")
        rank, world = dist.get_rank(), dist.get_world_size()
        check_collectives(rank, world)
        dist.destroy_process_group()
        print(f"rank {rank}: every collective, dtype and op as the reference ({world} ranks)", flush=True)
        sys.exit(0)
    for world in range(1, 5):
        problems = run_world(rank_main, world, (free_port(),), 120.0)
        if problems:
            print(f"world {world}: FAILED\n" + "\n".join(problems), file=sys.stderr)
            sys.exit(1)
        print(f"world {world}: every collective, dtype and op as the reference", flush=True)
    with tempfile.TemporaryDirectory() as d:  # torch's other rendezvous: tcp://, and a Store passed in
        for form, where in (("tcp", free_port()), ("store", os.path.join(d, "store"))):
            problems = run_world(rendezvous_main, 3, (form, where), 120.0)
            if problems:
                print(f"rendezvous {form}: FAILED\n" + "\n".join(problems), file=sys.stderr)
                sys.exit(1)
            print(f"rendezvous {form}: 3 ranks joined and reduced", flush=True)
    print("collectives_test: passed")
