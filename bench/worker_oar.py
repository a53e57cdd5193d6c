"""The oar worker of the benchmark suite: runs the named workloads and prints their timings as JSON.

    python bench/worker_oar.py W2 W3 --threads 1

The models and steps are bench/paddle_api.py's, the very code the Paddle worker runs. On top come
oar's graph path for W6 (``oar.jit.to_static`` where it exists), numpy's own limits in W7, the
DataLoader (W8), the inference Predictor of oar-serving on W9's models (``oar.jit.save``, then
``oar.inference.create_predictor(Config(prefix))`` and ``predictor.infer``) and the load test of
oar's HTTP server (W10, bench/serving_load.py). bench/run.py starts it once per workload and
round; bench/profile_oar.py reuses its steps.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import importlib.metadata  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import suite  # noqa: E402
from paddle_api import PaddleAPIWorkloads, scalar  # noqa: E402
from suite import Case, WorkerArgs, time_case, unavailable  # noqa: E402

import oar  # noqa: E402
import oar.nn  # noqa: E402,F401 - oar.nn, oar.optimizer and oar.vision come with oar-nn
import oar.optimizer  # noqa: E402,F401

FRAMEWORK = "oar"
API = PaddleAPIWorkloads(oar)
_thread_limits = []  # a threadpoolctl limit lasts as long as its object


def set_threads(threads: int) -> str:
    """oar's own thread control where it has one (it covers numba and BLAS), else threadpoolctl."""
    if hasattr(oar, "set_num_threads"):
        oar.set_num_threads(threads)
        return "oar.set_num_threads"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return "the thread environment variables only (threadpoolctl is not installed)"
    _thread_limits.append(threadpool_limits(limits=threads))
    return "threadpoolctl"


def to_static_lenet(model, example: np.ndarray):
    """``(static, "")``: ``model`` converted by ``oar.jit.to_static`` as Paddle code converts it (an
    InputSpec with a dynamic batch, full graph), once it is checked against eager; else ``(None, reason)``.

    ``to_static`` converts a Layer in place, so eager runs come first.
    """
    try:
        import oar.jit as jit
        from oar.static import InputSpec
    except ImportError:
        return None, "oar.jit.to_static does not exist yet"
    x = oar.to_tensor(example)
    try:
        with oar.no_grad():
            expected = model(x).numpy()
            static = jit.to_static(model, input_spec=[InputSpec([None, 1, 28, 28], "float32", name="x")],
                                   full_graph=True)
            got = static(x).numpy()
    except Exception as error:  # a failing graph path is a result to report, not a crash
        return None, f"oar.jit.to_static failed: {type(error).__name__}: {error}".splitlines()[0]
    if not np.allclose(expected, got, rtol=1e-4, atol=1e-5):
        return None, "oar.jit.to_static's outputs differ from eager"
    return static, ""


def w6(args: WorkerArgs) -> list[Case]:
    model, cases = API.w6_eager(args)
    data = suite.inputs("W6")
    static, reason = to_static_lenet(model, data["b64"])
    for batch in ("b1", "b64"):
        case = suite.w6_case(batch, "graph")
        if static is None:
            cases.append(unavailable("W6", case, "ms", reason))
            continue
        x = oar.to_tensor(data[batch])

        def graph(x=x):
            with oar.no_grad():
                return static(x)

        cases.append(time_case("W6", case, graph, args.budget(f"W6 {batch}"), "ms", check=scalar(graph().sum()),
                               note="oar.jit.to_static (InputSpec, full_graph=True)"))
    return cases


def w9_predictor(name: str, batch: int, directory: str, threads: int):
    """W9's ``name`` saved by ``oar.jit.save`` and loaded by an ``oar.inference`` Predictor: the
    Predictor (Paddle Inference's API, ``Config(prefix)`` + ``create_predictor``)."""
    from oar.inference import Config, create_predictor

    config = Config(API.w9_save(name, batch, directory))
    config.set_cpu_math_library_num_threads(threads)
    return create_predictor(config)


def export_w9_onnx(directory: str) -> None:
    """W9's models as oar.onnx writes them (``jit.save``, then ``oar.onnx.export`` of the saved
    model, opset 17) for the ONNX Runtime worker: ``suite.w9_prefix(...) + ".onnx"``; a model that
    does not export leaves ``<prefix>.onnx.failed`` with the reason instead."""
    import oar.onnx

    for name, (_, _, batches) in suite.W9_MODELS.items():
        for batch in batches:
            prefix = API.w9_save(name, batch, directory)
            try:
                oar.onnx.export(prefix, prefix)
            except Exception as error:  # the reason is a result: the ORT worker reports it in the table
                with open(prefix + ".onnx.failed", "w", encoding="utf-8") as f:
                    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
                    f.write(f"oar.onnx.export: {type(error).__name__}: {' '.join(lines)}"[:300])
            if name not in suite.W9_FIXED_BATCH:
                break  # one file serves every batch


