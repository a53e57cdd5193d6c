"""W11: oar-slim's compression targets, measured end to end (oar only, one round, one thread).

    python bench/slim_targets.py W11 --threads 1            # W11's tables, then the JSON bench/run.py reads
    python bench/slim_targets.py W11 --threads 1 --quick    # tiny sizes: the code paths, not the numbers

Three models, trained here from fixed seeds (at the run's thread count):

- ``oar.vision.models.LeNet`` on the bundled digits (1,433 train / 364 test images), 3 epochs of
  Adam at 2e-3 in batches of 64, as tests/slim/conftest.py trains it;
- W4's small ResNet (bench/paddle_api.py: a conv-BN-ReLU stem and two BasicBlocks of 32 channels,
  the suite's seeded initial weights) and ``oar.vision.models.resnet18(num_classes=10)`` (oar's
  seeded initial weights, ``oar.seed(0)``) on ``suite.synthetic_cifar`` (4,096 train / 1,000 test
  images of 3x32x32, 10 classes), 3 epochs of Adam from 2e-3 with cosine decay per step.

Each becomes a PTQ int8 model (``oar.quantization.PTQ``: ``AbsmaxObserver`` activations,
``AbsMaxChannelWiseWeightObserver`` weights, 4 calibration batches of 64 training images) after
``oar.quantization.fuse_conv_bn`` folds its batch norms into the convs they follow (LeNet has
none); the variant ``int8-unfused``, where suite.W11_MEASURED lists it, quantizes the model as it
is, batch norms kept. Both ResNets are also pruned twice by
``oar.slim.prune.L1NormFilterPruner(model, [1, 3, 32, 32])``: half the filters of every conv
(``prune_vars(0.5)``; the convs whose outputs a residual sum adds are pruned as one group), and
half those of each BasicBlock's first conv alone (``<block>.conv1.weight``: its filters feed the
block's second conv, never a residual sum), each fine-tuned for one epoch (Adam from 1e-3,
cosine, in batches of 16: four times the steps of batches of 64 over the same images). Every variant is saved by ``oar.jit.save`` (dynamic batch) and run by an
``oar.inference`` Predictor, and exported by ``oar.onnx.export`` and run by ONNX Runtime (its
default graph optimizations, which fuse the QDQ pairs into int8 kernels), both at one thread.
Reported per variant and engine: test accuracy (through that engine), file size, FLOPs
(``oar.flops`` at batch 1), and latency at batch 64, timed in interleaved rounds: each round runs
every engine of the model once, so the ratios compare samples taken within the same seconds.
"""

from __future__ import annotations

import pin_threads

if __name__ == "__main__":
    pin_threads.from_argv()  # before numpy loads: it reads the thread variables once

import contextlib  # noqa: E402
import copy  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import suite  # noqa: E402
from paddle_api import PaddleAPIWorkloads  # noqa: E402
from suite import Budget, Case, WorkerArgs  # noqa: E402
from worker_oar import details, set_threads  # noqa: E402

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402
import oar.vision.transforms as T  # noqa: E402
from oar.static import InputSpec  # noqa: E402
from oar.vision.datasets import Digits  # noqa: E402
from oar.vision.models import LeNet, resnet18  # noqa: E402

BATCH = 64  # training, calibration and evaluation batches
FINE_TUNE_BATCH = 16  # the pruned models' one epoch
CALIBRATION_BATCHES = 4
RESNET_TRAIN, RESNET_TEST = 4096, 1000
EPOCHS = {"lenet": 3, "resnet": 3, "resnet18": 3}
PRUNE_RATIO = 0.5
LR = {"lenet": 2e-3, "resnet": 2e-3, "resnet18": 2e-3, "fine-tune": 1e-3}
COSINE = {"resnet", "resnet18"}  # the subjects whose learning rate decays over the training
QUICK = {"train": 256, "test": 128, "epochs": 1, "calibration": 2}

Runner = Callable[[np.ndarray], np.ndarray]


