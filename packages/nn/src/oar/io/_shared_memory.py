"""Arrays from a worker process to its parent through POSIX shared memory.

The worker writes each large array of a batch into its own ``SharedMemory`` block and sends only
``(name, shape, dtype)``; the parent copies the array out, closes and unlinks the block, so a
block lives only between the worker's write and the parent's read. Blocks are named
``oar<parent pid>_<pool token><worker id>_<n>``: the parent can find (and unlink) whatever a worker
that died mid-batch left behind. Python's resource tracker, shared by the parent and its
workers, also knows every block, as a last resort if the parent itself is killed.

Small arrays (under ``INLINE_BYTES``) and arrays that cannot live in shared memory (object
dtype, zero size) travel pickled in the descriptor: a block costs a few system calls, more than
pickling a few kilobytes.
"""

from __future__ import annotations

import itertools
import os
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory

import numpy as np

INLINE_BYTES = 16 * 1024
_SHM_DIR = "/dev/shm"


def name_prefix(parent_pid: int, token: str, worker_id: int) -> str:
    return f"oar{parent_pid}_{token}{worker_id}_"


def start_tracker() -> None:
    """Start the resource tracker in the parent before workers start, so that they share it
    (a forked worker would otherwise start a tracker of its own)."""
    resource_tracker.ensure_running()


class ArrayWriter:
    """The worker's side: arrays to descriptors."""

    def __init__(self, prefix: str, use_shared_memory: bool = True):
        self.prefix = prefix
        self.use_shared_memory = use_shared_memory
        self._counter = itertools.count()

    def _block_for(self, nbytes: int) -> SharedMemory:
        while True:
            try:
                return SharedMemory(name=f"{self.prefix}{next(self._counter)}", create=True, size=nbytes)
            except FileExistsError:  # left over by a dead process that had the same pid: take the next name
                continue

    def write(self, arrays: list[np.ndarray]) -> list[tuple]:
        """One descriptor per array: ``("shm", name, shape, dtype)`` or ``("inline", array)``.
        If writing fails half-way, the blocks already written are unlinked."""
        descriptors = []
        try:
            for array in arrays:
                if not self.use_shared_memory or array.nbytes < INLINE_BYTES or array.dtype.hasobject:
                    descriptors.append(("inline", array))
                    continue
                block = self._block_for(array.nbytes)
                try:
                    view = np.ndarray(array.shape, array.dtype, buffer=block.buf)
                    view[...] = array
                    del view  # the mapping cannot close while a view exports its buffer
                    descriptors.append(("shm", block.name, array.shape, array.dtype))
                finally:
                    block.close()
        except BaseException:
            release(descriptors)
            raise
        return descriptors


def read(descriptors: list[tuple]) -> list[np.ndarray]:
    """The parent's side: copy every array out of its block, then close and unlink the block.
    Every block is unlinked even if reading one of them fails."""
    arrays, error = [], None
    for descriptor in descriptors:
        if descriptor[0] == "inline":
            arrays.append(descriptor[1])
            continue
        _, name, shape, dtype = descriptor
        try:
            block = SharedMemory(name=name)
        except FileNotFoundError as exc:
            error = error or RuntimeError(f"DataLoader: the shared memory block {name} of a batch is gone ({exc})")
            continue
        try:
            view = np.ndarray(shape, dtype, buffer=block.buf)
            arrays.append(view.copy())
            del view
        finally:
            block.close()
            block.unlink()
    if error is not None:
        raise error
    return arrays


def release(descriptors: list[tuple]) -> None:
    """Unlink the blocks of a batch that will not be read (a stale or abandoned batch)."""
    for descriptor in descriptors:
        if descriptor[0] == "shm":
            _unlink(descriptor[1])


def _unlink(name: str) -> None:
    try:
        block = SharedMemory(name=name)
    except FileNotFoundError:
        return
    block.close()
    block.unlink()


def sweep(prefix: str) -> list[str]:
    """Unlink every block whose name starts with ``prefix`` (those of dead workers); returns their
    names. Only where shared memory is visible as files (``/dev/shm`` on Linux)."""
    try:
        names = [name for name in os.listdir(_SHM_DIR) if name.startswith(prefix)]
    except OSError:
        return []
    for name in names:
        _unlink(name)
    return names