def w9(args: WorkerArgs) -> list[Case]:
    """W9's models through ``predictor.infer([x])`` (numpy in, numpy out: the Predictor's fast path),
    or, with ``--export-onnx-dir``, their ONNX files for the ONNX Runtime worker (and no timing)."""
    if args.extra.export_onnx_dir:
        export_w9_onnx(args.extra.export_onnx_dir)
        return []
    try:
        import oar.inference  # noqa: F401 - oar-serving's
    except ImportError as error:
        return suite.w9_cases("oar", {}, args, "", {key: f"oar.inference is not installed (oar-serving): {error}"
                                                   for key in w9_keys()})
    runs, failures, predictors = {}, {}, {}
    with tempfile.TemporaryDirectory() as directory:
        for name, batch in w9_keys():
            x = suite.inputs(name)[f"b{batch}"]
            prefix = suite.w9_prefix(directory, name, batch)
            try:
                if prefix not in predictors:  # one saved model for both batches, unless saved per batch
                    predictors[prefix] = w9_predictor(name, batch, directory, args.threads)
            except Exception as error:  # a model the Predictor cannot take is a result to report
                failures[(name, batch)] = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                continue
            runs[(name, batch)] = lambda predictor=predictors[prefix], x=x: predictor.infer([x])[0]
        return suite.w9_cases("oar", runs, args, "oar.inference Predictor, infer()", failures)


def w9_keys() -> list[tuple[str, int]]:
    return [(name, batch) for name, (_, _, batches) in suite.W9_MODELS.items() for batch in batches]


def w10(args: WorkerArgs) -> list[Case]:
    from serving_load import load_test_cases

    return load_test_cases(args.threads, quick=args.quick)


def w7(args: WorkerArgs) -> list[Case]:
    """numpy's GEMM and add (the machine's practical limits), then oar's."""
    budget = args.budget("W7")
    n, size = suite.GEMM_N, suite.ADD_SIZE
    m1, m2, _ = suite.gemm_operands()
    product = np.empty((n, n), np.float32)
    v1, v2, total = np.ones(size, np.float32), np.ones(size, np.float32), np.empty(size, np.float32)
    return [
        suite.rate_case("W7", f"numpy {suite.W7_CASES['matmul']}", lambda: np.matmul(m1, m2, out=product), budget,
                        2 * n**3, "GFLOP/s"),
        suite.rate_case("W7", f"numpy {suite.W7_CASES['add']}", lambda: np.add(v1, v2, out=total), budget,
                        3 * size * 4, "GB/s"),
    ] + API.w7(args)


def w8(args: WorkerArgs) -> list[Case]:
    from dataloader import SleepyImages, load_seconds

    samples = 64 if args.quick else 640
    dataset = SleepyImages(samples, 0.001)
    cases = []
    for workers in (0, 2):
        rates = []
        for _ in range(args.budget("W8").repeats):
            seconds, seen = load_seconds(dataset, 32, workers)
            assert seen == samples, (seen, samples)
            rates.append(samples / seconds)
        cases.append(Case("W8", f"DataLoader, {workers} workers (1 ms per sample, batch 32)", "samples/s", rates,
                          higher_is_better=True))
    return cases


def pools() -> str:
    """The thread pools as they are now set: the proof that pinning took effect."""
    found = []
    try:
        from threadpoolctl import threadpool_info

        found += [f"{pool['internal_api']} {pool['num_threads']}"
                  + (f" ({pool['architecture']} kernels)" if pool.get("architecture") else "") for pool in threadpool_info()]
    except ImportError:
        pass
    if "numba" in sys.modules:
        numba = sys.modules["numba"]
        try:
            layer = f" ({numba.threading_layer()} layer)"
        except ValueError:  # no parallel kernel has run
            layer = ""
        found.append(f"numba {numba.get_num_threads()}{layer}")
    return ", ".join(found) or "unknown"


def details(thread_control: str) -> str:
    distributions = sorted(f"{dist.metadata['Name']} {dist.version}" for dist in importlib.metadata.distributions()
                           if (dist.metadata["Name"] or "").lower().startswith("oar-"))
    return (f"{', '.join(distributions)}; numpy {np.__version__}; threads set with {thread_control}; "
            f"thread pools: {pools()}")


def main(argv: list[str] | None = None) -> int:
    def extend(parser):
        parser.add_argument("--export-onnx-dir", metavar="DIR",
                            help="with W9: write W9's models with oar.onnx.export into DIR (for the ONNX Runtime worker)")

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    thread_control = set_threads(args.threads)
    workloads = API.workloads() | {"W6": w6, "W7": w7, "W8": w8, "W9": w9, "W10": w10}
    cases = [case for name in args.workloads if name in workloads for case in workloads[name](args)]
    suite.emit(FRAMEWORK, oar.__version__, details(thread_control), args.threads, cases)  # pools as used
    return 0


if __name__ == "__main__":
    sys.exit(main())
