"""Shared by oar-triton's tests: the op tables of core and nn, and running a case on the gpu
beside the cpu's reference kernels.

The tests run in a virtual environment holding only oar-triton and its dependencies (nox's
``tests_isolated``), where the repository's ``tests`` package is not importable: the op-case
modules are loaded from their files (``oar.testing.op_table_from``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import oar
from oar.testing import TOLERANCES, op_table_from, sum_tolerance

REPO = Path(__file__).resolve().parents[2]


def op_cases() -> list:
    """Every row of core's and nn's op tables."""
    return (op_table_from(REPO / "tests" / "core" / "op_cases", "oar_core_op_cases")
            + op_table_from(REPO / "tests" / "nn" / "op_cases", "oar_nn_op_cases"))


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def run_case(case, dtype: str, device: str, grad: bool):
    """``case.fn`` on ``device`` with float inputs cast to ``dtype``: its outputs as numpy arrays
    and, with ``grad``, the gradients of a fixed random projection of the float outputs."""
    target = oar.ops.get_dtype(dtype).np
    previous = oar.get_device()
    oar.set_device(device)
    try:
        tensors = []
        for i, a in enumerate(case.inputs):
            a = a.astype(target) if a.dtype.kind == "f" else a
            wants = grad and a.dtype.kind == "f" and (case.grad_inputs is None or i in case.grad_inputs)
            tensors.append(oar.to_tensor(a, place=device, stop_gradient=not wants))
        outs = _as_tuple(case.fn(*tensors))
        for o in outs:
            if isinstance(o, oar.Tensor):
                assert o.place.backend == device, f"{case.id}: an output on {o.place}, not on {device}"
        arrays = [o.numpy() if isinstance(o, oar.Tensor) else np.asarray(o) for o in outs]
        grads = []
        if grad:
            rng = np.random.default_rng(0)
            loss = None
            for o in outs:
                if isinstance(o, oar.Tensor) and o.dtype.is_floating and not o.stop_gradient:
                    w = oar.to_tensor(rng.standard_normal(o.shape).astype(target), place=device)
                    term = (o * w).sum()
                    loss = term if loss is None else loss + term
            if loss is not None:
                loss.backward()
                grads = [t.grad.numpy() if t.grad is not None else None for t in tensors if not t.stop_gradient]
        return arrays, grads
    finally:
        oar.set_device(previous)


def tolerance(dtype: str, terms: int, scale: float) -> tuple[float, float]:
    """The gpu's results against the cpu's: sums in another order, halves rounded once more."""
    if dtype in ("float16", "bfloat16"):
        rtol, atol = TOLERANCES[dtype]
        return rtol, atol * max(scale, 1.0)
    return sum_tolerance(dtype, terms, scale)


def assert_same(got, expected, dtype: str, where: str, terms: int = 1) -> None:
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g is None, f"{where} [{i}]: a value where the cpu has none"
            continue
        assert g.shape == e.shape and g.dtype == e.dtype, f"{where} [{i}]: {g.dtype}{list(g.shape)} vs {e.dtype}{list(e.shape)}"
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=f"{where} [{i}]")
        else:
            e64 = e.astype(np.float64)
            scale = float(np.nanmax(np.abs(e64))) if e64.size and np.isfinite(e64).any() else 1.0
            rtol, atol = tolerance(dtype, terms, scale)
            np.testing.assert_allclose(g.astype(np.float64), e64, rtol=rtol, atol=atol, err_msg=f"{where} [{i}]")
