"""What every framework worker shares: the workloads' shapes, their weights and inputs (numpy, one
fixed seed), the timing loop, and the JSON a worker prints.

Weights use the layout and the state-dict names of Paddle (and oar): Linear weights are
``[in, out]``, batch norm keeps ``_mean``/``_variance``, attention has ``q_proj``/``k_proj``/
``v_proj``/``out_proj``. The torch worker converts them (bench/worker_torch.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

SEED = 20261129
WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8")


@dataclass(frozen=True)
class Budget:
    """How one case is timed: ``warmup`` untimed samples, then ``repeats`` samples, each the mean
    over ``calls`` back-to-back calls. Past ``max_seconds`` of warm-up, or of timing, the case stops
    early (after one sample at least): a pathologically slow case cannot stall the suite."""

    calls: int
    repeats: int
    warmup: int = 1
    max_seconds: float = 12.0

    def scaled(self, repeats: int | None, quick: bool) -> Budget:
        if quick:  # a smoke run: the code paths, not the numbers
            return Budget(calls=min(self.calls, 3), repeats=1, warmup=1)
        return Budget(self.calls, repeats if repeats is not None else self.repeats, self.warmup, self.max_seconds)


# Per round and framework. bench/run.py runs several rounds (A B A B) and pools the samples.
BUDGETS = {
    "W1 add": Budget(calls=5000, repeats=7),
    "W1 linear": Budget(calls=500, repeats=7),
    "W2": Budget(calls=1, repeats=20, warmup=3),
    "W3": Budget(calls=1, repeats=15, warmup=3),
    "W4": Budget(calls=1, repeats=4, warmup=2),
    "W5": Budget(calls=1, repeats=6, warmup=2),
    "W6 b1": Budget(calls=50, repeats=7, warmup=1),
    "W6 b64": Budget(calls=5, repeats=7, warmup=1),
    "W7": Budget(calls=1, repeats=5, warmup=2),
    "W8": Budget(calls=1, repeats=1, warmup=0),
}

# Shapes, the same for every framework.
MLP_SIZES = (784, 512, 512, 10)
MLP_BATCH = 128
LENET_BATCH = 64
RESNET_BATCH, RESNET_CHANNELS = 32, 32
ENCODER = {"d_model": 256, "nhead": 4, "dim_feedforward": 1024, "seq": 128, "batch": 8}
GEMM_N = 1024
ADD_SIZE = 16 * 1024 * 1024
W1_CASES = ("x + y, float32 [1]", "Linear(4,4) fwd+bwd, [1,4]")
STEP_CASES = {  # the training-step workloads' case names
    "W2": "MLP 784-512-512-10, batch 128, Adam step",
    "W3": "LeNet-5, batch 64, Adam step",
    "W4": "ResNet (2 BasicBlocks, 32 ch), batch 32, SGD-momentum step",
    "W5": "encoder layer d256 h4 ffn1024, 8x128, fwd+bwd",
}
W7_CASES = {"matmul": f"matmul GEMM float32 {GEMM_N}x{GEMM_N}x{GEMM_N}",
            "linear": f"linear (GEMM + bias) {GEMM_N}x{GEMM_N}x{GEMM_N}",
            "add": "add float32, 16M elements"}
ADAM = {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}
MOMENTUM = {"learning_rate": 0.01, "momentum": 0.9}


# -- weights and inputs --------------------------------------------------------------------------

def _uniform(rng: np.random.Generator, shape, fan_in: int) -> np.ndarray:
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _linear(state: dict, rng, prefix: str, fan_in: int, fan_out: int) -> None:
    state[f"{prefix}weight"] = _uniform(rng, (fan_in, fan_out), fan_in)
    state[f"{prefix}bias"] = _uniform(rng, (fan_out,), fan_in)


def _conv(state: dict, rng, prefix: str, cin: int, cout: int, k: int, bias: bool = True) -> None:
    state[f"{prefix}weight"] = _uniform(rng, (cout, cin, k, k), cin * k * k)
    if bias:
        state[f"{prefix}bias"] = _uniform(rng, (cout,), cin * k * k)


def _batch_norm(state: dict, prefix: str, channels: int) -> None:
    state[f"{prefix}weight"] = np.ones(channels, np.float32)
    state[f"{prefix}bias"] = np.zeros(channels, np.float32)
    state[f"{prefix}_mean"] = np.zeros(channels, np.float32)
    state[f"{prefix}_variance"] = np.ones(channels, np.float32)


def _layer_norm(state: dict, prefix: str, size: int) -> None:
    state[f"{prefix}weight"] = np.ones(size, np.float32)
    state[f"{prefix}bias"] = np.zeros(size, np.float32)


def weights(model: str) -> dict[str, np.ndarray]:
    """The initial state dict of ``model`` (``linear4``, ``mlp``, ``lenet``, ``resnet``,
    ``encoder``): the same numbers for every framework, in Paddle's names and layout."""
    rng = np.random.default_rng([SEED, sum(map(ord, model))])
    state: dict[str, np.ndarray] = {}
    if model == "linear4":
        _linear(state, rng, "", 4, 4)
    elif model == "mlp":
        for i, (fan_in, fan_out) in enumerate(zip(MLP_SIZES, MLP_SIZES[1:])):
            _linear(state, rng, f"{2 * i}.", fan_in, fan_out)  # Sequential(Linear, ReLU, Linear, ReLU, Linear)
    elif model == "lenet":
        _conv(state, rng, "features.0.", 1, 6, 3)
        _conv(state, rng, "features.3.", 6, 16, 5)
        for i, (fan_in, fan_out) in enumerate([(400, 120), (120, 84), (84, 10)]):
            _linear(state, rng, f"fc.{i}.", fan_in, fan_out)
    elif model == "resnet":
        c = RESNET_CHANNELS
        _conv(state, rng, "stem.0.", 3, c, 3, bias=False)
        _batch_norm(state, "stem.1.", c)
        for block in range(2):
            for i in (1, 2):
                _conv(state, rng, f"blocks.{block}.conv{i}.", c, c, 3, bias=False)
                _batch_norm(state, f"blocks.{block}.bn{i}.", c)
        _linear(state, rng, "fc.", c, 10)
    elif model == "encoder":
        d, ffn = ENCODER["d_model"], ENCODER["dim_feedforward"]
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _linear(state, rng, f"self_attn.{name}.", d, d)
        _linear(state, rng, "linear1.", d, ffn)
        _linear(state, rng, "linear2.", ffn, d)
        _layer_norm(state, "norm1.", d)
        _layer_norm(state, "norm2.", d)
    else:
        raise ValueError(f"no weights for {model!r}")
    return state