@dataclass
class Subject:
    """A trained float32 model and its data."""

    key: str  # a key of suite.W11_SUBJECTS
    model: oar.nn.Layer
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    train_s: float

    @property
    def spec(self) -> list[InputSpec]:
        return [InputSpec([None, *self.x_train.shape[1:]], "float32", "x")]


# -- training ------------------------------------------------------------------------------------

def train(model, x: np.ndarray, y: np.ndarray, epochs: int, lr: float, seed: int, cosine: bool,
          batch: int = BATCH) -> float:
    """Adam and cross-entropy over ``epochs`` of shuffled batches of ``batch`` (``cosine``: the
    rate decays to 0 over all steps); the seconds it took. The model is left in eval mode."""
    started = time.perf_counter()
    steps = epochs * (len(x) // batch)
    schedule = oar.optimizer.lr.CosineAnnealingDecay(lr, T_max=steps) if cosine else lr
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=schedule)
    model.train()
    for epoch in range(epochs):
        order = np.random.default_rng([suite.SEED, seed, epoch]).permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            i = order[start:start + batch]
            loss = F.cross_entropy(model(oar.to_tensor(x[i])), oar.to_tensor(y[i].reshape(-1, 1)))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            if cosine:
                schedule.step()
    model.eval()
    return time.perf_counter() - started


def digits(mode: str) -> tuple[np.ndarray, np.ndarray]:
    data = Digits(mode=mode, transform=T.Normalize(mean=[127.5], std=[127.5]))
    return np.stack([data[i][0] for i in range(len(data))]), np.asarray(data.labels).reshape(-1).astype(np.int64)


MODELS = {"lenet": LeNet, "resnet": lambda: PaddleAPIWorkloads(oar).model("resnet"),
          "resnet18": lambda: resnet18(num_classes=suite.CIFAR_CLASSES)}


def subjects(quick: bool) -> Iterator[Subject]:
    """The trained float32 models, one by one (--quick: on a few hundred images, one epoch)."""
    sizes = (QUICK["train"], QUICK["test"]) if quick else (None, None)
    cifar = (*suite.synthetic_cifar(sizes[0] or RESNET_TRAIN, "train"),
             *suite.synthetic_cifar(sizes[1] or RESNET_TEST, "test"))
    data = {"lenet": (*digits("train"), *digits("test")), "resnet": cifar, "resnet18": cifar}
    for key in suite.W11_SUBJECTS:
        x_train, y_train, x_test, y_test = data[key]
        x_train, y_train, x_test, y_test = x_train[:sizes[0]], y_train[:sizes[0]], x_test[:sizes[1]], y_test[:sizes[1]]
        oar.seed(0)
        model = MODELS[key]()
        epochs = QUICK["epochs"] if quick else EPOCHS[key]
        seconds = train(model, x_train, y_train, epochs, LR[key], seed=0, cosine=key in COSINE)
        yield Subject(key, model, x_train, y_train, x_test, y_test, seconds)


# -- compression ---------------------------------------------------------------------------------

def ptq_int8(subject: Subject, batches: int, fuse: bool = True):
    """The PTQ int8 model of ``subject``: absmax activations, per-channel absmax weights, after
    folding the batch norms into the convs (``fuse``)."""
    # oar-slim, oar-serving, oar-onnx and onnxruntime are imported where used: the suite's venv may
    # lack one, and then its cells say so (w11) instead of the worker failing.
    from oar.quantization import PTQ, QuantConfig, fuse_conv_bn
    from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver

    model = fuse_conv_bn(subject.model, subject.spec) if fuse else subject.model  # copies: the float model stays
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model)
    with oar.no_grad():
        for b in range(batches):
            observed(oar.to_tensor(subject.x_train[b * BATCH:(b + 1) * BATCH]))
    return ptq.convert(observed)


