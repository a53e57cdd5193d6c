"""What runs inside a DataLoader worker process, and what the dataset code there can ask.

A worker receives tasks ``(generation, task index, indices)`` on its own pipe (a thread moves them
to a local queue as they arrive, so the parent's send never blocks), computes the whole
batch (fetch, collate), writes its arrays to shared memory and answers on its result pipe with
``(generation, task index, kind, payload)``, kind being ``"batch"``, ``"end"`` (its copy of an
IterableDataset is exhausted) or ``"error"`` (the exception's type, message and formatted
traceback, the exception's arguments as JSON when they are plain values, and which sample or batch it came from).
It ignores SIGINT (Ctrl-C is the parent's to handle) and leaves when told (``None`` on the task
pipe, or the shared generation set to -1) or when its parent has died.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import threading
import traceback

import numpy as np

from oar.io._collate import _Message, default_collate_fn, default_convert_fn, flatten_batch
from oar.io._shared_memory import ArrayWriter, release

_POLL_SECONDS = 0.1  # how often an idle worker checks that its parent is alive
_WORKER_INFO = None


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id`` (0 .. num_workers-1),
    ``num_workers``, ``dataset`` (this worker's copy) and ``seed`` (``base_seed + id``, which
    seeded ``random``, ``numpy.random`` and ``oar.seed`` in this worker)."""

    __slots__ = ("id", "num_workers", "dataset", "seed")

    def __init__(self, id: int, num_workers: int, dataset, seed: int):  # noqa: A002 - Paddle's field name
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "num_workers", num_workers)
        object.__setattr__(self, "dataset", dataset)
        object.__setattr__(self, "seed", seed)

    def __setattr__(self, key, value):
        raise AttributeError(f"WorkerInfo is read-only: cannot set {key!r}")

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker process, its ``WorkerInfo`` (``id``, ``num_workers``,
    ``dataset``, ``seed``); ``None`` in the main process. Use it to shard an IterableDataset:

    >>> import numpy as np
    >>> from oar.io import IterableDataset, get_worker_info
    >>> class Range(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         info = get_worker_info()
    ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
    ...         for i in range(start, self.n, step):
    ...             yield np.array([i])
    >>> get_worker_info() is None
    True
    """
    return _WORKER_INFO


class Exhausted(Exception):
    """The IterableDataset has no (complete) batch left."""


class FetchError(Exception):
    """``dataset[index]`` or the collate function raised ``error``; ``where`` says which
    (``dataset[13]``, ``collate_fn on dataset[12, 13, 14, 15]``), for the message the user sees."""

    def __init__(self, where: str, error: Exception):
        super().__init__(where, error)
        self.where, self.error = where, error


def _index(index):
    return index.item() if isinstance(index, np.generic) else index  # dataset[3], not dataset[np.int64(3)]


def _indices(indices) -> str:
    shown = ", ".join(repr(_index(i)) for i in indices[:8])
    return f"dataset[{shown}{', ...' if len(indices) > 8 else ''}]"


def rebuild(kind, text: str) -> Exception:
    """An exception of type ``kind`` whose message is ``text``; a RuntimeError when ``kind`` cannot
    be made from a message alone."""
    text = _Message(text)
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            error = kind(text)
            if text in str(error):
                return error
        except Exception:
            pass
    return RuntimeError(text)


class Abandoned(Exception):
    """The parent moved on (new epoch or shutdown) while this batch was being loaded."""


class Fetcher:
    """Turns a task into a batch: the samples at a list of indices (collated), one sample at an
    index (converted) or, for an IterableDataset, the next ``batch_size`` samples of its iterator.
    The main process uses it too when ``num_workers=0``."""

    def __init__(self, dataset, iterable: bool, auto_collate: bool, collate_fn, batch_size: int | None,
                 drop_last: bool):
        self.dataset = dataset
        self.iterable = iterable
        self.auto_collate = auto_collate
        self.collate_fn = collate_fn or (default_collate_fn if auto_collate else default_convert_fn)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._iterator = None

    def restart(self) -> None:
        self._iterator = iter(self.dataset) if self.iterable else None

    def fetch(self, task, keep_going=lambda: True):
        if self.iterable:
            if not self.auto_collate:
                try:
                    return self.collate_fn(next(self._iterator))
                except StopIteration:
                    raise Exhausted from None
            samples = []
            for sample in self._iterator:
                samples.append(sample)
                if len(samples) == self.batch_size:
                    break
            if not samples or (self.drop_last and len(samples) < self.batch_size):
                raise Exhausted
            return self.collate_fn(samples)
        if not self.auto_collate:
            return self.collate_fn(self._sample(task))
        samples = []
        for index in task:
            if not keep_going():
                raise Abandoned
            samples.append(self._sample(index))
        try:
            return self.collate_fn(samples)
        except Exception as exc:
            raise FetchError(f"collate_fn on {_indices(task)}", exc) from exc

    def _sample(self, index):
        try:
            return self.dataset[index]
        except Exception as exc:
            raise FetchError(f"dataset[{_index(index)!r}]", exc) from exc


class WorkerConfig:
    """Everything a worker needs, sent once at its start (pickled under the spawn start method)."""

    def __init__(self, fetcher: Fetcher, num_workers: int, worker_init_fn, use_shared_memory: bool,
                 shm_prefix: str):
        self.fetcher = fetcher
        self.num_workers = num_workers
        self.worker_init_fn = worker_init_fn
        self.use_shared_memory = use_shared_memory
        self.shm_prefix = shm_prefix


def _seed_everything(seed: int, worker_id: int) -> None:
    import oar

    random.seed(seed)
    # numpy's legacy seed takes 32-bit words; hashing (seed, id) keeps the workers' streams apart.
    np.random.seed(np.random.SeedSequence([seed, worker_id]).generate_state(4))
    oar.seed(seed)


def error_payload(worker_id: int, exc: BaseException) -> dict:
    where = None
    if isinstance(exc, FetchError):
        where, exc = exc.where, exc.error
    kind = type(exc)
    try:  # JSON, not pickle: the parent re-creates the exception from its class and arguments
        args = json.dumps(list(exc.args))
    except (TypeError, ValueError):
        args = None
    return {
        "worker_id": worker_id, "pid": os.getpid(), "module": kind.__module__, "qualname": kind.__qualname__,
        "message": str(exc), "traceback": "".join(traceback.format_exception(kind, exc, exc.__traceback__)),
        "where": where, "args": args,
    }


def worker_loop(config: WorkerConfig, worker_id: int, base_seed: int, task_conn, result_conn, control) -> None:
    """The body of worker process ``worker_id``."""
    global _WORKER_INFO
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_pid = os.getppid()
    seed = base_seed + worker_id
    fetcher = config.fetcher
    _seed_everything(seed, worker_id)
    _WORKER_INFO = WorkerInfo(id=worker_id, num_workers=config.num_workers, dataset=fetcher.dataset, seed=seed)
    writer = ArrayWriter(config.shm_prefix, config.use_shared_memory)
    init_error = None
    if config.worker_init_fn is not None:
        try:
            config.worker_init_fn(worker_id)
        except Exception as exc:
            init_error = error_payload(worker_id, exc)
    iterator_generation = None
    exhausted = False

    def send(message) -> bool:
        try:
            result_conn.send(message)  # pickles first: nothing is written if that fails
        except (OSError, EOFError):  # the parent is gone
            return False
        except Exception as exc:  # the batch holds something that cannot be pickled
            if message[2] != "batch":
                raise
            release(message[3][1])
            return send((message[0], message[1], "error", error_payload(worker_id, exc)))
        return True

    tasks: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_read_tasks, args=(task_conn, tasks), name="oar-io-task-reader", daemon=True).start()
    while True:
        try:
            task = tasks.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent_pid or control.value < 0:
                break
            continue
        if task is None:
            break
        generation, task_index, indices = task
        if generation != control.value:
            continue  # a task of an epoch the parent has left: nobody waits for it
        if init_error is not None:
            if not send((generation, task_index, "error", init_error)):
                break
            continue
        if fetcher.iterable and iterator_generation != generation:
            iterator_generation, exhausted = generation, False
            try:
                fetcher.restart()
            except Exception as exc:
                if not send((generation, task_index, "error", error_payload(worker_id, exc))):
                    break
                continue
        if exhausted:
            message = (generation, task_index, "end", None)
        else:
            try:
                batch = fetcher.fetch(indices, keep_going=lambda g=generation: control.value == g)
                skeleton, arrays = flatten_batch(batch)
                message = (generation, task_index, "batch", (skeleton, writer.write(arrays)))
            except Exhausted:
                exhausted = True
                message = (generation, task_index, "end", None)
            except Abandoned:
                continue
            except Exception as exc:
                message = (generation, task_index, "error", error_payload(worker_id, exc))
        if not send(message):
            if message[2] == "batch":
                release(message[3][1])
            break
    result_conn.close()  # the task pipe stays open: the reader thread may still be in recv() on it


def _read_tasks(task_conn, tasks: queue.SimpleQueue) -> None:
    """Move tasks from the pipe to a local queue as they arrive, so that the parent never waits
    to send a task, even while this worker waits for the parent to read a large result."""
    while True:
        try:
            task = task_conn.recv()
        except (OSError, EOFError):
            task = None
        tasks.put(task)
        if task is None:
            return
