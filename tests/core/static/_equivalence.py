"""Eager vs to_static on op-table cases: one helper for core's and nn's tables."""

from __future__ import annotations

import warnings

import numpy as np

import oar
from oar._core import dtypes as _dt
from oar.static import InputSpec


def _tensors(case, dtype, requires_grad=()):
    target = _dt.get_dtype(dtype).np
    arrays = [a.astype(target) if a.dtype.kind == "f" else a for a in case.inputs]
    out = []
    for i, a in enumerate(arrays):
        t = oar.Tensor._wrap(np.array(a), "cpu", True, None, 0, None) if a.dtype == _dt.bfloat16.np else oar.to_tensor(a)
        t.stop_gradient = i not in requires_grad
        out.append(t)
    return out


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _compare(got, expected, where):
    got, expected = _as_tuple(got), _as_tuple(expected)
    assert len(got) == len(expected), f"{where}: {len(got)} outputs, eager gave {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(e, oar.Tensor):
            assert g == e, f"{where} output {i}: {g!r} vs eager {e!r}"
            continue
        assert isinstance(g, oar.Tensor), f"{where} output {i}: a {type(g).__name__}, eager gave a Tensor"
        assert g.dtype is e.dtype and g.shape == e.shape, f"{where} output {i}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        np.testing.assert_array_equal(g.numpy(), e.numpy(), err_msg=f"{where} output {i}")


def random_case(case) -> bool:
    from oar.plugins import registries

    return "random" in registries().ops.get(case.op).traits


def check_forward(case, dtype):
    """The second call of the to_static function (the program) equals eager, bit for bit."""
    specs = [InputSpec.from_numpy(a) for a in case.inputs]
    static = oar.jit.to_static(case.fn, input_spec=specs, full_graph=True)
    with oar.no_grad():
        expected = case.fn(*_tensors(case, dtype))
        static(*_tensors(case, dtype))  # captures (runs eagerly)
        function = static if isinstance(static, oar.jit.StaticFunction) else static.forward  # a Layer
        assert function.program_cache, f"{case.id}: nothing captured"
        got = static(*_tensors(case, dtype))  # runs the program
    _compare(got, expected, f"{case.id} [{dtype}]")
    return static


def check_gradient(case):
    """Gradients through the program's derived backward section equal eager gradients."""
    indices = list(case.grad_inputs) if case.grad_inputs is not None else case.float_indices()
    rng = np.random.default_rng(0)

    def loss_of(outs):
        total = None
        for o in _as_tuple(outs):
            if isinstance(o, oar.Tensor) and o.dtype.is_floating and not o.stop_gradient:
                w = oar.to_tensor(rng.standard_normal(o.shape).astype(o.dtype.np))
                term = (o * w).sum()
                total = term if total is None else total + term
        return total

    eager_in = _tensors(case, "float64", indices)
    rng = np.random.default_rng(0)
    loss_of(case.fn(*eager_in)).backward()
    static = oar.jit.to_static(case.fn, full_graph=True)
    static(*_tensors(case, "float64", indices))  # capture
    static_in = _tensors(case, "float64", indices)
    rng = np.random.default_rng(0)
    loss_of(static(*static_in)).backward()
    # The gradients came from the backward derived into the program (cond and while included).
    function = static if isinstance(static, oar.jit.StaticFunction) else static.forward
    training = function._last.training_programs
    assert training.last_plan is not None, f"{case.id}: the backward was not derived: {training.not_derivable}"
    for i in indices:
        e, g = eager_in[i].grad, static_in[i].grad
        assert (e is None) == (g is None), f"{case.id}: gradient of input {i} is {g} (eager {e})"
        if e is not None:
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=0, err_msg=f"{case.id}: grad of input {i}")


def check_random_case(case):
    """A random case reseeds the generator inside its function (``oar.seed(n)``) or seeds the op
    (``seed=``). Either the program replays it exactly -- the random op recorded as an op, not
    baked in as a constant -- or to_static falls back to eager with a warning (a program cannot
    replay a reseed). Every call equals a fresh eager call, never other numbers."""
    from oar.plugins import registries

    static = oar.jit.to_static(case.fn)
    tensors = _tensors(case, case.dtypes[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls = [static(*tensors) for _ in range(3)]
    fell_back = any("runs eagerly" in str(w.message) for w in caught)
    for got in calls:
        _compare(got, case.fn(*tensors), case.id)
    if not fell_back:
        function = static if isinstance(static, oar.jit.StaticFunction) else static.forward
        ops = {n.op for n in function.concrete_program.nodes}
        assert case.op in ops and "random" in registries().ops.get(case.op).traits, case.id


def check_graph_break(case, dtype):
    """A case whose function reads a traced tensor into Python: full_graph=True raises, and
    otherwise the function falls back to eager with one warning naming the case's line."""
    import pytest

    from oar.jit import GraphBreakError

    strict = oar.jit.to_static(case.fn, full_graph=True)
    with pytest.raises(GraphBreakError, match="op_cases"):
        strict(*_tensors(case, dtype))
    static = oar.jit.to_static(case.fn)
    with pytest.warns(UserWarning, match=r"runs eagerly.*op_cases/\w+\.py:\d+") as caught:
        first = static(*_tensors(case, dtype))
    assert len([w for w in caught if "runs eagerly" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        second = static(*_tensors(case, dtype))
    expected = case.fn(*_tensors(case, dtype))
    _compare(first, expected, case.id)
    _compare(second, expected, case.id)
