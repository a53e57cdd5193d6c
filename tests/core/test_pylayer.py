"""oar.autograd.PyLayer: custom forward/backward with Paddle's API."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.autograd import PyLayer, PyLayerContext
from oar.errors import GradientError


def leaf(values):
    return oar.to_tensor(np.asarray(values, dtype="float64"), stop_gradient=False)


class CusTanh(PyLayer):
    @staticmethod
    def forward(ctx, x):
        y = oar.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return dy * (1.0 - y * y)


def test_forward_and_backward_match_the_builtin_op():
    x = leaf([-1.0, 0.2, 2.0])
    y = CusTanh.apply(x)
    np.testing.assert_allclose(y.numpy(), np.tanh(x.numpy()))
    assert not y.stop_gradient
    assert y._node.op.name == "CusTanh"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(x.numpy()) ** 2)


def test_forward_runs_under_no_grad():
    seen = []

    class Probe(PyLayer):
        @staticmethod
        def forward(ctx, x):
            seen.append(oar.is_grad_enabled())
            inner = x * 2.0
            seen.append(inner.stop_gradient)
            return inner

        @staticmethod
        def backward(ctx, dy):
            return dy * 2.0

    Probe.apply(leaf([1.0]))
    assert seen == [False, True]
    assert oar.is_grad_enabled()


def test_no_input_needs_a_gradient_so_nothing_is_recorded():
    x = oar.to_tensor([1.0, 2.0])
    y = CusTanh.apply(x)
    assert y.stop_gradient and y.is_leaf
    with oar.no_grad():
        z = CusTanh.apply(leaf([1.0]))
    assert z.stop_gradient and z.is_leaf


def test_several_inputs_and_outputs_and_non_tensor_arguments():
    class AffinePair(PyLayer):
        @staticmethod
        def forward(ctx, x, w, scale, *, shift=0.0):
            ctx.save_for_backward(x, w)
            ctx.scale = scale
            return x * w * scale + shift, x + w, "tag"

        @staticmethod
        def backward(ctx, g1, g2):
            x, w = ctx.saved_tensor()
            return g1 * w * ctx.scale + g2, g1 * x * ctx.scale + g2

    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    a, b, tag = AffinePair.apply(x, w, 2.0, shift=1.0)
    assert tag == "tag"
    np.testing.assert_allclose(a.numpy(), [7.0, 17.0])
    (a.sum() + (b * b).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), w.numpy() * 2.0 + 2 * b.numpy())
    np.testing.assert_allclose(w.grad.numpy(), x.numpy() * 2.0 + 2 * b.numpy())


def test_a_list_of_tensors_is_one_input_with_a_list_of_gradients():
    class SumAll(PyLayer):
        @staticmethod
        def forward(ctx, xs):
            out = xs[0]
            for t in xs[1:]:
                out = out + t
            return out

        @staticmethod
        def backward(ctx, dy):
            return [dy, dy * 2.0]

    a, b = leaf([1.0]), leaf([2.0])
    SumAll.apply([a, b]).backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0])
    np.testing.assert_allclose(b.grad.numpy(), [2.0])


def test_none_gradient_for_an_input_means_no_gradient():
    class FirstOnly(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, dy):
            return dy, None

    x, y = leaf([2.0]), leaf([3.0])
    FirstOnly.apply(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])
    assert y.grad is None


def test_backward_must_return_one_gradient_per_tensor_input():
    class TooFew(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, dy):
            return dy

    out = TooFew.apply(leaf([1.0]), leaf([2.0]))
    with pytest.raises(GradientError, match=r"TooFew\.backward returned 1 gradient\(s\).*2 tensor input"):
        out.backward()


def test_backward_returning_a_wrong_shape_or_type_names_the_layer():
    class BadShape(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, dy):
            return oar.ones([5], dtype="float64")

    class BadType(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, dy):
            return dy.numpy()

    with pytest.raises(GradientError, match=r"BadShape\.backward returned a gradient of shape \[5\].*\[2\]"):
        BadShape.apply(leaf([1.0, 2.0])).sum().backward()
    with pytest.raises(GradientError, match=r"BadType\.backward returned a ndarray"):
        BadType.apply(leaf([1.0, 2.0])).sum().backward()


def test_missing_forward_or_backward():
    class NoBackward(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x

    class NoForward(PyLayer):
        @staticmethod
        def backward(ctx, dy):
            return dy

    with pytest.raises(NotImplementedError, match="NoBackward must define a static backward"):
        NoBackward.apply(leaf([1.0]))
    with pytest.raises(NotImplementedError, match="forward"):
        NoForward.apply(leaf([1.0]))


def test_create_graph_through_a_backward_written_with_oar_ops():
    x = leaf([0.3, -0.8])
    (d1,) = oar.grad(CusTanh.apply(x).sum(), x, create_graph=True)
    (d2,) = oar.grad(d1.sum(), x)
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(d1.numpy(), 1 - t**2)
    np.testing.assert_allclose(d2.numpy(), -2 * t * (1 - t**2))


def test_saved_input_keeps_its_graph_for_higher_order_gradients():
    class Cube(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return dy * 3.0 * x * x

    x = leaf([2.0])
    (d1,) = oar.grad(Cube.apply(x), x, create_graph=True)
    (d2,) = oar.grad(d1, x)
    np.testing.assert_allclose(d1.numpy(), [12.0])
    np.testing.assert_allclose(d2.numpy(), [12.0])


def test_mark_non_differentiable_outputs_get_zero_gradients():
    class Pair(PyLayer):
        @staticmethod
        def forward(ctx, x):
            a, b = x + x, x + x + x
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            np.testing.assert_array_equal(grad_a.numpy(), np.zeros(1))
            return grad_b * 3.0

    x = leaf([1.0])
    a, b = Pair.apply(x)
    assert a.stop_gradient and not b.stop_gradient
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0])


def test_set_materialize_grads_false_gives_none_for_unused_outputs():
    received = []

    class Two(PyLayer):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 3.0, x * 2.0

        @staticmethod
        def backward(ctx, g1, g2):
            received.append(g2)
            return g1 * 3.0

    Two.apply(leaf([1.0]), True)[0].backward()
    Two.apply(leaf([1.0]), False)[0].backward()
    np.testing.assert_array_equal(received[0].numpy(), [0.0])
    assert received[1] is None


def test_an_input_returned_unchanged_gets_a_new_output_tensor():
    class Identity(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_not_inplace(x)
            return x

        @staticmethod
        def backward(ctx, dy):
            return dy * 2.0

    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_second_backward_without_retain_graph_is_an_error():
    x = leaf([0.5])
    y = CusTanh.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(0.5) ** 2))
    with pytest.raises(GradientError, match=r"CusTanh.*retain_graph=True"):
        y.backward()


def test_a_saved_input_modified_in_place_is_caught():
    class Square(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return dy * 2.0 * x

    x = leaf([1.0, 2.0])
    h = x * 1.0
    y = Square.apply(h)
    oar.assign(oar.to_tensor([9.0, 9.0], dtype="float64"), h)
    with pytest.raises(GradientError, match=r"Square\.backward: saved tensor 0.*modified in place"):
        y.sum().backward()


def test_save_for_backward_takes_tensors_only():
    class SavesANumber(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3.0)
            return x

        @staticmethod
        def backward(ctx, dy):
            return dy

    with pytest.raises(TypeError, match="SavesANumber.forward: save_for_backward takes tensors"):
        SavesANumber.apply(leaf([1.0]))


def test_context_without_saved_tensors_and_instances_can_apply():
    ctx = PyLayerContext()
    assert ctx.saved_tensor() is None

    class Double(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, dy):
            assert ctx.saved_tensor() is None
            return dy * 2.0

    x = leaf([1.0])
    Double().apply(x).backward()  # Paddle code sometimes applies through an instance
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_pylayer_inside_a_larger_graph_with_hooks():
    x = leaf([0.1, 0.4])
    h = x * 2.0
    y = CusTanh.apply(h)
    y.register_hook(lambda g: g * 10.0)
    (y * 3.0).sum().backward()
    expected = 3.0 * 10.0 * (1 - np.tanh(h.numpy()) ** 2) * 2.0
    np.testing.assert_allclose(x.grad.numpy(), expected)
