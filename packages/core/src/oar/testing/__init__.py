"""Op testing harness, public so that plugins test their kernels with the same checks as core.

One table of ``OpCase``s drives every check (Paddle's ``OpTest``, JAX's ``lax_test`` op table):

- ``check_output``: forward against a numpy reference, per dtype with per-dtype tolerances, also
  on non-contiguous inputs; every op the call dispatches must agree with its meta function on
  the output shapes and dtypes.
- ``check_grad``: the gradient from ``backward`` against central finite differences in float64.
- ``check_static`` / ``check_static_grad``: ``oar.jit.to_static`` of the case gives eager's
  outputs bit for bit, and gradients through the program's derived backward equal eager's;
  ``check_static_random`` and ``check_graph_break`` for random cases and for cases whose function
  reads a tensor into Python.
- ``op_table_tests``: all of the above as pytest tests for a package's table, plus the
  completeness checks (every op the package registers has a case, every differentiable one a
  gradient case), so that core, oar-nn and a plugin run one runner.

>>> import numpy as np, oar
>>> from oar.testing import OpCase, check_output, check_grad
>>> case = OpCase("exp", oar.exp, np.exp, [np.linspace(-1, 1, 6).reshape(2, 3)])
>>> check_output(case, "float32"); check_grad(case)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.autograd import no_grad
from oar._engine.dispatch import Mode
from oar._engine.op import TensorMeta
from oar._engine.registries import OPS
from oar._engine.tensor import Tensor, to_tensor
from oar.jit import GraphBreakError, StaticFunction, to_static
from oar.static import InputSpec

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
    "TOLERANCES", "noncontiguous", "sum_tolerance", "check_static", "check_static_grad", "check_static_random",
    "check_graph_break", "is_random", "op_table_tests", "op_table_from", "numeric_gradient", "line_of",
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


def numeric_gradient(f: Callable[[np.ndarray], float], x0: np.ndarray, eps: float = FD_EPS) -> np.ndarray:
    """Central finite differences of the scalar function ``f`` at ``x0`` (a float64 array).

    >>> import numpy as np
    >>> from oar.testing import numeric_gradient
    >>> numeric_gradient(lambda a: float((a ** 2).sum()), np.array([1.0, -2.0])).round(6).tolist()
    [2.0, -4.0]
    """
    grad = np.zeros_like(x0)
    for i in np.ndindex(*x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (f(hi) - f(lo)) / (2 * eps)
    return grad


def line_of(fn: Callable, text: str) -> int:
    """The line number (in its file) of the first line of ``fn``'s source that contains ``text``:
    what an error or warning that names the user's line should name."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


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
    tensors = [to_tensor(a) if a.dtype.kind not in "fV" and a.dtype != _dt.bfloat16.np else Tensor._wrap(a, "cpu", True, None, 0, None) for a in arrays]
    rec = recorder or OpRecorder()
    with rec:
        got = _as_tuple(case.fn(*tensors))
    if len(got) != len(expected):
        raise AssertionError(f"{case.id}: {len(got)} outputs, reference has {len(expected)}")
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    rtol = case.rtol if case.rtol is not None else rtol
    atol = case.atol if case.atol is not None else atol
    for i, (g, e) in enumerate(zip(got, expected)):
        g_np = g.numpy() if isinstance(g, Tensor) else np.asarray(g)
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
        term = (out * to_tensor(w)).sum()
        total = term if total is None else total + term
    return total


def check_grad(case: OpCase, *, eps: float = FD_EPS, rtol: float = GRAD_RTOL, atol: float = GRAD_ATOL) -> None:
    """Compare the autograd gradient of a random projection of the outputs with central
    finite differences, in float64 (Paddle's ``check_grad``)."""
    arrays = _cast_inputs(case, "float64")
    indices = list(case.grad_inputs) if case.grad_inputs is not None else case.float_indices()
    rng = np.random.default_rng(0)

    def run(arrs, requires):
        ts = [to_tensor(a, stop_gradient=i not in requires) for i, a in enumerate(arrs)]
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
                with no_grad():
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


