"""Where this process stands in a job: its rank and the world size, read from the environment
before (and without) MPI.

A process started by ``oar.distributed.launch`` (or ``oar-launch``) has ``PADDLE_TRAINER_ID`` and
``PADDLE_TRAINERS_NUM`` set, as Paddle's launcher sets them; one started by a bare ``mpiexec``
has MPICH's ``PMI_RANK``/``PMI_SIZE`` or Open MPI's ``OMPI_COMM_WORLD_RANK``/``_SIZE``. Anything
else -- ``python train.py`` -- is a job of one process, which never imports mpi4py.
"""

from __future__ import annotations

import os

from oar.errors import ArgumentError

# (rank variable, size variable), in the order they are trusted.
_LAUNCH_VARIABLES = (
    ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"),
    ("PMI_RANK", "PMI_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ArgumentError(f"oar.distributed: environment variable {name}={value!r} is not an int") from None


def launched_rank_and_size() -> tuple[int, int]:
    """``(rank, world_size)`` as the launcher's environment says, ``(0, 1)`` without one.

    >>> launched_rank_and_size() if "PMI_SIZE" not in os.environ else (0, 1)
    (0, 1)
    """
    for rank_name, size_name in _LAUNCH_VARIABLES:
        size = _env_int(size_name)
        if size is not None:
            rank = _env_int(rank_name) or 0
            return rank, size
    return 0, 1


def launched_with_mpi() -> bool:
    """Whether this process belongs to a job of several processes, whose collectives need MPI."""
    return launched_rank_and_size()[1] > 1


class ParallelEnv:
    """This process's place in the job, as ``paddle.distributed.ParallelEnv``: ``rank``,
    ``world_size`` (also ``local_rank`` and ``nranks``, Paddle's older names), ``device_id`` and
    ``device_type``, read from the launcher's environment.

    >>> from oar.distributed import ParallelEnv
    >>> env = ParallelEnv()
    >>> (env.rank, env.world_size) if "PMI_SIZE" not in os.environ else (0, 1)
    (0, 1)
    """

    def __init__(self):
        self._rank, self._world_size = launched_rank_and_size()
        local = _env_int("PADDLE_LOCAL_RANK")
        self._device_id = local if local is not None else 0

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    local_rank = rank
    nranks = world_size

    @property
    def device_id(self) -> int:
        return self._device_id

    dev_id = device_id

    @property
    def device_type(self) -> str:
        return "cpu"

    @property
    def current_endpoint(self) -> str:
        return os.environ.get("PADDLE_CURRENT_ENDPOINT", "")

    @property
    def trainer_endpoints(self) -> list[str]:
        value = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        return value.split(",") if value else []

    @property
    def nrings(self) -> int:
        return 1
