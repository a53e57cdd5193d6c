"""Where oar's time goes in one step of a workload: cProfile, summarised as markdown.

    python bench/profile_oar.py W2 --threads 1            # the MLP Adam step
    python bench/profile_oar.py W3 W4 --steps 5 --top 12
    python bench/profile_oar.py W9 --cases resnet18:8 mobilenet_v2:1   # the Predictor on W9's models

Runs the oar worker's own step (bench/paddle_api.py) after warm-up and prints, per workload, the
share of the time in each part of the stack and the functions with the most time of their own.
W1 profiles the Linear(4,4) forward+backward, W6 LeNet inference at batch 64 (eager, no_grad).
cProfile adds a cost per Python call, so dispatch and autograd look somewhat larger than they are.

W9 prints one line per ``model:batch``: the oar Predictor's ``infer`` on that model (saved and
loaded as W9 does), its time by op (from ``Predictor.register_output_hook``: the time from one
op's output to the next's is the later op's) and the functions with the most own time under cProfile.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Callable  # noqa: E402

import suite  # noqa: E402
from worker_oar import API, set_threads, w9_predictor  # noqa: E402

import oar  # noqa: E402

PROFILED = ("W1", "W2", "W3", "W4", "W5", "W6", "W9")
STEPS = {"W1": 2000, "W2": 20, "W3": 20, "W4": 3, "W5": 5, "W6": 20}
ALLOCATION = ("numpy.empty", "numpy.zeros", "numpy.ones", "numpy.full", "numpy.array", "numpy.ascontiguousarray",
              "'astype'", "'copy'", "'reshape'", "numpy.concatenate", "_arraypad_impl", "im2col", "col2im")


def step_of(workload: str) -> Callable[[], object]:
    """The callable one profiled step runs."""
    if workload == "W1":
        linear = API.model("linear4")
        x = oar.to_tensor(suite.inputs("W1")["linear_x"])

        def linear_fwd_bwd():
            linear(x).sum().backward()
            linear.clear_gradients()

        return linear_fwd_bwd
    if workload == "W6":
        model = API.model("lenet")
        model.eval()
        x = oar.to_tensor(suite.inputs("W6")["b64"])

        def infer():
            with oar.no_grad():
                return model(x)

        return infer
    step, _ = API.step(workload)
    return step


def category(path: str, name: str) -> str:
    """The part of the stack a profiled function belongs to (its own time only)."""
    where = f"{path}:{name}"
    if any(marker in where for marker in ALLOCATION):
        return "allocation and copies (im2col/col2im, reshape copies, padding)"
    if (name.endswith("_kernel") or name.endswith("_update") or "numpy" in where or "ufunc" in where
            or "/oar_numba/" in path):
        return "kernels (numpy, numba, optimizer updates)"
    if "/oar/_core/autograd" in path or "/oar/autograd" in path:
        return "autograd (tape, backward walk)"
    if "/oar/_core/" in path or "/oar/_ops/" in path:
        return "dispatch (op lookup, checks, tensor wrapping)"
    if "/oar/nn/" in path or "/oar/optimizer/" in path:
        return "layers and optimizer (Python)"
    return "other Python (builtins, interpreter)"


def profile_markdown(workload: str, steps: int, top: int) -> str:
    step = step_of(workload)
    for _ in range(max(2, steps // 10)):  # warm-up: first calls fill caches
        step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # {(path, line, name): (primitive calls, calls, tottime, cumtime, callers)}
    total = sum(entry[2] for entry in stats.values())
    shares: dict[str, float] = {}
    for (path, _line, name), (_, _, tottime, _, _) in stats.items():
        key = category(path, name)
        shares[key] = shares.get(key, 0.0) + tottime
    per_step_ms = total / steps * 1e3
    lines = [f"**{workload}** ({_title(workload)}): {per_step_ms:.3g} ms per step under cProfile, "
             f"{steps} steps. Own time by part: "
             + "; ".join(f"{key} {value / total:.0%}" for key, value in sorted(shares.items(), key=lambda kv: -kv[1])),
             "", "| function | calls/step | own ms/step | incl. ms/step |", "| --- | ---: | ---: | ---: |"]
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (path, line, name), (_, calls, tottime, cumtime, _) in ranked:
        lines.append(f"| `{_short(path, line, name)}` | {calls / steps:.3g} | {tottime / steps * 1e3:.3g} | "
                     f"{cumtime / steps * 1e3:.3g} |")
    return "\n".join(lines)


def predictor_line(model: str, batch: int, threads: int, seconds: float = 2.0, top: int = 2) -> str:
    """One markdown line: where the oar Predictor's ``infer`` on W9's ``model`` at ``batch`` spends its time."""
    x = suite.inputs(model)[f"b{batch}"]
    with tempfile.TemporaryDirectory() as directory:
        predictor = w9_predictor(model, batch, directory, threads)
        for _ in range(2):  # warm-up: kernels compiled, buffers planned
            predictor.infer([x])
        start = time.perf_counter()
        predictor.infer([x])
        calls = max(2, min(50, int(seconds / max(time.perf_counter() - start, 1e-6))))
        start = time.perf_counter()
        for _ in range(calls):
            predictor.infer([x])
        per_call = (time.perf_counter() - start) / calls

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            predictor.infer([x])
        profiler.disable()
        stats = pstats.Stats(profiler).stats
        total = sum(entry[2] for entry in stats.values()) or 1.0
        ranked = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
        functions = ", ".join(f"`{_short(path, line, name)}` {tottime / total:.0%}"
                              for (path, line, name), (_, _, tottime, _, _) in ranked)

        by_op: dict[str, float] = defaultdict(float)
        ops: Counter = Counter()
        last = [0.0]

        def hook(op_type, value_name, tensor):  # after each output of each op (oar's serving backend)
            by_op[op_type] += time.perf_counter() - last[0]
            ops[op_type] += 1
            last[0] = time.perf_counter()  # the hook's own work is nobody's

        predictor.register_output_hook(hook)
        predictor.infer([x])
        by_op.clear()
        ops.clear()
        for _ in range(calls):
            last[0] = time.perf_counter()
            predictor.infer([x])
    hooked = sum(by_op.values()) or 1.0
    shares = ", ".join(f"{op} {t / hooked:.0%} ({ops[op] / calls:.0f} outputs a run)"
                       for op, t in sorted(by_op.items(), key=lambda kv: -kv[1])[:3])
    label = suite.w9_case(model, batch)
    return (f"- **{label}**: {per_call * 1e3:.3g} ms per `infer` ({threads} thread{'s' if threads > 1 else ''}); "
            f"by op: {shares}; most own time under cProfile: {functions}.")


def _title(workload: str) -> str:
    return {"W1": suite.W1_CASES[1], "W6": "LeNet inference, batch 64, eager"}.get(workload) or suite.STEP_CASES[workload]


def _short(path: str, line: int, name: str) -> str:
    if path == "~":  # a builtin: cProfile names it {method 'x' of 'y' objects}
        return name.replace("`", "'")
    for marker in ("/src/oar/", "/site-packages/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            path = ("oar/" + path) if marker == "/src/oar/" else path
            break
    return f"{path}:{line}({name})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", choices=PROFILED, metavar="WORKLOAD", help=", ".join(PROFILED))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="profiled steps (default: per workload)")
    parser.add_argument("--top", type=int, default=10, help="functions listed")
    parser.add_argument("--cases", nargs="+", default=None, metavar="MODEL:BATCH",
                        help="with W9: the models and batches to profile (default: every one)")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    parts = [profile_markdown(w, args.steps or STEPS[w], args.top) for w in args.workloads if w != "W9"]
    if "W9" in args.workloads:
        cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cases] if args.cases else \
            [(m, b) for m, (_, _, batches) in suite.W9_MODELS.items() for b in batches]
        parts.append("\n".join(["**W9**, the oar Predictor (`infer`) per model and batch; by op: the time from one op's "
                                "outputs to the next op's, through `Predictor.register_output_hook`:"]
                               + [predictor_line(model, batch, args.threads) for model, batch in cases]))
    print("\n\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
