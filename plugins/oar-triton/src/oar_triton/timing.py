"""Timing gpu work without torch: the plugin's own ``do_bench``, which autotuning and the GPU
benchmarks use (Triton's ``triton.testing.do_bench`` imports torch).

On a GPU each run is timed with CUDA events recorded on the default stream around it, after the
L2 cache is flushed by writing a 256 MiB buffer (so a run does not find its inputs cached by the
previous one); the median is reported. In Triton's interpreter the host clock times the calls:
what it measures is the interpreter, not a GPU, so nothing should be tuned on it.

>>> import oar_triton.timing as timing                       # doctest: +SKIP
>>> timing.do_bench(lambda: x @ y)                           # doctest: +SKIP
0.512
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable

from oar_triton.driver import CudaDriver, require_driver

FLUSH_BYTES = 256 << 20


class _Events:
    """CUDA events through the driver API (cuEventCreate / Record / Synchronize / ElapsedTime)."""

    def __init__(self, driver: CudaDriver):
        self.driver, self.lib = driver, driver._lib

    def create(self) -> ctypes.c_void_p:
        event = ctypes.c_void_p()
        self.driver._check(self.lib.cuEventCreate(ctypes.byref(event), 0), "cuEventCreate")
        return event

    def record(self, event) -> None:
        self.driver._check(self.lib.cuEventRecord(event, None), "cuEventRecord")

    def elapsed_ms(self, start, end) -> float:
        self.driver._check(self.lib.cuEventSynchronize(end), "cuEventSynchronize")
        ms = ctypes.c_float()
        self.driver._check(self.lib.cuEventElapsedTime(ctypes.byref(ms), start, end), "cuEventElapsedTime")
        return ms.value

    def destroy(self, event) -> None:
        self.lib.cuEventDestroy_v2(event)


def do_bench(fn: Callable[[], object], warmup: int = 10, rep: int = 50) -> float:
    """The median time of ``fn()`` in milliseconds over ``rep`` runs after ``warmup`` runs."""
    driver = require_driver()
    for _ in range(warmup):
        fn()
    driver.synchronize()
    if not isinstance(driver, CudaDriver):
        times = []
        for _ in range(rep):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)
    events = _Events(driver)
    flush = driver.alloc(FLUSH_BYTES)
    pairs = [(events.create(), events.create()) for _ in range(rep)]
    try:
        for start, end in pairs:
            driver.memset(flush, 0, FLUSH_BYTES)
            events.record(start)
            fn()
            events.record(end)
        times = [events.elapsed_ms(start, end) for start, end in pairs]
    finally:
        for start, end in pairs:
            events.destroy(start)
            events.destroy(end)
        driver.synchronize()
        driver.free(flush)
    return statistics.median(times)
