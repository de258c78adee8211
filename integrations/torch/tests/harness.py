"""What the torch backend's tests share: a free port for torch's store, and a world of ranks as
processes (torch.multiprocessing, spawn) whose failures come back as text.

    failures = run_world(rank_main, world, args, limit_s)  # rank_main(rank, world, *args, failures)

Each rank puts its traceback on `failures` when it raises; run_world joins every rank within
limit_s (killing the rest) and returns a list of what went wrong, empty when every rank ended
cleanly."""
import socket
import traceback

import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _guarded(target, rank, world, args, failures):
    try:
        target(rank, world, *args)
    except BaseException:
        failures.put(f"rank {rank} of {world}:\n{traceback.format_exc()}")


def run_world(target, world, args=(), limit_s=120.0):
    ctx = mp.get_context("spawn")
    failures = ctx.Queue()
    procs = [ctx.Process(target=_guarded, args=(target, r, world, args, failures)) for r in range(world)]
    for p in procs:
        p.start()
    problems = []
    for r, p in enumerate(procs):
        p.join(limit_s)
        if p.is_alive():
            p.kill()
            p.join()
            problems.append(f"rank {r} of {world}: still running after {limit_s:.0f} s (killed)")
        elif p.exitcode != 0:
            problems.append(f"rank {r} of {world}: exit code {p.exitcode}")
    while not failures.empty():
        problems.append(failures.get())
    return problems
