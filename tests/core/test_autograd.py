"""The autograd API: backward, oar.grad, grad modes, hooks, stop_gradient, deep graphs, memory."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import oar
from oar.errors import GradientError


def leaf(values, dtype="float64"):
    return oar.to_tensor(np.asarray(values, dtype=dtype), stop_gradient=False)


# -- backward -------------------------------------------------------------------------------------
def test_backward_accumulates_into_grad_across_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.clear_grad(set_to_zero=False)
    assert x.grad is None


def test_clear_grad_zeroes_in_place_by_default_as_paddle():
    x = leaf([1.0, 2.0])
    x.sum().backward()  # sum's gradient is a broadcast view; .grad must still be writable
    g = x.grad
    x.clear_grad()
    assert x.grad is g
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_leaf_grads_never_share_memory():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x + y).sum().backward()  # add's rule returns one gradient array for both inputs
    assert not np.shares_memory(x.grad.numpy(copy=False), y.grad.numpy(copy=False))
    x.clear_grad()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])
    seed = oar.to_tensor([5.0, 6.0], dtype="float64")
    z = leaf([0.0, 0.0])
    (z + 0.0).backward(seed)
    assert not np.shares_memory(z.grad.numpy(copy=False), seed.numpy(copy=False))


def test_backward_with_grad_tensor_and_non_scalar_root():
    x = leaf([1.0, 2.0])
    y = x * x
    y.backward(oar.to_tensor([1.0, 10.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 40.0])
    z = leaf([1.0, 2.0])
    (z * 3.0).backward()  # no grad_tensor: ones, as Paddle
    np.testing.assert_allclose(z.grad.numpy(), [3.0, 3.0])


def test_backward_rejects_a_grad_tensor_of_the_wrong_shape():
    x = leaf([1.0, 2.0])
    with pytest.raises(GradientError, match=r"shape \[3\].*shape \[2\]"):
        (x * 2.0).backward(oar.ones([3], dtype="float64"))


def test_backward_when_nothing_needs_a_gradient_does_nothing_as_paddle():
    x = oar.to_tensor([1.0, 2.0])
    (x * 2.0).sum().backward()  # an eval loop that calls backward: no error, no gradient
    assert x.grad is None
    w = leaf([1.0, 2.0])
    oar.autograd.backward([x.sum(), (w * w).sum()])  # the roots that need no gradient are skipped
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_autograd_backward_takes_several_roots():
    x = leaf([1.0, 2.0])
    oar.autograd.backward([(x * x).sum(), (x * 3.0).sum()], [None, oar.to_tensor(2.0, dtype="float64")])
    np.testing.assert_allclose(x.grad.numpy(), [2.0 + 6.0, 4.0 + 6.0])


def test_second_backward_needs_retain_graph():
    x = leaf([1.0, 2.0])
    loss = (x.exp() * 2.0).sum()
    loss.backward()
    with pytest.raises(GradientError, match="retain_graph=True") as info:
        loss.backward()
    assert "second time" in str(info.value)


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    loss = (x.exp() * 2.0).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * np.exp([1.0, 2.0]))


def test_a_shared_subgraph_freed_by_one_backward_cannot_serve_another():
    x = leaf([1.0])
    y = x.exp()
    a, b = (y * 2.0).sum(), (y * 3.0).sum()
    a.backward()
    with pytest.raises(GradientError, match="exp"):
        b.backward()


# -- fan-out, diamonds, stop_gradient ------------------------------------------------------------
def test_fan_out_accumulates_every_use():
    x = leaf([2.0])
    loss = x * x + x * 3.0 + x.exp()  # x feeds four ops
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 2.0 + 3.0 + np.exp(2.0)])


def test_diamond_graph():
    x = leaf([0.5, -1.0])
    a = x * 2.0
    b, c = a.exp(), a.tanh()
    d = b * c  # a feeds b and c, which meet again in d
    d.sum().backward()
    av = 2 * x.numpy()
    expected = 2.0 * (np.exp(av) * np.tanh(av) + np.exp(av) * (1 - np.tanh(av) ** 2))
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_stop_gradient_semantics():
    t = oar.to_tensor([1.0, 2.0])
    assert t.stop_gradient and t.grad is None and t.is_leaf
    y = t * 2.0
    assert y.stop_gradient and y.is_leaf  # nothing needs a gradient: no tape node
    t.stop_gradient = False
    y = t * 2.0
    assert not y.stop_gradient and not y.is_leaf
    assert oar.to_tensor([1.0], stop_gradient=False).stop_gradient is False


def test_a_stop_gradient_input_gets_no_gradient():
    x, w = leaf([1.0, 2.0]), oar.to_tensor([3.0, 4.0], dtype="float64")
    (x * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    assert w.grad is None


def test_setting_stop_gradient_on_an_intermediate_cuts_the_graph():
    x = leaf([1.0, 2.0])
    y = x * 2.0
    y.stop_gradient = True
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy())  # only the direct path through x


def test_detach_cuts_the_graph_and_shares_memory():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    d = y.detach()
    assert d.stop_gradient and d.is_leaf and np.shares_memory(d.numpy(copy=False), y.numpy(copy=False))
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])


def test_integer_outputs_are_stop_gradient():
    x = leaf([1.5, -2.5])
    assert (x > 0.0).stop_gradient
    assert x.astype("int32").stop_gradient
    assert not x.astype("float32").stop_gradient


# -- oar.grad -------------------------------------------------------------------------------------
def test_grad_returns_gradients_without_touching_dot_grad():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    dx, dy = oar.grad((x * y).sum(), [x, y])
    np.testing.assert_allclose(dx.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(dy.numpy(), [1.0, 2.0])
    assert x.grad is None and y.grad is None
    assert dx.stop_gradient  # without create_graph the result is a constant


def test_grad_with_grad_outputs():
    x = leaf([1.0, 2.0])
    (dx,) = oar.grad(x * x, x, grad_outputs=oar.to_tensor([1.0, 0.5], dtype="float64"))
    np.testing.assert_allclose(dx.numpy(), [2.0, 2.0])
    with pytest.raises(GradientError, match="2 grad_outputs for 1 outputs"):
        oar.grad(x * x, x, grad_outputs=[None, None])


def test_grad_allow_unused():
    x, unused = leaf([1.0]), leaf([2.0])
    with pytest.raises(GradientError, match=r"inputs\[1\].*allow_unused=True"):
        oar.grad((x * 2.0).sum(), [x, unused])
    dx, du = oar.grad((x * 2.0).sum(), [x, unused], allow_unused=True)
    np.testing.assert_allclose(dx.numpy(), [2.0])
    assert du is None


def test_grad_of_a_stop_gradient_input_is_an_error():
    x = oar.to_tensor([1.0])
    with pytest.raises(GradientError, match=r"inputs\[0\] has stop_gradient=True"):
        oar.grad(x * 2.0, x)


def test_grad_with_respect_to_non_leaf_inputs():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    out = (h * h).sum()
    dh, dx = oar.grad(out, [h, x], retain_graph=True)
    np.testing.assert_allclose(dh.numpy(), 2 * h.numpy())
    np.testing.assert_allclose(dx.numpy(), 18 * x.numpy())
    (dh_only,) = oar.grad(out, h)
    np.testing.assert_allclose(dh_only.numpy(), 2 * h.numpy())


def test_grad_runs_only_the_rules_on_paths_to_the_inputs():
    calls = []

    class Counted(oar.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x.exp()

        @staticmethod
        def backward(ctx, dy):
            calls.append(1)
            return dy * 1.0

    x = leaf([1.0])
    h = Counted.apply(x)
    out = (h * 2.0).sum()
    (dh,) = oar.grad(out, h)  # stops at h: the layer's backward is neither run nor freed
    np.testing.assert_allclose(dh.numpy(), [2.0])
    assert calls == []
    (dx,) = oar.grad((h * 5.0).sum(), x)
    np.testing.assert_allclose(dx.numpy(), [5.0])
    assert calls == [1]


def test_grad_no_grad_vars_block_a_path():
    x = leaf([2.0])
    y = x * x
    z = y + x * 3.0
    (dx,) = oar.grad(z.sum(), x, no_grad_vars=[y])
    np.testing.assert_allclose(dx.numpy(), [3.0])


def test_grad_create_graph_third_derivative_of_cube():
    x = leaf([1.5, -0.5])
    (d1,) = oar.grad((x * x * x).sum(), x, create_graph=True)
    assert not d1.stop_gradient
    (d2,) = oar.grad(d1.sum(), x, create_graph=True)
    (d3,) = oar.grad(d2.sum(), x)
    np.testing.assert_allclose(d1.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(d2.numpy(), 6 * x.numpy())
    np.testing.assert_allclose(d3.numpy(), [6.0, 6.0])


def _second_derivative_of_tanh(values):
    x = leaf(values)
    (d1,) = oar.grad(x.tanh().sum(), x, create_graph=True)
    (d2,) = oar.grad(d1.sum(), x, create_graph=True)
    return x, d2


def test_grad_create_graph_third_derivative_of_tanh_against_finite_differences():
    points = np.array([-1.2, 0.1, 0.7])
    x, d2 = _second_derivative_of_tanh(points)
    (d3,) = oar.grad(d2.sum(), x)
    t = np.tanh(points)
    np.testing.assert_allclose(d3.numpy(), (1 - t**2) * (6 * t**2 - 2), rtol=1e-10)
    eps = 1e-5
    numeric = (_second_derivative_of_tanh(points + eps)[1].numpy() - _second_derivative_of_tanh(points - eps)[1].numpy()) / (2 * eps)
    np.testing.assert_allclose(d3.numpy(), numeric, rtol=1e-6)


def test_create_graph_backward_gives_a_differentiable_grad():
    # Gradient penalty: the norm of dL/dx as a loss.
    x = leaf([1.0, 2.0])
    (g,) = oar.grad((x * x * x).sum(), x, create_graph=True)
    (g * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (3 * x.numpy() ** 2) * 6 * x.numpy())


# -- grad modes -----------------------------------------------------------------------------------
def test_no_grad_as_context_manager():
    x = leaf([1.0])
    with oar.no_grad():
        assert not oar.is_grad_enabled()
        y = x * 2.0
    assert oar.is_grad_enabled()
    assert y.stop_gradient and y.is_leaf


def test_no_grad_as_decorator_with_and_without_parentheses():
    x = leaf([1.0])

    @oar.no_grad()
    def f(t):
        assert not oar.is_grad_enabled()
        return t * 2.0

    @oar.no_grad
    def g(t):
        return t * 2.0

    assert f(x).stop_gradient and g(x).stop_gradient
    assert f.__name__ == "f"
    assert oar.is_grad_enabled()


def test_no_grad_decorator_on_a_generator_holds_while_it_runs():
    @oar.no_grad()
    def gen():
        yield oar.is_grad_enabled()
        yield oar.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert oar.is_grad_enabled()


def test_no_grad_restores_the_mode_on_error_and_when_reentered():
    ctx = oar.no_grad()
    with pytest.raises(ValueError):
        with ctx:
            raise ValueError("boom")
    assert oar.is_grad_enabled()
    with ctx:
        with oar.enable_grad():
            with ctx:
                assert not oar.is_grad_enabled()
            assert oar.is_grad_enabled()
        assert not oar.is_grad_enabled()
    assert oar.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with oar.no_grad():
        with oar.enable_grad():
            y = x * 2.0
        z = x * 2.0

        @oar.enable_grad()
        def f(t):
            return t * 2.0

        w = f(x)
    assert not y.stop_gradient and z.stop_gradient and not w.stop_gradient


def test_set_grad_enabled_as_context_function_and_decorator():
    x = leaf([1.0])
    with oar.set_grad_enabled(False):
        assert (x * 2.0).stop_gradient
    assert oar.is_grad_enabled()
    oar.set_grad_enabled(False)
    try:
        assert not oar.is_grad_enabled()
    finally:
        oar.set_grad_enabled(True)

    @oar.set_grad_enabled(False)
    def f(t):
        return t * 2.0

    assert oar.is_grad_enabled()  # decorating does not switch the mode
    assert f(x).stop_gradient
    assert oar.is_grad_enabled()


def test_autograd_module_reexports_the_grad_modes():
    assert oar.autograd.no_grad is oar.no_grad
    assert oar.autograd.grad is oar.grad
    assert oar.autograd.set_grad_enabled is oar.set_grad_enabled
    from oar.autograd import PyLayer, PyLayerContext, backward  # noqa: F401


# -- hooks and retain_grads -----------------------------------------------------------------------
def test_register_hook_on_a_leaf_modifies_its_grad_and_can_be_removed():
    x = leaf([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10.0)
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])
    handle.remove()
    x.clear_grad(set_to_zero=False)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert len(seen) == 1


def test_register_hook_on_a_non_leaf_changes_what_flows_upstream():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))  # returns None: grad unchanged
    y.register_hook(lambda g: g * 0.5)
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], 2 * y.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 0.5 * 2 * y.numpy() * 3.0)
    assert y.grad is None  # a non-leaf keeps no grad unless retain_grads()


def test_a_removed_non_leaf_hook_no_longer_runs():
    x = leaf([1.0])
    y = x * 3.0
    handle = y.register_hook(lambda g: g * 100.0)
    handle.remove()
    handle.remove()  # removing twice is harmless
    (y * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0])


def test_a_leaf_hook_returning_the_wrong_shape_is_an_error_naming_the_tensor():
    # issue #24: x.grad silently took the hook's shape ([] here)
    x = leaf([1.0, 2.0])
    x.name = "w"
    x.register_hook(lambda g: g.sum())
    with pytest.raises(GradientError, match=r"hook of tensor 'w' returned a gradient of shape \[\] \(float64\); "
                                            r"it must return None or a tensor of the gradient's shape \[2\] and dtype float64"):
        (x * x).sum().backward()
    assert x.grad is None


def test_a_hook_returning_the_wrong_dtype_is_an_error():
    x = leaf([1.0, 2.0])
    x.name = "w"
    x.register_hook(lambda g: g.astype("float32"))
    with pytest.raises(GradientError, match=r"tensor 'w' returned a gradient of shape \[2\] \(float32\).*"
                                            r"shape \[2\] and dtype float64"):
        (x * x).sum().backward()


def test_a_non_leaf_hook_returning_the_wrong_shape_or_a_non_tensor_is_an_error():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    y.name = "hidden"
    handle = y.register_hook(lambda g: oar.concat([g, g]))
    with pytest.raises(GradientError, match=r"hook of tensor 'hidden' returned a gradient of shape \[4\] \(float64\).*"
                                            r"shape \[2\] and dtype float64"):
        (y * y).sum().backward()
    handle.remove()
    z = x * 3.0
    z.name = "z"
    z.register_hook(lambda g: g.numpy())
    with pytest.raises(GradientError, match=r"hook of tensor 'z' returned a ndarray.*None or a tensor"):
        (z * z).sum().backward()


def test_a_hook_may_return_none_or_a_tensor_of_the_gradients_shape_and_dtype():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: None)
    x.register_hook(lambda g: g * 2.0)
    (x * x).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0] and x.grad.dtype == oar.float64


def test_register_hook_on_a_stop_gradient_tensor_is_an_error():
    with pytest.raises(GradientError, match="stop_gradient=True"):
        oar.to_tensor([1.0]).register_hook(lambda g: g)


def test_retain_grads_keeps_a_non_leaf_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    y.retain_grads()
    z = y * y
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * y.numpy())
    assert z.grad is None
    x.retain_grads()  # a leaf keeps its grad anyway
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.numpy())


def test_hooks_and_retained_grads_are_left_alone_by_oar_grad():
    x = leaf([1.0])
    y = x * 2.0
    y.retain_grads()
    oar.grad((y * y).sum(), x)
    assert y.grad is None and x.grad is None


# -- deep graphs and memory -----------------------------------------------------------------------
def test_a_10000_op_chain_runs_backward_without_recursion():
    # (how fast is the benchmark suite's business, not a test's: a busy machine would fail it)
    x = leaf([1.0, 2.0])
    y = x
    limit = sys.getrecursionlimit()
    for i in range(10_000):
        y = y * 1.0001 if i % 2 else y + 0.5
    y.sum().backward()
    assert sys.getrecursionlimit() == limit
    np.testing.assert_allclose(x.grad.numpy(), [1.0001**5000] * 2)
    del y  # dropping a deep graph does not recurse either


def test_intermediates_are_freed_by_backward():
    x = leaf(np.random.default_rng(0).random((200, 200)))

    def forward():
        h = x.exp()  # held by the graph only: exp's output and multiply's input
        return (h * 2.0).tanh().sum(), weakref.ref(h._data)

    loss, ref = forward()
    assert ref() is not None  # the graph keeps it for backward
    loss.backward()
    assert ref() is None  # freed as soon as backward no longer needed it, loss still alive
    del loss
    gc.collect()
    assert ref() is None


def test_retain_graph_keeps_intermediates_while_the_loss_lives():
    x = leaf(np.random.default_rng(1).random((100, 100)))

    def forward():
        h = x.exp()
        return (h * 2.0).sum(), weakref.ref(h._data)

    loss, ref = forward()
    loss.backward(retain_graph=True)
    assert ref() is not None
    del loss  # no reference cycle: freed without the garbage collector
    assert ref() is None


def test_pylayer_saved_tensors_are_freed_by_backward():
    class Scale(oar.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            h = x * 2.0
            ctx.save_for_backward(h)
            return h * 1.0

        @staticmethod
        def backward(ctx, dy):
            (h,) = ctx.saved_tensor()
            return dy * 2.0 + h * 0.0

    x = leaf(np.ones((50, 50)))

    def forward():
        out = Scale.apply(x)
        return out.sum(), weakref.ref(out._node.op.ctx.container[0]._data)

    loss, ref = forward()
    assert ref() is not None
    loss.backward()
    assert ref() is None
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


# -- in-place changes after the forward ------------------------------------------------------------
def test_modifying_a_saved_input_in_place_is_caught_at_backward():
    x = leaf([1.0, 2.0])
    y = x * 1.0
    z = y * y  # multiply saves y
    oar.assign(oar.to_tensor([5.0, 5.0], dtype="float64"), y)  # overwrite y
    with pytest.raises(GradientError, match=r"modified in place.*clone\(\)"):
        z.sum().backward()


def test_backward_accumulates_into_the_same_grad_buffer_as_paddle():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    g = x.grad
    buffer = g._data
    (x * 3.0).sum().backward()
    assert x.grad is g and x.grad._data is buffer  # accumulated in place, no new tensor
    np.testing.assert_allclose(g.numpy(), [5.0, 7.0])


def test_in_place_accumulation_bumps_a_saved_grad_version():
    x = leaf([1.0, 2.0])
    x.sum().backward()
    w = leaf([1.0, 1.0])
    y = (w * x.grad).sum()  # multiply saves x.grad for w's gradient
    (x * 2.0).sum().backward()  # accumulates into x.grad in place
    with pytest.raises(GradientError, match="modified in place"):
        y.backward()


def test_gradients_that_meet_are_summed_without_changing_what_hooks_kept():
    # The engine sums gradients that meet in place once it owns the sum: nothing a hook was given,
    # and no earlier .grad, may change when later gradients arrive.
    w = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    h = w * 1.0
    seen_by_hook = []
    h.register_hook(seen_by_hook.append)
    leaf_kept = []
    w.register_hook(leaf_kept.append)
    loss = sum(((h * float(k)).sum() for k in range(1, 6)), oar.zeros([]))  # h used five times
    loss.backward()
    np.testing.assert_array_equal(seen_by_hook[0].numpy(), [15.0, 15.0])
    np.testing.assert_array_equal(w.grad.numpy(), [15.0, 15.0])
    (w * 2.0 + w * 3.0).sum().backward()  # accumulates into .grad in place
    np.testing.assert_array_equal(w.grad.numpy(), [20.0, 20.0])
    np.testing.assert_array_equal(seen_by_hook[0].numpy(), [15.0, 15.0])
    np.testing.assert_array_equal(leaf_kept[0].numpy(), [15.0, 15.0])
    np.testing.assert_array_equal(leaf_kept[1].numpy(), [5.0, 5.0])


def test_a_weight_used_at_every_step_of_a_loop_gets_the_sum_of_its_gradients():
    rng = np.random.default_rng(0)
    w_data = rng.standard_normal((3, 3)).astype("float32")
    xs = [rng.standard_normal((2, 3)).astype("float32") for _ in range(6)]
    w = oar.to_tensor(w_data, stop_gradient=False)
    oar.add_n([oar.matmul(oar.to_tensor(x), w).sum() for x in xs]).backward()
    expected = sum(x.T @ np.ones((2, 3), "float32") for x in xs)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6)
    (gw,) = oar.grad([oar.matmul(oar.to_tensor(x), w).sum() for x in xs], [w])  # oar.grad sums them too
    np.testing.assert_allclose(gw.numpy(), expected, rtol=1e-6)
