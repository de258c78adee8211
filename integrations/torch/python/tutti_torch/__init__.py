"""tutti as a torch.distributed backend: ``import tutti_torch`` registers the backend "tutti".

    import torch.distributed as dist
    import tutti_torch  # noqa: F401
    dist.init_process_group("tutti", ...)

First slice (docs/pytorch.md): one host, shared memory; collectives run in call order on the
group's worker thread and their Work completes when they have run.
"""
import torch.distributed as dist

from ._tutti_torch import make_process_group


def _create(store, rank, world_size, timeout):
    return make_process_group(store, rank, world_size, timeout)


dist.Backend.register_backend("tutti", _create)
