"""A ``while_loop`` in a captured program against the same loop run eagerly, as interleaved
CPU-time medians: what one iteration of a control-flow block costs the executor.

    python bench/static_loop.py                  # 1000 iterations on 16 floats, 1 thread
    python bench/static_loop.py --iterations 100 --size 4096

The loop (``x = x * 0.5 + 1.0`` while ``i < n``, ``i += 1``) is captured by ``oar.jit.to_static``
into one ``while`` node whose blocks the executor runs once per iteration; eager runs the same
body with Python's ``while``. The captured result is checked against eager before timing.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv(["--threads", "1"])  # before numpy loads; this script measures 1 thread

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
from oar.static.nn import while_loop  # noqa: E402


def body(i, x):
    return [i + 1, x * 0.5 + 1.0]


def eager(x, n):
    i = oar.zeros([], "int64")
    while bool(i < n):
        i, x = body(i, x)
    return x


@oar.jit.to_static
def graph(x, n):
    _, y = while_loop(lambda i, x: i < n, body, [oar.zeros([], "int64"), x])
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args()
    oar.set_num_threads(1)
    x = oar.to_tensor(np.linspace(-1, 1, args.size, dtype=np.float32))
    n = oar.to_tensor(args.iterations)
    with oar.no_grad():
        graph(x, n)  # captures
        np.testing.assert_allclose(graph(x, n).numpy(), eager(x, n).numpy(), rtol=1e-6)
        paths = {"eager": lambda: eager(x, n), "graph": lambda: graph(x, n)}
        times = {name: [] for name in paths}
        for _ in range(args.repeats):
            for name, fn in paths.items():
                start = time.process_time()
                fn()
                times[name].append(time.process_time() - start)
    t = {name: statistics.median(v) for name, v in times.items()}
    print(f"{args.iterations} iterations on {args.size} floats, 1 thread, CPU-time medians of {args.repeats}: "
          f"eager {t['eager'] * 1e3:.2f} ms, graph {t['graph'] * 1e3:.2f} ms "
          f"({t['graph'] / args.iterations * 1e6:.1f} us per iteration)")


if __name__ == "__main__":
    main()
