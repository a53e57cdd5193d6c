"""The backward derived into the program (oar._graph.static_backward) and training through it (core only).

Every test compares with eager autograd on the same values; the op-table gradient tests
(test_op_table_static.py) check every op's rule through the derived backward.
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar._graph.static_backward import NotDerivable, append_backward
from oar.errors import GradientError
from oar.jit import to_static
from oar.static import InputSpec


def _rng(seed=0):
    return np.random.default_rng(seed)


def _leaf(a, requires=True):
    return oar.to_tensor(np.array(a), stop_gradient=not requires)


def _training(static):
    return static._last.training_programs


def _model(seed=0):
    """Weights w1 [3, 4], b1 [4], w2 [4, 2] (parameters: captured tensors with stop_gradient=False)."""
    rng = _rng(seed)
    w1 = _leaf(rng.standard_normal((3, 4)))
    b1 = _leaf(rng.standard_normal(4))
    w2 = _leaf(rng.standard_normal((4, 2)))

    def f(x):
        h = oar.tanh(oar.matmul(x, w1) + b1)
        return (oar.exp(oar.matmul(h, w2) * 0.5) * h.sum(axis=1, keepdim=True)).mean()

    return f, (w1, b1, w2)


def test_append_backward_adds_the_gradient_ops_to_the_same_program():
    f, (w1, b1, w2) = _model()
    static = to_static(f, input_spec=[InputSpec([None, 3], "float64", name="x")])
    x = _leaf(_rng(1).standard_normal((5, 3)), requires=False)
    static(x)
    forward = static.concrete_program
    before = str(forward)
    train = append_backward(forward, [x])
    assert str(forward) == before  # the forward program is not changed
    program = train.program
    program.validate()
    assert [(n.op, n.inputs, n.outputs) for n in train.forward_nodes] == \
        [(n.op, n.inputs, n.outputs) for n in forward.nodes]
    assert len(train.backward_nodes) > 0
    # One @GRAD feed for the loss; gradients marked for the three parameters, none for x (stop_gradient).
    grad_feeds = [program.values[v] for v in program.feeds[len(forward.feeds):]]
    assert [v.name for v in grad_feeds] == [f"{program.values[train.grad_feeds[0][0]].name or train.grad_feeds[0][0]}@GRAD"]
    assert {k for k, _ in train.grads} == {("param", n) for n in forward.params}
    text = str(train)
    lines = text.splitlines()
    assert "  // backward" in lines
    split = lines.index("  // backward")
    assert all("@GRAD" not in line for line in lines[1:split] if " = " in line)  # no gradient op before it
    assert "@GRAD" in lines[split + 1]
    assert "'grads': {" in lines[-2] and all(f"{n}@GRAD" in lines[-2] for n in forward.params)


def test_derived_gradients_match_eager_and_finite_differences():
    f, params = _model()
    x = _rng(1).standard_normal((5, 3))
    static = to_static(f, input_spec=[InputSpec([None, 3], "float64", name="x")])
    static(_leaf(x, requires=False))  # capture
    for p in params:
        p.clear_grad()
    xs = _leaf(x)
    static(xs).backward()
    assert _training(static).last_plan is not None
    got = [p.grad.numpy() for p in params] + [xs.grad.numpy()]
    for p in params:
        p.clear_grad()
    xe = _leaf(x)
    f(xe).backward()
    expected = [p.grad.numpy() for p in params] + [xe.grad.numpy()]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    # Central differences on x through the program's forward.
    eps = 1e-6
    numeric = np.zeros_like(x)
    with oar.no_grad():
        for idx in np.ndindex(*x.shape):
            hi, lo = x.copy(), x.copy()
            hi[idx] += eps
            lo[idx] -= eps
            numeric[idx] = (static(_leaf(hi, False)).item() - static(_leaf(lo, False)).item()) / (2 * eps)
    np.testing.assert_allclose(got[-1], numeric, rtol=1e-6, atol=1e-8)


def test_contributions_to_one_value_are_summed():
    def f(x, y):
        return (x * x * y + oar.exp(x) + x).sum()

    static = to_static(f)
    a, b = _rng().standard_normal((2, 3, 4))
    static(_leaf(a), _leaf(b))
    xs, ys = _leaf(a), _leaf(b)
    static(xs, ys).backward()
    plan = _training(static).last_plan
    assert plan is not None and [n.op for n in plan.derived.backward_nodes].count("add") >= 2
    xe, ye = _leaf(a), _leaf(b)
    f(xe, ye).backward()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(ys.grad.numpy(), ye.grad.numpy(), rtol=1e-13)


def test_inputs_that_need_no_gradient_get_none_and_no_gradient_ops():
    def f(x, scale, index):
        return (oar.gather(x, index) * scale).sum()

    static = to_static(f)
    a = _rng().standard_normal((4, 3))
    index = oar.to_tensor(np.array([0, 2, 2]))
    static(_leaf(a), _leaf(np.float64(2.0), requires=False), index)
    xs, ss = _leaf(a), _leaf(np.float64(2.0), requires=False)
    static(xs, ss, index).backward()
    plan = _training(static).last_plan
    assert {k for k, _ in plan.derived.grads} == {("feed", 0)}
    assert ss.grad is None and index.grad is None
    xe = _leaf(a)
    f(xe, _leaf(np.float64(2.0), requires=False), index).backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xe.grad.numpy())
    # Which inputs need a gradient is part of the cache key: now the scale needs one too.
    xs, ss = _leaf(a), _leaf(np.float64(2.0))
    static(xs, ss, index).backward()
    assert {k for k, _ in _training(static).last_plan.derived.grads} == {("feed", 0), ("feed", 1)}
    np.testing.assert_allclose(ss.grad.item(), a[[0, 2, 2]].sum(), rtol=1e-12)


def test_several_outputs_some_unused_and_integer_outputs():
    def f(x):
        return oar.exp(x), x * 3.0, oar.argmax(x, axis=1)

    static = to_static(f)
    a = _rng().standard_normal((2, 3))
    static(_leaf(a))
    xs = _leaf(a)
    e, t, idx = static(xs)
    assert not e.stop_gradient and not t.stop_gradient and idx.stop_gradient  # as in eager
    e.sum().backward()  # the second output takes no part in the loss: its gradient is zero
    np.testing.assert_allclose(xs.grad.numpy(), np.exp(a), rtol=1e-13)
    xs = _leaf(a)
    e, t, _ = static(xs)
    oar.autograd.backward([e.sum(), (t * t).sum()])
    np.testing.assert_allclose(xs.grad.numpy(), np.exp(a) + 18 * a, rtol=1e-13)


def test_parameter_hooks_and_oar_grad_work_as_in_eager():
    f, (w1, b1, w2) = _model()
    x = _rng(1).standard_normal((5, 3))
    static = to_static(f)
    static(_leaf(x, False))
    for p in (w1, b1, w2):
        p.clear_grad()
    seen = []
    handle = w2.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
    static(_leaf(x, False)).backward()
    handle.remove()
    hooked = w2.grad.numpy().copy()
    for p in (w1, b1, w2):
        p.clear_grad()
    f(_leaf(x, False)).backward()
    np.testing.assert_allclose(hooked, 2.0 * w2.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(seen[0], w2.grad.numpy(), rtol=1e-12)
    # oar.grad: gradients returned, .grad untouched.
    before = w1.grad.numpy().copy()
    xs = _leaf(x)
    gx, gw = oar.grad(static(xs), [xs, w1])
    xe = _leaf(x)
    ex, ew = oar.grad(f(xe), [xe, w1])
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(w1.grad.numpy(), before)
    assert _training(static).last_plan is not None


def test_second_backward_needs_retain_graph_as_in_eager():
    static = to_static(lambda x: (oar.exp(x) * x).sum())
    a = _rng().standard_normal(4)
    static(_leaf(a))
    xs = _leaf(a)
    loss = static(xs)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(xs.grad.numpy(), 2 * np.exp(a) * (1 + a), rtol=1e-13)
    with pytest.raises(GradientError, match="retain_graph"):
        loss.backward()


def test_no_grad_runs_the_inference_executor_and_derives_nothing():
    f, _ = _model()
    static = to_static(f)
    x = _leaf(_rng(1).standard_normal((5, 3)), False)
    static(x)
    with oar.no_grad():
        out = static(x)
    assert out.stop_gradient
    assert static._last._training is None  # nothing derived for inference


def test_a_random_draw_is_the_same_in_forward_and_backward():
    def f(x):
        mask = oar.bernoulli(oar.full_like(x, 0.5))
        return (x * mask * 3.0).sum(), mask

    static = to_static(f)
    a = _rng().standard_normal((6, 5))
    static(_leaf(a))
    for _ in range(3):
        xs = _leaf(a)
        loss, mask = static(xs)
        loss.backward()
        assert _training(static).last_plan is not None
        np.testing.assert_array_equal(xs.grad.numpy(), 3.0 * mask.numpy())
        assert 0 < mask.numpy().sum() < mask.size  # a real draw (not all kept, not all dropped)


def test_a_dynamic_dim_stays_dynamic_unless_a_rule_bakes_its_size():
    w = _leaf(_rng().standard_normal(3))
    spec = [InputSpec([None, 3], "float64", name="x")]
    generic = to_static(lambda x: oar.exp(x) * w, input_spec=spec)  # the loss is taken outside
    sized = to_static(lambda x: (oar.exp(x) * w).mean(), input_spec=spec)  # mean's gradient divides by N
    for static, loss_of in ((generic, lambda y: y.sum()), (sized, lambda y: y)):
        for n in (4, 7, 4):
            a = _rng(n).standard_normal((n, 3))
            xs = _leaf(a)
            w.clear_grad()
            loss_of(static(xs)).backward()
            got = (xs.grad.numpy(), w.grad.numpy())
            xe = _leaf(a)
            w.clear_grad()
            loss_of(oar.exp(xe) * w if static is generic else (oar.exp(xe) * w).mean()).backward()
            np.testing.assert_allclose(got[0], xe.grad.numpy(), rtol=1e-13)
            np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-13)
    assert len(generic._last.training_programs._plans) == 1  # one program for every batch size
    plan = generic._last.training_programs.last_plan
    assert None in plan.derived.program.values[plan.derived.grad_feeds[0][1]].shape
    assert len(sized._last.training_programs._plans) == 2  # one per size: 4 and 7


def test_a_program_that_cannot_be_derived_trains_by_replay():
    w = _leaf(_rng().standard_normal(3))

    def f(x):
        x.add_(1.0)  # writes its input in place: not derivable
        return (x * w).sum()

    static = to_static(f)
    a = _rng(1).standard_normal(3)
    static(_leaf(a, False))
    w.clear_grad()
    x = _leaf(a, False)
    static(x).backward()
    training = _training(static)
    assert training.last_plan is None and "in place" in training.not_derivable
    np.testing.assert_allclose(w.grad.numpy(), a + 1.0, rtol=1e-13)
    np.testing.assert_allclose(x.numpy(), a + 1.0, rtol=1e-13)  # the update ran once
    with pytest.raises(NotDerivable, match="in place"):
        append_backward(static.concrete_program, [x])


def test_changing_a_saved_parameter_before_backward_raises_as_in_eager():
    f, (w1, b1, w2) = _model()
    static = to_static(f)
    x = _leaf(_rng(1).standard_normal((5, 3)), False)
    static(x)
    loss = static(x)
    with oar.no_grad():
        w2.multiply_(oar.to_tensor(2.0, dtype="float64"))
    with pytest.raises(GradientError, match="modified in place"):
        loss.backward()


def test_create_graph_differentiates_the_gradient_again():
    static = to_static(lambda x: (x * x * x).sum())
    a = np.array([1.0, 2.0, -3.0])
    static(_leaf(a))
    xs = _leaf(a)
    (gx,) = oar.grad(static(xs), xs, create_graph=True)
    np.testing.assert_allclose(gx.numpy(), 3 * a * a, rtol=1e-13)
    (ggx,) = oar.grad(gx.sum(), xs)
    np.testing.assert_allclose(ggx.numpy(), 6 * a, rtol=1e-13)


def test_a_pylayer_with_a_python_backward_falls_back_to_eager():
    from oar.autograd import PyLayer

    class Doubled(PyLayer):  # its backward is not the derivative of its forward: which one ran shows
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, dy):
            return dy * 2.0

    static = to_static(lambda x: Doubled.apply(x).sum())
    a = np.array([1.0, 2.0, 3.0])
    with pytest.warns(UserWarning, match="PyLayer Doubled has a Python backward"):
        static(_leaf(a))
    for _ in range(2):
        xs = _leaf(a)
        static(xs).backward()
        np.testing.assert_array_equal(xs.grad.numpy(), [2.0, 2.0, 2.0])


def test_a_loop_whose_variable_grows_trains_by_replay():
    """A loop variable that changes shape across iterations cannot be stacked for the derived
    backward of a while (test_while_backward.py): the program trains by replaying the iterations
    that ran through eager autograd, with eager's gradients."""
    from oar.static.nn import while_loop

    w = _leaf(np.array([0.5, -1.0]))

    def f(x, n):
        i = oar.zeros([], "int64")
        _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, oar.concat([y, oar.tanh(y[-2:] * w)])], [i, x])
        return (y * y).sum()

    static = to_static(f, full_graph=True)
    a = np.array([1.0, 2.0, -3.0])
    for n in (1, 3):  # different iteration counts, one program
        steps = oar.to_tensor(n)
        static(_leaf(a, False), steps)
        w.clear_grad()
        static(_leaf(a, False), steps).backward()
        training = _training(static)
        assert training.last_plan is None and "changes shape across iterations" in training.not_derivable
        got = w.grad.numpy().copy()
        w.clear_grad()
        f(_leaf(a, False), steps).backward()
        np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-13)
    assert "while" in {n.op for n in static.concrete_program.nodes}