def inputs(workload: str) -> dict[str, np.ndarray]:
    """The input arrays of ``workload``: ``x`` (and ``y``, ``label``), from the fixed seed."""
    rng = np.random.default_rng([SEED, sum(map(ord, workload)), 1])
    if workload == "W1":
        return {"x": np.array([1.0], np.float32), "y": np.array([2.0], np.float32),
                "linear_x": rng.standard_normal((1, 4), dtype=np.float32)}
    if workload == "W2":
        return {"x": rng.standard_normal((MLP_BATCH, MLP_SIZES[0]), dtype=np.float32),
                "label": rng.integers(0, 10, MLP_BATCH).astype(np.int64)}
    if workload == "W3":
        return {"x": rng.standard_normal((LENET_BATCH, 1, 28, 28), dtype=np.float32),
                "label": rng.integers(0, 10, LENET_BATCH).astype(np.int64)}
    if workload == "W4":
        return {"x": rng.standard_normal((RESNET_BATCH, 3, 32, 32), dtype=np.float32),
                "label": rng.integers(0, 10, RESNET_BATCH).astype(np.int64)}
    if workload == "W5":
        return {"x": rng.standard_normal((ENCODER["batch"], ENCODER["seq"], ENCODER["d_model"]), dtype=np.float32)}
    if workload == "W6":
        x = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
        return {"b1": x[:1].copy(), "b64": x}
    raise ValueError(f"no inputs for {workload!r}")


