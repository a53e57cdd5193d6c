"""Thread pinning for the benchmark workers: call ``from_argv()`` before numpy or a framework loads.

BLAS and OpenMP libraries read their thread variables once, when they load, so a worker pins them
first thing from its own ``--threads N``; bench/run.py also sets them in every worker's environment.
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")


# Kernel overrides some machines set for old OpenBLAS builds (this project's machines force
# Haswell's AVX2 kernels on CPUs with AVX-512); a current numpy picks its own kernels, twice as
# fast on such a CPU, and every peer picks its own: the workers run without them, both together,
# and the report names the kernel OpenBLAS ran (worker_oar.py's thread pools).
KERNEL_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def worker_environment(threads: int) -> dict[str, str]:
    """This process's environment for a worker at ``threads`` threads, without the kernel overrides."""
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_OVERRIDES}
    env.update(thread_environment(threads))
    return env


def thread_environment(threads: int) -> dict[str, str]:
    """The environment variables that cap every thread pool a worker's libraries start."""
    return dict.fromkeys(THREAD_VARIABLES, str(threads))


def from_argv(argv: list[str] | None = None) -> int | None:
    """Set the thread variables from ``--threads N`` in ``argv`` (default ``sys.argv``); returns N."""
    argv = sys.argv if argv is None else argv
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            threads = int(argv[i + 1])
        elif arg.startswith("--threads="):
            threads = int(arg.split("=", 1)[1])
        else:
            continue
        os.environ.update(thread_environment(threads))
        return threads
    return None
