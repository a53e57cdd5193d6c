"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker computes whole batches and returns their arrays through
shared memory; the parent hands batch ``i`` to worker ``i mod n`` (skipping workers whose stream
is exhausted), keeps ``prefetch_factor * num_workers`` batches in flight and reads each answer from
the worker that owns the next batch, so batches arrive in order without a reorder buffer. Every
failure path (an exception in a worker or in the loop body, ``break``, Ctrl-C, a timeout, a dead
worker, garbage collection) goes through ``_WorkerPool.shutdown``, which stops and reaps the
workers and unlinks every shared-memory block still in flight.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import itertools
import json
import logging
import multiprocessing
import os
import pickle
import secrets
import signal
import time
import weakref
from multiprocessing.connection import wait

import numpy as np

import oar
from oar import to_tensor
from oar.errors import ArgumentError
from oar.incubate import autotune as _autotune
from oar.io import _shared_memory as shm
from oar.io._collate import restore_batch, to_output
from oar.io._dataset import IterableDataset
from oar.io._sampler import BatchSampler, RandomSampler, SequenceSampler
from oar.io._worker import Exhausted, Fetcher, FetchError, WorkerConfig, rebuild, worker_loop
from oar.ops import NP_TO_DTYPE, Tensor, place_backend
from oar.profiler import RECORDERS, RecordEvent, TracerEventType

_JOIN_SECONDS = 2.0  # how long a stopping worker may take to leave before it is terminated
_logger = logging.getLogger("oar.io")


def _draw_base_seed() -> int:
    """Every ``iter(loader)`` draws one number from oar's global generator, with or without
    workers, so the shuffling that follows (and the rest of the run) is the same either way."""
    from oar.ops import default_generator

    return int(default_generator().integers(0, 2**62))


