"""Thread pinning for the benchmark workers: call ``from_argv()`` before numpy or a framework loads.

BLAS and OpenMP libraries read their thread variables once, when they load, so a worker pins them
first thing from its own ``--threads N``; bench/run.py also sets them in every worker's environment.
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")


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
