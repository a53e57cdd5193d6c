"""The backward of a ``cond`` derived into the program (oar._graph.static_backward): a ``cond`` on the same
predicate whose blocks are the branches' derived backwards. Core only (no oar.nn).

Every test captures ONE program, runs it on inputs taking each branch, and compares the
gradients with eager autograd on the same values (``.grad`` None exactly where eager leaves it
None) and with central finite differences; it also checks that the derived backward ran (not the
eager replay fallback).
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar._graph.static_backward import NotDerivable, append_backward
from oar.jit import to_static
from oar.static import InputSpec
from oar.static.nn import cond, while_loop


def _leaf(a, requires=True):
    return oar.to_tensor(np.array(a, dtype="float64"), stop_gradient=not requires)


def _training(static):
    return static._last.training_programs


def _grads(tensors):
    return [None if t.grad is None else t.grad.numpy().copy() for t in tensors]


def _clear(tensors):
    for t in tensors:
        t.clear_grad(set_to_zero=False)  # None, not zeros: whether a gradient exists is checked


def _finite_differences(loss, t, eps=1e-6):
    """d loss() / d t by central differences, changing ``t``'s values in place."""
    data = t.numpy().copy()
    out = np.zeros_like(data)
    for i in np.ndindex(data.shape):
        for sign in (1, -1):
            probe = data.copy()
            probe[i] += sign * eps
            t.set_value(probe)
            out[i] += sign * float(loss().numpy()) / (2 * eps)
    t.set_value(data)
    return out


def _check(f, static, inputs, leaves, derived=True, fd=True):
    """Gradients of ``static(*inputs)`` w.r.t. ``leaves`` equal eager's (None where eager's are None)
    and the finite differences; the derived backward ran when ``derived``."""
    _clear(leaves)
    static(*inputs).backward()
    training = _training(static)
    if derived:
        assert training.last_plan is not None, training.not_derivable
    else:
        assert training.last_plan is None
    got = _grads(leaves)
    _clear(leaves)
    f(*inputs).backward()
    want = _grads(leaves)
    _clear(leaves)
    for i, (g, e) in enumerate(zip(got, want)):
        assert (g is None) == (e is None), f"leaf {i}: to_static gives {g}, eager gives {e}"
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=f"leaf {i}")
            if fd:
                np.testing.assert_allclose(g, _finite_differences(lambda: f(*inputs), leaves[i]), rtol=1e-6,
                                           atol=1e-8, err_msg=f"leaf {i} (finite differences)")
    return got


def _backward_ops(static) -> list[str]:
    derived = _training(static).last_plan.derived
    return [n.op for n in derived.backward_nodes]


def test_cond_backward_is_a_cond_taking_the_same_branch_as_the_forward():
    w = _leaf([0.5, -1.0, 2.0])
    v = _leaf([0.3, 0.1, 2.0])

    def f(x):
        y = x * w
        return cond(y.sum() > 0, lambda: (y * y).sum(), lambda: (oar.exp(y) * v).sum())

    static = to_static(f, full_graph=True)
    static(_leaf([1.0, 2.0, 3.0], False))  # capture
    taken_true = _check(f, static, [_leaf([1.0, 2.0, 3.0], False)], [w, v])
    assert "cond" in _backward_ops(static)
    # v is read only by the false branch: eager leaves its .grad None, and so does the program.
    assert taken_true[0] is not None and taken_true[1] is None
    taken_false = _check(f, static, [_leaf([1.0, 2.0, -3.0], False)], [w, v])
    assert taken_false[0] is not None and taken_false[1] is not None
    assert len(static.program_cache) == 1  # one program for both branches


def test_gradients_of_the_inputs_and_an_operand_returned_as_is():
    def f(x, y):
        return cond(x.sum() < y.sum(), lambda: x, lambda: x * y).sum() + y.sum()

    static = to_static(f, full_graph=True)
    for a, b in (([1.0, 2.0], [3.0, 4.0]), ([5.0, 2.0], [-3.0, 4.0])):
        x, y = _leaf(a), _leaf(b)
        static(x, y)
        _check(f, static, [x, y], [x, y])


def test_an_output_the_loss_does_not_use_gives_no_gradient_to_what_only_it_reads():
    w = _leaf([1.5, -0.5])
    v = _leaf([2.0, 0.25])

    def f(x):
        a, b = cond(x.sum() > 0, lambda: (x * w, x * v), lambda: (x - w, x + v))
        return (a * a).sum()  # b is dropped: v gets no gradient in eager

    static = to_static(f, full_graph=True)
    for a in ([1.0, 2.0], [-1.0, -2.0]):
        x = _leaf(a, False)
        static(x)
        got = _check(f, static, [x], [w, v])
        assert got[0] is not None and got[1] is None


def test_nested_cond_with_a_parameter_in_one_inner_branch():
    w = _leaf([0.5, 2.0])
    u = _leaf([-1.0, 3.0])

    def f(x):
        def outer_true():
            return cond(x[0] > 0, lambda: oar.tanh(x * w), lambda: x * u * u)

        return cond(x.sum() > 0, outer_true, lambda: oar.sin(x) * w).sum()

    static = to_static(f, full_graph=True)
    expect_u = {(1.0, 2.0): False, (-1.0, 3.0): True, (-1.0, -3.0): False}
    for a, u_used in expect_u.items():
        x = _leaf(list(a))
        static(x)
        got = _check(f, static, [x], [x, w, u])
        assert (got[2] is not None) == u_used
    inner = [n for n in _training(static).last_plan.derived.backward_nodes if n.op == "cond"][0]
    assert "cond" in [n.op for n in inner.attrs["true_block"].nodes]  # the inner cond's backward


