"""``oar.set_num_threads``: one setting for every CPU thread pool that oar's kernels run on.

Core does not know which pools exist: each is a *thread control*, a callable ``fn(n)`` that a
plugin registers with the ``oar_register_thread_controls`` hook (core's own plugin registers
``"blas"``, numpy's BLAS through threadpoolctl; oar-numba registers ``"numba"``). A control
registered after ``set_num_threads`` was called is applied at once, so load order never matters.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable

from oar._engine.registries import THREAD_CONTROLS
from oar.errors import ArgumentError


def limit_blas_threads(n: int) -> None:
    """Limit numpy's BLAS to ``n`` threads (process-wide) when threadpoolctl is installed."""
    try:
        from threadpoolctl import threadpool_limits  # optional dependency: BLAS's thread count
    except ModuleNotFoundError:  # without it BLAS keeps its own setting (OPENBLAS_NUM_THREADS, ...)
        return
    threadpool_limits(limits=n, user_api="blas")  # called, not entered: the limit stays


def set_num_threads(n: int) -> None:
    """Run oar's CPU kernels on at most ``n`` threads: BLAS (through threadpoolctl, when installed)
    and every pool a plugin registered (numba's, with oar-numba).

    >>> import oar
    >>> oar.set_num_threads(1)
    """
    if isinstance(n, bool) or not hasattr(n, "__index__") or int(n) < 1:
        raise ArgumentError(f"set_num_threads: n must be a positive int, got {n!r}")
    THREAD_CONTROLS.num_threads = int(n)
    for _, control in THREAD_CONTROLS.items():
        control(int(n))


# -- small products on one BLAS thread ----------------------------------------------------------
# OpenBLAS runs a product on one thread below m*n*k = 262144 and on all of its threads above.
# After a threaded product its idle worker spins (sched_yield) for about 0.1 s waiting for more
# work, holding a core the whole time. LeNet's step (W3) has a few products of [64, 400] x
# [400, 120] size between numba regions: at 2 threads on 2 cores that spinner took its core from
# numba's worker and from the main thread, and on a machine shared with another process the step
# took several times longer (docs/benchmarks.md, "Measurements behind code choices"). Products this
# small gain little from a second thread, so they run on one; the switch (threadpoolctl, both ways)
# is paid only for products in between the two bounds.
SMALL_PRODUCT = 1 << 23  # m * k * n below which a product runs on one BLAS thread
_OPENBLAS_ONE_THREAD = 1 << 18  # below this OpenBLAS already uses one thread: no switch needed
_blas_controllers: list | None = None


def blas_controllers() -> list:
    """threadpoolctl's controllers of numpy's BLAS libraries, found once (empty without threadpoolctl)."""
    global _blas_controllers
    if _blas_controllers is None:
        try:
            import threadpoolctl  # optional dependency, as above
        except ModuleNotFoundError:
            _blas_controllers = []
        else:
            _blas_controllers = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    return _blas_controllers


_blas_getters: list | None = None


def _thread_count_getter(lib) -> Callable[[], int]:
    """``lib``'s thread count as a direct call of OpenBLAS's own C function where it has one
    process-wide pool (its pthreads build, numpy's), else threadpoolctl's method. The direct call
    is a fraction of the method's cost, and ``one_blas_thread`` asks on every small product (a
    batch-1 LeNet's convolutions ask once each)."""
    if getattr(lib, "internal_api", None) == "openblas" and getattr(lib, "threading_layer", None) == "pthreads":
        try:
            handle = ctypes.CDLL(lib.filepath)
        except OSError:
            return lib.get_num_threads
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "_64", ""):
                found = getattr(handle, f"{prefix}openblas_get_num_threads{suffix}", None)
                if found is not None:
                    found.argtypes, found.restype = [], ctypes.c_int
                    return found
    return lib.get_num_threads


