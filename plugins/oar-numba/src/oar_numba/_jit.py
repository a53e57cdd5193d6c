"""How oar-numba compiles and launches its kernels, in one place.

Every kernel is compiled lazily, once per dtype, and cached on disk (``cache=True``): a second
process loads the machine code instead of compiling it again (see docs/numba.md for the cold and
warm first-call latencies). ``nogil`` lets other Python threads run meanwhile.

The fast-math flags allow reassociation (vectorised sums), fused multiply-adds, reciprocals and
ignoring the sign of zero, but never ``nnan``/``ninf``: ``-inf`` and NaN carry meaning here
(attention masks, the padding of max pooling, NaN propagation as numpy does it).

Intermediate buffers (the convolutions' patch matrices) are reused per thread (``scratch``):
on this project's machines a fresh buffer of a few MiB costs more in page faults than the copy
that fills it.

Small calls run on the calling thread alone: waking the pool costs microseconds on an idle
machine and a scheduler tick (milliseconds) when another process holds the other cores, while
the work of a few thousand elements is done in microseconds.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor

# GNU OpenMP (numba's threading layer here) keeps its idle threads spinning after each parallel
# region, by default for 300,000 rounds (about a millisecond), then sleeps; the training step's
# convolutions alternate numba regions with BLAS products, whose threads then shared cores with
# spinners. Sleeping at once (OMP_WAIT_POLICY=PASSIVE, what oar-numba set before) costs a wake of
# tens of microseconds per region on the project's virtual machines, where an inference program's
# regions follow each other a few microseconds apart. SPIN_ROUNDS keeps the spin short: a longer
# spin held a core that the next BLAS product's threads wanted in eager training (W5's step, an
# encoder layer: GEMMs between numba's norms and activations), and a shorter one bridged an
# inference program's gaps less reliably (docs/numba.md, "Figures behind the kernels' choices").
# Set before numba's first parallel call loads libgomp; a user's own OMP_WAIT_POLICY or
# GOMP_SPINCOUNT wins.
SPIN_ROUNDS = 10000
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_ROUNDS))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from oar.ops import blas_controllers, one_blas_thread  # noqa: E402

FASTMATH = {"reassoc", "contract", "arcp", "nsz"}


class CompileNotice(numba.core.event.Listener):
    """Says once per process, on stderr, that CPU kernels are being compiled, as soon as numba has
    compiled for ``NOTICE_AFTER`` seconds in all: the first run of a fresh installation otherwise
    sits silent for seconds (its first training step, an export). numba emits ``numba:compile``
    only when a signature is neither in memory nor in the disk cache: a warm run says nothing."""

    NOTICE_AFTER = 1.0  # seconds of compiling before the notice

    def __init__(self, out=None):
        self.out = out
        self.compiled_s = 0.0  # time spent in finished outermost compilations
        self.depth = 0
        self.started = 0.0
        self.timer: threading.Timer | None = None
        self.said = False

    def on_start(self, event) -> None:
        self.depth += 1
        if self.depth == 1 and not self.said:
            self.started = time.perf_counter()
            module = (event.data["dispatcher"].py_func.__module__ or "fused loops").rpartition(".")[2].strip("_")
            self.timer = threading.Timer(max(0.0, self.NOTICE_AFTER - self.compiled_s), self.say, (module,))
            self.timer.daemon = True
            self.timer.start()

    def on_end(self, event) -> None:
        self.depth -= 1
        if self.depth == 0 and self.timer is not None:
            self.timer.cancel()
            self.timer = None
            self.compiled_s += time.perf_counter() - self.started

    def say(self, what: str) -> None:
        if not self.said:
            self.said = True
            print(f"oar-numba: compiling CPU kernels ({what}, ...), first run only: they are cached on disk for "
                  f"later runs (`python -m oar_numba warm` compiles the common ones ahead)",
                  file=self.out or sys.stderr, flush=True)


COMPILE_NOTICE = CompileNotice()
numba.core.event.register("numba:compile", COMPILE_NOTICE)
# A call runs on numba's pool only when its largest array has at least SERIAL_BELOW elements.
# Waking the pool's sleeping threads (passive waiting, above) costs tens of microseconds on the
# project's 2-vCPU virtual machine, far more than for a pool that spins, and the data a region
# touched then sits in the other core's cache. The loops here do a few ns of work per element, so
# a region over less than about a million elements costs more than it saves (LeNet's Adam step,
# docs/numba.md). Kernels with more work per element use COMPUTE_SERIAL_BELOW.
SERIAL_BELOW = 1 << 20  # elements of the largest array argument
COMPUTE_SERIAL_BELOW = 1 << 16  # the same for compute-bound loops (a direct convolution)


class ParallelKernel:
    """A numba kernel whose ``prange`` loops run on numba's thread pool for large arguments.

    It is compiled twice, each compilation on its first use: calls below ``SERIAL_BELOW`` elements,
    and every call at one thread, run the serial compilation, which compiles several times faster
    than the parallel one (numba's parfor passes), so a model of small tensors, or one run at one
    thread, never compiles the parallel code (docs/numba.md, "Compilation and the disk cache")."""

    __slots__ = ("jitted", "serial")

    def __init__(self, fn, *, cache: bool = True, fastmath=FASTMATH):
        flags = {"cache": cache, "nogil": True, "fastmath": fastmath}
        # each named apart (see cache_variant), and apart from the entries an oar-numba before
        # that fix cached under fn's own name
        self.jitted = numba.njit(parallel=True, **flags)(cache_variant(fn, "parallel"))
        self.serial = numba.njit(**flags)(cache_variant(fn, "serial"))

    def __call__(self, *args):
        if numba.get_num_threads() == 1 or max(a.size for a in args if isinstance(a, np.ndarray)) < SERIAL_BELOW:
            return self.serial(*args)
        return self.jitted(*args)


def parallel(fn) -> ParallelKernel:
    return ParallelKernel(fn)


def always_parallel(fn):
    """``fn`` compiled with ``parallel=True``, its ``prange`` loops on numba's threads for every
    call: for kernels that size their parallelism themselves (a ``parts`` argument)."""
    return numba.njit(parallel=True, cache=True, nogil=True, fastmath=FASTMATH)(cache_variant(fn, "parallel"))


def serial(fn):
    """A kernel that runs on the calling thread: for work that threads would only slow down."""
    return numba.njit(cache=True, nogil=True, fastmath=FASTMATH)(cache_variant(fn, "serial"))


def cache_variant(fn, variant: str):
    """``fn`` as a new function object named ``<name>__<variant>``, for a second compilation of
    it with other flags.

    numba's disk cache keys a function by its module, qualified name and first line, and an entry
    by signature and bytecode, not by the compile flags: a serial and a parallel compilation of
    one function share one entry, and whichever was compiled first is what the other loads from
    then on (a parallel kernel ran on one thread)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, f"{fn.__name__}__{variant}", fn.__defaults__,
                              fn.__closure__)
    copy.__qualname__ = f"{fn.__qualname__}__{variant}"
    copy.__kwdefaults__, copy.__doc__, copy.__module__ = fn.__kwdefaults__, fn.__doc__, fn.__module__
    return copy


