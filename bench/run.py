"""oar's benchmark runner (first workloads; the side-by-side suite with PyTorch and Paddle comes later).

    python bench/run.py            # print a markdown table
    python bench/run.py --write    # and append it, dated and with the command, to docs/benchmarks.md

Workloads:
    W1  eager dispatch floor: the per-call cost of the smallest op calls, oar next to numpy.
    W7  machine limits: what numpy reaches on this machine (GEMM GFLOP/s, memory-bound add GB/s),
        the ceiling every oar kernel is measured against.

Every timing runs warm-up calls first and reports the median of several repeats, on one thread:
the BLAS and OpenMP thread counts are pinned before numpy is imported.
"""

from __future__ import annotations

import os

# Before numpy loads: BLAS libraries read these once, at import.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402

RESULTS_FILE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


@dataclass
class Result:
    workload: str
    case: str
    value: float
    unit: str
    baseline: float | None = None  # numpy's time for the same call, where there is one

    def row(self) -> str:
        ratio = f"{self.value / self.baseline:.1f}x" if self.baseline else ""
        baseline = f"{self.baseline:.2f}" if self.baseline else ""
        return f"| {self.workload} | {self.case} | {self.value:.2f} | {baseline} | {self.unit} | {ratio} |"


def median_seconds_per_call(fn: Callable[[], object], calls: int, repeats: int, warmup: int = 1) -> float:
    """Median over ``repeats`` of the mean time of ``calls`` back-to-back calls of ``fn``."""
    for _ in range(warmup):
        for _ in range(calls):
            fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def w1_dispatch_floor(calls: int, repeats: int) -> list[Result]:
    x = oar.to_tensor([1.0])
    y = oar.to_tensor([2.0])
    w = oar.to_tensor([1.0], stop_gradient=False)  # records a tape node on every call
    a = np.ones(1, np.float32)
    b = np.full(1, 2.0, np.float32)
    cases = [
        ("x + y, float32 [1]", lambda: x + y, lambda: a + b),
        ("oar.exp(x), float32 [1]", lambda: oar.exp(x), lambda: np.exp(a)),
        ("w + y, w needs grad", lambda: w + y, lambda: a + b),
    ]
    results = []
    for case, oar_call, numpy_call in cases:
        oar_us = median_seconds_per_call(oar_call, calls, repeats) * 1e6
        numpy_us = median_seconds_per_call(numpy_call, calls, repeats) * 1e6
        results.append(Result("W1 dispatch", case, oar_us, "µs/call", numpy_us))
    return results


def w7_machine_limits(repeats: int) -> list[Result]:
    n = 1024
    rng = np.random.default_rng(0)
    m1 = rng.standard_normal((n, n), dtype=np.float32)
    m2 = rng.standard_normal((n, n), dtype=np.float32)
    product = np.empty((n, n), np.float32)
    gemm_s = median_seconds_per_call(lambda: np.matmul(m1, m2, out=product), 1, repeats, warmup=2)

    size = 16 * 1024 * 1024
    v1 = np.ones(size, np.float32)
    v2 = np.ones(size, np.float32)
    total = np.empty(size, np.float32)
    add_s = median_seconds_per_call(lambda: np.add(v1, v2, out=total), 1, repeats, warmup=2)
    bytes_moved = 3 * size * 4  # read two operands, write one result
    return [
        Result("W7 machine", f"numpy GEMM float32 {n}x{n}x{n}", 2 * n**3 / gemm_s / 1e9, "GFLOP/s"),
        Result("W7 machine", "numpy add float32, 16M elements", bytes_moved / add_s / 1e9, "GB/s"),
    ]


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores visible, 1 thread used; Python {platform.python_version()}, "
            f"numpy {np.__version__}, oar {oar.__version__}")


def markdown_table(results: list[Result]) -> str:
    lines = ["| workload | case | oar | numpy | unit | oar / numpy |", "| --- | --- | ---: | ---: | --- | ---: |"]
    return "\n".join(lines + [r.row() for r in results])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="append the results to the --output file")
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help="where --write appends (default: %(default)s)")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per timed repeat in W1")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats; the median is reported")
    args = parser.parse_args(argv)

    results = w1_dispatch_floor(args.calls, args.repeats) + w7_machine_limits(args.repeats)
    table = markdown_table(results)
    print(machine_description())
    print(table)
    if args.write:
        command = "python bench/run.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
        stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        section = f"\n## {stamp}\n\n`{command.strip()}`\n\n{machine_description()}\n\n{table}\n"
        if not args.output.exists():
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(RESULTS_HEADER)
        with args.output.open("a") as file:
            file.write(section)
        print(f"appended to {args.output}")
    return 0


RESULTS_HEADER = """# Benchmarks

Results of `python bench/run.py --write`, newest last. Each section names the machine and the
command. Times are medians of repeated runs after warm-up, on one thread (the BLAS and OpenMP thread
counts are pinned to 1). Compare ratios between runs on different machines, not absolute numbers.

- **W1 dispatch**: the cost of one eager op call on a one-element tensor: the framework overhead
  that every op pays (for oar: mode lookup, cached kernel lookup, tensor wrapping, and the tape
  node when an input needs a gradient). The numpy column is the same computation called directly.
- **W7 machine**: numpy's own GEMM throughput and memory bandwidth on this machine: the ceiling
  oar's cpu kernels can reach.

The full suite (models, static graphs, side by side with PyTorch and PaddlePaddle in one run)
arrives with its own issue.
"""


if __name__ == "__main__":
    sys.exit(main())
