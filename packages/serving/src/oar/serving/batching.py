"""Dynamic batching: one scheduler per model version, on the server's event loop.

Requests join a bounded queue (a full queue answers 503 at once instead of growing). When a run
slot is free (``max_concurrency`` batches of a model run at once, each in a worker thread on its
own predictor over shared weights) the scheduler takes the oldest request and every queued one
whose inputs match it beyond the first dim, up to ``max_batch_size`` rows, waiting at most
``max_queue_delay_ms`` after the oldest request arrived for more; the batch runs as one, and its
outputs are split back by rows. A batch that raises is run again request by request, so that
only the request that made it fail gets the error. A request not answered within ``timeout_ms``
gets 504; its rows are dropped if it has not run yet.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from oar.serving import metrics
from oar.serving.repository import ModelConfig, ModelVersion


class Overloaded(Exception):
    """The model's queue is full (503)."""


class TimedOut(Exception):
    """The request was not answered within the model's timeout (504)."""


class ModelFailed(Exception):
    """The model raised while running this request (500)."""


@dataclass
class Pending:
    arrays: list[np.ndarray]
    rows: int
    key: tuple  # the inputs' shapes beyond the first dim: requests with the same key can join
    future: asyncio.Future
    enqueued: float


class Scheduler:
    """Queues, batches and runs the requests of one model version (see the module docstring)."""

    def __init__(self, version: ModelVersion, config: ModelConfig):
        self.version = version
        self.config = config
        self.label = version.model
        self.batching = config.max_batch_size > 0 and version.batchable()
        self.queue: collections.deque[Pending] = collections.deque()
        self.pool = ThreadPoolExecutor(max_workers=config.max_concurrency,
                                       thread_name_prefix=f"oar-serve-{version.model}-{version.version}")
        self.local = threading.local()
        self.task: asyncio.Task | None = None
        self.running: set[asyncio.Task] = set()

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.wakeup = asyncio.Event()
        self.slots = asyncio.Semaphore(self.config.max_concurrency)
        self.task = self.loop.create_task(self._schedule())

    async def stop(self) -> None:
        """Finish the batches that are running, then stop (the server has stopped accepting)."""
        while self.queue or self.running:
            await asyncio.sleep(0.01)
        if self.task is not None:
            self.task.cancel()
        self.pool.shutdown(wait=True)

    async def infer(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs of one request, once its batch has run."""
        if len(self.queue) >= self.config.max_queue_size:
            raise Overloaded(f"model {self.version.model!r} has {len(self.queue)} requests queued (max_queue_size "
                             f"{self.config.max_queue_size}); retry later")
        future = self.loop.create_future()
        rows = arrays[0].shape[0] if self.batching else 1
        key: tuple = tuple((a.shape[1:], a.dtype.str) for a in arrays)
        if any(a.shape[0] != rows for a in arrays[1:]):  # inputs of different lengths: a batch of its own
            key, rows = ("alone", id(future)), max(rows, self.config.max_batch_size)
        self.queue.append(Pending(arrays, rows, key, future, time.perf_counter()))
        self.wakeup.set()
        try:
            return await asyncio.wait_for(future, self.config.timeout_ms / 1000)
        except asyncio.TimeoutError:
            raise TimedOut(f"model {self.version.model!r} did not answer within timeout_ms="
                           f"{self.config.timeout_ms:g}") from None

    # -- the scheduler ------------------------------------------------------------------------------
    async def _schedule(self) -> None:
        while True:
            while not self.queue:
                self.wakeup.clear()
                await self.wakeup.wait()
            await self.slots.acquire()  # while every slot is busy, requests queue up and join one batch
            batch = self._take(None, 0)
            if not batch:
                self.slots.release()
                continue
            if self.batching:
                rows = sum(p.rows for p in batch)
                deadline = batch[0].enqueued + self.config.max_queue_delay_ms / 1000
                while rows < self.config.max_batch_size:
                    more = self._take(batch[0].key, rows)
                    batch += more
                    rows += sum(p.rows for p in more)
                    wait = deadline - time.perf_counter()
                    if rows >= self.config.max_batch_size or wait <= 0:
                        break
                    self.wakeup.clear()
                    try:
                        await asyncio.wait_for(self.wakeup.wait(), wait)
                    except asyncio.TimeoutError:
                        batch += self._take(batch[0].key, rows)
                        break
            task = self.loop.create_task(self._run(batch))
            self.running.add(task)
            task.add_done_callback(self.running.discard)

    def _take(self, key: tuple | None, rows: int) -> list[Pending]:
        """Queued requests that can join a batch of ``rows`` rows with inputs ``key`` (None: the
        oldest request alone), leaving the others queued in order; requests already answered
        (timed out) are dropped."""
        taken, kept = [], collections.deque()
        limit = self.config.max_batch_size
        while self.queue:
            p = self.queue.popleft()
            if p.future.done():
                continue
            if key is None:
                taken.append(p)
                if not self.batching:
                    break
                key, rows = p.key, p.rows
                continue
            if p.key == key and rows + p.rows <= limit:
                taken.append(p)
                rows += p.rows
            else:
                kept.append(p)
            if rows >= limit:
                break
        kept.extend(self.queue)
        self.queue = kept
        return taken

    async def _run(self, batch: list[Pending]) -> None:
        try:
            start = time.perf_counter()
            for p in batch:
                metrics.QUEUE_SECONDS.labels(self.label).observe(start - p.enqueued)
            metrics.BATCH_SIZE.labels(self.label).observe(sum(p.rows for p in batch))
            try:
                outputs = await self.loop.run_in_executor(self.pool, self._compute, [p.arrays for p in batch])
            except Exception as exc:  # noqa: BLE001 - reported to the requests, never to the loop
                if len(batch) == 1:
                    _answer(batch[0].future, error=ModelFailed(_describe(exc)))
                    return
                for p in batch:  # find the request that fails: the others still get their answers
                    try:
                        result = await self.loop.run_in_executor(self.pool, self._compute, [p.arrays])
                        _answer(p.future, result[0])
                    except Exception as alone:  # noqa: BLE001 - as above
                        _answer(p.future, error=ModelFailed(_describe(alone)))
                return
            finally:
                metrics.COMPUTE_SECONDS.labels(self.label).observe(time.perf_counter() - start)
            for p, result in zip(batch, outputs):
                _answer(p.future, result)
        finally:
            self.slots.release()

    def _compute(self, requests: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """Run requests as one batch in a worker thread; each request's outputs."""
        predictor = getattr(self.local, "predictor", None)
        if predictor is None:  # one predictor per worker thread, over the shared weights
            predictor = self.local.predictor = self.version.predictor.clone()
        if len(requests) == 1:
            return [predictor.infer(requests[0])]
        joined = [np.concatenate(parts) for parts in zip(*requests)]
        outputs = predictor.infer(joined)
        rows = [r[0].shape[0] for r in requests]
        total = sum(rows)
        for out in outputs:
            if not out.ndim or out.shape[0] != total:
                raise RuntimeError(f"an output of shape {list(out.shape)} does not have the batch's {total} rows "
                                   f"first: the model cannot be batched (set max_batch_size 0)")
        cuts = np.cumsum(rows)[:-1]
        pieces = [np.split(out, cuts) for out in outputs]
        return [[p[i] for p in pieces] for i in range(len(requests))]


def _answer(future: asyncio.Future, result=None, error: Exception | None = None) -> None:
    if future.done():  # timed out meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