class DataLoader:
    """Iterates over ``dataset`` in batches, as ``paddle.io.DataLoader``.

    Each batch is collated by ``collate_fn`` (``default_collate_fn``: field by field) and its
    arrays become Tensors: a dataset of ``(image, label)`` samples gives ``[images, labels]``
    batches, a dataset of single arrays gives one Tensor per batch, dicts stay dicts.

    - ``batch_size=None`` (and no ``batch_sampler``) turns batching off: each sample is returned on
      its own, through ``default_convert_fn``.
    - ``batch_sampler`` replaces ``batch_size``, ``shuffle`` and ``drop_last``.
    - ``num_workers > 0`` loads in that many processes; ``prefetch_factor`` batches per worker are
      in flight (one per worker with ``use_buffer_reader=False``); arrays come back through shared
      memory (``use_shared_memory=False`` pickles them instead); ``persistent_workers`` keeps the
      processes from one epoch to the next; ``timeout`` (seconds, 0 = none) bounds the wait for
      one batch; ``worker_init_fn(worker_id)`` runs first in each worker. Worker ``i`` is seeded
      (``random``, ``numpy.random``, ``oar.seed``) with ``base_seed + i``, ``base_seed`` drawn
      from oar's global generator: ``oar.seed(n)`` makes the whole run reproducible.
    - ``places`` is where the batch tensors go (default: the current device). ``return_list=False``
      with a ``feed_list`` yields ``{feed.name: tensor}`` dicts (without one it changes nothing,
      as in Paddle's dynamic mode).

    >>> import numpy as np
    >>> from oar.io import DataLoader, Dataset
    >>> class Pairs(Dataset):
    ...     def __getitem__(self, idx):
    ...         return np.full([2], idx, "float32"), idx
    ...     def __len__(self):
    ...         return 5
    >>> loader = DataLoader(Pairs(), batch_size=2)
    >>> len(loader), [(x.shape, y.tolist()) for x, y in loader]
    (3, [([2, 2], [0, 1]), ([2, 2], [2, 3]), ([1, 2], [4])])
    """

    def __init__(self, dataset, feed_list=None, places=None, return_list: bool = True, batch_sampler=None,
                 batch_size: int | None = 1, shuffle: bool = False, drop_last: bool = False, collate_fn=None,
                 num_workers: int = 0, use_buffer_reader: bool = True, prefetch_factor: int = 2,
                 use_shared_memory: bool = True, timeout: float = 0, worker_init_fn=None,
                 persistent_workers: bool = False):
        self.dataset = dataset
        self.feed_list = feed_list
        self.places = places
        self.return_list = bool(return_list)
        self.collate_fn = collate_fn
        self.use_buffer_reader = bool(use_buffer_reader)
        self.use_shared_memory = bool(use_shared_memory)
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = bool(persistent_workers)
        self._iterable = isinstance(dataset, IterableDataset)
        for name, value, least in (("num_workers", num_workers, 0), ("prefetch_factor", prefetch_factor, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ArgumentError(f"DataLoader: {name} must be an int >= {least}, got {value!r}")
        self.num_workers = int(num_workers)
        self.prefetch_factor = int(prefetch_factor)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)) or timeout < 0:
            raise ArgumentError(f"DataLoader: timeout must be a number of seconds >= 0, got {timeout!r}")
        self.timeout = timeout
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ArgumentError("DataLoader: batch_size, shuffle and drop_last must keep their defaults when "
                                    "a batch_sampler is given (it decides them)")
            if self._iterable:
                raise ArgumentError("DataLoader: an IterableDataset has no indices to give a batch_sampler")
            self.batch_size = None
        elif batch_size is not None:
            if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
                raise ArgumentError(f"DataLoader: batch_size must be a positive int or None, got {batch_size!r}")
            self.batch_size = int(batch_size)
            if self._iterable:
                if shuffle:
                    raise ArgumentError("DataLoader: an IterableDataset cannot be shuffled by the loader "
                                        "(shuffle inside its __iter__)")
            else:
                batch_sampler = BatchSampler(dataset=dataset, shuffle=shuffle, batch_size=self.batch_size,
                                             drop_last=drop_last)
        else:
            self.batch_size = None
        self.batch_sampler = batch_sampler
        self.shuffle = shuffle
        self.drop_last = drop_last
        self._auto_collate = batch_sampler is not None or self.batch_size is not None
        self._pool_iter = None  # the iterator that owns the persistent workers
        self._tuned = False  # whether oar.incubate.autotune has picked num_workers for this loader

    def _tasks(self):
        """What each batch is made of: lists of indices, single indices, or (for an
        IterableDataset) nothing but a count, forever."""
        if self._iterable:
            return itertools.repeat(None)
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        return iter((RandomSampler if self.shuffle else SequenceSampler)(self.dataset))

    def _fetcher(self) -> Fetcher:
        return Fetcher(self.dataset, self._iterable, self._auto_collate, self.collate_fn, self.batch_size,
                       self.drop_last)

    def __iter__(self):
        if not self._tuned and not self._iterable and _autotune.dataloader_tuning_steps():
            self._tuned = True  # once per loader: the first pass picks num_workers for the run
            return _TuningIter(self, _autotune.dataloader_tuning_steps())
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._pool_iter is None or self._pool_iter._pool.closed:
                self._pool_iter = _MultiProcessIter(self)
            else:
                self._pool_iter._next_epoch(self)
            return self._pool_iter
        return _MultiProcessIter(self)

    def __call__(self):
        return self.__iter__()

    def __len__(self) -> int:
        if self._iterable:
            raise TypeError("DataLoader: the length of an IterableDataset is not known")
        if self._auto_collate:
            return len(self.batch_sampler)
        return len(self.dataset)

    def __del__(self):
        pool_iter = getattr(self, "_pool_iter", None)
        if pool_iter is not None:
            pool_iter._pool.shutdown()


class _Output:
    """Turns a collated batch into what the loader yields: Tensors on ``places``, lists, dicts."""

    def __init__(self, loader: DataLoader):
        place = loader.places[0] if isinstance(loader.places, (list, tuple)) and loader.places else loader.places
        self.place = None if isinstance(place, (list, tuple)) else place
        self.backend = place_backend(self.place)
        # Without a feed_list, return_list=False changes nothing, as in Paddle's dynamic mode.
        feeds = None if loader.return_list or loader.feed_list is None else loader.feed_list
        self.names = None if feeds is None else [getattr(v, "name", str(v)) for v in feeds]

    def __call__(self, batch, owned: bool):
        on_cpu = (self.backend or oar.get_device()) == "cpu"

        def make_tensor(array: np.ndarray):
            if array.dtype not in NP_TO_DTYPE:
                return array  # strings and other arrays that are no tensor stay numpy
            if owned and on_cpu:  # the array came from a worker and belongs to no one else: no copy
                return Tensor._wrap(array, "cpu", True, None, 0, None)
            return to_tensor(array, place=self.place)

        out = to_output(batch, make_tensor)
        if self.names is None:
            return out
        tensors = _leaves(out)
        if len(tensors) != len(self.names):
            raise ArgumentError(f"DataLoader: the batch has {len(tensors)} tensors but feed_list names "
                                f"{len(self.names)}: {self.names}")
        return dict(zip(self.names, tensors))


