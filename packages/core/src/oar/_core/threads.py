"""``oar.set_num_threads``: one setting for every CPU thread pool that oar's kernels run on.

Core does not know which pools exist: each is a *thread control*, a callable ``fn(n)`` that a
plugin registers with the ``oar_register_thread_controls`` hook (core's own plugin registers
``"blas"``, numpy's BLAS through threadpoolctl; oar-numba registers ``"numba"``). A control
registered after ``set_num_threads`` was called is applied at once, so load order never matters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oar._core.registry import Registry
from oar.errors import ArgumentError


class ThreadControls(Registry):
    """Thread controls by name: ``fn(n: int) -> None`` sets one pool's thread count."""

    def __init__(self):
        super().__init__("thread control")
        self.num_threads: int | None = None  # the last count set by oar.set_num_threads

    def register(self, name: str, obj: Callable[[int], Any], *, override: bool = False) -> Any:
        super().register(name, obj, override=override)
        if self.num_threads is not None:
            obj(self.num_threads)
        return obj


def limit_blas_threads(n: int) -> None:
    """Limit numpy's BLAS to ``n`` threads (process-wide) when threadpoolctl is installed."""
    try:
        from threadpoolctl import threadpool_limits
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
    from oar.plugins import registries

    controls = registries().thread_controls
    controls.num_threads = int(n)
    for _, control in controls.items():
        control(int(n))
