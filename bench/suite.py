"""What every framework worker shares: the workloads' shapes, their weights and inputs (numpy, one
fixed seed), the timing loop, and the JSON a worker prints.

Weights use the layout and the state-dict names of Paddle (and oar): Linear weights are
``[in, out]``, batch norm keeps ``_mean``/``_variance``, attention has ``q_proj``/``k_proj``/
``v_proj``/``out_proj``. The torch worker converts them (bench/worker_torch.py).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

SEED = 20261129
WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "W13", "W14", "W15")


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
    # W9: whole models through the deployment engines; ResNet18 at batch 8 is ~0.4 s a call in oar
    # and ~1 s in Paddle Inference without oneDNN, so the large cases take few samples.
    "W9 lenet_doc b1": Budget(calls=50, repeats=7, max_seconds=5.0),
    "W9 lenet_doc b64": Budget(calls=5, repeats=7, max_seconds=5.0),
    "W9 resnet18 b1": Budget(calls=1, repeats=7, warmup=2, max_seconds=5.0),
    "W9 resnet18 b8": Budget(calls=1, repeats=4, warmup=1, max_seconds=5.0),
    "W9 mobilenet_v2 b1": Budget(calls=2, repeats=7, warmup=1, max_seconds=5.0),
    "W9 mobilenet_v2 b8": Budget(calls=1, repeats=4, warmup=1, max_seconds=5.0),
    "W9 encoder b1": Budget(calls=5, repeats=7, warmup=1, max_seconds=5.0),
    "W9 encoder b8": Budget(calls=1, repeats=7, warmup=1, max_seconds=5.0),
    # W11: interleaved rounds, every engine of one model once per round (bench/slim_targets.py)
    "W11 lenet": Budget(calls=10, repeats=9, warmup=2, max_seconds=20.0),
    "W11 resnet": Budget(calls=1, repeats=9, warmup=2, max_seconds=30.0),
    # ResNet18's float32 model is the slowest that W11 times: fewer rounds
    "W11 resnet18": Budget(calls=1, repeats=5, warmup=1, max_seconds=30.0),
    # W15: models as users write them. The 224x224 steps take seconds each on a small machine (ResNet18's
    # training step at batch 8 ~1-3 s in oar): few samples, so that a case stays under ~15 s.
    "W15 lenet_doc train": Budget(calls=2, repeats=7, max_seconds=5.0),
    "W15 lenet_doc infer": Budget(calls=5, repeats=7, max_seconds=5.0),
    "W15 resnet18 b8 train": Budget(calls=1, repeats=3, max_seconds=6.0),
    "W15 resnet18 b8 infer": Budget(calls=1, repeats=4, max_seconds=6.0),
    "W15 resnet18 b32 train": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 resnet18 b32 infer": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 mobilenet_v2 b8 train": Budget(calls=1, repeats=3, max_seconds=6.0),
    "W15 mobilenet_v2 b8 infer": Budget(calls=1, repeats=4, max_seconds=6.0),
    "W15 mobilenet_v2 b32 train": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 mobilenet_v2 b32 infer": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 dwsep train": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 dwsep infer": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 decoder train": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 decoder greedy": Budget(calls=1, repeats=5, max_seconds=6.0),
    "W15 to_static grad": Budget(calls=50, repeats=7, max_seconds=5.0),
    "W15 to_static no_grad": Budget(calls=50, repeats=7, max_seconds=5.0),
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
# W15: models as users write them, each timed as a training step and as eager inference (eval mode,
# no_grad), except the decoder (greedy decoding) and the converted LeNet (called with and without no_grad).
W15_BATCH = {"lenet_doc": 64, "dwsep": 32, "to_static": 1}
W15_VISION = {"resnet18": "ResNet18", "mobilenet_v2": "MobileNetV2"}  # vision.models, num_classes 1000
W15_VISION_SHAPES = {"b8": (8, 3, 224, 224), "b32": (32, 3, 32, 32)}  # ImageNet's shape, CIFAR's
W15_DWSEP = {"channels": 32, "out": 64, "size": 56}  # MobileNet's depthwise-separable block at its 56x56 stage
# The seq2seq tutorial's attention decoder: an LSTMCell step per token over given encoder states
W15_DECODER = {"batch": 16, "vocab": 1000, "embedding": 256, "hidden": 256, "source": 30, "steps": 30, "bos": 1}
W15_CASES = {
    "lenet_doc train": "LeNet-5 (Paddle's docs' Sequential), batch 64, Adam step",
    "lenet_doc infer": "LeNet-5 (Paddle's docs' Sequential), batch 64, eval + no_grad",
    **{f"{model} {batch} {mode}": f"{label} (vision.models), {shape[0]}x{'x'.join(map(str, shape[1:]))}, " + (
        "SGD-momentum step" if mode == "train" else "eval + no_grad")
       for model, label in W15_VISION.items() for batch, shape in W15_VISION_SHAPES.items()
       for mode in ("train", "infer")},
    "dwsep train": "depthwise-separable block (dw 3x3, BN, ReLU, pw 1x1 32->64, BN, ReLU), 32x32x56x56, "
                   "SGD-momentum step on the mean",
    "dwsep infer": "depthwise-separable block, 32x32x56x56, eval + no_grad",
    "decoder train": "LSTMCell attention decoder, batch 16, 30 steps teacher-forced, vocab 1000, Adam step",
    "decoder greedy": "LSTMCell attention decoder, batch 16, 30 steps greedy decoding, no_grad",
    "to_static grad": "vision LeNet, jit.to_static, eval, batch 1, called without no_grad",
    "to_static no_grad": "vision LeNet, jit.to_static, eval, batch 1, under no_grad",
}
# W9: model -> (label, input shape without the batch, (small batch, large batch)). Every framework
# builds its own model of these (Paddle's and oar's vision.models, the torch worker's copies with
# Paddle's layer names) and loads the same seeded weights (``seeded_state``).
W9_MODELS = {
    "lenet_doc": ("LeNet (Paddle's tutorial)", (1, 28, 28), (1, 64)),
    "resnet18": ("ResNet18", (3, 224, 224), (1, 8)),
    "mobilenet_v2": ("MobileNetV2", (3, 224, 224), (1, 8)),
    "encoder": ("encoder layer d256 h4 ffn1024, 128 tokens", (ENCODER["seq"], ENCODER["d_model"]), (1, ENCODER["batch"])),
}
# Saved (and exported) once per batch size, with that batch in the input spec, by every framework:
# oar's to_static captures MultiHeadAttention's reshape([0, 0, heads, head_dim]) per batch size, so
# an oar model saved with a dynamic batch takes only the batch it was traced with.
W9_FIXED_BATCH = frozenset({"encoder"})
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


def seeded_state(model: str, shapes: Mapping[str, Sequence[int]]) -> dict[str, np.ndarray]:
    """Weights for any model, given its state dict's names and shapes in Paddle's layout: each
    tensor from its own seed (the model's and the key's name), so every framework that names a
    weight alike gets the same numbers, whatever order its state dict lists them in.

    Convolutions ``[out, in/groups, kh, kw]`` are He-uniform (the activations keep their scale
    through a deep network; a default init makes MobileNetV2's outputs ~1e-7), Linear weights
    ``[in, out]`` uniform in 1/sqrt(in), batch norm gets non-trivial statistics (so that folding it
    into the convolution is exercised), layer norm weights near 1, biases small."""
    norms = {key[: -len("_mean")] for key in shapes if key.endswith("._mean")}  # "bn1." of "bn1._mean"
    state: dict[str, np.ndarray] = {}
    for key, raw in shapes.items():
        shape = tuple(int(d) for d in raw)
        rng = np.random.default_rng([SEED, zlib.crc32(model.encode()), zlib.crc32(key.encode())])
        prefix, _, leaf = key.rpartition(".")
        if f"{prefix}." in norms:
            low, high = {"weight": (0.5, 1.0), "bias": (-0.1, 0.1), "_mean": (-0.1, 0.1),
                         "_variance": (0.5, 1.5)}[leaf]
        elif len(shape) == 4:
            low = -math.sqrt(6.0 / math.prod(shape[1:]))
            high = -low
        elif len(shape) == 2:
            low, high = -1.0 / math.sqrt(shape[0]), 1.0 / math.sqrt(shape[0])
        elif leaf == "weight":
            low, high = 0.8, 1.2
        else:
            low, high = -0.1, 0.1
        state[key] = rng.uniform(low, high, size=shape).astype(np.float32)
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
    if workload == "W15":  # the vision models' labels are of 1000 classes, the decoder's tokens of its vocab
        d = W15_DECODER
        out = {"lenet_doc": rng.standard_normal((W15_BATCH["lenet_doc"], 1, 28, 28), dtype=np.float32),
               "lenet_doc_label": rng.integers(0, 10, W15_BATCH["lenet_doc"]).astype(np.int64),
               "dwsep": rng.standard_normal((W15_BATCH["dwsep"], W15_DWSEP["channels"], W15_DWSEP["size"],
                                             W15_DWSEP["size"]), dtype=np.float32),
               "encoder_out": rng.standard_normal((d["batch"], d["source"], d["hidden"]), dtype=np.float32),
               "tokens": rng.integers(0, d["vocab"], (d["batch"], d["steps"] + 1)).astype(np.int64)}
        for batch, shape in W15_VISION_SHAPES.items():
            out[batch] = rng.standard_normal(shape, dtype=np.float32)
            out[f"{batch}_label"] = rng.integers(0, 1000, shape[0]).astype(np.int64)
        out["to_static"] = out["lenet_doc"][: W15_BATCH["to_static"]].copy()
        return out
    if workload in W9_MODELS:  # W9's models: "b<batch>" for both batches, the small one a slice of the large one
        _, shape, batches = W9_MODELS[workload]
        x = rng.standard_normal((max(batches), *shape), dtype=np.float32)
        return {f"b{b}": x[:b].copy() for b in batches}
    raise ValueError(f"no inputs for {workload!r}")


def w6_case(batch: str, path: str) -> str:
    """W6's case names: ``batch`` is ``b1`` or ``b64``, ``path`` ``eager`` or ``graph``."""
    kind = "eager, no_grad" if path == "eager" else "graph / inference engine"
    return f"LeNet inference, batch {batch[1:]}, {kind}"


def w9_case(model: str, batch: int) -> str:
    """W9's case names: ``model`` a key of W9_MODELS."""
    return f"{W9_MODELS[model][0]}, batch {batch}"


def w9_prefix(directory: str, model: str, batch: int) -> str:
    """Where a framework saves (or exports) W9's ``model`` for ``batch``: one file set per model, or
    per batch for W9_FIXED_BATCH."""
    return f"{directory}/{model}" + (f"_b{batch}" if model in W9_FIXED_BATCH else "")


def w9_spec_batch(model: str, batch: int) -> int | None:
    """The batch dim of ``model``'s saved input spec: None (dynamic) unless it is saved per batch."""
    return batch if model in W9_FIXED_BATCH else None


FINGERPRINT_SIZE = 64


def fingerprint(output) -> list[float]:
    """``FINGERPRINT_SIZE`` values of ``output`` at fixed, evenly spaced positions (all of it when
    smaller): what W9 compares across frameworks, element by element."""
    flat = np.asarray(output, dtype=np.float64).reshape(-1)
    picked = np.unique(np.linspace(0, flat.size - 1, min(FINGERPRINT_SIZE, flat.size)).astype(np.int64))
    return [float(v) for v in flat[picked]]


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
    column: str = ""  # the column it fills when not the framework's own (W9: Paddle with and without oneDNN)
    fingerprint: list[float] | None = None  # W9: output values compared element by element across frameworks
    # further figures of the case: W10's load test, W11's accuracies; every timed case has ``cpu_s`` and
    # ``wall_s``, the process's CPU and wall time over its timed samples, and ``cpu_per_wall``, their ratio
    extra: dict[str, float] = field(default_factory=dict)


UNIT_SCALE = {"µs": 1e6, "ms": 1e3, "s": 1.0}


def time_case(workload: str, case: str, fn: Callable[[], object], budget: Budget, unit: str,
              check: float | None = None, note: str = "", column: str = "",
              fingerprint: list[float] | None = None) -> Case:
    """Time ``fn`` under ``budget``; per-call times in ``unit`` (µs, ms or s). The process's CPU time
    over the timed samples goes into ``extra`` next to their wall time: a ratio above the thread
    count, or above 1 at one thread, is CPU burnt beside the work (threads spinning while they wait)."""
    scale = UNIT_SCALE[unit]
    started = time.perf_counter()
    for _ in range(budget.warmup):
        for _ in range(budget.calls):
            fn()
        if time.perf_counter() - started > budget.max_seconds:
            break
    samples: list[float] = []
    cpu_started = time.process_time()  # every thread of the process, the framework's pools included
    started = time.perf_counter()
    while len(samples) < budget.repeats and not (samples and time.perf_counter() - started > budget.max_seconds):
        start = time.perf_counter()
        for _ in range(budget.calls):
            fn()
        samples.append((time.perf_counter() - start) / budget.calls * scale)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    extra = {"cpu_s": cpu, "wall_s": wall, "cpu_per_wall": cpu / max(wall, 1e-9)}
    return Case(workload, case, unit, samples, check=check, note=note, column=column, fingerprint=fingerprint,
                extra=extra)


def w9_cases(column: str, runs: dict[tuple[str, int], Callable[[], object]], args: WorkerArgs, note: str,
             failures: dict[tuple[str, int], str] | None = None) -> list[Case]:
    """Time each W9 ``(model, batch)`` callable (it returns the output as a numpy array) under its
    budget, with the output's mean |value| as the check and its fingerprint; a model in
    ``failures`` gets its reason instead."""
    cases = []
    for model, (_, _, batches) in W9_MODELS.items():
        for batch in batches:
            case = w9_case(model, batch)
            key = (model, batch)
            if key not in runs:
                reason = (failures or {}).get(key, "not run")
                cases.append(Case("W9", case, "ms", unavailable=reason, column=column))
                continue
            fn = runs[key]
            try:
                output = np.asarray(fn())
            except Exception as error:  # a failing engine is a result, not a crash of the worker
                reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                cases.append(Case("W9", case, "ms", unavailable=reason, column=column))
                continue
            cases.append(time_case("W9", case, fn, args.budget(f"W9 {model} b{batch}"), "ms",
                                   check=float(np.abs(output).mean()), note=note, column=column,
                                   fingerprint=fingerprint(output)))
    return cases


def w15_case(key: str, build: Callable[[], tuple[Callable[[], object], Callable[[], float]]], args: WorkerArgs,
             note: str = "") -> Case:
    """Time W15's case ``key`` (of W15_CASES): ``build()`` makes the model and returns ``(fn, probe)``,
    the timed call and the check. A case that fails to build or run is a result, ``unavailable``
    with the error and the line that raised it, not a crash of the worker (nor a silent fix)."""
    case = W15_CASES[key]
    try:
        fn, probe = build()
        check = probe()
        return time_case("W15", case, fn, args.budget(f"W15 {key}"), "ms", check=check, note=note)
    except Exception as error:
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{frame.filename.rsplit('/site-packages/', 1)[-1]}:{frame.lineno}"
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return Case("W15", case, "ms", unavailable=f"{reason} (at {where})", note=note)


def rate_case(workload: str, case: str, fn: Callable[[], object], budget: Budget, work: float, unit: str,
              note: str = "") -> Case:
    """Time ``fn`` under ``budget`` and report ``work`` (flops or bytes) per second, in billions."""
    timed = time_case(workload, case, fn, budget, "s", note=note)
    return Case(workload, case, unit, [work / seconds / 1e9 for seconds in timed.samples], higher_is_better=True,
                note=note)


def unavailable(workload: str, case: str, unit: str, reason: str, column: str = "") -> Case:
    return Case(workload, case, unit, unavailable=reason, column=column)


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


# -- W10's table: one row per server configuration (bench/run.py's report, serving_load.py alone) ------

W10_TABLE_HEAD = ["| server configuration (W10) | workers | answers | errors | requests/s | p50 ms | p99 ms | rows per run "
                  "| server CPU | client CPU |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]


def w10_row(label: str, rate: float | None, extra: dict, unavailable: str = "") -> str:
    """One configuration's row of ``W10_TABLE_HEAD``: its rate (requests/s) and the load test's extras."""
    if rate is None:
        return f"| {label} | n/a: {unavailable or 'no samples'} |  |  |  |  |  |  |  |  |"
    e = extra
    return (f"| {label} | {e['workers']:.0f} | {e['requests']:.0f} | {e['errors']:.0f} | {rate:.0f} | "
            f"{e['p50_ms']:.2f} | {e['p99_ms']:.2f} | {e['mean_batch']:.2f} | {e['server_cpu']:.2f} | "
            f"{e['client_cpu']:.2f} |")


# -- W11: oar-slim's compression targets (bench/slim_targets.py; its tables, for run.py and alone) ---

CIFAR_SHAPE, CIFAR_CLASSES = (3, 32, 32), 10
# Chosen so that W4's small ResNet reaches ~90% in 3 epochs, not 100%: the class templates are
# low-frequency fields that shifts, flips, contrast and a smooth distractor of similar strength blur.
CIFAR_CUTOFF = 4  # cycles per image: the templates' and the distractors' highest spatial frequency
CIFAR_SHIFT, CIFAR_CONTRAST, CIFAR_DISTRACTOR, CIFAR_NOISE = 6, (0.6, 1.4), 0.8, 0.6


def _smooth_fields(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` periodic 3x32x32 fields of unit std: white noise low-passed to CIFAR_CUTOFF."""
    frequencies = np.fft.fftfreq(CIFAR_SHAPE[1]) * CIFAR_SHAPE[1]
    low = np.hypot(frequencies[:, None], frequencies[None, :]) <= CIFAR_CUTOFF
    fields = np.fft.ifft2(np.fft.fft2(rng.standard_normal((count, *CIFAR_SHAPE))) * low).real
    return fields / fields.std(axis=(1, 2, 3), keepdims=True)


def synthetic_cifar(count: int, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``count`` CIFAR-shaped images ``[count, 3, 32, 32]`` float32 and their labels (int64, 10
    classes) of ``split`` ("train" or "test", different draws of the same classes): each image is its
    class's template (a smooth random field, the same for every split) rolled by up to 6 pixels
    each way, flipped left-right half the time, scaled in contrast (0.6-1.4), plus a smooth random
    distractor field and white noise."""
    templates = _smooth_fields(np.random.default_rng([SEED, 11]), CIFAR_CLASSES)
    rng = np.random.default_rng([SEED, 11, zlib.crc32(split.encode())])
    labels = rng.integers(0, CIFAR_CLASSES, count)
    images = np.empty((count, *CIFAR_SHAPE))
    for i, label in enumerate(labels):
        shifted = np.roll(templates[label], tuple(rng.integers(-CIFAR_SHIFT, CIFAR_SHIFT + 1, 2)), axis=(1, 2))
        images[i] = shifted[:, :, ::-1] if rng.random() < 0.5 else shifted
    images *= rng.uniform(*CIFAR_CONTRAST, (count, 1, 1, 1))
    images += CIFAR_DISTRACTOR * _smooth_fields(rng, count) + CIFAR_NOISE * rng.standard_normal(images.shape)
    return images.astype(np.float32), labels.astype(np.int64)


W11_SUBJECTS = {"lenet": "LeNet, digits", "resnet": "small ResNet, synthetic CIFAR",
                "resnet18": "ResNet18, synthetic CIFAR"}
# "int8" folds a model's batch norms into its convs first (oar.quantization.fuse_conv_bn), "int8-unfused"
# quantizes the model as it is; "pruned-inner" prunes each residual block's first conv alone.
W11_VARIANTS = {"float32": "float32", "int8": "PTQ int8", "int8-unfused": "PTQ int8, batch norms not folded",
                "pruned": "pruned 50% (every conv) + 1 epoch",
                "pruned-inner": "pruned 50% of each block's first conv (the filters no residual sum reads) + 1 epoch"}
W11_PRUNED_VARIANTS = ("pruned", "pruned-inner")
# What W11 measures of each subject, in table order. ResNet18 is there for the pruning target: W4's small
# ResNet (32 channels) is too narrow to lose half its filters and keep its accuracy after one epoch.
W11_MEASURED = {"lenet": ("float32", "int8"),
                "resnet": ("float32", "int8", "int8-unfused", *W11_PRUNED_VARIANTS),
                "resnet18": ("float32", "int8", *W11_PRUNED_VARIANTS)}
W11_COLUMNS = {"oar": "oar Predictor", "onnxruntime": "onnxruntime, oar.onnx's file"}
W11_BATCH = 64  # the latency's batch
W11_LIMITS = {"int8 accuracy": 1.0, "int8 size": 3.5, "int8 speed": 1.5, "pruned accuracy": 2.0, "pruned flops": 0.4}


def w11_case(subject: str, variant: str) -> str:
    """W11's case names: ``subject`` a key of W11_SUBJECTS, ``variant`` of W11_VARIANTS."""
    return f"{W11_SUBJECTS[subject]}, {W11_VARIANTS[variant]}"


def w11_keys() -> list[tuple[str, str]]:
    """Every ``(subject, variant)`` W11 measures, in table order."""
    return [(s, v) for s, variants in W11_MEASURED.items() for v in variants]


def w11_speedup(base, other) -> float | None:
    """How many times faster ``other`` runs than ``base`` (cells or cases with ``samples``, ms per
    call): the median of the per-round ratios when both were timed in the same interleaved rounds,
    else the ratio of the medians."""
    if base is None or other is None or not base.samples or not other.samples:
        return None
    if len(base.samples) == len(other.samples):
        return statistics.median(b / o for b, o in zip(base.samples, other.samples))
    return statistics.median(base.samples) / statistics.median(other.samples)


def _w11_accuracy(float_cell, other_cell, limit: float) -> tuple[str, bool | None]:
    if float_cell is None or other_cell is None or "accuracy" not in float_cell.extra or "accuracy" not in other_cell.extra:
        return "—", None
    a, b = 100 * float_cell.extra["accuracy"], 100 * other_cell.extra["accuracy"]
    return f"{b:.1f}% vs {a:.1f}% ({b - a:+.1f})", b - a >= -limit


def _w11_size(float_cell, int8_cell) -> tuple[str, bool | None]:
    if float_cell is None or int8_cell is None or "bytes" not in float_cell.extra or "bytes" not in int8_cell.extra:
        return "—", None
    ratio = float_cell.extra["bytes"] / int8_cell.extra["bytes"]
    return (f"{ratio:.2f}x ({float_cell.extra['bytes']:,.0f} -> {int8_cell.extra['bytes']:,.0f} B)",
            ratio >= W11_LIMITS["int8 size"])


def _w11_speed(float_cell, other_cell, limit: float | None) -> tuple[str, bool | None]:
    ratio = w11_speedup(float_cell, other_cell)
    if ratio is None:
        return "—", None
    text = f"{ratio:.2f}x ({statistics.median(float_cell.samples):.3g} -> {statistics.median(other_cell.samples):.3g} ms)"
    return text, None if limit is None else ratio >= limit


def w11_targets(cells: Mapping[tuple[str, str], object]) -> list[dict]:
    """The W11 targets from ``cells``, ``{(case, column): cell}`` (a cell has ``samples``, the ms per
    call at batch 64 of each round, and ``extra``: ``accuracy``, ``bytes``, ``flops``): one row per
    target, ``{"target": ..., column: (measured, met)}`` for each of W11_COLUMNS; ``met`` None where
    nothing was measured or the row has no target."""
    rows = []
    limits = W11_LIMITS
    for subject, label in W11_SUBJECTS.items():
        def get(variant: str, column: str, subject=subject):
            return cells.get((w11_case(subject, variant), column))

        if "int8" in W11_MEASURED[subject]:
            rows.append({"target": f"{label}: PTQ int8 test accuracy within {limits['int8 accuracy']:g} point of "
                                   f"float32",
                         **{c: _w11_accuracy(get("float32", c), get("int8", c), limits["int8 accuracy"])
                            for c in W11_COLUMNS}})
            rows.append({"target": f"{label}: int8 model file at least {limits['int8 size']:g}x smaller (oar: "
                                   f".pdiparams; onnxruntime: .onnx)",
                         **{c: _w11_size(get("float32", c), get("int8", c)) for c in W11_COLUMNS}})
            rows.append({"target": f"{label}: int8 at least {limits['int8 speed']:g}x faster than float32, batch "
                                   f"{W11_BATCH}, 1 thread",
                         **{c: _w11_speed(get("float32", c), get("int8", c), limits["int8 speed"])
                            for c in W11_COLUMNS}})
        for variant in (v for v in W11_PRUNED_VARIANTS if v in W11_MEASURED[subject]):
            name = f"{label}, {W11_VARIANTS[variant]}"
            rows.append({"target": f"{name}: test accuracy within {limits['pruned accuracy']:g} points of float32",
                         **{c: _w11_accuracy(get("float32", c), get(variant, c), limits["pruned accuracy"])
                            for c in W11_COLUMNS}})
            before, after = get("float32", "oar"), get(variant, "oar")
            flops: tuple[str, bool | None] = ("—", None)
            if before is not None and after is not None and "flops" in before.extra and "flops" in after.extra:
                cut = 1 - after.extra["flops"] / before.extra["flops"]
                flops = (f"-{cut:.1%} ({before.extra['flops']:,.0f} -> {after.extra['flops']:,.0f})",
                         cut >= limits["pruned flops"])
            rows.append({"target": f"{name}: FLOPs (oar.flops, batch 1) at least {limits['pruned flops']:.0%} fewer",
                         "oar": flops, "onnxruntime": ("—", None)})
            rows.append({"target": f"{name}: speed-up over float32, batch {W11_BATCH}, 1 thread (no target)",
                         **{c: _w11_speed(get("float32", c), get(variant, c), None) for c in W11_COLUMNS}})
    return rows


def w11_markdown(cells: Mapping[tuple[str, str], object]) -> str:
    """W11's measurements (one row per model and variant) and its targets, from ``cells`` as for
    ``w11_targets``; a cell that could not be measured has ``unavailable``, its reason."""
    notes: list[str] = []

    def reason(cell) -> str:
        text = (cell.unavailable if cell is not None else "") or "not measured"
        if text not in notes:
            notes.append(text)
        return f"n/a [{notes.index(text) + 1}]"

    lines = ["| model, variant (W11) | FLOPs | training s | test accuracy, oar Predictor | test accuracy, onnxruntime "
             "| .pdiparams B | .onnx B | oar Predictor ms | onnxruntime ms |", "| --- |" + " ---: |" * 8]
    for subject, variant in w11_keys():
        case = w11_case(subject, variant)
        oar, ort = cells.get((case, "oar")), cells.get((case, "onnxruntime"))
        values = []
        for cell, key, shown in ((oar, "flops", "{:,.0f}"), (oar, "train_s", "{:.1f}"), (oar, "accuracy", "{:.1%}"),
                                 (ort, "accuracy", "{:.1%}"), (oar, "bytes", "{:,.0f}"), (ort, "bytes", "{:,.0f}")):
            if cell is None or cell.unavailable:
                values.append(reason(cell))
            else:
                values.append(shown.format(cell.extra[key]) if key in cell.extra else "—")
        for cell in (oar, ort):
            values.append(f"{statistics.median(cell.samples):.3g}" if cell is not None and cell.samples
                          else reason(cell))
        lines.append(f"| {case} | " + " | ".join(values) + " |")
    lines += ["", f"| target (W11) | {W11_COLUMNS['oar']} | met | {W11_COLUMNS['onnxruntime']} | met |",
              "| --- | --- | --- | --- | --- |"]
    for row in w11_targets(cells):
        cells_text = []
        for column in W11_COLUMNS:
            measured, met = row[column]
            cells_text += [measured, "—" if met is None else ("met" if met else "**not met**")]
        lines.append(f"| {row['target']} | " + " | ".join(cells_text) + " |")
    engines = dict.fromkeys(cell.note for cell in cells.values() if cell.note)
    lines += ["", "Engines: " + "; ".join(engines) + "."] if engines else []
    return "\n".join(lines + ([""] + [f"[{i + 1}] {text}" for i, text in enumerate(notes)] if notes else []))