def _leaves(batch) -> list:
    if isinstance(batch, dict):
        return [leaf for value in batch.values() for leaf in _leaves(value)]
    if isinstance(batch, list):
        return [leaf for value in batch for leaf in _leaves(value)]
    return [batch] if isinstance(batch, Tensor) else []


class _ProfiledNext:
    """Each wait for a batch is a ``Dataloader`` span while a profiler records (``oar.profiler``),
    and each batch a step of ``oar.incubate.autotune``."""

    def __next__(self):
        if not RECORDERS:
            batch = self._next()
        else:
            with RecordEvent("DataLoader.next", TracerEventType.Dataloader):
                batch = self._next()
        _autotune.step()  # each batch handed out is a step of oar.incubate.autotune's tuning range
        return batch


class _SingleProcessIter(_ProfiledNext):
    """``num_workers=0``: each batch is loaded in the calling thread when it is asked for, so
    random augmentations draw from the global generators in a reproducible order."""

    def __init__(self, loader: DataLoader, base_seed: int | None = None):
        if base_seed is None:  # (a tuning pass draws one for all its trials)
            _draw_base_seed()
        self._fetcher = loader._fetcher()
        self._fetcher.restart()
        self._tasks = loader._tasks()
        self._output = _Output(loader)
        self._length = None if loader._iterable else len(loader)
        # default_collate_fn makes new arrays (np.stack, np.array): they can become Tensors uncopied
        self._owned = loader.collate_fn is None and loader._auto_collate
        self._done = False

    def __iter__(self):
        return self

    def _next(self):
        if self._done:
            raise StopIteration
        try:
            task = next(self._tasks)
        except StopIteration:
            self._done = True
            raise
        try:
            batch = self._fetcher.fetch(task)
        except Exhausted:
            self._done = True
            raise StopIteration from None
        except FetchError as exc:
            error = exc.error
            raise rebuild(type(error), f"DataLoader: {exc.where} raised {type(error).__qualname__}: {error}") from error
        return self._output(batch, owned=self._owned)

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("DataLoader: the length of an IterableDataset is not known")
        return self._length


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _worker_exception(payload: dict) -> BaseException:
    """The worker's exception, re-created in the parent with the worker's traceback in its
    message (a RuntimeError when its type cannot be re-created from a message), the worker's
    exception, re-created from its class and (JSON) arguments, as its ``__cause__``."""
    where = f": {payload['where']} raised" if payload.get("where") else " raised"
    text = (f"DataLoader worker {payload['worker_id']} (pid {payload['pid']}){where} {payload['qualname']}: "
            f"{payload['message']}\n\nTraceback in the worker:\n{payload['traceback'].rstrip()}")
    kind = None
    try:
        kind = importlib.import_module(payload["module"])
        for part in payload["qualname"].split("."):
            kind = getattr(kind, part)
    except Exception:
        kind = None
    error = rebuild(kind, text)
    if payload.get("args") is not None and isinstance(kind, type) and issubclass(kind, BaseException):
        with contextlib.suppress(Exception):  # a class whose arguments do not re-create it
            error.__cause__ = kind(*json.loads(payload["args"]))
    return error


