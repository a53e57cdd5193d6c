"""Op testing harness, public so that plugins test their kernels with the same checks as core.

One table of ``OpCase``s drives every check (Paddle's ``OpTest``, JAX's ``lax_test`` op table):

- ``check_output``: forward against a numpy reference, per dtype with per-dtype tolerances, also
  on non-contiguous inputs; every op the call dispatches must agree with its meta function on
  the output shapes and dtypes.
- ``check_grad``: the gradient from ``backward`` against central finite differences in float64.

>>> import numpy as np, oar
>>> from oar.testing import OpCase, check_output, check_grad
>>> case = OpCase("exp", oar.exp, np.exp, [np.linspace(-1, 1, 6).reshape(2, 3)])
>>> check_output(case, "float32"); check_grad(case)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import oar
from oar._core import dtypes as _dt
from oar._core.dispatch import Mode
from oar._core.op import TensorMeta

# Forward tolerances (rtol, atol) by dtype, against a float64 numpy reference.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-5, 1e-6),
    "float16": (1e-2, 1e-3),
    "bfloat16": (3e-2, 1e-2),
}
GRAD_RTOL, GRAD_ATOL, FD_EPS = 1e-5, 1e-7, 1e-6
# Machine epsilon by dtype: the rounding of one addition.
EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}

__all__ = [
    "OpCase", "check_output", "check_grad", "check_case", "check_forward", "load_cases", "record_ops", "OpRecorder",
    "TOLERANCES", "noncontiguous", "sum_tolerance",
]


def sum_tolerance(dtype: str, terms: int, scale: float = 1.0) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing two computations of the same sums added in different orders.

    Two correct implementations of a sum of ``terms`` products (a GEMM blocked differently, a
    batch run in parts, a fused kernel) differ by rounding that grows like ``eps * sqrt(terms)``
    relative to the size of the terms; ``scale`` is that size (the largest magnitude of the
    result is a fair stand-in). The floor is the single-op tolerance of ``TOLERANCES``.

    >>> from oar.testing import sum_tolerance
    >>> sum_tolerance("float32", terms=400, scale=5.0)
    (1e-05, 5e-05)
    >>> sum_tolerance("float32", terms=10_000)[0] > 4e-5
    True
    """
    if dtype not in EPS:
        raise ValueError(f"sum_tolerance: dtype must be one of {sorted(EPS)}, got {dtype!r}")
    rtol = max(TOLERANCES[dtype][0], 4 * EPS[dtype] * max(terms, 1) ** 0.5)
    return rtol, rtol * max(float(scale), 1e-30)


@dataclass
class OpCase:
    """One row of the op table.

    Arguments:
        op: the registered op this case exercises (for the completeness check).
        fn: the oar function under test, called with tensors made from ``inputs``.
        ref: the numpy reference, called with the numpy ``inputs``; returns an array or a tuple.
        inputs: numpy arrays; float arrays are cast to the dtype under test, others kept.
        grad_inputs: indices of inputs to check gradients for (None: every float input).
        dtypes: dtypes ``check_output`` runs (float inputs are cast to each).
        grad: whether ``check_grad`` applies (False for non-differentiable ops).
        rtol, atol: override the forward tolerances (all dtypes).
        id: a readable test id; defaults to the op name.
    """

    op: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    inputs: Sequence[np.ndarray]
    grad_inputs: Sequence[int] | None = None
    dtypes: Sequence[str] = ("float32", "float64")
    grad: bool = True
    rtol: float | None = None
    atol: float | None = None
    id: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.inputs = [np.asarray(a) for a in self.inputs]
        if not self.id:
            self.id = self.op

    def float_indices(self) -> list[int]:
        return [i for i, a in enumerate(self.inputs) if a.dtype.kind == "f"]


class OpRecorder(Mode):
    """A mode that runs ops eagerly and checks each op's meta against what the kernel produced.

    ``ops`` collects the names of the ops dispatched (the op table's coverage).
    """

    def __init__(self, check_meta: bool = True):
        self.ops: set[str] = set()
        self.check_meta = check_meta

    def apply(self, op, inputs, attrs):
        out = self.apply_below(op, inputs, attrs)
        self.ops.add(op.name)
        if self.check_meta:
            metas = [TensorMeta(tuple(t._data.shape), t.dtype) for t in inputs]
            expected = op.meta(*metas, **attrs)
            got = out if isinstance(out, tuple) else (out,)
            expected = (expected,) if isinstance(expected, TensorMeta) else tuple(expected)
            if len(got) != len(expected):
                raise AssertionError(f"op {op.name!r}: meta gives {len(expected)} outputs, kernel {len(got)}")
            for i, (m, t) in enumerate(zip(expected, got)):
                shape = tuple(t._data.shape)
                # A None dim in the meta is data-dependent (nonzero, masked_select): any size fits.
                fits = len(m.shape) == len(shape) and all(d is None or d == s for d, s in zip(m.shape, shape))
                if not fits or m.dtype is not t.dtype:
                    raise AssertionError(
                        f"op {op.name!r} output {i}: meta says {m}, kernel gave "
                        f"{t.dtype.name}{list(shape)} (inputs {metas}, attrs {attrs})"
                    )
        return out


def record_ops(check_meta: bool = True) -> OpRecorder:
    """``with record_ops() as rec: ...`` runs eagerly, checks metas, and lists ops in ``rec.ops``."""
    return OpRecorder(check_meta)


