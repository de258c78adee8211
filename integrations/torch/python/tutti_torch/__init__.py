"""tutti as a torch.distributed backend: ``import tutti_torch`` registers the backend "tutti".

    import torch.distributed as dist
    import tutti_torch  # noqa: F401
    dist.init_process_group("tutti", ...)

and DDP's gradients through one of tutti's codecs (docs/pytorch.md):

    ddp.register_comm_hook(None, tutti_torch.codec_hook("fp16"))

The group's transport is shared memory on one host and multi_node (shm inside each host, UCX
between) across hosts, chosen from where the ranks are; collectives run in call order on the
group's worker thread and their Work completes when they have run.
"""
import inspect

import torch.distributed as dist

from ._tutti_torch import codec_allreduce, make_process_group

CODECS = ("fp16", "bf16", "int8", "topk", "onebit")


def _create(store, rank, world_size, timeout):
    return make_process_group(store, rank, world_size, timeout)


def codec_hook(codec):
    """A DDP communication hook averaging each bucket's gradients with tutti's compressed allreduce
    through `codec` (fp16, bf16, int8; topk and onebit with error feedback, one residual per bucket),
    inside tutti's schedule: each element is encoded once on the way in and once on the way out,
    whatever the world size, within the codec's written bound (docs/compression.md) -- not a cast
    followed by an exact allreduce. Register with ``ddp.register_comm_hook(group_or_None, hook)``;
    the group must be a "tutti" one (None: the default group)."""
    if codec not in CODECS:
        raise ValueError(f"tutti: codec_hook: unknown codec {codec!r} (one of {', '.join(CODECS)})")

    def hook(group, bucket):
        pg = group if group is not None else dist.distributed_c10d._get_default_group()
        work = codec_allreduce(pg, bucket.buffer(), codec, bucket.index())
        return work.get_future().then(lambda fut: fut.value()[0])

    hook.__name__ = f"tutti_{codec}_hook"
    return hook


# torch 2 asks which devices a backend serves (a warning otherwise); 1.13's register_backend has no such argument.
if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
    dist.Backend.register_backend("tutti", _create, devices=["cpu"])
else:
    dist.Backend.register_backend("tutti", _create)