def op_table_from(folder, module_name: str) -> list[OpCase]:
    """The op table of the package at ``folder`` (a folder with ``__init__.py`` defining
    ``all_cases()``, such as the repository's ``tests/nn/op_cases``), imported from its files under
    ``module_name``: what a plugin's tests use to run core's or nn's table where the repository's
    ``tests`` package is not importable (a virtual environment holding only the plugin)."""
    module = sys.modules.get(module_name)
    if module is None:
        folder = Path(folder)
        spec = importlib.util.spec_from_file_location(module_name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return module.all_cases()


def load_cases(package: str, families) -> list[OpCase]:
    """The ``CASES`` of every module ``<package>.<family>`` that exists (an op table's rows)."""
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


# -- eager against to_static -----------------------------------------------------------------------
def _tensors(case, dtype, requires_grad=()):
    out = []
    for i, a in enumerate(_cast_inputs(case, dtype)):
        t = Tensor._wrap(np.array(a), "cpu", True, None, 0, None) if a.dtype == _dt.bfloat16.np else to_tensor(a)
        t.stop_gradient = i not in requires_grad
        out.append(t)
    return out


def _compare(got, expected, where):
    got, expected = _as_tuple(got), _as_tuple(expected)
    assert len(got) == len(expected), f"{where}: {len(got)} outputs, eager gave {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(e, Tensor):
            assert g == e, f"{where} output {i}: {g!r} vs eager {e!r}"
            continue
        assert isinstance(g, Tensor), f"{where} output {i}: a {type(g).__name__}, eager gave a Tensor"
        assert g.dtype is e.dtype and g.shape == e.shape, f"{where} output {i}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        np.testing.assert_array_equal(g.numpy(), e.numpy(), err_msg=f"{where} output {i}")


def is_random(case) -> bool:
    """Whether the case's op draws random numbers (``check_static_random`` is its check)."""
    return "random" in OPS.get(case.op).traits


def check_static(case: OpCase, dtype: str = "float32"):
    """The second call of the to_static function (the program) equals eager, bit for bit."""
    specs = [InputSpec.from_numpy(a) for a in case.inputs]
    static = to_static(case.fn, input_spec=specs, full_graph=True)
    with no_grad():
        expected = case.fn(*_tensors(case, dtype))
        static(*_tensors(case, dtype))  # captures (runs eagerly)
        function = static if isinstance(static, StaticFunction) else static.forward  # a Layer
        assert function.program_cache, f"{case.id}: nothing captured"
        got = static(*_tensors(case, dtype))  # runs the program
    _compare(got, expected, f"{case.id} [{dtype}]")
    return static


def check_static_grad(case: OpCase) -> None:
    """Gradients through the program's derived backward section equal eager gradients."""
    indices = list(case.grad_inputs) if case.grad_inputs is not None else case.float_indices()
    rng = np.random.default_rng(0)

    def loss_of(outs):
        total = None
        for o in _as_tuple(outs):
            if isinstance(o, Tensor) and o.dtype.is_floating and not o.stop_gradient:
                w = to_tensor(rng.standard_normal(o.shape).astype(o.dtype.np))
                term = (o * w).sum()
                total = term if total is None else total + term
        return total

    eager_in = _tensors(case, "float64", indices)
    rng = np.random.default_rng(0)
    loss_of(case.fn(*eager_in)).backward()
    static = to_static(case.fn, full_graph=True)
    static(*_tensors(case, "float64", indices))  # capture
    static_in = _tensors(case, "float64", indices)
    rng = np.random.default_rng(0)
    loss_of(static(*static_in)).backward()
    # The gradients came from the backward derived into the program (cond and while included).
    function = static if isinstance(static, StaticFunction) else static.forward
    training = function._last.training_programs
    assert training.last_plan is not None, f"{case.id}: the backward was not derived: {training.not_derivable}"
    for i in indices:
        e, g = eager_in[i].grad, static_in[i].grad
        assert (e is None) == (g is None), f"{case.id}: gradient of input {i} is {g} (eager {e})"
        if e is not None:
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=0, err_msg=f"{case.id}: grad of input {i}")