def noncontiguous(a: np.ndarray) -> np.ndarray:
    """The same values in a non-contiguous (strided) array."""
    if a.ndim == 0 or a.size == 0:
        return a
    wide = np.repeat(a, 2, axis=-1)
    view = wide[..., ::2]
    assert not view.flags.c_contiguous or a.shape[-1] <= 1
    return view


def _as_tuple(out) -> tuple:
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def _cast_inputs(case: OpCase, dtype: str) -> list[np.ndarray]:
    target = _dt.get_dtype(dtype).np
    return [a.astype(target) if a.dtype.kind == "f" else a for a in case.inputs]


def check_output(case: OpCase, dtype: str = "float32", *, contiguous: bool = True, recorder: OpRecorder | None = None) -> None:
    """Run ``case.fn`` on ``dtype`` inputs and compare with ``case.ref`` computed in float64."""
    arrays = _cast_inputs(case, dtype)
    if not contiguous:
        arrays = [noncontiguous(a) for a in arrays]
    reference_inputs = [a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == _dt.bfloat16.np else a for a in arrays]
    expected = _as_tuple(case.ref(*reference_inputs))
    tensors = [oar.to_tensor(a) if a.dtype.kind not in "fV" and a.dtype != _dt.bfloat16.np else oar.Tensor._wrap(a, "cpu", True, None, 0, None) for a in arrays]
    rec = recorder or OpRecorder()
    with rec:
        got = _as_tuple(case.fn(*tensors))
    if len(got) != len(expected):
        raise AssertionError(f"{case.id}: {len(got)} outputs, reference has {len(expected)}")
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    rtol = case.rtol if case.rtol is not None else rtol
    atol = case.atol if case.atol is not None else atol
    for i, (g, e) in enumerate(zip(got, expected)):
        g_np = g.numpy() if isinstance(g, oar.Tensor) else np.asarray(g)
        e = np.asarray(e)
        if g_np.shape != e.shape:
            raise AssertionError(f"{case.id} [{dtype}] output {i}: shape {list(g_np.shape)}, reference {list(e.shape)}")
        if e.dtype.kind in "biu" or g_np.dtype.kind in "biu":
            np.testing.assert_array_equal(g_np, e, err_msg=f"{case.id} [{dtype}] output {i}")
        else:
            np.testing.assert_allclose(g_np.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=f"{case.id} [{dtype}] output {i}")


def _weighted_loss(outputs, weights):
    total = None
    for out, w in zip(outputs, weights):
        if w is None:
            continue
        term = (out * oar.to_tensor(w)).sum()
        total = term if total is None else total + term
    return total


def check_grad(case: OpCase, *, eps: float = FD_EPS, rtol: float = GRAD_RTOL, atol: float = GRAD_ATOL) -> None:
    """Compare the autograd gradient of a random projection of the outputs with central
    finite differences, in float64 (Paddle's ``check_grad``)."""
    arrays = _cast_inputs(case, "float64")
    indices = list(case.grad_inputs) if case.grad_inputs is not None else case.float_indices()
    rng = np.random.default_rng(0)

    def run(arrs, requires):
        ts = [oar.to_tensor(a, stop_gradient=i not in requires) for i, a in enumerate(arrs)]
        return ts, _as_tuple(case.fn(*ts))

    tensors, outs = run(arrays, indices)
    weights = [rng.standard_normal(o.shape) if o.dtype.is_floating and not o.stop_gradient else None for o in outs]
    loss = _weighted_loss(outs, weights)
    if loss is None:
        raise AssertionError(f"{case.id}: no differentiable output to check gradients on")
    loss.backward()
    for i in indices:
        analytic = tensors[i].grad.numpy() if tensors[i].grad is not None else np.zeros_like(arrays[i])
        numeric = np.zeros_like(arrays[i], dtype=np.float64)
        flat = arrays[i].reshape(-1)
        for k in range(flat.size):
            original = flat[k]
            values = []
            for sign in (1, -1):
                flat[k] = original + sign * eps
                with oar.no_grad():
                    _, o = run([a.reshape(arrays[j].shape) if j == i else a for j, a in enumerate(arrays)], [])
                    values.append(float(_weighted_loss(o, weights)))
            flat[k] = original
            numeric.reshape(-1)[k] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol,
                                   err_msg=f"{case.id}: gradient of input {i} vs finite differences")


def check_case(case: OpCase, recorder: OpRecorder | None = None) -> None:
    """Every check of one case: each dtype, non-contiguous inputs, and the gradient."""
    for dtype in case.dtypes:
        check_output(case, dtype, recorder=recorder)
    check_output(case, case.dtypes[0], contiguous=False, recorder=recorder)
    if case.grad:
        check_grad(case)


def check_forward(case: OpCase) -> None:
    """``check_output`` for every dtype of ``case``, asserting that the call dispatched ``case.op``
    (so a table row cannot pass while exercising some other op)."""
    for dtype in case.dtypes:
        with record_ops() as rec:
            check_output(case, dtype, recorder=rec)
        if case.op not in rec.ops:
            raise AssertionError(f"case {case.id} never dispatched op {case.op!r} (it ran {sorted(rec.ops)})")


def load_cases(package: str, families) -> list[OpCase]:
    """The ``CASES`` of every module ``<package>.<family>`` that exists (an op table's rows)."""
    import importlib

    cases: list[OpCase] = []
    for family in families:
        try:
            module = importlib.import_module(f"{package}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{family}":
                raise
            continue
        cases.extend(module.CASES)
    return cases