def prune_ratios(variant: str, model: oar.nn.Layer) -> float | dict[str, float]:
    """What ``variant`` prunes of ``model`` (``FilterPruner.prune_vars``' first argument). "pruned":
    every conv; the convs whose outputs a residual sum adds channel by channel (the stem or a
    downsample, and the blocks' second convs) are one group, pruned together. "pruned-inner": each
    BasicBlock's first conv, ``<block>.conv1.weight`` (ResNet18's stem is ``conv1.weight``, in no
    block), whose filters feed the block's second conv alone.

    >>> prune_ratios("pruned-inner", MODELS["resnet"]())
    {'blocks.0.conv1.weight': 0.5, 'blocks.1.conv1.weight': 0.5}
    """
    if variant == "pruned":
        return PRUNE_RATIO
    return {name: PRUNE_RATIO for name, _ in model.named_parameters() if name.endswith(".conv1.weight")}


def pruned(subject: Subject, variant: str, epochs: int) -> tuple[oar.nn.Layer, float]:
    """A copy of ``subject``'s model with ``variant``'s filters removed by their L1 norm
    (``prune_vars(prune_ratios(variant, model))``), fine-tuned ``epochs``; and the fine-tuning's seconds."""
    from oar.slim.prune import L1NormFilterPruner

    model = copy.deepcopy(subject.model)
    L1NormFilterPruner(model, [1, *subject.x_train.shape[1:]]).prune_vars(prune_ratios(variant, model))
    seconds = train(model, subject.x_train, subject.y_train, epochs, LR["fine-tune"], seed=1, cosine=True,
                    batch=FINE_TUNE_BATCH)
    return model, seconds


def flops(model, shape) -> int:
    with contextlib.redirect_stdout(io.StringIO()):  # oar.flops prints Paddle's per-layer chatter
        return int(oar.flops(model, [1, *shape]))


# -- the engines ---------------------------------------------------------------------------------

def predictor(prefix: str, threads: int) -> Runner:
    from oar.inference import Config, create_predictor

    config = Config(prefix)
    config.set_cpu_math_library_num_threads(threads)
    engine = create_predictor(config)
    return lambda x: engine.infer([x])[0]


def onnxruntime_session(path: str, threads: int) -> Runner:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})[0]


def accuracy(run: Runner, x: np.ndarray, y: np.ndarray) -> float:
    predictions = np.concatenate([np.asarray(run(x[i:i + BATCH])).argmax(-1) for i in range(0, len(x), BATCH)])
    return float((predictions == y).mean())


def interleaved(runners: dict[str, Runner], x: np.ndarray, budget: Budget) -> dict[str, list[float]]:
    """Per runner, ``budget.repeats`` samples of ms per call on ``x``: round after round, each
    runner's ``budget.calls`` calls in turn (after ``budget.warmup`` such untimed rounds), so a busy
    second of the machine slows every runner of a round alike. Past ``budget.max_seconds`` of timing
    it stops after the round under way."""
    samples: dict[str, list[float]] = {key: [] for key in runners}
    for _ in range(budget.warmup):
        for run in runners.values():
            for _ in range(budget.calls):
                run(x)
    started = time.perf_counter()
    for _ in range(budget.repeats):
        for key, run in runners.items():
            start = time.perf_counter()
            for _ in range(budget.calls):
                run(x)
            samples[key].append((time.perf_counter() - start) / budget.calls * 1e3)
        if time.perf_counter() - started > budget.max_seconds:
            break
    return samples