class TwoWays:
    """A loop nest compiled twice: serially for calls whose largest array is below
    ``SERIAL_BELOW`` elements, in parallel above, as ``ParallelKernel``, for a caller that knows
    the largest size: ``kernel(largest, *args)`` picks by it; ``.serial`` and ``.parallel`` are the
    two compilations."""

    __slots__ = ("parallel", "serial")

    def __init__(self, fn):
        self.parallel, self.serial = always_parallel(fn), serial(fn)

    def __call__(self, largest: int, *args):
        return (self.serial if largest < SERIAL_BELOW else self.parallel)(*args)


def two_ways(fn) -> TwoWays:
    return TwoWays(fn)


def chunks(total: int) -> int:
    """How many pieces to split ``total`` rows into for per-thread partial sums."""
    return max(1, min(total, 4 * numba.get_num_threads()))


SCRATCH_LIMIT = 64 << 20  # bytes; a larger buffer is allocated for its call and let go
_scratch = threading.local()


def scratch(name: str, size: int, dtype) -> np.ndarray:
    """A 1-d buffer of ``size`` elements that this thread reuses from call to call under ``name``.

    Never return it, or a view of it, from a kernel: the next call overwrites it.
    """
    dtype = np.dtype(dtype)
    if size * dtype.itemsize > SCRATCH_LIMIT:
        return np.empty(size, dtype)
    buffers = _scratch.__dict__.setdefault("buffers", {})
    buffer = buffers.get((name, dtype))
    if buffer is None or buffer.size < size:
        buffer = buffers[name, dtype] = np.empty(size, dtype)
    return buffer[:size]


