"""The first use of a fresh installation: what compiles, the notice that it does, and
``python -m oar_numba warm`` compiling ahead what the common models use."""

from __future__ import annotations

import io
import subprocess
import sys

import numba
import numpy as np
from numba import prange
from numba.core import event
from oar_numba import _jit, warm

import oar


class _CompileCounter(event.Listener):
    def __init__(self):
        self.compiled: list[str] = []

    def on_start(self, e):
        self.compiled.append(e.data["dispatcher"].py_func.__qualname__)

    def on_end(self, e):
        pass


def _double(x, out):
    for i in prange(x.size):
        out[i] = 2.0 * x[i]


def test_a_small_call_or_one_thread_compiles_only_the_serial_kernel():
    kernel = _jit.ParallelKernel(_double, cache=False)
    x = np.arange(8.0)
    out = np.empty_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out, 2.0 * x)
    assert kernel.serial.signatures and not kernel.jitted.signatures  # the parfor compilation never ran


def test_a_large_call_at_several_threads_runs_the_parallel_kernel():
    kernel = _jit.ParallelKernel(_double, cache=False)
    x = np.arange(float(_jit.SERIAL_BELOW))
    out = np.empty_like(x)
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        kernel(x, out)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(out, 2.0 * x)
    compiled = kernel.jitted if numba.config.NUMBA_NUM_THREADS > 1 else kernel.serial
    assert compiled.signatures


def test_compiling_says_so_once_and_a_compiled_kernel_says_nothing():
    out = io.StringIO()
    notice = _jit.CompileNotice(out)
    notice.NOTICE_AFTER = 0.0
    first = numba.njit(lambda x: x + 1)
    second = numba.njit(lambda x: x * 3)
    event.register("numba:compile", notice)
    try:
        first(1)
        first(2)  # compiled: no event
        second(1)
    finally:
        event.unregister("numba:compile", notice)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "compiling CPU kernels" in lines[0] and "python -m oar_numba warm" in lines[0]


def test_after_warm_the_common_models_compile_nothing(monkeypatch):
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)  # the one-thread pass (the serial kernels)
    out = io.StringIO()
    warm.warm(out)
    assert [line.split(":")[1].strip() for line in out.getvalue().splitlines()] == \
        [f"{name} at 1 thread(s)" for name, _ in warm.WORKLOADS]
    counter = _CompileCounter()
    event.register("numba:compile", counter)
    try:
        oar.set_num_threads(1)
        for _, run in warm.WORKLOADS:
            run(warm.SMALL_BATCH)
    finally:
        event.unregister("numba:compile", counter)
    assert counter.compiled == []


def test_the_command_line_says_how_to_use_it():
    result = subprocess.run([sys.executable, "-m", "oar_numba"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "python -m oar_numba warm" in result.stderr