def blas_thread_getters() -> list:
    """``[(controller, get_num_threads)]`` for numpy's BLAS libraries, found once."""
    global _blas_getters
    if _blas_getters is None:
        _blas_getters = [(lib, _thread_count_getter(lib)) for lib in blas_controllers()]
    return _blas_getters


def small_product(x, y, transpose_y: bool = False) -> bool:
    """Whether each product of ``np.matmul(x, y)`` (``y`` [..., n, k] with ``transpose_y``) is one
    OpenBLAS would spread over its threads but that had better run on one (``one_blas_thread``)."""
    if x.ndim < 2 or y.ndim < 2:
        return False
    volume = x.shape[-2] * x.shape[-1] * y.shape[-2 if transpose_y else -1]  # m*k*n of one product
    return _OPENBLAS_ONE_THREAD <= volume < SMALL_PRODUCT


def blas_threads_for(m: int, k: int, n: int):
    """A context for running [m, k] @ [k, n] products: ``one_blas_thread()`` for products that
    ``small_product`` keeps on one thread, else one that changes nothing."""
    if _OPENBLAS_ONE_THREAD <= m * k * n < SMALL_PRODUCT:
        return one_blas_thread()
    return contextlib.nullcontext()


class one_blas_thread:
    """``with one_blas_thread():`` BLAS runs on one thread inside, and on what it had after.

    BLAS's setting is process-wide: a product another Python thread starts meanwhile runs on one
    thread too, which is slower but correct. A no-op where BLAS already has one thread."""

    __slots__ = ("saved",)

    def __enter__(self):
        self.saved = []
        for lib, get_num_threads in blas_thread_getters():
            count = get_num_threads()
            if count is not None and count > 1:  # changed through threadpoolctl (which knows which thread may)
                lib.set_num_threads(1)
                self.saved.append((lib, count))
        return self

    def __exit__(self, *exc):
        for lib, count in self.saved:
            lib.set_num_threads(count)
        return False


# -- running parts of a batch on threads ----------------------------------------------------------
# The static-graph executor runs an inference program whose ops are all per sample in parts of
# the batch, one part per thread, each part's kernels on one thread (Executor._run_split). One
# hand-off per call instead of one per parallel kernel, and no fork and join of a pool per op:
# LeNet at batch 64 has two convolutions whose per-sample products BLAS's threads gain little on.
_parts_pool = None
_parts_pool_size = 0


def num_threads() -> int:
    """The thread count ``oar.set_num_threads`` set last, or 1 where it was never called."""
    return THREAD_CONTROLS.num_threads or 1


def _one_thread_here() -> None:
    """Set this thread's own pools (the controls marked ``per_thread``, numba's) to one thread."""
    for _, control in THREAD_CONTROLS.items():
        if getattr(control, "per_thread", False):
            control(1)


def run_in_parts(work, parts: int) -> None:
    """``work(k)`` for ``k`` in ``range(parts)``: part 0 on this thread, the others on a pool's
    threads, every part's kernels on one thread (BLAS for the whole call, as its setting is
    process-wide; per-thread pools in each part). Exceptions of any part are raised here."""
    global _parts_pool, _parts_pool_size
    if parts <= 1:
        work(0)
        return
    if _parts_pool is None or _parts_pool_size < parts - 1:
        # deferred (import time): concurrent.futures brings logging, and only programs run in parts need it
        from concurrent.futures import ThreadPoolExecutor

        _parts_pool = ThreadPoolExecutor(parts - 1, thread_name_prefix="oar-parts", initializer=_one_thread_here)
        _parts_pool_size = parts - 1
    threads = num_threads()
    with one_blas_thread():
        futures = [_parts_pool.submit(work, k) for k in range(1, parts)]
        _one_thread_here()
        try:
            work(0)
        finally:
            for _, control in THREAD_CONTROLS.items():  # this thread's pools as they were
                if getattr(control, "per_thread", False):
                    control(threads)
            for future in futures:
                future.result()


def _forget_parts_pool() -> None:
    global _parts_pool, _parts_pool_size
    _parts_pool, _parts_pool_size = None, 0  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_parts_pool)
