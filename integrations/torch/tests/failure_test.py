"""Failures on the "tutti" backend: a rank SIGKILLed makes the other's all_reduce (or recv from it)
raise, naming it, within seconds; a rank that stays away makes the other's wait() raise at the
group's timeout (2 s); a wait(timeout) shorter than the collective raises at that timeout and the
collective goes on, completing once the late rank comes (torch's semantics)."""
import datetime
import os
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import tutti_torch  # noqa: F401
from harness import free_port


def rank_main(rank, port, scenario, results):
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("tutti", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=2))
        dist.all_reduce(torch.ones(8))
        if scenario == "short_wait":  # a wait(timeout) shorter than the collective: torch's semantics
            if rank == 1:
                time.sleep(1.0)
                dist.all_reduce(torch.ones(8))
                time.sleep(1.0)
                os._exit(0)
            work = dist.all_reduce(torch.ones(8), async_op=True)
            t0 = time.monotonic()
            try:
                work.wait(timeout=datetime.timedelta(milliseconds=200))
                what = "the short wait returned before rank 1 came"
            except RuntimeError as e:
                what = f"short wait raised after {time.monotonic() - t0:.1f} s ({e}); "
            took = time.monotonic() - t0
            work.wait()  # the collective went on running: it completes once rank 1 comes
            what += f"then completed with {work.result()[0][0].item():g}"
            results.put((scenario, what, took))
            results.close()
            results.join_thread()
            os._exit(0)
        if rank == 1:
            if scenario.startswith("killed"):
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(6)  # away: never calls the next collective
            os._exit(0)
        time.sleep(0.5)
        t0 = time.monotonic()
        try:
            if scenario.endswith("recv"):
                dist.irecv(torch.ones(1 << 16), src=1).wait()
            else:
                dist.all_reduce(torch.ones(1 << 16), async_op=True).wait()
            results.put((scenario, "no error", 0.0))
        except RuntimeError as e:
            results.put((scenario, str(e), time.monotonic() - t0))
        results.close()
        results.join_thread()  # the queue's feeder thread sends it before the process leaves
        os._exit(0)
    except BaseException:
        results.put((scenario, "crashed: " + traceback.format_exc(), 0.0))


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    ok = True
    for scenario, want, limit in (("killed", "rank 1", 10.0), ("away", "deadline", 10.0),
                                  ("killed_recv", "recv from rank 1 (tag 0, 262144 bytes): rank 0: receive", 10.0),
                                  ("away_recv", "not matched by the peer before the deadline", 10.0),
                                  ("short_wait", "then completed with 2", 0.9)):
        results = ctx.Queue()
        port = free_port()
        procs = [ctx.Process(target=rank_main, args=(r, port, scenario, results)) for r in range(2)]
        for p in procs:
            p.start()
        try:
            _, what, took = results.get(timeout=60)
        except Exception:
            what, took = "no result within 60 s", 0.0
        for p in procs:
            p.join(20)
            if p.is_alive():
                p.kill()
        passed = want in what and took < limit
        ok = ok and passed
        print(f"{scenario}: {'passed' if passed else 'FAILED'} after {took:.1f} s: {what[:300]}", flush=True)
    sys.exit(0 if ok else 1)
