"""Paddle's collectives on oar Tensors, over a backend (``oar.distributed._backend``), with a
deadline on every wait.

Each call builds a ``Call`` (its name, group, the user's line and what every rank must agree on:
shape, dtype, op, root), records it where the other ranks' timeouts can read it, starts the
backend's non-blocking operation and -- unless ``sync_op=False`` -- waits for it. Waiting polls
the operation: a collective that has not completed after ``timeout`` seconds (default 300,
``OAR_DISTRIBUTED_TIMEOUT`` or ``new_group(timeout=)``) raises ``CollectiveTimeoutError`` naming the
collective, its line, and which ranks arrived and where the others are. With
``OAR_DISTRIBUTED_DEBUG=1`` every collective first compares its ``Call`` across the group and raises
``CollectiveMismatchError`` on every rank where they differ, instead of deadlocking or mixing data.

Results are written into the tensors the caller passed (``Tensor.set_value``), as Paddle's
collectives write in place.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import sys
import time
import warnings
import zlib

import numpy as np

import oar
from oar.distributed._backend import Call, SingleProcessBackend
from oar.distributed._env import launched_rank_and_size, launched_with_mpi
from oar.errors import ArgumentError, OarError, ShapeError

DEFAULT_TIMEOUT = 300.0  # seconds: long enough for a slow first step, short enough to beat a silent hang
_SPIN_SECONDS = 0.005  # how long a waiting rank polls without sleeping before it checks who has arrived
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class CollectiveTimeoutError(OarError, TimeoutError):
    """A collective did not complete in time: the message names it, its line and the ranks."""


class CollectiveMismatchError(OarError, RuntimeError):
    """With ``OAR_DISTRIBUTED_DEBUG=1``: the ranks of a group called different collectives."""


class ReduceOp:
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter`` (Paddle's values).

    ``AVG`` divides the sum by the group's size (integer tensors: floor division).

    >>> from oar.distributed import ReduceOp
    >>> ReduceOp.SUM, ReduceOp.AVG
    (0, 4)
    """

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


_OP_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.MAX: "MAX", ReduceOp.MIN: "MIN", ReduceOp.PROD: "PROD", ReduceOp.AVG: "AVG"}