def test_a_derivation_that_fails_unexpectedly_warns_and_replays(monkeypatch):
    import oar.jit._run_program as run_program

    def broken(program, feeds):
        raise RuntimeError("a rule the tracer cannot run")

    monkeypatch.setattr(run_program, "append_backward", broken)
    static = to_static(lambda x: (oar.exp(x) * x).sum())
    a = _rng().standard_normal(4)
    static(_leaf(a))
    xs = _leaf(a)
    with pytest.warns(RuntimeWarning, match="deriving the backward failed: RuntimeError: a rule the tracer"):
        static(xs).backward()
    assert _training(static).last_plan is None
    np.testing.assert_allclose(xs.grad.numpy(), np.exp(a) * (1 + a), rtol=1e-13)


@pytest.mark.parametrize("path", ["eager", "static"])
def test_changing_a_saved_input_before_backward_raises(path):
    w = _leaf(np.array([1.0, 2.0]))

    def f(x):
        return (x * w).sum()  # w's gradient is x: the backward reads x

    static = to_static(f)
    static(_leaf(np.ones(2), False))
    x = _leaf(np.ones(2), False)
    loss = (f if path == "eager" else static)(x)
    x.add_(oar.to_tensor(1.0, dtype="float64"))
    with pytest.raises(GradientError, match="modified in place after the forward"):
        loss.backward()