# -- splitting a kernel's samples over threads --------------------------------------------------
# The convolutions alternate numba regions with many small BLAS products (one per sample). With
# both pools sized n, every product forks and joins BLAS's threads, and a region waits for its
# slowest thread: on a busy machine a preempted thread costs a scheduler tick per product. Giving
# each thread whole samples instead (BLAS and numba at one thread inside) joins once per call.
# Handing work to another thread costs tens of microseconds: LeNet's convolutions (up to 1M
# elements of patches) ran slower split, ResNet's (9.4M) faster (docs/numba.md).
SPLIT_BELOW = 1 << 22
# Shares per thread, taken in turn rather than one fixed half each: the thread that starts late
# (a wake costs tens of microseconds here) or whose core is busy takes fewer. With halves, W4's
# step at 2 threads spent a tenth of its time with the calling thread waiting for the other's half;
# with shares that wait is gone from the profile, though the step gained little (docs/numba.md):
# the threads are slower side by side than alone, whoever does the work.
SHARES_PER_THREAD = 4
_split_pool: ThreadPoolExecutor | None = None


def _on_one_thread(work, start: int, stop: int) -> None:
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # this thread's mask only
    try:
        work(start, stop)
    finally:
        numba.set_num_threads(threads)


def split_samples(work, n: int, size: int, min_size: int | None = None) -> None:
    """Run ``work(start, stop)`` over ``[0, n)``: in one call, or, with ``oar.set_num_threads(k > 1)``,
    threadpoolctl to pin BLAS and ``size`` (the elements the work touches) at least
    ``min_size`` (default ``SPLIT_BELOW``), in up to ``SHARES_PER_THREAD * k`` contiguous shares
    that k threads (the calling one included) take in turn, each running BLAS and numba on its
    own thread. ``work`` must write disjoint outputs per share (or keep per-share sums, keyed by
    ``start``)."""
    global _split_pool
    threads = min(numba.get_num_threads(), n) if size >= (SPLIT_BELOW if min_size is None else min_size) else 1
    if threads <= 1 or not blas_controllers():  # BLAS that cannot be pinned would oversubscribe
        work(0, n)
        return
    if _split_pool is None:
        _split_pool = ThreadPoolExecutor(numba.config.NUMBA_NUM_THREADS - 1, thread_name_prefix="oar-numba")
    shares = min(n, threads * SHARES_PER_THREAD)
    bounds = [n * k // shares for k in range(shares + 1)]
    taken = itertools.count()

    def take_shares() -> None:
        while (k := next(taken)) < shares:  # next() on a count is atomic: each share runs once
            _on_one_thread(work, bounds[k], bounds[k + 1])

    with one_blas_thread():
        futures = [_split_pool.submit(take_shares) for _ in range(1, threads)]
        try:
            take_shares()
        finally:
            for future in futures:
                future.result()


def _forget_split_pool() -> None:
    global _split_pool
    _split_pool = None  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_split_pool)