class _WorkerPool:
    """The worker processes, their pipes and the shared generation counter: started once,
    stopped once (``shutdown`` is idempotent and does nothing outside the process that owns it,
    such as a forked child that inherited the object)."""

    def __init__(self, loader: DataLoader, base_seed: int):
        self.owner_pid = os.getpid()
        self.closed = False
        self.use_shared_memory = loader.use_shared_memory
        self.token = secrets.token_hex(3)
        self.shm_prefix = f"oar{self.owner_pid}_{self.token}"
        context = multiprocessing.get_context()
        self.control = context.RawValue("q", 0)
        self.processes, self.task_conns, self.result_conns = [], [], []
        if self.use_shared_memory:
            shm.start_tracker()
        fetcher = loader._fetcher()
        try:
            for worker_id in range(loader.num_workers):
                config = WorkerConfig(fetcher, loader.num_workers, loader.worker_init_fn, self.use_shared_memory,
                                      shm.name_prefix(self.owner_pid, self.token, worker_id))
                task_reader, task_writer = context.Pipe(duplex=False)
                result_reader, result_writer = context.Pipe(duplex=False)
                process = context.Process(
                    target=worker_loop, name=f"oar-io-worker-{worker_id}", daemon=True,
                    args=(config, worker_id, base_seed, task_reader, result_writer, self.control),
                )
                self.task_conns.append(task_writer)
                self.result_conns.append(result_reader)
                try:
                    process.start()
                finally:
                    task_reader.close()
                    result_writer.close()
                self.processes.append(process)
        except BaseException as exc:
            self.shutdown()
            method = context.get_start_method()
            if method != "fork" and isinstance(exc, (pickle.PicklingError, AttributeError, TypeError)):
                raise TypeError(
                    f"DataLoader: could not start worker processes with the {method!r} start "
                    f"method: {exc}. Under 'spawn' or 'forkserver' the dataset, collate_fn and worker_init_fn "
                    f"must be picklable (no lambdas or local classes)."
                ) from exc
            raise

    def dead_worker_error(self, worker_id: int) -> RuntimeError:
        process = self.processes[worker_id]
        process.join(0.1)
        return RuntimeError(f"DataLoader worker {worker_id} (pid {process.pid}) {_describe_exit(process.exitcode)} "
                            f"while loading; the other workers were stopped")

    def _drain(self) -> None:
        """Read whatever the workers still send, unlinking the shared memory of those batches."""
        for conn in self.result_conns:
            try:
                while not conn.closed and conn.poll(0):
                    message = conn.recv()
                    if message[2] == "batch":
                        shm.release(message[3][1])
            except Exception:  # a broken pipe, or a message that does not unpickle here: stop reading it
                conn.close()

    def shutdown(self) -> None:
        if self.closed or os.getpid() != self.owner_pid:
            return
        self.closed = True
        self.control.value = -1
        for conn in self.task_conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + _JOIN_SECONDS
        for process in self.processes:
            while process.is_alive() and time.monotonic() < deadline:
                self._drain()  # a worker blocked on a full result pipe must be able to finish
                process.join(0.02)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
        self._drain()
        for conn in self.task_conns + self.result_conns:
            conn.close()
        for process in self.processes:
            process.close()
        if self.use_shared_memory:
            shm.sweep(self.shm_prefix)  # blocks of workers stopped mid-batch


class _MultiProcessIter(_ProfiledNext):
    """``num_workers > 0``: batches computed by worker processes, delivered in order."""

    def __init__(self, loader: DataLoader, base_seed: int | None = None):
        base_seed = _draw_base_seed() if base_seed is None else base_seed
        self._num_workers = loader.num_workers
        self._in_flight = loader.num_workers * (loader.prefetch_factor if loader.use_buffer_reader else 1)
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._output = _Output(loader)
        self._length = None if loader._iterable else len(loader)
        self._pool = _WorkerPool(loader, base_seed)
        weakref.finalize(self, self._pool.shutdown)  # break, del, garbage collection
        self._generation = 0
        self._begin(loader._tasks())

    def _next_epoch(self, loader: DataLoader) -> None:
        """A new pass over the data with the same (persistent) workers."""
        _draw_base_seed()  # before the sampler draws, as for a new iterator
        self._begin(loader._tasks())

    def _begin(self, tasks) -> None:
        self._generation += 1
        self._pool.control.value = self._generation  # workers drop the tasks of an earlier pass
        self._tasks = tasks
        self._tasks_left = True
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        self._owner = {}  # task index -> worker
        self._sent = self._received = 0
        self._done = False
        try:
            for _ in range(self._in_flight):
                self._send_next()
        except BaseException:
            self._pool.shutdown()
            raise

    def _send_next(self) -> None:
        if not self._tasks_left or not any(self._active):
            return
        try:
            task = next(self._tasks)
        except StopIteration:
            self._tasks_left = False
            return
        worker_id = next(self._cycle)
        while not self._active[worker_id]:
            worker_id = next(self._cycle)
        try:
            self._pool.task_conns[worker_id].send((self._generation, self._sent, task))
        except OSError:
            raise self._pool.dead_worker_error(worker_id) from None
        self._owner[self._sent] = worker_id
        self._sent += 1

    def _receive(self, worker_id: int, task_index: int):
        conn = self._pool.result_conns[worker_id]
        process = self._pool.processes[worker_id]
        deadline = time.monotonic() + self._timeout if self._timeout else None
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([conn, process.sentinel], remaining)
            if not ready:
                raise RuntimeError(
                    f"DataLoader timed out: worker {worker_id} (pid {process.pid}) gave no batch within "
                    f"timeout={self._timeout} s; the workers were stopped"
                )
            if conn not in ready:  # the worker exited; anything it sent before is still readable
                if conn.poll(0):
                    continue
                raise self._pool.dead_worker_error(worker_id)
            try:
                generation, index, kind, payload = conn.recv()
            except EOFError:
                raise self._pool.dead_worker_error(worker_id) from None
            if generation != self._generation:  # from a pass that was left early
                if kind == "batch":
                    shm.release(payload[1])
                continue
            if index != task_index:
                raise RuntimeError(f"DataLoader: worker {worker_id} answered task {index} while task {task_index} "
                                   f"was expected")
            return kind, payload

    def __iter__(self):
        return self

    def _next(self):
        if self._done or self._pool.closed:
            raise StopIteration
        try:
            while self._received < self._sent:
                worker_id = self._owner.pop(self._received)
                kind, payload = self._receive(worker_id, self._received)
                self._received += 1
                if kind == "end":
                    self._active[worker_id] = False
                    self._send_next()
                    continue
                if kind == "error":
                    raise _worker_exception(payload)
                skeleton, descriptors = payload
                batch = restore_batch(skeleton, shm.read(descriptors))
                self._send_next()
                return self._output(batch, owned=True)
        except BaseException:
            self._pool.shutdown()
            raise
        self._done = True
        if not self._persistent:
            self._pool.shutdown()
        raise StopIteration

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("DataLoader: the length of an IterableDataset is not known")
        return self._length

    def close(self) -> None:
        """Stop the workers now (otherwise they stop at the end of the pass, or when this iterator
        is garbage collected)."""
        self._pool.shutdown()


