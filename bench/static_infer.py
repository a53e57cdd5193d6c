"""LeNet inference, eager against to_static, as interleaved CPU-time medians (W6's two paths).

    python bench/static_infer.py                       # b1 and b64, 1 thread, default passes
    python bench/static_infer.py --level 1 --repeats 41
    OAR_DISABLE_PLUGINS=numba python bench/static_infer.py
    python bench/static_infer.py --profile graph --batch 64    # cProfile of one path instead
    python bench/static_infer.py --threads 2 --wall            # 2 threads: wall time (CPU time adds threads up)
    python bench/static_infer.py --threads 2 --wall --executor-split   # the executor's parts even where
                                                               # the kernels spread the batch themselves

Each repeat times one call of every path back to back (A, B, A, B, ...), in CPU time
(``time.process_time``: another process on the same cores shows up much less than in wall time),
so slow phases of a loaded machine hit both paths alike; the ratio of the medians is reported.
The graph path is ``oar.jit.to_static(model, input_spec=[InputSpec([None, 1, 28, 28])])`` as W6
builds it, checked against eager before timing.
"""

from __future__ import annotations

import pin_threads

THREADS = pin_threads.from_argv() or pin_threads.from_argv(["--threads", "1"])  # before numpy loads

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
from oar.static import BuildStrategy, InputSpec  # noqa: E402
from oar.vision.models import LeNet  # noqa: E402


def paths(batch: int, level: int):
    """``{name: zero-argument callable}`` for eager and the graph path on one input."""
    oar.seed(0)
    model = LeNet()
    model.eval()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((batch, 1, 28, 28)).astype(np.float32))
    with oar.no_grad():
        expected = model(x).numpy()
    static = oar.jit.to_static(LeNet(), input_spec=[InputSpec([None, 1, 28, 28], "float32", name="x")],
                               build_strategy=BuildStrategy(optimization_level=level), full_graph=True)
    static.set_state_dict(model.state_dict())
    static.eval()
    with oar.no_grad():
        got = static(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)

    def eager():
        with oar.no_grad():
            return model(x)

    def graph():
        with oar.no_grad():
            return static(x)

    return {"eager": eager, "graph": graph}, static


def measure(fns: dict, repeats: int, calls: int, clock=time.process_time) -> dict:
    for fn in fns.values():  # warm-up: kernels compiled, caches and buffers in place
        for _ in range(3):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = clock()
            for _ in range(calls):
                fn()
            times[name].append((clock() - start) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 64])
    parser.add_argument("--level", type=int, default=2, help="BuildStrategy optimization_level")
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--profile", choices=("eager", "graph"), help="cProfile this path instead of timing")
    parser.add_argument("--show-program", action="store_true", help="print the optimized program")
    parser.add_argument("--threads", type=int, default=1, help="oar.set_num_threads (read before numpy loads)")
    parser.add_argument("--wall", action="store_true", help="wall time instead of CPU time (for --threads > 1)")
    parser.add_argument("--executor-split", action="store_true",
                        help="run large batches in the executor's parts (Python threads) even where the kernels "
                             "spread a batch over threads themselves (kernel.batch_parallel)")
    args = parser.parse_args()
    oar.set_num_threads(THREADS)
    if args.executor_split:
        import oar._graph.executor as executor_module  # a benchmark switch on a private seam, on purpose

        executor_module._spreads_batch = lambda kernel: False
    from oar.plugins import registries

    kernel = registries().kernels.lookup("conv", "cpu", oar.float32)
    print(f"conv kernel from {kernel.source}; level {args.level}; {THREADS} thread(s); {'wall' if args.wall else 'CPU'}-time medians of {args.repeats}")
    for batch in args.batch:
        fns, static = paths(batch, args.level)
        if args.show_program:
            print(static.forward._last.inference_executor.program)
        if args.profile:
            import cProfile
            import pstats

            fn = fns[args.profile]
            for _ in range(3):
                fn()
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(2000 // batch):
                fn()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
            continue
        calls = max(1, 200 // batch)
        t = measure(fns, args.repeats, calls, time.perf_counter if args.wall else time.process_time)
        print(f"b{batch}: eager {t['eager'] * 1e3:.3f} ms, graph {t['graph'] * 1e3:.3f} ms, "
              f"graph is {t['eager'] / t['graph']:.2f}x faster")


if __name__ == "__main__":
    main()