def w6_case(batch: str, path: str) -> str:
    """W6's case names: ``batch`` is ``b1`` or ``b64``, ``path`` ``eager`` or ``graph``."""
    kind = "eager, no_grad" if path == "eager" else "graph / inference engine"
    return f"LeNet inference, batch {batch[1:]}, {kind}"


def gemm_operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W7's GEMM operands: two [n, n] matrices and a bias of n."""
    rng = np.random.default_rng([SEED, 7])
    n = GEMM_N
    return (rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32),
            rng.standard_normal(n, dtype=np.float32))


# -- timing and output ---------------------------------------------------------------------------

@dataclass
class Case:
    """The timings of one case on one framework: ``samples`` in ``unit``, one per timed repeat."""

    workload: str
    case: str
    unit: str
    samples: list[float] = field(default_factory=list)
    higher_is_better: bool = False
    check: float | None = None  # e.g. the first loss: equal across frameworks when the setup is
    note: str = ""  # what this framework ran for the case (e.g. "torch.jit.trace + freeze")
    unavailable: str = ""  # why this framework has no figure for the case


UNIT_SCALE = {"µs": 1e6, "ms": 1e3, "s": 1.0}


def time_case(workload: str, case: str, fn: Callable[[], object], budget: Budget, unit: str,
              check: float | None = None, note: str = "") -> Case:
    """Time ``fn`` under ``budget``; per-call times in ``unit`` (µs, ms or s)."""
    scale = UNIT_SCALE[unit]
    started = time.perf_counter()
    for _ in range(budget.warmup):
        for _ in range(budget.calls):
            fn()
        if time.perf_counter() - started > budget.max_seconds:
            break
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < budget.repeats and not (samples and time.perf_counter() - started > budget.max_seconds):
        start = time.perf_counter()
        for _ in range(budget.calls):
            fn()
        samples.append((time.perf_counter() - start) / budget.calls * scale)
    return Case(workload, case, unit, samples, check=check, note=note)


def rate_case(workload: str, case: str, fn: Callable[[], object], budget: Budget, work: float, unit: str,
              note: str = "") -> Case:
    """Time ``fn`` under ``budget`` and report ``work`` (flops or bytes) per second, in billions."""
    timed = time_case(workload, case, fn, budget, "s", note=note)
    return Case(workload, case, unit, [work / seconds / 1e9 for seconds in timed.samples], higher_is_better=True,
                note=note)


def unavailable(workload: str, case: str, unit: str, reason: str) -> Case:
    return Case(workload, case, unit, unavailable=reason)


def median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass
class WorkerArgs:
    workloads: list[str]
    threads: int
    repeats: int | None
    quick: bool
    extra: argparse.Namespace

    def budget(self, key: str) -> Budget:
        return BUDGETS[key].scaled(self.repeats, self.quick)


def parse_worker_args(description: str, extend: Callable[[argparse.ArgumentParser], None] | None = None,
                      argv: list[str] | None = None) -> WorkerArgs:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("workloads", nargs="+", choices=WORKLOADS, metavar="WORKLOAD",
                        help=f"one or more of {', '.join(WORKLOADS)}")
    parser.add_argument("--threads", type=int, required=True, help="threads for every thread pool")
    parser.add_argument("--repeats", type=int, default=None, help="timed samples per case (default: per workload)")
    parser.add_argument("--quick", action="store_true", help="one short sample per case: checks that it runs")
    if extend is not None:
        extend(parser)
    args = parser.parse_args(argv)
    return WorkerArgs(args.workloads, args.threads, args.repeats, args.quick, args)


def emit(framework: str, version: str, details: str, threads: int, cases: list[Case]) -> None:
    """Print the worker's result: one JSON object on the last line of stdout."""
    payload = {"framework": framework, "version": version, "details": details, "threads": threads,
               "cases": [asdict(case) for case in cases]}
    sys.stdout.write("\n" + json.dumps(payload) + "\n")
    sys.stdout.flush()


def run_worker(framework: str, version: str, details: str, args: WorkerArgs,
               workloads: dict[str, Callable[[WorkerArgs], list[Case]]]) -> int:
    cases: list[Case] = []
    for name in args.workloads:
        if name in workloads:
            cases.extend(workloads[name](args))
    emit(framework, version, details, args.threads, cases)
    return 0
