"""The module the ``oar`` entry point ``numba`` names: the kernels it registers and the thread pool
``oar.set_num_threads`` sizes.

Each kernel serves one op of oar-nn on ``cpu`` for float32 and float64 at ``PLUGIN_PRIORITY``,
above the numpy reference (priority 0); float16 and bfloat16 reach it through core's float32
upcast. Only kernels that beat the reference on the benchmark shapes are listed (docs/numba.md,
``plugins/oar-numba/bench_kernels.py``).

A process forked from one whose kernels ran on numba's OpenMP threading layer cannot start
OpenMP threads again (GNU OpenMP is not fork-safe; numba would end the child). Such a child
(a DataLoader worker, a pre-forked server) hands the ops back to the numpy references.
"""

from __future__ import annotations

import os
import sys

import numba

from oar.plugins import PLUGIN_PRIORITY, hookimpl
from oar_numba import ALTERNATIVES, KERNEL_DTYPES, KERNELS, _fused, _optimizer, _qgemm

DTYPES = ("float32", "float64")


@hookimpl
def oar_register_kernels(kernels):
    for op_name, kernel in KERNELS.items():
        kernels.register(op_name, "cpu", kernel, dtypes=KERNEL_DTYPES.get(op_name, DTYPES), priority=PLUGIN_PRIORITY)
    for op_name, named in ALTERNATIVES.items():  # timed by oar.incubate.autotune only when it is on
        for name, kernel in named:
            kernels.register_alternative(op_name, "cpu", kernel, name=name, dtypes=DTYPES)
    # The int8 layers, where the CPU has AVX-512 VNNI (elsewhere none: oar-slim then keeps a
    # converted model's float QDQ program, which runs the float kernels above)
    for op_name, kernel in _qgemm.KERNELS.items():
        kernels.register(op_name, "cpu", kernel, dtypes=("int8",), priority=PLUGIN_PRIORITY)
    _optimizer.register_update_rules()  # optimizer updates are no ops: they have a registry of their own


@hookimpl
def oar_register_op_lowerings(lowerings):
    for op_name, template in _fused.LOWERINGS.items():  # how fused_elementwise's compiled loop writes each op
        lowerings.add(_fused.NUMBA, op_name, template)


def set_numba_threads(n: int) -> None:
    """numba's pool has NUMBA_NUM_THREADS threads, fixed at start-up: ask for more, get them all."""
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


set_numba_threads.per_thread = True  # numba's count is the calling thread's (see oar._engine.threads)


@hookimpl
def oar_register_thread_controls(thread_controls):
    thread_controls.register("numba", set_numba_threads)


def _after_fork_in_child() -> None:
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran before the fork: the child may start its own threads
        return
    if layer == "omp":
        from oar.plugins import get_manager, unregister

        name = get_manager().get_name(sys.modules[__name__])
        if name is not None:
            unregister(name)
            _optimizer.unregister_update_rules()


os.register_at_fork(after_in_child=_after_fork_in_child)
