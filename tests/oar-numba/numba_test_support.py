"""Shared by oar-numba's tests: the repository's paths and oar-nn's op table, loaded by path.

The tests run in a virtual environment holding only oar-numba and its dependencies (nox's
``tests_isolated``), where the repository's ``tests`` package is not importable: the op-case
modules of ``tests/nn/op_cases`` are loaded from their files instead (``oar.testing.op_table_from``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from oar.testing import op_table_from

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "oar-numba"


def nn_op_cases() -> list:
    return op_table_from(REPO / "tests" / "nn" / "op_cases", "oar_nn_op_cases")


def bench_module():
    """``plugins/oar-numba/bench_kernels.py``: its cases are the benchmark shapes."""
    name = "oar_numba_bench_kernels"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PLUGIN / "bench_kernels.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]
