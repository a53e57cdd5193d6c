"""Conv1D/2D/3D and Conv1D/2D/3DTranspose: forward and gradients against numpy, Paddle's defaults
(weight layout, initializers, arguments), second derivatives, and errors."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn import Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, ParamAttr
from oar.nn.initializer import Constant

from .op_cases.conv import ref_conv, ref_conv_transpose

rng = np.random.default_rng(3)


def numeric_gradient(f, array, eps=1e-6):
    """Central differences of the scalar ``f()`` with respect to ``array``, changed in place."""
    grad = np.zeros_like(array)
    flat, out = array.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        original = flat[k]
        flat[k] = original + eps
        up = f()
        flat[k] = original - eps
        down = f()
        flat[k] = original
        out[k] = (up - down) / (2 * eps)
    return grad


def check_layer(layer, x_np, ref):
    """Forward against ``ref(x, weight, bias)``; the gradients of x, weight and bias against
    central differences, all in float64."""
    layer.to(dtype="float64")
    x = oar.to_tensor(x_np, stop_gradient=False)
    y = layer(x)
    bias = None if layer.bias is None else layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), ref(x_np, layer.weight.numpy(), bias), rtol=1e-10, atol=1e-12)
    r = rng.standard_normal(y.shape)
    (y * oar.to_tensor(r)).sum().backward()

    def loss():
        with oar.no_grad():
            return float((layer(oar.to_tensor(x_np)).numpy() * r).sum())

    np.testing.assert_allclose(x.grad.numpy(), numeric_gradient(loss, x_np), rtol=1e-6, atol=1e-8)
    for p in layer.parameters():
        np.testing.assert_allclose(p.grad.numpy(), numeric_gradient(loss, p._data), rtol=1e-6, atol=1e-8)


def _plus_bias(y, b):
    return y if b is None else y + b.reshape([-1] + [1] * (y.ndim - 2))


def _channels_last(fn):
    return lambda x, w, b: np.moveaxis(fn(np.moveaxis(x, -1, 1), w, b), 1, -1)


# -- forward and gradients --------------------------------------------------------------------
LAYERS = [
    ("conv1d", lambda: Conv1D(2, 4, 3, stride=2, padding=[1, 0], groups=2), (2, 2, 6),
     lambda x, w, b: _plus_bias(ref_conv(x, w, 2, [1, 0], 1, 2), b)),
    ("conv1d_nlc", lambda: Conv1D(3, 2, 2, padding=1, dilation=2, data_format="NLC", bias_attr=False), (1, 5, 3),
     _channels_last(lambda x, w, b: ref_conv(x, w, 1, 1, 2))),
    ("conv2d", lambda: Conv2D(2, 4, 3, stride=2, padding=1, groups=2), (1, 2, 4, 5),
     lambda x, w, b: _plus_bias(ref_conv(x, w, 2, 1, 1, 2), b)),
    ("conv2d_nhwc_same", lambda: Conv2D(2, 3, (2, 3), padding="same", data_format="NHWC"), (1, 3, 4, 2),
     _channels_last(lambda x, w, b: _plus_bias(ref_conv(x, w, 1, [0, 1, 1, 1]), b))),
    ("conv2d_reflect", lambda: Conv2D(1, 2, 3, padding=1, padding_mode="reflect"), (1, 1, 3, 4),
     lambda x, w, b: _plus_bias(ref_conv(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect"), w), b)),
    ("conv2d_circular_nhwc", lambda: Conv2D(2, 2, 2, padding=1, padding_mode="circular", data_format="NHWC"),
     (1, 3, 3, 2),
     _channels_last(lambda x, w, b: _plus_bias(ref_conv(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="wrap"), w), b))),
    ("conv3d", lambda: Conv3D(1, 2, 2, stride=[1, 2, 1], padding=[0, 1, 0]), (1, 1, 3, 4, 3),
     lambda x, w, b: _plus_bias(ref_conv(x, w, [1, 2, 1], [0, 1, 0]), b)),
    ("conv1d_transpose", lambda: Conv1DTranspose(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 2, 3),
     lambda x, w, b: _plus_bias(ref_conv_transpose(x, w, 2, 1, 1, 1, 2), b)),
    ("conv2d_transpose", lambda: Conv2DTranspose(2, 3, (3, 2), stride=[2, 1], padding=[1, 0], dilation=[1, 2]),
     (1, 2, 3, 3), lambda x, w, b: _plus_bias(ref_conv_transpose(x, w, [2, 1], [1, 0], 0, [1, 2]), b)),
    ("conv2d_transpose_nhwc", lambda: Conv2DTranspose(2, 2, 2, stride=2, data_format="NHWC"), (1, 2, 3, 2),
     _channels_last(lambda x, w, b: _plus_bias(ref_conv_transpose(x, w, 2), b))),
    ("conv3d_transpose", lambda: Conv3DTranspose(2, 1, 2, stride=2, padding=[0, 1, 0]), (1, 2, 2, 2, 2),
     lambda x, w, b: _plus_bias(ref_conv_transpose(x, w, 2, [0, 1, 0]), b)),
]


@pytest.mark.parametrize("make, shape, ref", [case[1:] for case in LAYERS], ids=[case[0] for case in LAYERS])
def test_layer_forward_and_gradients(make, shape, ref):
    check_layer(make(), rng.standard_normal(shape), ref)


def test_conv2d_transpose_forward_output_size():
    layer = Conv2DTranspose(2, 3, 3, stride=2, padding=1, output_padding=1)
    x = oar.randn([1, 2, 4, 4])
    assert layer(x).shape == [1, 3, 8, 8]  # (4 - 1) * 2 - 2 + 3 + output_padding 1
    # an explicit output_size takes the place of the layer's output_padding
    assert layer(x, output_size=[7, 8]).shape == [1, 3, 7, 8]
    w, b = layer.weight.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(layer(x, output_size=[7, 8]).numpy(),
                               _plus_bias(ref_conv_transpose(x.numpy(), w, 2, 1, [0, 1]), b), rtol=1e-5, atol=1e-5)


def test_conv_gradient_of_the_gradient():
    """d/d(x, w) of <dL/dx, v> for L = sum(conv2d(x, w)^2 * r): the rules of conv_transpose and
    conv_weight_grad, checked against central differences of the first gradient."""
    x_np, w_np = rng.standard_normal((1, 2, 4, 5)), rng.standard_normal((4, 1, 3, 2))
    attrs = {"stride": 2, "padding": [1, 0, 1, 1], "dilation": [1, 2], "groups": 2}
    out_shape = F.conv2d(oar.to_tensor(x_np), oar.to_tensor(w_np), **attrs).shape
    r, v = rng.standard_normal(out_shape), rng.standard_normal(x_np.shape)

    def first_gradient(x, w, create_graph):
        loss = (F.conv2d(x, w, **attrs) ** 2 * oar.to_tensor(r)).sum()
        (dx,) = oar.grad(loss, x, create_graph=create_graph)
        return dx

    x, w = oar.to_tensor(x_np, stop_gradient=False), oar.to_tensor(w_np, stop_gradient=False)
    (first_gradient(x, w, True) * oar.to_tensor(v)).sum().backward()

    def projected():
        xt, wt = oar.to_tensor(x_np, stop_gradient=False), oar.to_tensor(w_np)
        return float((first_gradient(xt, wt, False).numpy() * v).sum())

    np.testing.assert_allclose(w.grad.numpy(), numeric_gradient(projected, w_np), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(x.grad.numpy(), numeric_gradient(projected, x_np), rtol=1e-6, atol=1e-8)


def test_conv_transpose_weight_gradient_of_the_gradient():
    x_np, w_np = rng.standard_normal((1, 2, 3)), rng.standard_normal((2, 2, 3))

    def first_gradient(x, w, create_graph):
        y = F.conv1d_transpose(x, w, stride=2, padding=1, output_padding=1)
        (dw,) = oar.grad((y * y * y).sum(), w, create_graph=create_graph)
        return dw

    x, w = oar.to_tensor(x_np, stop_gradient=False), oar.to_tensor(w_np, stop_gradient=False)
    first_gradient(x, w, True).sum().backward()

    def total():
        return float(first_gradient(oar.to_tensor(x_np), oar.to_tensor(w_np, stop_gradient=False), False).numpy().sum())

    np.testing.assert_allclose(x.grad.numpy(), numeric_gradient(total, x_np), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), numeric_gradient(total, w_np), rtol=1e-6, atol=1e-8)


# -- Paddle's defaults --------------------------------------------------------------------------
def test_weight_layout_and_parameter_names():
    conv = Conv2D(4, 6, (3, 2), groups=2)
    assert conv.weight.shape == [6, 2, 3, 2] and conv.bias.shape == [6]
    assert list(conv.state_dict()) == ["weight", "bias"]
    assert Conv1D(3, 4, 5).weight.shape == [4, 3, 5]
    assert Conv3D(2, 4, (1, 2, 3)).weight.shape == [4, 2, 1, 2, 3]
    assert Conv2DTranspose(4, 6, 3, groups=2).weight.shape == [4, 3, 3, 3]
    assert Conv1DTranspose(4, 2, 3).weight.shape == [4, 2, 3]
    assert Conv3DTranspose(2, 4, 2, groups=2).weight.shape == [2, 2, 2, 2, 2]


@pytest.mark.parametrize("groups", [1, 4])
def test_conv_weight_defaults_to_paddles_normal(groups):
    # std = sqrt(2 / (in_channels * prod(kernel))): Paddle counts every input channel, groups or not
    conv = Conv2D(64, 64, 3, groups=groups)
    w = conv.weight.numpy()
    assert abs(w.mean()) < 0.005
    assert abs(w.std() / math.sqrt(2.0 / (64 * 9)) - 1) < 0.03
    assert not np.any(conv.bias.numpy())


def test_conv_transpose_weight_defaults_to_xavier_uniform():
    conv = Conv2DTranspose(32, 64, 3, groups=2)  # weight [32, 32, 3, 3]
    fan_in, fan_out = 32 * 9, 32 * 9
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    w = conv.weight.numpy()
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.98 * limit
    assert abs(w.std() / (limit / math.sqrt(3)) - 1) < 0.03
    assert not np.any(conv.bias.numpy())


def test_param_attrs_and_no_bias():
    conv = Conv2D(2, 3, 1, weight_attr=ParamAttr(initializer=Constant(0.5)), bias_attr=False)
    assert conv.bias is None and list(conv.state_dict()) == ["weight"]
    np.testing.assert_array_equal(conv(oar.ones([1, 2, 2, 2])).numpy(), np.full([1, 3, 2, 2], 1.0))
    assert Conv1DTranspose(2, 2, 1, bias_attr=Constant(1.0)).bias.numpy().tolist() == [1.0, 1.0]


def test_defaults_and_repr():
    conv = Conv2D(4, 6, 3)
    assert (conv._stride, conv._padding, conv._dilation, conv._groups) == ([1, 1], 0, [1, 1], 1)
    assert (conv._data_format, conv._padding_mode) == ("NCHW", "zeros")
    assert conv(oar.ones([2, 4, 8, 8])).shape == [2, 6, 6, 6]
    assert repr(conv) == "Conv2D(4, 6, kernel_size=[3, 3], data_format=NCHW)"
    assert conv.extra_repr() == "4, 6, kernel_size=[3, 3], data_format=NCHW"
    full = Conv2D(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, padding_mode="reflect")
    assert full.extra_repr() == ("4, 6, kernel_size=[3, 3], stride=[2, 2], padding=1, padding_mode=reflect, "
                                 "dilation=[2, 2], groups=2, data_format=NCHW")
    assert Conv1D(2, 2, 3)._data_format == "NCL" and Conv3D(2, 2, 3)._data_format == "NCDHW"
    transposed = Conv2DTranspose(4, 6, 3, output_padding=1, stride=2)
    assert transposed.extra_repr() == "4, 6, kernel_size=[3, 3], stride=[2, 2], output_padding=1, data_format=NCHW"


def test_float16_conv_runs_in_float32_and_returns_float16():
    x, w = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((3, 2, 3, 3))
    y = F.conv2d(oar.to_tensor(x).astype("float16"), oar.to_tensor(w).astype("float16"), padding=1)
    assert y.dtype == oar.float16
    expected = ref_conv(x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64), 1, 1)
    np.testing.assert_allclose(y.numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)


# -- errors -------------------------------------------------------------------------------------
def test_layer_argument_errors():
    with pytest.raises(ArgumentError, match="divisible by groups"):
        Conv2D(3, 6, 3, groups=2)
    with pytest.raises(ArgumentError, match="divisible by groups"):
        Conv2DTranspose(4, 3, 3, groups=2)
    with pytest.raises(ArgumentError, match="weight_attr=False"):
        Conv2D(2, 2, 3, weight_attr=False)
    with pytest.raises(ArgumentError, match="padding_mode"):
        Conv2D(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ArgumentError, match="needs an int padding"):
        Conv2D(2, 2, 3, padding=[1, 1], padding_mode="reflect")
    with pytest.raises(ArgumentError, match="data_format"):
        Conv2D(2, 2, 3, data_format="NCL")
    with pytest.raises(ArgumentError, match="kernel_size"):
        Conv2D(2, 2, [3, 3, 3])
    with pytest.raises(ArgumentError, match="in_channels must be a positive int"):
        Conv1D(0, 2, 3)


def test_functional_shape_errors_name_the_function_and_shapes():
    x = oar.ones([1, 3, 5, 5])
    with pytest.raises(ShapeError, match=r"conv2d: x \[1, 3, 5, 5\] \(NCHW\) has 3 channels.*expects .* 4"):
        F.conv2d(x, oar.ones([2, 2, 3, 3]), groups=2)
    with pytest.raises(ShapeError, match="conv2d: x must be a 4-d tensor in NHWC layout"):
        F.conv2d(oar.ones([3, 5, 5]), oar.ones([2, 3, 3, 3]), data_format="NHWC")
    with pytest.raises(ShapeError, match=r"bias must have shape \[2\]"):
        F.conv2d(x, oar.ones([2, 3, 3, 3]), bias=oar.ones([3]))
    with pytest.raises(ShapeError, match="smaller than the kernel"):
        F.conv2d(x, oar.ones([2, 3, 7, 3]))
    with pytest.raises(ShapeError, match=r"conv1d_transpose: x .* has 3 channels, but weight \[2, 2, 3\]"):
        F.conv1d_transpose(oar.ones([1, 3, 4]), oar.ones([2, 2, 3]))
    with pytest.raises(ShapeError, match="conv2d: x"):
        Conv2D(4, 2, 3)(x)


def test_functional_argument_errors():
    x, w = oar.ones([1, 2, 5, 5]), oar.ones([2, 2, 3, 3])
    with pytest.raises(ArgumentError, match="'SAME', 'VALID'"):
        F.conv2d(x, w, padding="full")
    with pytest.raises(ArgumentError, match="must not be negative"):
        F.conv2d(x, w, padding=-1)
    with pytest.raises(ArgumentError, match="list of 2 ints"):
        F.conv2d(x, w, stride=[1, 2, 3])
    with pytest.raises(ArgumentError, match="stride must be >= 1"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(ArgumentError, match="pads the batch or channel"):
        F.conv2d(x, w, padding=[[0, 0], [1, 1], [1, 1], [1, 1]])
    with pytest.raises(ArgumentError, match="padding"):
        F.conv2d(x, w, padding=[1, 1, 1])
    with pytest.raises(ArgumentError, match="groups must be a positive int"):
        F.conv2d(x, w, groups=0)
    with pytest.raises(ArgumentError, match="data_format"):
        F.conv2d(x, w, data_format="NCDHW")
    with pytest.raises(ArgumentError, match=r"output_size \[5, 5\]: spatial dim 0 must be in \[7, 8\)"):
        F.conv2d_transpose(x, w, output_size=[5, 5])
    with pytest.raises(ArgumentError, match="mutually exclusive"):
        F.conv2d_transpose(x, w, output_padding=1, output_size=[7, 7], stride=2)
    with pytest.raises(ArgumentError, match=r"smaller than max\(stride, dilation\) = 2"):
        F.conv2d_transpose(x, w, stride=2, output_padding=2)


def test_functional_dtype_errors():
    with pytest.raises(DTypeError, match="conv2d: x must be a floating tensor"):
        F.conv2d(oar.ones([1, 1, 3, 3], dtype="int64"), oar.ones([1, 1, 2, 2], dtype="int64"))
    with pytest.raises(DTypeError, match="weight has dtype float64 but x has float32"):
        F.conv2d(oar.ones([1, 1, 3, 3]), oar.ones([1, 1, 2, 2], dtype="float64"))


def test_docstring_examples_run():
    from oar.nn.functional import conv as functional_conv
    from oar.nn.layer import conv as layer_conv

    for module in (functional_conv, layer_conv):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
