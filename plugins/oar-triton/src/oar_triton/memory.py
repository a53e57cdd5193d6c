"""The device memory pool: freed blocks are kept and handed out again, as Paddle's and PyTorch's
caching allocators do, because asking the driver for memory synchronises and costs far more
than a kernel.

Requests are rounded up (small ones to 512 bytes, large ones to whole 2 MiB granules) so that
blocks of similar sizes serve each other; a freed block waits in the free list of its size. When
the driver has no memory left, the pool gives every cached block back and tries once more; only
then is the request an error, naming its size and what the pool holds.

Statistics are ``oar.device.cuda``'s: allocated (blocks in use), reserved (in use plus cached),
and the peak of each since the last reset.

>>> pool = MemoryPool(HostDriver())
>>> block = pool.allocate(1000)
>>> block.size, pool.memory_allocated()
(1024, 1024)
>>> del block
>>> pool.memory_allocated(), pool.memory_reserved()
(0, 1024)
"""

from __future__ import annotations

import threading

from oar_triton.driver import CudaDriver, HostDriver

from oar.errors import ResourceExhaustedError

SMALL_ROUND = 512
LARGE = 1 << 20  # requests above this are rounded to whole granules
GRANULE = 2 << 20


def rounded_size(nbytes: int) -> int:
    """The size of the block that serves a request of ``nbytes``."""
    if nbytes <= LARGE:
        return max(SMALL_ROUND, -(-nbytes // SMALL_ROUND) * SMALL_ROUND)
    return -(-nbytes // GRANULE) * GRANULE


class Block:
    """One allocation of the pool; it goes back to the pool's free list when no buffer refers to it."""

    __slots__ = ("ptr", "size", "pool")

    def __init__(self, ptr: int, size: int, pool: MemoryPool):
        self.ptr, self.size, self.pool = ptr, size, pool

    def __del__(self):
        pool = self.pool
        if pool is not None:
            pool.release(self.ptr, self.size)


class MemoryPool:
    """A caching allocator over one device's driver."""

    def __init__(self, driver: HostDriver | CudaDriver):
        self.driver = driver
        self._free: dict[int, list[int]] = {}  # block size -> cached pointers
        self._lock = threading.Lock()
        self._allocated = self._reserved = self._peak_allocated = self._peak_reserved = 0

    def allocate(self, nbytes: int) -> Block:
        size = rounded_size(nbytes)
        with self._lock:
            cached = self._free.get(size)
            if cached:
                ptr = cached.pop()
            else:
                ptr = self._new_block(size, nbytes)
                self._reserved += size
                self._peak_reserved = max(self._peak_reserved, self._reserved)
            self._allocated += size
            self._peak_allocated = max(self._peak_allocated, self._allocated)
        return Block(ptr, size, self)

    def _new_block(self, size: int, nbytes: int) -> int:
        try:
            return self.driver.alloc(size)
        except ResourceExhaustedError:
            self._release_cached()
        try:
            return self.driver.alloc(size)
        except ResourceExhaustedError as exc:
            mib = 1 << 20
            raise ResourceExhaustedError(
                f"gpu: out of memory allocating {nbytes / mib:.1f} MiB: {self._allocated / mib:.1f} MiB are in use by "
                f"tensors and the device has {self.driver.total_memory() / mib:.0f} MiB; free tensors you no longer "
                f"need or use a smaller batch") from exc

    def release(self, ptr: int, size: int) -> None:
        with self._lock:
            self._allocated -= size
            self._free.setdefault(size, []).append(ptr)

    def _release_cached(self) -> None:
        for size, ptrs in self._free.items():
            for ptr in ptrs:
                self.driver.free(ptr)
                self._reserved -= size
        self._free.clear()

    def empty_cache(self) -> None:
        """Give the cached (unused) blocks back to the driver."""
        with self._lock:
            self._release_cached()

    def memory_allocated(self) -> int:
        return self._allocated

    def max_memory_allocated(self) -> int:
        return self._peak_allocated

    def memory_reserved(self) -> int:
        return self._reserved

    def max_memory_reserved(self) -> int:
        return self._peak_reserved

    def reset_max_memory_allocated(self) -> None:
        self._peak_allocated = self._allocated

    def reset_max_memory_reserved(self) -> None:
        self._peak_reserved = self._reserved