def failure(error: Exception) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def measure(subject: Subject, args: WorkerArgs, directory: str) -> list[Case]:
    """Every variant of ``subject`` through both engines: W11's cases for it."""
    shape = subject.x_train.shape[1:]
    models = {"float32": (subject.model, subject.train_s)}
    reasons: dict[tuple[str, str], str] = {}  # (variant, column) -> why it has no figures
    calibration = QUICK["calibration"] if args.quick else CALIBRATION_BATCHES
    makers = {"int8": lambda: (ptq_int8(subject, calibration), None),
              "int8-unfused": lambda: (ptq_int8(subject, calibration, fuse=False), None),
              **{variant: lambda variant=variant: pruned(subject, variant, epochs=1)
                 for variant in suite.W11_PRUNED_VARIANTS}}
    compressions = {v: makers[v] for s, v in suite.w11_keys() if s == subject.key and v != "float32"}
    for variant, compress in compressions.items():
        try:
            models[variant] = compress()
        except Exception as error:  # a failing compression is a result: its cells say why
            reasons.update(dict.fromkeys([(variant, c) for c in suite.W11_COLUMNS], f"{variant}: {failure(error)}"))
    runners: dict[tuple[str, str], Runner] = {}
    extras: dict[tuple[str, str], dict[str, float]] = {}
    for variant, (model, train_s) in models.items():
        prefix = os.path.join(directory, f"{subject.key}_{variant}")
        oar.jit.save(model, prefix, input_spec=subject.spec)
        extras[(variant, "oar")] = {"bytes": float(os.path.getsize(prefix + ".pdiparams")),
                                    # the int8 model does the float one's multiply-adds (oar.flops counts no quanted layer)
                                    "flops": float(flops(subject.model if variant.startswith("int8") else model, shape)),
                                    **({"train_s": train_s} if train_s is not None else {})}
        for column, engine in (("oar", predictor), ("onnxruntime", exported)):
            try:
                runners[(variant, column)] = engine(prefix, args.threads)
            except Exception as error:  # an engine that cannot take the model is a result
                reasons[(variant, column)] = failure(error)
        if os.path.exists(prefix + ".onnx"):
            extras[(variant, "onnxruntime")] = {"bytes": float(os.path.getsize(prefix + ".onnx"))}
    for key, run in list(runners.items()):
        try:
            extras.setdefault(key, {})["accuracy"] = accuracy(run, subject.x_test, subject.y_test)
        except Exception as error:
            reasons[key] = failure(error)
            del runners[key]
    x = np.ascontiguousarray(subject.x_test[:suite.W11_BATCH])
    samples = interleaved(runners, x, args.budget(f"W11 {subject.key}"))
    notes = engine_notes(args.threads)
    cases = []
    for key, variant in suite.w11_keys():
        if key != subject.key:
            continue
        for column in suite.W11_COLUMNS:
            extra = extras.get((variant, column), {})
            cases.append(Case("W11", suite.w11_case(key, variant), "ms", samples.get((variant, column), []),
                              check=extra.get("accuracy"), note=notes[column],
                              unavailable=reasons.get((variant, column), ""), column=column, extra=extra))
    return cases


def engine_notes(threads: int) -> dict[str, str]:
    """What each column ran, for the table's note."""
    notes = {"oar": f"oar.inference Predictor (Config(prefix), {threads} thread(s), infer())", "onnxruntime": ""}
    try:
        import onnxruntime
    except ImportError:
        return notes
    notes["onnxruntime"] = (f"onnxruntime {onnxruntime.__version__} (default graph optimizations, {threads} "
                            f"intra-op thread(s)) on oar.onnx.export's file")
    return notes


def exported(prefix: str, threads: int) -> Runner:
    """``oar.onnx.export`` of the model saved at ``prefix`` (to ``prefix.onnx``), in ONNX Runtime."""
    import oar.onnx

    oar.onnx.export(prefix, prefix)
    return onnxruntime_session(prefix + ".onnx", threads)


def w11(args: WorkerArgs) -> list[Case]:
    try:
        import oar.quantization  # noqa: F401 - oar-slim's
        import oar.slim.prune  # noqa: F401
    except ImportError as error:
        return [Case("W11", suite.w11_case(s, v), "ms", unavailable=f"oar-slim is not installed: {error}", column=c)
                for s, v in suite.w11_keys() for c in suite.W11_COLUMNS]
    with tempfile.TemporaryDirectory(prefix="oar-bench-slim-") as directory:
        return [case for subject in subjects(args.quick) for case in measure(subject, args, directory)]


def main(argv: list[str] | None = None) -> int:
    args = suite.parse_worker_args(__doc__.splitlines()[0], argv=argv)
    thread_control = set_threads(args.threads)
    cases = w11(args)
    print(suite.w11_markdown({(c.case, c.column): c for c in cases}))
    suite.emit("oar", oar.__version__, details(thread_control), args.threads, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
