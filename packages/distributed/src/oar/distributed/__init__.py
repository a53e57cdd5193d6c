"""``oar.distributed``: Paddle's collective data-parallel training on MPI (mpi4py + MPICH).

Start a job with the launcher, which runs one process per rank through ``mpiexec``::

    python -m oar.distributed.launch --nproc_per_node 2 train.py     # or: oar-launch ...

and in ``train.py`` write Paddle's code::

    import oar as paddle, oar.distributed as dist
    dist.init_parallel_env()
    model = paddle.DataParallel(model)          # same start, gradients averaged over the ranks
    sampler = paddle.io.DistributedBatchSampler(dataset, batch_size=32, shuffle=True)

A plain ``python train.py`` is a job of one process and needs no MPI. Every collective waits
with a deadline: a rank that never arrives makes the others raise ``CollectiveTimeoutError``
naming the collective, its line and the missing ranks, not hang. ``docs/distributed.md`` has
one machine, several machines and what to do when a job hangs.

>>> import oar.distributed as dist
>>> dist.get_rank(), dist.get_world_size()
(0, 1)
"""

from oar.distributed import fleet, launch
from oar.distributed._backend import Backend, Call, SingleProcessBackend, Work
from oar.distributed._checkpoint import load_merged_state_dict, load_state_dict, save_state_dict
from oar.distributed._collective import (
    CollectiveMismatchError,
    CollectiveTimeoutError,
    Group,
    ReduceOp,
    Task,
    all_gather,
    all_gather_object,
    all_reduce,
    alltoall,
    alltoall_single,
    barrier,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    get_backend,
    get_group,
    get_rank,
    get_world_size,
    init_parallel_env,
    irecv,
    is_available,
    is_initialized,
    isend,
    new_group,
    recv,
    recv_object_list,
    reduce,
    reduce_scatter,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
    wait,
)
from oar.distributed._env import ParallelEnv
from oar.distributed._parallel import DataParallel

__all__ = [
    "init_parallel_env", "is_initialized", "is_available", "get_rank", "get_world_size", "get_backend", "ParallelEnv",
    "new_group", "get_group", "destroy_process_group", "Group", "ReduceOp", "Task",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_object", "gather", "scatter", "reduce_scatter",
    "alltoall", "alltoall_single", "send", "recv", "send_object_list", "recv_object_list", "isend", "irecv", "barrier", "wait", "broadcast_object_list", "scatter_object_list",
    "DataParallel", "fleet", "launch", "save_state_dict", "load_state_dict",
    "load_merged_state_dict", "CollectiveTimeoutError", "CollectiveMismatchError",
    "Backend", "Work", "Call", "SingleProcessBackend",
]
