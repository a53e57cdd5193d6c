"""Parity between a model in training code and the same model deployed.

``check_parity(layer, prefix, inputs)`` runs the same inputs three ways: the eager ``layer``, the
saved program as captured (op by op, no passes), and the Predictor (the passes the Config
chooses). It reports the largest absolute and relative difference of each output, eager against
the Predictor, and of each intermediate value the captured and the optimized program both hold
(a value keeps its id through the passes that rewrite around it), so a pass that changed a
result is found at the first value it changed. ``python -m oar.inference check PREFIX --input
x.npy`` does the same without the layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import oar
from oar.inference.config import Config
from oar.inference.predictor import create_predictor
from oar.static.passes import Executor, observe, output_tensors
from oar.testing import sum_tolerance


@dataclass
class Difference:
    """The largest differences between two computations of one value."""

    name: str
    op: str
    shape: tuple
    max_abs: float
    max_rel: float
    ok: bool

    def row(self) -> str:
        mark = "ok" if self.ok else "DIFFERS"
        return f"| {self.name} | {self.op} | {list(self.shape)} | {self.max_abs:.3g} | {self.max_rel:.3g} | {mark} |"


@dataclass
class ParityReport:
    """The outputs' and the intermediate values' differences, and the tolerance they were held to."""

    rtol: float
    atol: float
    outputs: list[Difference] = field(default_factory=list)
    intermediates: list[Difference] = field(default_factory=list)
    reference: str = "eager"

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.outputs) and all(d.ok for d in self.intermediates)

    def first_difference(self) -> Difference | None:
        """The first intermediate value (in program order) beyond the tolerance: where it began."""
        return next((d for d in self.intermediates if not d.ok), None)

    def __str__(self) -> str:
        head = "| value | op | shape | max abs | max rel | |\n| --- | --- | --- | ---: | ---: | --- |"
        lines = [f"parity within rtol={self.rtol:.3g}, atol={self.atol:.3g}: {'ok' if self.ok else 'FAILED'}",
                 f"outputs ({self.reference} vs Predictor):", head, *(d.row() for d in self.outputs)]
        if self.intermediates:
            lines += ["intermediate values (captured program vs optimized program):", head,
                      *(d.row() for d in self.intermediates)]
        first = self.first_difference()
        if first is not None:
            lines.append(f"first difference at {first.name}, the output of {first.op}")
        return "\n".join(lines)


def compare(name: str, op: str, expected: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> Difference:
    expected, got = np.asarray(expected, dtype=np.float64), np.asarray(got, dtype=np.float64)
    if expected.shape != got.shape:
        return Difference(name, op, tuple(got.shape), float("inf"), float("inf"), False)
    diff = np.abs(expected - got)
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float((diff / np.maximum(np.abs(expected), 1e-30)).max()) if diff.size else 0.0
    same_nans = bool(np.array_equal(np.isnan(expected), np.isnan(got)))
    ok = same_nans and bool(np.all((diff <= atol + rtol * np.abs(expected)) | np.isnan(expected)))
    return Difference(name, op, tuple(got.shape), max_abs, max_rel, ok)


def default_tolerance(dtype: str, weights: int, outputs: list[np.ndarray]) -> tuple[float, float]:
    """``oar.testing.sum_tolerance`` with the weight count standing in for the sums' length and the
    largest output magnitude for their scale."""
    scale = max((float(np.abs(o).max()) for o in outputs if o.size), default=1.0)
    return sum_tolerance(dtype if dtype in ("float64", "float32", "float16", "bfloat16") else "float32",
                         terms=max(weights, 1), scale=scale)


def _recorded(executor: Executor, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
    seen: dict[int, tuple[str, np.ndarray]] = {}

    def record(program, node, outputs):
        if program is executor.program:  # not the blocks of control flow, whose ids are their own
            for vid, array in zip(node.outputs, outputs):
                if array is not None:
                    seen[vid] = (node.op, np.array(array))

    with oar.no_grad(), observe(record):
        outputs = executor.run_arrays(arrays)
    return outputs, seen


def _intermediates(captured: Executor, optimized: Executor, arrays, rtol, atol) -> list[Difference]:
    _, before = _recorded(captured, arrays)
    _, after = _recorded(optimized, arrays)
    diffs = []
    for vid, (op, expected) in before.items():  # program order: the first difference is where it began
        if vid in after and after[vid][1].shape == expected.shape and expected.dtype.kind in "fc":
            diffs.append(compare(f"%{vid}", op, expected, after[vid][1], rtol, atol))
    return diffs


def check_parity(layer, model_prefix: str, inputs, *, rtol: float | None = None, atol: float | None = None,
                 config: Config | None = None) -> ParityReport:
    """Run ``inputs`` (a list of arrays or tensors) through the eager ``layer`` and through the
    Predictor of ``model_prefix`` (what ``oar.jit.save(layer, model_prefix)`` wrote) and report the
    differences (see the module docstring). ``layer=None`` compares the captured program instead.

    >>> import os, tempfile, numpy as np, oar
    >>> from oar.static import InputSpec
    >>> from oar.inference import check_parity
    >>> layer = oar.nn.Sequential(oar.nn.Linear(3, 4), oar.nn.ReLU(), oar.nn.Linear(4, 2))
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> oar.jit.save(layer, prefix, input_spec=[InputSpec([None, 3], "float32", "x")])
    >>> check_parity(layer, prefix, [np.ones([2, 3], "float32")]).ok
    True
    """
    config = (config or Config(model_prefix)).copy()
    predictor = create_predictor(config)
    arrays = [np.asarray(x.numpy(copy=False) if isinstance(x, oar.Tensor) else x) for x in inputs]
    runner = predictor._runner
    captured = Executor(runner.layer.program(), runner.place)
    got = [t.numpy() for t in predictor.run(arrays)]  # first: it checks the inputs against the saved spec
    with oar.no_grad():
        if layer is not None:
            was_training = getattr(layer, "training", False)
            layer.eval()
            try:
                result = layer(*[oar.to_tensor(a) for a in arrays])
            finally:
                if was_training:
                    layer.train()
            expected = [np.asarray(t.numpy()) for t in output_tensors(result)]
        else:
            expected = captured.run_arrays(arrays)
    weights = sum(int(np.prod(p.shape)) for p in runner.layer.parameters())
    dtype = predictor.get_output_specs()[0]["dtype"] if got else "float32"
    default = default_tolerance(dtype, weights, expected)
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    report = ParityReport(rtol, atol, reference="eager" if layer is not None else "captured program")
    names = predictor.get_output_names()
    if len(expected) != len(got):
        report.outputs.append(Difference("outputs", "-", (), float("inf"), float("inf"), False))
    for name, e, g in zip(names, expected, got):
        report.outputs.append(compare(name, "output", e, g, rtol, atol))
    if hasattr(runner, "executor"):
        report.intermediates = _intermediates(captured, runner.executor, arrays, rtol, atol)
    return report