def test_gradients_flow_on_to_the_eager_graph_that_made_the_inputs():
    w = _leaf(np.array([0.5, -2.0, 1.5]))
    static = to_static(lambda h: (oar.tanh(h) * h).sum())
    a = _rng().standard_normal(3)
    static(_leaf(a) * w)  # capture
    xs = _leaf(a)
    w.clear_grad()
    static(xs * w).backward()  # the input is not a leaf: its gradient goes on to x and w
    got = xs.grad.numpy(), w.grad.numpy().copy()
    xe = _leaf(a)
    w.clear_grad()
    h = xe * w
    (oar.tanh(h) * h).sum().backward()
    np.testing.assert_allclose(got[0], xe.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-13)
    assert _training(static).last_plan is not None


def test_a_reshape_back_to_a_saved_shape_is_generalized_over_the_batch():
    w = _leaf(_rng().standard_normal(6))
    static = to_static(lambda x: oar.flatten(oar.exp(x), 1) * w, input_spec=[InputSpec([None, 2, 3], "float64")])
    for n in (4, 2, 5, 1):
        a = _rng(n).standard_normal((n, 2, 3))
        xs = _leaf(a)
        w.clear_grad()
        (static(xs) * 1.5).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), 1.5 * np.exp(a) * w.numpy().reshape(2, 3), rtol=1e-13)
        np.testing.assert_allclose(w.grad.numpy(), 1.5 * np.exp(a).reshape(n, 6).sum(0), rtol=1e-13)
    training = _training(static)
    assert len(training._plans) == 1
    (reshape,) = [n for n in training.last_plan.derived.backward_nodes if n.op == "reshape"]
    assert reshape.attrs["shape"] == [-1, 2, 3]