def _timeout_from_env() -> float:
    value = os.environ.get("OAR_DISTRIBUTED_TIMEOUT", "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        raise ArgumentError(f"OAR_DISTRIBUTED_TIMEOUT={value!r} is not a number of seconds") from None
    if seconds <= 0:
        raise ArgumentError(f"OAR_DISTRIBUTED_TIMEOUT={value!r} must be positive")
    return seconds


def _debug() -> bool:
    return os.environ.get("OAR_DISTRIBUTED_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


class Group:
    """A set of ranks that run collectives together, as ``new_group`` returns (Paddle's ``Group``).

    ``rank`` is this process's rank in the group (-1 outside it), ``nranks`` its size, ``ranks``
    the global ranks in group order.

    >>> import oar.distributed as dist
    >>> group = dist.new_group([0])
    >>> group.rank, group.nranks, group.ranks, group.is_member()
    (0, 1, [0], True)
    """

    def __init__(self, ranks: list[int], comm, group_id: int, key: int, timeout: float, name: str = ""):
        self.ranks = list(ranks)
        self.comm = comm
        self.id = group_id
        self.key = key
        self.timeout = timeout
        self.name = name or f"_default_pg{group_id}"
        self._seq = 0
        global_rank = _state().backend.rank
        self.rank = self.ranks.index(global_rank) if global_rank in self.ranks else -1

    @property
    def nranks(self) -> int:
        return len(self.ranks)

    world_size = nranks

    @property
    def process_group(self):
        return self

    def is_member(self) -> bool:
        return self.rank >= 0

    def get_group_rank(self, rank: int) -> int:
        """This group's rank of global rank ``rank``; -1 when it is not in the group."""
        return self.ranks.index(rank) if rank in self.ranks else -1

    def __repr__(self) -> str:
        return f"Group(id={self.id}, ranks={self.ranks}, rank={self.rank})"


class _State:
    def __init__(self):
        if launched_with_mpi():
            from oar.distributed._mpi import MPIBackend  # imports mpi4py: only in a job of several processes

            self.backend = MPIBackend()
        else:
            self.backend = SingleProcessBackend()
        self.groups: dict[int, Group] = {}
        self.initialized = False
        self.world: Group | None = None


_STATE: _State | None = None


def _state() -> _State:
    global _STATE
    if _STATE is None:
        _STATE = _State()
    return _STATE


def _seconds(timeout) -> float:
    if timeout is None:
        return _timeout_from_env()
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ArgumentError(f"timeout must be a positive number of seconds or a datetime.timedelta, got {timeout!r}")
    return float(timeout)


def _world() -> Group:
    state = _state()
    if state.world is None:
        backend = state.backend
        state.world = Group(list(range(backend.world_size)), backend.world(), 0, 0, _timeout_from_env())
        state.groups[0] = state.world
    return state.world


def init_parallel_env(timeout=None) -> Group:
    """Join the job this process was started in, as ``paddle.distributed.init_parallel_env``:
    MPI when ``oar.distributed.launch`` (or ``mpiexec``) started several processes, nothing to do
    for a plain ``python train.py`` (a job of one). Returns the group of every rank. ``timeout``
    (seconds or a ``timedelta``) bounds each collective's wait on it (default
    ``OAR_DISTRIBUTED_TIMEOUT`` or 300 s).

    >>> import oar.distributed as dist
    >>> dist.init_parallel_env().nranks
    1
    """
    world = _world()
    if timeout is not None:
        world.timeout = _seconds(timeout)
    state = _state()
    if not state.initialized:
        state.initialized = True
        os.environ.setdefault("PADDLE_TRAINER_ID", str(state.backend.rank))
        os.environ.setdefault("PADDLE_TRAINERS_NUM", str(state.backend.world_size))
    return world


def is_initialized() -> bool:
    """Whether ``init_parallel_env`` has run in this process."""
    return _STATE is not None and _STATE.initialized


def is_available() -> bool:
    """Whether collectives can run here: always (one process needs no MPI)."""
    return True


def get_backend(group=None) -> str:
    """The engine under the collectives: ``"MPI"``, or ``"SINGLE"`` for a job of one process."""
    return "MPI" if _state().backend.name == "mpi" else "SINGLE"


def get_rank(group: Group | None = None) -> int:
    """This process's rank in ``group`` (the whole job by default); -1 outside the group.

    Before ``init_parallel_env`` it reads the launcher's environment, so it is cheap and works
    without MPI, as Paddle's.

    >>> import oar.distributed as dist
    >>> dist.get_rank()
    0
    """
    if group is not None:
        return group.rank
    if _STATE is None:
        return launched_rank_and_size()[0]
    return _STATE.backend.rank


def get_world_size(group: Group | None = None) -> int:
    """How many processes ``group`` (the whole job by default) has.

    >>> import oar.distributed as dist
    >>> dist.get_world_size()
    1
    """
    if group is not None:
        return group.nranks
    if _STATE is None:
        return launched_rank_and_size()[1]
    return _STATE.backend.world_size


def new_group(ranks=None, backend=None, timeout=None) -> Group:
    """A group of the global ``ranks`` (all by default), as ``paddle.distributed.new_group``:
    every rank calls it with the same list, in the same order as its other ``new_group`` calls.
    ``timeout`` (seconds or ``timedelta``) bounds each wait of its collectives.

    >>> import oar.distributed as dist
    >>> dist.new_group().ranks
    [0]
    """
    state = _state()
    world = _world()
    ranks = list(range(world.nranks)) if ranks is None else [int(r) for r in ranks]
    if not ranks or len(set(ranks)) != len(ranks) or not all(0 <= r < world.nranks for r in ranks):
        raise ArgumentError(f"new_group: ranks must be distinct ranks in [0, {world.nranks}), got {ranks}")
    if backend not in (None, "mpi", "gloo", "nccl"):
        raise ArgumentError(f"new_group: backend {backend!r} is not available; oar's collectives run on MPI")
    group_id = len(state.groups)
    same = sum(1 for g in state.groups.values() if g.ranks == ranks)
    key = zlib.crc32(json.dumps([ranks, same]).encode()) or 1
    comm = state.backend.new_group(ranks)
    group = Group(ranks, comm, group_id, key, _seconds(timeout) if timeout is not None else world.timeout)
    state.groups[group_id] = group
    return group


def get_group(id: int = 0) -> Group:  # noqa: A002 - Paddle's argument name
    """The group ``new_group`` numbered ``id`` (0: every rank)."""
    _world()
    group = _state().groups.get(id)
    if group is None:
        raise ArgumentError(f"get_group: there is no group with id {id}; ids so far: {sorted(_state().groups)}")
    return group


def destroy_process_group(group: Group | None = None) -> None:
    """Forget ``group`` (every group, and the initialisation, by default)."""
    state = _state()
    if group is None:
        state.groups = {0: state.world} if state.world is not None else {}
        state.initialized = False
    else:
        state.groups.pop(group.id, None)


# -- waiting -----------------------------------------------------------------------------------
class Task:
    """What a collective with ``sync_op=False`` (or ``isend``/``irecv``) returns: ``wait()`` for
    its result, ``is_completed()`` to ask without waiting.

    >>> import oar, oar.distributed as dist
    >>> x = oar.to_tensor([1.0, 2.0])
    >>> task = dist.all_reduce(x, sync_op=False)
    >>> task.wait()
    True
    >>> task.is_completed()
    True
    """

    def __init__(self, work, call: Call, group: Group, finish=None):
        self._work, self._call, self._group, self._finish = work, call, group, finish
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and self._work.test():
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        seconds = self._group.timeout if timeout is None else _seconds(timeout)
        work, backend, call = self._work, _state().backend, self._call
        start = time.monotonic()
        deadline = start + seconds
        polls = 0
        pause = 0.0
        while not work.test():
            polls += 1
            if polls & 63:
                continue
            now = time.monotonic()
            if now > deadline:
                self._timed_out(seconds)
            # MPI moves a transfer forward only inside its calls: while every rank is in this
            # collective, keep polling (yielding the core now and then, for ranks sharing cores).
            # While some rank is still computing, sleep between polls instead of burning a core
            # the other rank may need.
            if now - start < _SPIN_SECONDS or backend.all_arrived(call):
                pause = 0.0
                _yield()
            else:
                pause = min(pause * 2 or 5e-5, 1e-3)
                time.sleep(pause)
        self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        _state().backend.leave(self._call)
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def _timed_out(self, seconds: float):
        call = self._call
        report = _state().backend.arrivals(call)
        arrived = [rank for rank, where in report.items() if where is None]
        missing = [f"rank {rank} ({where})" for rank, where in report.items() if where is not None]
        raise CollectiveTimeoutError(
            f"{call.describe()} did not complete within {seconds:g} s on rank {_state().backend.rank} "
            f"(group of ranks {list(call.group_ranks)}). Arrived: ranks {arrived}. Not arrived: "
            f"{'; '.join(missing) or 'none -- the ranks arrived but the transfer did not finish'}. "
            "A rank that raised, hangs in its own code or calls a different collective stops the others here; "
            "OAR_DISTRIBUTED_DEBUG=1 checks that every rank calls the same collectives, and "
            "OAR_DISTRIBUTED_TIMEOUT (seconds) sets how long to wait.")


_INTERNAL_FILES: dict[str, bool] = {}  # code file -> whether it is oar's own (asked once per file)


def _user_site() -> str:
    """``file.py:line`` of the innermost frame outside oar's packages: the user's call."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        internal = _INTERNAL_FILES.get(filename)
        if internal is None:
            roots = tuple(os.path.join(os.path.abspath(p), "") for p in oar.__path__)
            internal = _INTERNAL_FILES[filename] = os.path.abspath(filename).startswith(roots)
        if not internal:
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class _NotAMember(Exception):
    """Raised by ``_group_of`` on a rank outside the group; ``_members_only`` turns it into a no-op."""


def _group_of(group: Group | None, fn: str) -> Group:
    if group is None:
        if _state().world is None:
            init_parallel_env()  # the first collective joins the job, as a missed init_parallel_env() would
        return _world()
    if not isinstance(group, Group):
        raise ArgumentError(f"{fn}: group must be a Group from oar.distributed.new_group, got {type(group).__name__}")
    if not group.is_member():
        warnings.warn(f"{fn}: rank {_state().backend.rank} is not in the group {group.ranks}, so it takes no part "
                      "and the call does nothing here (as in Paddle)", stacklevel=4)
        raise _NotAMember
    return group


def _members_only(fn):
    """A collective that does nothing (returns None) on a rank outside its group, as Paddle's."""

    @functools.wraps(fn)
    def collective(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _NotAMember:
            return None

    return collective


def _start(fn: str, group: Group, details: dict, start, finish=None, sync_op: bool = True):
    """Run one collective: record it, check it (debug mode), start it, wait unless ``sync_op`` is False."""
    backend = _state().backend
    call = Call(fn, tuple(group.ranks), group.key, group._seq, _user_site(), details)
    group._seq += 1
    backend.enter(call)
    if _debug() and group.nranks > 1:
        _check_same_call(group, call)
    task = Task(start(), call, group, finish)
    if sync_op:
        task.wait()
        return None
    return task


_RECORD_BYTES = 1024


def _check_same_call(group: Group, call: Call) -> None:
    """Debug mode: every rank of ``group`` shows the others what it is about to run."""
    record = json.dumps({"name": call.name, "details": call.details, "site": call.site}).encode()[:_RECORD_BYTES]
    send = np.zeros(_RECORD_BYTES, np.uint8)
    send[:len(record)] = np.frombuffer(record, np.uint8)
    received = np.zeros((group.nranks, _RECORD_BYTES), np.uint8)
    check = Call(f"{call.name} (OAR_DISTRIBUTED_DEBUG's check)", call.group_ranks, call.group_key, call.seq, call.site,
                 call.details)
    Task(_state().backend.all_gather(group.comm, send, received), check, group).wait()
    calls = [json.loads(bytes(row).rstrip(b"\0")) for row in received]
    if any((c["name"], c["details"]) != (calls[0]["name"], calls[0]["details"]) for c in calls):
        lines = "; ".join(
            f"rank {rank}: {c['name']}({', '.join(f'{k}={v}' for k, v in c['details'].items())}) at {c['site']}"
            for rank, c in zip(group.ranks, calls))
        raise CollectiveMismatchError(
            f"the ranks of group {group.ranks} called different collectives as their #{call.seq}: {lines}. "
            "Every rank must call the same collectives in the same order, with the same shapes and dtypes.")


# -- tensors -----------------------------------------------------------------------------------
def _check_tensor(tensor, fn: str, what: str = "tensor") -> None:
    if not isinstance(tensor, oar.Tensor):
        raise ArgumentError(f"{fn}: {what} must be an oar Tensor, got {type(tensor).__name__}")


def _op_name(op, fn: str) -> str:
    name = _OP_NAMES.get(op) if isinstance(op, int) and not isinstance(op, bool) else None
    if name is None:
        raise ArgumentError(f"{fn}: op must be one of ReduceOp.SUM, MAX, MIN, PROD, AVG, got {op!r}")
    return name


def _meta(tensor) -> dict:
    return {"shape": list(tensor.shape), "dtype": tensor.dtype.name}


def _group_rank(group: Group, rank, fn: str, what: str) -> int:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
        raise ArgumentError(f"{fn}: {what} must be a global rank (int), got {rank!r}")
    index = group.get_group_rank(int(rank))
    if index < 0:
        raise ArgumentError(f"{fn}: {what}={rank} is not a rank of the group {group.ranks}")
    return index


def _writer(tensor, array):
    return lambda: tensor.set_value(array.reshape(tensor.shape))


@_members_only
def all_reduce(tensor, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Reduce ``tensor`` over the group's ranks and leave the result in ``tensor`` on every rank.

    >>> import oar, oar.distributed as dist
    >>> x = oar.to_tensor([1.0, 2.0])
    >>> dist.all_reduce(x)  # a job of one: the sum over one rank
    >>> x.tolist()
    [1.0, 2.0]
    """
    fn = "all_reduce"
    _check_tensor(tensor, fn)
    name = _op_name(op, fn)
    group = _group_of(group, fn)
    array = tensor.numpy()
    return _start(fn, group, {**_meta(tensor), "op": name},
                  lambda: _state().backend.all_reduce(group.comm, array, name), _writer(tensor, array), sync_op)


@_members_only
def broadcast(tensor, src: int, group: Group | None = None, sync_op: bool = True):
    """Copy ``tensor`` of global rank ``src`` into ``tensor`` on every rank of the group."""
    fn = "broadcast"
    _check_tensor(tensor, fn)
    group = _group_of(group, fn)
    root = _group_rank(group, src, fn, "src")
    array = tensor.numpy()
    finish = None if group.rank == root else _writer(tensor, array)
    return _start(fn, group, {**_meta(tensor), "src": int(src)},
                  lambda: _state().backend.broadcast(group.comm, array, root), finish, sync_op)


@_members_only
def reduce(tensor, dst: int, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Reduce ``tensor`` over the group into ``tensor`` of global rank ``dst`` (the others keep theirs)."""
    fn = "reduce"
    _check_tensor(tensor, fn)
    name = _op_name(op, fn)
    group = _group_of(group, fn)
    root = _group_rank(group, dst, fn, "dst")
    array = tensor.numpy()
    finish = _writer(tensor, array) if group.rank == root else None
    return _start(fn, group, {**_meta(tensor), "op": name, "dst": int(dst)},
                  lambda: _state().backend.reduce(group.comm, array, name, root), finish, sync_op)


def _fill_list(fn: str, tensors: list, arrays: np.ndarray, like) -> None:
    """Write ``arrays[i]`` into ``tensors[i]``, or append new tensors to an empty list."""
    if not tensors:
        tensors.extend(oar.to_tensor(a.reshape(like.shape)) for a in arrays)
        return
    for t, a in zip(tensors, arrays):
        t.set_value(a.reshape(t.shape))


def _check_list(fn: str, tensors, n: int, like, what: str) -> None:
    if not isinstance(tensors, list):
        raise ArgumentError(f"{fn}: {what} must be a list of Tensors, got {type(tensors).__name__}")
    if tensors and len(tensors) != n:
        raise ArgumentError(f"{fn}: {what} has {len(tensors)} tensors for a group of {n} ranks")
    for i, t in enumerate(tensors):
        _check_tensor(t, fn, f"{what}[{i}]")
        if list(t.shape) != list(like.shape) or t.dtype != like.dtype:
            raise ShapeError(f"{fn}: {what}[{i}] is {t.dtype.name} {list(t.shape)}, but every tensor must be "
                             f"{like.dtype.name} {list(like.shape)} like the input")


def _check_whole(fn: str, out, n: int, like, what: str) -> None:
    """``out`` holds ``n`` tensors like ``like`` stacked along dim 0 (Paddle's tensor form)."""
    _check_tensor(out, fn, what)
    expected = [n * like.shape[0], *like.shape[1:]] if like.shape else [n]
    if list(out.shape) != expected or out.dtype != like.dtype:
        raise ShapeError(f"{fn}: {what} is {out.dtype.name} {list(out.shape)}; for a group of {n} ranks it must be "
                         f"{like.dtype.name} {expected} (the inputs concatenated along dim 0)")


@_members_only
def all_gather(tensor_list, tensor, group: Group | None = None, sync_op: bool = True):
    """Every rank's ``tensor``, in rank order, on every rank: into ``tensor_list`` (filled if it
    holds one tensor per rank, appended to if empty) or into one tensor of the inputs
    concatenated along dim 0.

    >>> import oar, oar.distributed as dist
    >>> out = []
    >>> dist.all_gather(out, oar.to_tensor([1, 2]))
    >>> [t.tolist() for t in out]
    [[1, 2]]
    """
    fn = "all_gather"
    _check_tensor(tensor, fn)
    group = _group_of(group, fn)
    n = group.nranks
    send = tensor.numpy()
    received = np.empty((n, *send.shape), send.dtype)
    if isinstance(tensor_list, oar.Tensor):
        _check_whole(fn, tensor_list, n, tensor, "the output tensor")
        finish = _writer(tensor_list, received)
    else:
        _check_list(fn, tensor_list, n, tensor, "tensor_list")
        finish = lambda: _fill_list(fn, tensor_list, received, tensor)  # noqa: E731
    return _start(fn, group, _meta(tensor), lambda: _state().backend.all_gather(group.comm, send, received),
                  finish, sync_op)


@_members_only
def gather(tensor, gather_list=None, dst: int = 0, group: Group | None = None, sync_op: bool = True):
    """Every rank's ``tensor`` into ``gather_list`` on global rank ``dst`` (Paddle's ``gather``)."""
    fn = "gather"
    _check_tensor(tensor, fn)
    group = _group_of(group, fn)
    root = _group_rank(group, dst, fn, "dst")
    send = tensor.numpy()
    received, finish = None, None
    if group.rank == root:
        if gather_list is None:
            raise ArgumentError(f"{fn}: rank {dst} receives, so it needs gather_list (a list, empty or of "
                                f"{group.nranks} tensors)")
        _check_list(fn, gather_list, group.nranks, tensor, "gather_list")
        received = np.empty((group.nranks, *send.shape), send.dtype)
        finish = lambda: _fill_list(fn, gather_list, received, tensor)  # noqa: E731
    return _start(fn, group, {**_meta(tensor), "dst": int(dst)},
                  lambda: _state().backend.gather(group.comm, send, received, root), finish, sync_op)


@_members_only
def scatter(tensor, tensor_list=None, src: int = 0, group: Group | None = None, sync_op: bool = True):
    """Global rank ``src`` sends ``tensor_list[i]`` to the group's rank ``i``, into its ``tensor``."""
    fn = "scatter"
    _check_tensor(tensor, fn)
    group = _group_of(group, fn)
    root = _group_rank(group, src, fn, "src")
    send = None
    if group.rank == root:
        if not isinstance(tensor_list, list) or len(tensor_list) != group.nranks:
            raise ArgumentError(f"{fn}: rank {src} sends, so tensor_list must hold one tensor per rank "
                                f"({group.nranks}), got {tensor_list!r:.80}")
        _check_list(fn, tensor_list, group.nranks, tensor, "tensor_list")
        send = np.stack([t.numpy() for t in tensor_list])
    received = tensor.numpy()
    return _start(fn, group, {**_meta(tensor), "src": int(src)},
                  lambda: _state().backend.scatter(group.comm, send, received, root), _writer(tensor, received),
                  sync_op)


@_members_only
def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Reduce ``tensor_list[i]`` over the ranks into ``tensor`` of the group's rank ``i``;
    ``tensor_list`` may also be one tensor of the pieces concatenated along dim 0."""
    fn = "reduce_scatter"
    _check_tensor(tensor, fn)
    name = _op_name(op, fn)
    group = _group_of(group, fn)
    if isinstance(tensor_list, oar.Tensor):
        _check_whole(fn, tensor_list, group.nranks, tensor, "the input tensor")
        send = tensor_list.numpy().reshape(group.nranks, *tensor.shape)
    else:
        if not isinstance(tensor_list, list) or len(tensor_list) != group.nranks:
            raise ArgumentError(f"{fn}: tensor_list must hold one tensor per rank ({group.nranks})")
        _check_list(fn, tensor_list, group.nranks, tensor, "tensor_list")
        send = np.stack([t.numpy() for t in tensor_list])
    received = tensor.numpy()
    return _start(fn, group, {**_meta(tensor), "op": name},
                  lambda: _state().backend.reduce_scatter(group.comm, np.ascontiguousarray(send), received, name),
                  _writer(tensor, received), sync_op)


@_members_only
def alltoall(out_tensor_list, in_tensor_list, group: Group | None = None, sync_op: bool = True):
    """Rank ``i`` sends ``in_tensor_list[j]`` to rank ``j``, which receives it as
    ``out_tensor_list[i]`` (Paddle 3's argument order: output first)."""
    fn = "alltoall"
    group = _group_of(group, fn)
    n = group.nranks
    if not isinstance(in_tensor_list, list) or len(in_tensor_list) != n:
        raise ArgumentError(f"{fn}: in_tensor_list must hold one tensor per rank ({n})")
    like = in_tensor_list[0]
    _check_tensor(like, fn, "in_tensor_list[0]")
    _check_list(fn, in_tensor_list, n, like, "in_tensor_list")
    _check_list(fn, out_tensor_list, n, like, "out_tensor_list")
    send = np.stack([t.numpy() for t in in_tensor_list])
    received = np.empty_like(send)
    return _start(fn, group, _meta(like), lambda: _state().backend.alltoall(group.comm, send, received),
                  lambda: _fill_list(fn, out_tensor_list, received, like), sync_op)


@_members_only
def alltoall_single(out_tensor, in_tensor, in_split_sizes=None, out_split_sizes=None, group: Group | None = None,
                    sync_op: bool = True):
    """``in_tensor`` split along dim 0 -- evenly, or into ``in_split_sizes`` rows -- and part ``j``
    sent to the group's rank ``j``; ``out_tensor`` receives the parts from every rank in rank
    order (``out_split_sizes`` rows each when given), as ``paddle.distributed.alltoall_single``.

    >>> import oar, oar.distributed as dist
    >>> out = oar.zeros([2])
    >>> dist.alltoall_single(out, oar.to_tensor([1.0, 2.0]))
    >>> out.tolist()
    [1.0, 2.0]
    """
    fn = "alltoall_single"
    _check_tensor(in_tensor, fn, "in_tensor")
    _check_tensor(out_tensor, fn, "out_tensor")
    group = _group_of(group, fn)
    n = group.nranks
    if out_tensor.dtype != in_tensor.dtype or list(out_tensor.shape[1:]) != list(in_tensor.shape[1:]):
        raise ShapeError(f"{fn}: out_tensor is {out_tensor.dtype.name} {list(out_tensor.shape)} and in_tensor "
                         f"{in_tensor.dtype.name} {list(in_tensor.shape)}; they must agree in dtype and in every "
                         "dim after the first")

    def rows(sizes, tensor, what: str) -> list[int]:
        if sizes is None:
            if tensor.shape[0] % n:
                raise ShapeError(f"{fn}: {what} has {tensor.shape[0]} rows, which do not split evenly over "
                                 f"{n} ranks; pass {what.split('_')[0]}_split_sizes")
            return [tensor.shape[0] // n] * n
        sizes = [int(v) for v in sizes]
        if len(sizes) != n or sum(sizes) != tensor.shape[0] or min(sizes) < 0:
            raise ShapeError(f"{fn}: {what.split('_')[0]}_split_sizes {sizes} must hold {n} row counts adding up "
                             f"to {what}'s {tensor.shape[0]} rows")
        return sizes

    row = int(np.prod(in_tensor.shape[1:], dtype=np.int64))
    send_rows, recv_rows = rows(in_split_sizes, in_tensor, "in_tensor"), rows(out_split_sizes, out_tensor, "out_tensor")
    send, received = in_tensor.numpy(), out_tensor.numpy()
    backend = _state().backend
    return _start(fn, group, {**_meta(in_tensor), "in_split_sizes": send_rows},
                  lambda: backend.alltoallv(group.comm, send, [r * row for r in send_rows], received,
                                            [r * row for r in recv_rows]),
                  _writer(out_tensor, received), sync_op)


def _point_to_point(fn: str, tensor, peer, group, sync_op, tag: int = 0):
    _check_tensor(tensor, fn)
    group = _group_of(group, fn)
    other = _group_rank(group, peer, fn, "dst" if fn.endswith("send") else "src")
    if other == group.rank:
        raise ArgumentError(f"{fn}: rank {peer} is this process; send and recv need another rank")
    backend = _state().backend
    array = tensor.numpy()
    if fn.endswith("send"):
        start, finish = (lambda: backend.send(group.comm, array, other, tag)), None
    else:
        start, finish = (lambda: backend.recv(group.comm, array, other, tag)), _writer(tensor, array)
    call = Call(fn, tuple(group.ranks), group.key, group._seq, _user_site(), {**_meta(tensor), "peer": int(peer)})
    # Point-to-point calls are not collectives: they take no turn in the group's sequence.
    backend.enter(call)
    task = Task(start(), call, group, finish)
    if sync_op:
        task.wait()
        return None
    return task


@_members_only
def send(tensor, dst: int = 0, group: Group | None = None, sync_op: bool = True):
    """Send ``tensor`` to global rank ``dst``, which calls ``recv``."""
    return _point_to_point("send", tensor, dst, group, sync_op)


@_members_only
def recv(tensor, src: int = 0, group: Group | None = None, sync_op: bool = True):
    """Receive into ``tensor`` what global rank ``src`` sends."""
    return _point_to_point("recv", tensor, src, group, sync_op)


@_members_only
def isend(tensor, dst: int, group: Group | None = None) -> Task:
    """``send`` without waiting: returns a ``Task``."""
    return _point_to_point("isend", tensor, dst, group, False)


@_members_only
def irecv(tensor, src: int | None = None, group: Group | None = None) -> Task:
    """``recv`` without waiting: returns a ``Task``."""
    if src is None:
        raise ArgumentError("irecv: oar needs src, the rank to receive from")
    return _point_to_point("irecv", tensor, src, group, False)


@_members_only
def barrier(group: Group | None = None) -> None:
    """Wait until every rank of the group has reached this line."""
    group = _group_of(group, "barrier")
    _start("barrier", group, {}, lambda: _state().backend.barrier(group.comm))


def wait(tensor, group: Group | None = None, use_calc_stream: bool = True) -> None:
    """Paddle's stream synchronisation: collectives here finish before they return (or at
    ``Task.wait()``), so there is nothing to wait for."""
    _check_tensor(tensor, "wait")


# -- objects: JSON, never pickle -----------------------------------------------------------------
def _encode(obj, fn: str) -> bytes:
    try:
        return json.dumps(obj, allow_nan=True).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ArgumentError(
            f"{fn}: {exc}. oar sends objects between ranks as JSON (numbers, strings, booleans, None, lists and "
            "dicts with string keys) and never unpickles what a peer sent, since unpickling runs code; send "
            "tensors with the tensor collectives") from None


def _gather_bytes(fn: str, data: bytes, group: Group) -> list[bytes]:
    backend = _state().backend
    n = group.nranks
    length = np.array([len(data)], np.int64)
    lengths = np.empty((n, 1), np.int64)
    _start(fn, group, {"part": "lengths"}, lambda: backend.all_gather(group.comm, length, lengths))
    width = int(lengths.max())
    send = np.zeros(width, np.uint8)
    send[:len(data)] = np.frombuffer(data, np.uint8)
    received = np.zeros((n, width), np.uint8)
    _start(fn, group, {"part": "bytes", "width": width}, lambda: backend.all_gather(group.comm, send, received))
    return [bytes(received[i, :int(lengths[i, 0])]) for i in range(n)]


@_members_only
def all_gather_object(object_list: list, obj, group: Group | None = None) -> None:
    """Every rank's ``obj`` appended to ``object_list`` in rank order. Objects travel as JSON, so
    a tuple arrives as a list; anything JSON cannot hold is refused (oar never unpickles what a
    peer sent).

    >>> import oar.distributed as dist
    >>> got = []
    >>> dist.all_gather_object(got, {"loss": 0.5, "rank": 0})
    >>> got
    [{'loss': 0.5, 'rank': 0}]
    """
    fn = "all_gather_object"
    if not isinstance(object_list, list):
        raise ArgumentError(f"{fn}: object_list must be a list, got {type(object_list).__name__}")
    group = _group_of(group, fn)
    object_list.extend(json.loads(b) for b in _gather_bytes(fn, _encode(obj, fn), group))


@_members_only
def broadcast_object_list(object_list: list, src: int, group: Group | None = None) -> None:
    """Replace ``object_list``'s items with those of global rank ``src`` (as JSON)."""
    fn = "broadcast_object_list"
    if not isinstance(object_list, list):
        raise ArgumentError(f"{fn}: object_list must be a list, got {type(object_list).__name__}")
    group = _group_of(group, fn)
    root = _group_rank(group, src, fn, "src")
    data = _gather_bytes(fn, _encode(object_list if group.rank == root else [], fn), group)[root]
    object_list[:] = json.loads(data)


@_members_only
def send_object_list(object_list: list, dst: int | None = None, group: Group | None = None,
                     dst_in_group: int | None = None) -> None:
    """Send ``object_list`` (as JSON) to global rank ``dst`` (or the group's rank
    ``dst_in_group``), which calls ``recv_object_list``."""
    fn = "send_object_list"
    if not isinstance(object_list, list):
        raise ArgumentError(f"{fn}: object_list must be a list, got {type(object_list).__name__}")
    group = _group_of(group, fn)
    peer = _peer(fn, group, dst, dst_in_group, "dst")
    data = np.frombuffer(_encode(object_list, fn), np.uint8).copy()
    send(oar.to_tensor(np.array([data.size], np.int64)), dst=peer, group=group)
    send(oar.to_tensor(data), dst=peer, group=group)


@_members_only
def recv_object_list(object_list: list, src: int | None = None, group: Group | None = None,
                     src_in_group: int | None = None) -> None:
    """Replace ``object_list``'s items with those global rank ``src`` (or the group's rank
    ``src_in_group``) sent with ``send_object_list`` (JSON: nothing sent is executed)."""
    fn = "recv_object_list"
    if not isinstance(object_list, list):
        raise ArgumentError(f"{fn}: object_list must be a list, got {type(object_list).__name__}")
    group = _group_of(group, fn)
    peer = _peer(fn, group, src, src_in_group, "src")
    length = oar.zeros([1], dtype="int64")
    recv(length, src=peer, group=group)
    data = oar.zeros([int(length.item())], dtype="uint8")
    recv(data, src=peer, group=group)
    object_list[:] = json.loads(data.numpy().tobytes())


def _peer(fn: str, group: Group, rank, rank_in_group, what: str) -> int:
    """The global rank a point-to-point object call names, by global rank or by group rank."""
    if (rank is None) == (rank_in_group is None):
        raise ArgumentError(f"{fn}: give exactly one of {what} and {what}_in_group")
    if rank_in_group is not None:
        if not 0 <= int(rank_in_group) < group.nranks:
            raise ArgumentError(f"{fn}: {what}_in_group={rank_in_group} is not a rank of a group of {group.nranks}")
        return group.ranks[int(rank_in_group)]
    return int(rank)


@_members_only
def scatter_object_list(out_object_list: list, in_object_list=None, src: int = 0,
                        group: Group | None = None) -> None:
    """Global rank ``src``'s ``in_object_list[i]`` becomes ``out_object_list[0]`` on rank ``i`` (as JSON)."""
    fn = "scatter_object_list"
    group = _group_of(group, fn)
    root = _group_rank(group, src, fn, "src")
    if group.rank == root and (not isinstance(in_object_list, list) or len(in_object_list) != group.nranks):
        raise ArgumentError(f"{fn}: rank {src} sends, so in_object_list must hold one object per rank ({group.nranks})")
    data = _gather_bytes(fn, _encode(in_object_list if group.rank == root else None, fn), group)[root]
    out_object_list[:] = [json.loads(data)[group.rank]]