def check_static_random(case: OpCase) -> None:
    """A random case reseeds the generator inside its function (``oar.seed(n)``) or seeds the op
    (``seed=``). Either the program replays it exactly -- the random op recorded as an op, not
    baked in as a constant -- or to_static falls back to eager with a warning (a program cannot
    replay a reseed). Every call equals a fresh eager call, never other numbers."""
    static = to_static(case.fn)
    tensors = _tensors(case, case.dtypes[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls = [static(*tensors) for _ in range(3)]
    fell_back = any("runs eagerly" in str(w.message) for w in caught)
    for got in calls:
        _compare(got, case.fn(*tensors), case.id)
    if not fell_back:
        function = static if isinstance(static, StaticFunction) else static.forward
        ops = {n.op for n in function.concrete_program.nodes}
        assert case.op in ops and "random" in OPS.get(case.op).traits, case.id


def check_graph_break(case: OpCase, dtype: str, where: str = "op_cases") -> None:
    """A case whose function reads a traced tensor into Python: full_graph=True raises, and
    otherwise the function falls back to eager with one warning naming the case's line (in a
    file under a folder called ``where``)."""
    import pytest  # optional dependency: the test extra (oar.testing's other checks need no pytest)

    strict = to_static(case.fn, full_graph=True)
    with pytest.raises(GraphBreakError, match=where):
        strict(*_tensors(case, dtype))
    static = to_static(case.fn)
    with pytest.warns(UserWarning, match=rf"runs eagerly.*{where}/\w+\.py:\d+") as caught:
        first = static(*_tensors(case, dtype))
    assert len([w for w in caught if "runs eagerly" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        second = static(*_tensors(case, dtype))
    expected = case.fn(*_tensors(case, dtype))
    _compare(first, expected, case.id)
    _compare(second, expected, case.id)


# -- the runner ---------------------------------------------------------------------------------------
def op_table_tests(cases: Sequence[OpCase], *, source: str, static: bool = True, breaks: dict | None = None,
                   uncovered: Sequence[str] = ()) -> dict[str, Callable]:
    """The op table's tests for ``cases``, the rows of the ops plugin ``source`` registers
    (``"oar.core"``, ``"nn"``, ...), as pytest test functions by name. A test module of the table
    is then::

        globals().update(op_table_tests(all_cases(), source="nn"))

    Eager: each case forward against its numpy reference in every dtype (dispatching its op),
    on non-contiguous inputs, and its gradient against finite differences; every op ``source``
    registers has a case (but ``uncovered``, named with the reason in the caller), and every
    differentiable one a gradient case. With ``static``: to_static equals eager, forward and
    gradient; random cases replay or fall back (``check_static_random``); ``breaks`` (case id ->
    what reads a tensor) names the cases whose function cannot be captured by design
    (``check_graph_break``).
    """
    import pytest  # optional dependency: the test extra (oar.testing's other checks need no pytest)

    breaks = dict(breaks or {})
    grad_cases = [c for c in cases if c.grad]

    def ids(rows):
        return [c.id for c in rows]

    def ops_of_source():
        return {name: op for name, op in OPS.items() if OPS.source_of(name) == source}

    @pytest.mark.parametrize("case", cases, ids=ids(cases))
    def test_forward(case):
        check_forward(case)

    @pytest.mark.parametrize("case", cases, ids=ids(cases))
    def test_forward_noncontiguous(case):
        check_output(case, case.dtypes[0], contiguous=False)

    @pytest.mark.parametrize("case", grad_cases, ids=ids(grad_cases))
    def test_gradient(case):
        check_grad(case)

    def test_every_op_has_a_case():
        missing = sorted(set(ops_of_source()) - {c.op for c in cases} - set(uncovered))
        assert not missing, f"ops of {source} with no case in the op table: {missing}"

    def test_every_differentiable_op_has_a_gradient_case():
        for name, op in ops_of_source().items():
            if "nondiff" in op.traits or name in uncovered:
                continue
            assert any(c.op == name and c.grad for c in grad_cases), f"op {name!r} has no gradient case"

    tests = {f.__name__: f for f in (test_forward, test_forward_noncontiguous, test_gradient, test_every_op_has_a_case,
                                     test_every_differentiable_op_has_a_gradient_case)}
    if not static:
        return tests
    random_rows = [c for c in cases if is_random(c)]
    breaking = [c for c in cases if c.id in breaks]
    deterministic = [c for c in cases if c not in random_rows and c.id not in breaks]
    static_grad = [c for c in deterministic if c.grad]

    @pytest.mark.parametrize("case", deterministic, ids=ids(deterministic))
    def test_static_forward_matches_eager(case):
        for dtype in case.dtypes:
            check_static(case, dtype)

    @pytest.mark.parametrize("case", static_grad, ids=ids(static_grad))
    def test_static_gradient_matches_eager(case):
        check_static_grad(case)

    @pytest.mark.parametrize("case", random_rows, ids=ids(random_rows))
    def test_static_random_case_replays_or_falls_back(case):
        check_static_random(case)

    @pytest.mark.parametrize("case", breaking, ids=ids(breaking))
    def test_static_data_dependent_case_breaks_the_graph(case):
        check_graph_break(case, case.dtypes[0])

    def test_the_named_breaks_exist():
        assert {c.id for c in breaking} == set(breaks)

    chosen = [test_static_forward_matches_eager, test_static_gradient_matches_eager, test_the_named_breaks_exist]
    chosen += [test_static_random_case_replays_or_falls_back] if random_rows else []  # (no test of no case)
    chosen += [test_static_data_dependent_case_breaks_the_graph] if breaking else []
    tests.update((f.__name__, f) for f in chosen)
    return tests
