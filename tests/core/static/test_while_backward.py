"""The backward of a ``while`` derived into the program (oar._graph.static_backward): the forward node
records its iterations (``history=True``) and a backward ``while`` runs the body's derived backward
from the last iteration down. Core only (no oar.nn).

ONE captured program runs different iteration counts (zero included); gradients equal eager
autograd's (None exactly where eager's are) and central finite differences; the derived backward
ran, not the eager replay fallback.
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar._graph.static_backward import NotDerivable, append_backward
from oar.jit import to_static
from oar.static import InputSpec
from oar.static.nn import cond, while_loop

from .test_cond_backward import _check, _leaf, _training


def _counter():
    return oar.zeros([], "int64")


def test_loop_gradients_for_every_iteration_count_from_one_program():
    w = _leaf([0.5, -1.0, 2.0])

    def f(x, n):
        _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, oar.tanh(y * w)], [_counter(), x])
        return (y * y).sum()

    static = to_static(f, full_graph=True)
    for n in (1, 3, 0, 5):
        inputs = [_leaf([1.0, 2.0, -3.0]), oar.to_tensor(n)]
        static(*inputs)
        got = _check(f, static, inputs, [inputs[0], w])
        # No iteration: w is never read, eager leaves its .grad None; x's gradient passes through.
        assert (got[1] is None) == (n == 0)
    derived = _training(static).last_plan.derived
    assert [n.op for n in derived.backward_nodes].count("while") == 1
    (forward_loop,) = [n for n in derived.forward_nodes if n.op == "while"]
    assert forward_loop.attrs["history"] is True
    # The captured (inference) program itself is unchanged: it keeps no history.
    assert all("history" not in n.attrs for n in static.concrete_program.nodes if n.op == "while")
    assert len(static.program_cache) == 1


def test_a_loop_on_a_value_the_body_computes_with_two_carried_tensors():
    w = _leaf([[0.5, -0.3], [0.2, 0.9]])
    b = _leaf([0.1, -0.2])

    def f(x):
        # Iterate while the state is small: the count depends on the data.
        def body(h, acc):
            h = oar.tanh(oar.matmul(h, w) + b) * 1.5
            return [h, acc + (h * h).sum() + 0.5]

        h, acc = while_loop(lambda h, acc: acc < 3.0, body, [x, oar.zeros([], "float64")])
        return acc + (h * h).sum()

    static = to_static(f, full_graph=True)
    for a in ([[0.1, 0.0]], [[2.0, 1.0]], [[5.0, 5.0]]):
        x = _leaf(a)
        static(x)
        _check(f, static, [x], [x, w, b])


def test_a_cond_inside_the_body_flags_a_parameter_only_some_iterations_read():
    w = _leaf([0.5, -1.0])
    u = _leaf([2.0, 0.25])

    def f(x, n):
        def body(i, y):
            y = cond(i >= 2, lambda: y * u, lambda: oar.sin(y * w))
            return [i + 1, y]

        return while_loop(lambda i, y: i < n, body, [_counter(), x])[1].sum()

    static = to_static(f, full_graph=True)
    for n, used in ((1, (True, False)), (2, (True, False)), (4, (True, True)), (0, (False, False))):
        inputs = [_leaf([1.0, 2.0]), oar.to_tensor(n)]
        static(*inputs)
        got = _check(f, static, inputs, [inputs[0], w, u])
        assert tuple(g is not None for g in got[1:]) == used


def test_nested_loops():
    w = _leaf([0.9, -0.4])

    def f(x, n, m):
        def outer(i, y):
            _, y = while_loop(lambda j, z: j < m, lambda j, z: [j + 1, oar.sin(z * w) + z], [_counter(), y])
            return [i + 1, y * 0.5]

        return (while_loop(lambda i, y: i < n, outer, [_counter(), x])[1] ** 2).sum()

    static = to_static(f, full_graph=True)
    for n, m in ((2, 3), (3, 1), (1, 0)):
        inputs = [_leaf([1.0, -2.0]), oar.to_tensor(n), oar.to_tensor(m)]
        static(*inputs)
        _check(f, static, inputs, [inputs[0], w])


def test_dy2static_for_range_of_a_tensor_with_a_dynamic_batch():
    w = _leaf([[0.5, -1.0], [0.3, 0.8]])

    def f(x, n):
        h = x
        for _ in range(n):
            h = oar.tanh(oar.matmul(h, w))
        return h.mean()

    static = to_static(f, input_spec=[InputSpec([None, 2], "float64"), InputSpec([], "int64")], full_graph=True)
    rng = np.random.default_rng(0)
    for rows, n in ((2, 3), (5, 1), (3, 4)):
        inputs = [_leaf(rng.standard_normal((rows, 2))), oar.to_tensor(n)]
        static(*inputs)
        _check(f, static, inputs, [inputs[0], w])
    assert "while" in [n.op for n in static.concrete_program.nodes]


def test_create_graph_through_a_loop_program_gives_second_derivatives():
    def f(x, n):
        return while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * y * 0.5 + y], [_counter(), x])[1].sum()

    static = to_static(f, full_graph=True)
    for n in (2, 3):
        x, steps = _leaf([0.3, -0.2]), oar.to_tensor(n)
        static(x, steps)
        (g,) = oar.grad(static(x, steps), [x], create_graph=True)
        (gg,) = oar.grad(g.sum(), [x])
        (e,) = oar.grad(f(x, steps), [x], create_graph=True)
        (ee,) = oar.grad(e.sum(), [x])
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-13)
        np.testing.assert_allclose(gg.numpy(), ee.numpy(), rtol=1e-13)


def test_a_loop_drawing_random_numbers_replays():
    w = _leaf([0.5, -1.0, 2.0])

    def f(x, n):
        return while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * w * oar.rand([3], "float64")],
                          [_counter(), x])[1].sum()

    static = to_static(f, full_graph=True)
    inputs = [_leaf([1.0, 2.0, 3.0], False), oar.to_tensor(2)]
    static(*inputs)
    with pytest.raises(NotDerivable, match="random"):
        append_backward(static.concrete_program, inputs)
    oar.seed(5)
    static(*inputs).backward()
    assert _training(static).last_plan is None
    got = w.grad.numpy().copy()
    w.clear_grad(set_to_zero=False)
    oar.seed(5)
    f(*inputs).backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-13)


def test_a_loop_growing_a_dynamic_dim_is_found_when_deriving_and_replays():
    """Dynamic outside the loop and inside it: the capture cannot tell that the dim grows; the
    derivation runs the loop, finds out, and the program trains by replay with eager's gradients."""
    w = _leaf([0.5, -1.0])

    def f(x, n):
        body = lambda i, y: [i + 1, oar.concat([y, oar.tanh(y[-1:] * w)])]  # noqa: E731
        return (while_loop(lambda i, y: i < n, body, [_counter(), x])[1] ** 2).sum()

    static = to_static(f, input_spec=[InputSpec([None, 2], "float64"), InputSpec([], "int64")], full_graph=True)
    inputs = [_leaf([[1.0, 2.0], [0.5, -1.0]], False), oar.to_tensor(3)]
    static(*inputs)
    _check(f, static, inputs, [w], derived=False)
    assert "changes shape across iterations" in _training(static).not_derivable
