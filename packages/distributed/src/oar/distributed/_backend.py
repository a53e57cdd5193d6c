"""The collective backend: what ``oar.distributed``'s collectives need from an engine.

A backend moves numpy arrays between the processes of a job. Each operation starts and returns
a ``Work`` whose ``test()`` says whether it has finished; the collective layer above
(``oar.distributed._collective``) waits on it with a deadline, so that a hung collective becomes
an error instead of a hang, and asks the backend who arrived (``arrivals``) when it times out.
Arrays are C-contiguous; an operation writes its result into the arrays it was given.

Two backends come with oar-distributed: ``SingleProcessBackend`` (a job of one process: no
engine at all) and ``MPIBackend`` (``oar.distributed._mpi``, mpi4py over MPICH). A GPU plugin adds
another (NCCL) by implementing this protocol; nothing above it changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

REDUCE_OPS = ("SUM", "MAX", "MIN", "PROD", "AVG")


@dataclass
class Call:
    """One collective as its caller made it: what the timeout and debug messages say."""

    name: str  # "all_reduce"
    group_ranks: tuple[int, ...]  # global ranks of the group, in group order
    group_key: int  # the same number on every rank for the same group
    seq: int  # how many collectives this rank called on this group before this one
    site: str  # "train.py:42", the user's line
    details: dict = field(default_factory=dict)  # shape, dtype, op, root: what every rank must agree on

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.details.items())
        return f"{self.name}({extra}) #{self.seq} at {self.site}"


class Work(Protocol):
    def test(self) -> bool:
        """True once the operation has finished (and drives it forward: MPI progresses in tests)."""


class Backend(Protocol):
    name: str
    rank: int  # this process's global rank
    world_size: int

    def new_group(self, ranks: list[int]) -> Any:
        """A communicator over the global ``ranks``, or None on a rank outside them."""

    def world(self) -> Any:
        """The communicator of every process."""

    def all_reduce(self, comm, array: np.ndarray, op: str) -> Work: ...
    def broadcast(self, comm, array: np.ndarray, root: int) -> Work: ...
    def reduce(self, comm, array: np.ndarray, op: str, root: int) -> Work: ...
    def all_gather(self, comm, send: np.ndarray, recv: np.ndarray) -> Work: ...
    def gather(self, comm, send: np.ndarray, recv: np.ndarray | None, root: int) -> Work: ...
    def scatter(self, comm, send: np.ndarray | None, recv: np.ndarray, root: int) -> Work: ...
    def reduce_scatter(self, comm, send: np.ndarray, recv: np.ndarray, op: str) -> Work: ...
    def alltoall(self, comm, send: np.ndarray, recv: np.ndarray) -> Work: ...
    def alltoallv(self, comm, send: np.ndarray, send_counts: list[int], recv: np.ndarray,
                  recv_counts: list[int]) -> Work:
        """Rank ``i`` sends the next ``send_counts[j]`` elements of flat ``send`` to rank ``j``,
        which writes them at its ``recv_counts``-given place for ``i``."""
    def send(self, comm, array: np.ndarray, dst: int, tag: int) -> Work: ...
    def recv(self, comm, array: np.ndarray, src: int, tag: int) -> Work: ...
    def barrier(self, comm) -> Work: ...

    def enter(self, call: Call) -> None:
        """This rank starts ``call`` (recorded where the other ranks' timeouts can read it)."""

    def leave(self, call: Call) -> None:
        """This rank finished ``call``."""

    def arrivals(self, call: Call) -> dict[int, str | None]:
        """For each rank of ``call``'s group: None if it arrived at ``call``, else where it is
        (its last collective), or "unknown" where this process cannot see it."""

    def all_arrived(self, call: Call) -> bool:
        """Whether every rank of ``call``'s group that this process can see has started ``call``
        (cheap: the waiting loop asks it often)."""


class _Done:
    """The Work of an operation that finished when it started."""

    def test(self) -> bool:
        return True


DONE = _Done()


class SingleProcessBackend:
    """A job of one process: every collective is the identity (a reduction over one rank, a
    gather of one array), and point-to-point has no peer."""

    name = "single"
    rank = 0
    world_size = 1

    def world(self):
        return "world"

    def new_group(self, ranks):
        return "world" if list(ranks) == [0] else None

    def all_reduce(self, comm, array, op):
        return DONE

    def broadcast(self, comm, array, root):
        return DONE

    def reduce(self, comm, array, op, root):
        return DONE

    def all_gather(self, comm, send, recv):
        recv[0] = send
        return DONE

    def gather(self, comm, send, recv, root):
        recv[0] = send
        return DONE

    def scatter(self, comm, send, recv, root):
        recv[...] = send[0]
        return DONE

    def reduce_scatter(self, comm, send, recv, op):
        recv[...] = send[0]
        return DONE

    def alltoall(self, comm, send, recv):
        recv[...] = send
        return DONE

    def alltoallv(self, comm, send, send_counts, recv, recv_counts):
        recv[...] = send
        return DONE

    def send(self, comm, array, dst, tag):
        raise ValueError(f"send: a job of one process has no rank {dst} to send to")

    def recv(self, comm, array, src, tag):
        raise ValueError(f"recv: a job of one process has no rank {src} to receive from")

    def barrier(self, comm):
        return DONE

    def enter(self, call):
        pass

    def leave(self, call):
        pass

    def arrivals(self, call):
        return {0: None}

    def all_arrived(self, call):
        return True
