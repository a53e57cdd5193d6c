"""The engine's side of profiling: where spans go, and how much tensor memory is alive.

``oar.profiler`` (above) records: it pushes a mode on the dispatch stack that times every op call,
and appends itself to ``recorders`` so that the places that do not dispatch -- the autograd
engine's backward nodes, the executor's inference nodes -- time themselves too. With no profiler,
``recorders`` is empty and each of those places pays one truthiness test (per backward node, per
program run), nothing per eager op.

Tensor memory is counted only while someone asks for it (``TensorMemory.start``: the memory
statistics of ``oar.device``, from their first call on, and a profiler with ``profile_memory``
while it records): every array an op returns
that owns its memory is added when made and taken off when freed (a ``weakref.finalize``, about a
microsecond per array, which is why it is not always on).
"""

from __future__ import annotations

import gc
import threading
import weakref
from time import perf_counter_ns as now_ns  # noqa: F401 - the clock every span uses, re-exported

import numpy as np

from oar._engine.dispatch import Mode

TENSOR_TYPES: tuple = ()  # what TensorMemory.start looks for (oar._engine.tensor puts Tensor here)

# Active recorders, innermost last; each has ``span(name, kind, start_ns, end_ns, args)``.
recorders: list = []


class TensorMemory:
    """Bytes of tensor storage alive on the CPU, and the highest count since the last reset.

    >>> from oar._engine.profiling import TENSOR_MEMORY
    >>> import numpy as np
    >>> TENSOR_MEMORY.start()
    >>> before = TENSOR_MEMORY.allocated
    >>> a = np.ones(1000)
    >>> TENSOR_MEMORY.track(a)
    8000
    >>> TENSOR_MEMORY.allocated - before
    8000
    >>> del a
    >>> TENSOR_MEMORY.allocated - before
    0
    >>> TENSOR_MEMORY.stop()
    """

    def __init__(self):
        self.on = False
        self.allocated = 0
        self.peak = 0
        self.total = 0  # bytes ever counted: what a span allocated is the change of this
        self._tracked: set[int] = set()  # ids of the arrays counted (an array is counted once)
        self._generation = 0  # a count stopped and started again ignores the frees of the arrays of the last
        self._mode: MemoryMode | None = None
        self.kept = False  # asked for by oar.device's statistics: a profiler's recording does not stop it
        self._lock = threading.Lock()

    def start(self, keep: bool = False) -> None:
        """Count from now on; the tensors alive already are found once (a walk of the heap).
        ``keep``: until ``stop()`` is called, whoever else started the count."""
        self.kept = self.kept or keep
        if self.on:
            return
        self.on = True
        self._generation += 1
        self._mode = MemoryMode()
        self._mode.__enter__()  # on the stack while counting: ops' outputs are counted
        for obj in gc.get_objects():
            if isinstance(obj, TENSOR_TYPES):
                self.track(obj._data)

    def stop(self) -> None:
        """Stop counting and forget the counts (a profiler that started the count stops it)."""
        if not self.on:
            return
        self.on = self.kept = False
        self._mode.__exit__(None, None, None)
        self._mode = None
        with self._lock:
            self.allocated = self.peak = 0
            self._tracked = set()

    def track(self, array) -> int:
        """Count ``array``'s memory (its base's, for a view) until it is freed; the bytes added."""
        while isinstance(array, np.ndarray) and isinstance(array.base, np.ndarray):
            array = array.base
        if not isinstance(array, np.ndarray) or not array.flags.owndata or not array.nbytes:
            return 0
        key = id(array)
        with self._lock:
            if key in self._tracked:
                return 0
            self._tracked.add(key)
            self.allocated += array.nbytes
            self.total += array.nbytes
            if self.allocated > self.peak:
                self.peak = self.allocated
        weakref.finalize(array, self._freed, key, array.nbytes, self._generation)
        return array.nbytes

    def _freed(self, key: int, nbytes: int, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self._tracked.discard(key)
            self.allocated -= nbytes

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.allocated


TENSOR_MEMORY = TensorMemory()


class MemoryMode(Mode):
    """Counts the memory of every op's outputs (``TensorMemory.start`` pushes it, ``stop`` pops it)."""

    observer = True  # changes no call: to_static keeps running its programs (the executor counts their nodes)

    def apply(self, op, inputs: tuple, attrs: dict):
        out = self.apply_below(op, inputs, attrs)
        for t in out if type(out) is tuple else (out,):
            data = getattr(t, "_data", None)
            if data is not None:
                TENSOR_MEMORY.track(data)
        return out


def track_outputs(arrays) -> None:
    """Count the arrays a program node made (the executor's inference runs do not dispatch)."""
    for a in arrays:
        if a is not None:
            TENSOR_MEMORY.track(a)