def test_dy2static_if_on_a_tensor_derives_its_backward():
    w = _leaf([[0.5, -1.0], [2.0, 0.25]])
    b = _leaf([0.1, -0.2])

    def f(x):
        h = oar.matmul(x, w)
        if h.sum() > 0:
            h = oar.tanh(h) + b
        else:
            h = h * h
        return h.mean()

    static = to_static(f, full_graph=True)
    static(_leaf([[1.0, 2.0]], False))
    assert "cond" in [n.op for n in static.concrete_program.nodes]
    for a, b_used in (([[1.0, 2.0]], True), ([[-1.0, -2.0]], False)):
        got = _check(f, static, [_leaf(a, False)], [w, b])
        assert (got[1] is not None) == b_used


def test_a_dynamic_batch_dim_takes_either_branch_at_every_size():
    w = _leaf([[0.5, -1.0, 0.3], [2.0, 0.25, -0.7]])

    def f(x):
        h = oar.matmul(x, w)
        return cond(h.mean() > 0, lambda: oar.exp(h).sum(), lambda: (h * h).mean())

    static = to_static(f, input_spec=[InputSpec([None, 2], "float64")], full_graph=True)
    rng = np.random.default_rng(0)
    for n in (2, 5, 3):
        for sign in (1.0, -1.0):
            x = _leaf(sign * np.abs(rng.standard_normal((n, 2))), False)
            static(x)
            _check(f, static, [x], [w])


def test_the_program_holds_the_backward_cond_and_runs_without_the_rules():
    """append_backward gives a program whose backward section is a cond over derived blocks; run by
    an executor it gives eager's gradients for both branches."""
    w = _leaf([0.5, -1.0, 2.0])

    def f(x):
        return cond(x.sum() > 0, lambda: (oar.exp(x) * w).sum(), lambda: (x * x).sum())

    static = to_static(f, full_graph=True)
    static(_leaf([1.0, 1.0, 1.0]))
    train = append_backward(static.concrete_program, [_leaf([1.0, 1.0, 1.0])])
    (bwd_cond,) = [n for n in train.backward_nodes if n.op == "cond"]
    assert bwd_cond.inputs[0] == [n for n in train.forward_nodes if n.op == "cond"][0].inputs[0]  # same predicate
    (w_label,) = [f"{name}@GRAD" for (kind, name), _ in train.grads if kind == "param"]
    assert w_label in train.program.outputs["has_grad"]
    from oar._graph.executor import Executor

    executor = Executor(train.program, "cpu", hoist_parameters=False)
    for a in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]):
        outs = executor.run([_leaf(a), oar.to_tensor(np.array(1.0))])
        grad_w, has_grad = outs["grads"][w_label].numpy(), bool(outs["has_grad"][w_label].numpy())
        _clear([w])
        f(_leaf(a)).backward()
        assert has_grad == (w.grad is not None)
        if w.grad is not None:
            np.testing.assert_allclose(grad_w, w.grad.numpy(), rtol=1e-13)
        else:
            np.testing.assert_array_equal(grad_w, 0.0)


def test_a_branch_drawing_random_numbers_is_not_derived_and_replays():
    w = _leaf([0.5, -1.0, 2.0])

    def f(x):
        return cond(x.sum() > 0, lambda: (x * w * oar.rand([3], "float64")).sum(), lambda: (x * w).sum())

    static = to_static(f, full_graph=True)
    x = _leaf([1.0, 2.0, 3.0], False)
    static(x)
    oar.seed(3)
    static(x).backward()
    training = _training(static)
    assert training.last_plan is None and "draws random numbers" in training.not_derivable
    got = w.grad.numpy().copy()
    _clear([w])
    oar.seed(3)
    f(x).backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-13)
    with pytest.raises(NotDerivable, match="random"):
        append_backward(static.concrete_program, [x])


def test_a_loop_inside_a_branch_is_derived_too():
    w = _leaf([0.5, -1.0])
    u = _leaf([0.25, 0.75])

    def f(x, n):
        def looped():
            i = oar.zeros([], "int64")
            return while_loop(lambda i, y: i < n, lambda i, y: [i + 1, oar.sin(y * w)], [i, x])[1]

        return cond(x.sum() > 0, looped, lambda: x * u).sum()

    static = to_static(f, full_graph=True)
    for a, n, used in (([1.0, 2.0], 2, (True, False)), ([1.0, 2.0], 4, (True, False)),
                       ([1.0, 2.0], 0, (False, False)), ([-1.0, -2.0], 3, (False, True))):
        inputs = [_leaf(a), oar.to_tensor(n)]
        static(*inputs)
        got = _check(f, static, inputs, [inputs[0], w, u])
        assert tuple(g is not None for g in got[1:]) == used


def test_create_graph_through_a_cond_program_gives_second_derivatives():
    def f(x):
        return cond(x.sum() > 0, lambda: (x * x * x).sum(), lambda: oar.exp(x).sum())

    static = to_static(f, full_graph=True)
    for a in ([1.0, 2.0], [-1.0, -2.0]):
        x = _leaf(a)
        static(x)
        (g,) = oar.grad(static(x), [x], create_graph=True)
        (gg,) = oar.grad(g.sum(), [x])
        (e,) = oar.grad(f(x), [x], create_graph=True)
        (ee,) = oar.grad(e.sum(), [x])
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-13)
        np.testing.assert_allclose(gg.numpy(), ee.numpy(), rtol=1e-13)