class _TuningIter(_ProfiledNext):
    """A loader's first pass under ``oar.incubate.autotune``'s DataLoader tuning: the first
    ``tuning_steps`` batches are shared among a few ``num_workers`` values (each value's batches
    loaded by a pass of its own over its share of the tasks), the value with the most batches per
    second is kept in ``loader.num_workers`` and loads the rest of the pass. The tasks are drawn
    once, so every sample comes once and in the order the loader gives without tuning."""

    def __init__(self, loader: DataLoader, tuning_steps: int):
        self._base_seed = _draw_base_seed()  # before the sampler draws, as for a plain pass
        self._loader = loader
        self._tasks = loader._tasks()
        self._length = len(loader)
        cpus = os.cpu_count() or 1
        candidates = sorted({0, 1, 2, loader.num_workers, *(n for n in (4, 8, 16) if n <= cpus)})
        candidates = [n for n in candidates if n <= max(cpus, loader.num_workers)]
        per_trial = min(tuning_steps, self._length) // len(candidates)
        self._trials = iter(candidates if per_trial >= 2 else [])
        self._per_trial = per_trial
        self._rates: dict[int, float] = {}
        self._current = None
        # (num_workers, batches so far, when the first and the last came): the first batch, with the
        # workers' start-up, is not timed
        self._trial: tuple[int, int, float, float] | None = None

    def _start(self, num_workers: int | None, count: int | None):
        trial = copy.copy(self._loader)
        trial.num_workers = num_workers
        trial.persistent_workers = False
        trial._pool_iter = None  # (the copy's __del__ must not stop the loader's own workers)
        tasks = self._tasks if count is None else itertools.islice(self._tasks, count)
        trial._tasks = lambda: tasks  # this pass's tasks, not a new draw of the sampler
        kind = _SingleProcessIter if num_workers == 0 else _MultiProcessIter
        return kind(trial, base_seed=self._base_seed)

    def _finish_trial(self) -> None:
        num_workers, batches, first, last = self._trial
        if batches >= 2:
            self._rates[num_workers] = (batches - 1) / max(last - first, 1e-9)
        self._trial = None

    def _next(self):
        while True:
            if self._current is None:
                num_workers = next(self._trials, None)
                if num_workers is None:
                    self._choose()
                    self._current = self._start(self._loader.num_workers, None)
                else:
                    self._current = self._start(num_workers, self._per_trial)
                    self._trial = (num_workers, 0, 0.0, 0.0)
            try:
                batch = self._current._next()
            except StopIteration:
                if self._trial is None:
                    raise
                self._finish_trial()
                self._current = None
                continue
            if self._trial is not None:
                num_workers, batches, first, _ = self._trial
                now = time.perf_counter()
                self._trial = (num_workers, batches + 1, now if batches == 0 else first, now)
            return batch

    def _choose(self) -> None:
        if not self._rates:
            return
        best = max(self._rates, key=self._rates.__getitem__)
        tried = ", ".join(f"{n}: {rate:.1f}" for n, rate in sorted(self._rates.items()))
        _logger.info("DataLoader autotune: num_workers=%d chosen (batches/s by num_workers: %s)", best, tried)
        self._loader.num_workers = best
        self._loader.autotune_rates = dict(self._rates)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self._length


__all__ = ["DataLoader"]
