"""Activation layers: forward and gradient through each layer, Paddle's defaults, second-order
gradients of the fused ops, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, ShapeError

_rng = np.random.default_rng(11)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


X = _rng.uniform(-3, 3, size=(4, 5))
X[np.abs(X) < 0.1] = 0.3  # away from the kinks at 0

LAYERS = [
    (oar.nn.ReLU(), lambda x: np.maximum(x, 0)),
    (oar.nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (oar.nn.LeakyReLU(), lambda x: np.where(x > 0, x, 0.01 * x)),
    (oar.nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (oar.nn.ELU(), lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    (oar.nn.SELU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    (oar.nn.CELU(0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x / 0.5) - 1))),
    (oar.nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    (oar.nn.GELU(approximate=True), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (oar.nn.Silu(), lambda x: x * _sigmoid(x)),
    (oar.nn.Swish(), lambda x: x * _sigmoid(x)),
    (oar.nn.Mish(), lambda x: x * np.tanh(_softplus(x))),
    (oar.nn.Sigmoid(), _sigmoid),
    (oar.nn.Hardsigmoid(), lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    (oar.nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (oar.nn.Tanh(), np.tanh),
    (oar.nn.Softmax(), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    (oar.nn.Softmax(axis=0), lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    (oar.nn.LogSoftmax(), lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
    (oar.nn.Softplus(), _softplus),
    (oar.nn.Softplus(beta=2, threshold=3), lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    (oar.nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    (oar.nn.Hardtanh(-2.0, 2.0), lambda x: np.clip(x, -2, 2)),
    (oar.nn.Hardshrink(), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    (oar.nn.Softshrink(1.0), lambda x: np.where(x > 1, x - 1, np.where(x < -1, x + 1, 0))),
    (oar.nn.Tanhshrink(), lambda x: x - np.tanh(x)),
    (oar.nn.LogSigmoid(), lambda x: np.log(_sigmoid(x))),
    (oar.nn.ThresholdedReLU(1.0), lambda x: np.where(x > 1.0, x, 0)),
    (oar.nn.GLU(axis=0), lambda x: x[:2] * _sigmoid(x[2:])),
]


def _fd_grad(fn, x: np.ndarray, weights: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for k in range(x.size):
        for sign in (1, -1):
            shifted = x.copy()
            shifted.reshape(-1)[k] += sign * eps
            out.reshape(-1)[k] += sign * float((fn(shifted) * weights).sum()) / (2 * eps)
    return out


@pytest.mark.parametrize("layer,ref", LAYERS, ids=[repr(layer) for layer, _ in LAYERS])
def test_layer_forward_and_gradient(layer, ref):
    x = oar.to_tensor(X, stop_gradient=False)
    y = layer(x)
    np.testing.assert_allclose(y.numpy(), ref(X), rtol=1e-6, atol=1e-7)
    weights = _rng.standard_normal(y.shape)
    (y * oar.to_tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _fd_grad(ref, X, weights), rtol=1e-5, atol=1e-6)


def test_half_precision_inputs_keep_their_dtype():
    for dtype in ("float16", "bfloat16"):
        x = oar.to_tensor(X).astype(dtype)
        for layer in (oar.nn.ReLU(), oar.nn.GELU(), oar.nn.Softmax(), oar.nn.Silu()):
            y = layer(x)
            assert y.dtype.name == dtype
            np.testing.assert_allclose(y.astype("float64").numpy(), layer(oar.to_tensor(X)).numpy(), rtol=2e-2, atol=2e-2)


def test_paddle_defaults():
    assert F.leaky_relu(oar.to_tensor([-100.0])).item() == pytest.approx(-1.0)
    assert F.hardsigmoid(oar.to_tensor([1.0])).item() == pytest.approx(0.1666667 + 0.5)
    assert F.elu(oar.to_tensor([-1.0])).item() == pytest.approx(math.exp(-1) - 1)
    assert F.softplus(oar.to_tensor([25.0])).item() == 25.0  # linear above threshold=20
    assert F.softplus(oar.to_tensor([15.0])).item() == pytest.approx(math.log1p(math.exp(15.0)))
    exact, tanh = F.gelu(oar.to_tensor([1.5])).item(), F.gelu(oar.to_tensor([1.5]), True).item()
    assert exact == pytest.approx(0.5 * 1.5 * (1 + math.erf(1.5 / math.sqrt(2))), rel=1e-6) and exact != tanh
    assert F.softmax(oar.to_tensor([[1.0, 1.0], [0.0, 0.0]])).tolist() == [[0.5, 0.5], [0.5, 0.5]]  # axis=-1
    assert repr(oar.nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(oar.nn.Softmax()) == "Softmax(axis=-1)"


def test_softmax_is_stable_and_log_softmax_exact_for_large_inputs():
    x = oar.to_tensor([[1000.0, 0.0, -1000.0]])
    assert F.softmax(x).tolist() == [[1.0, 0.0, 0.0]]
    assert F.log_softmax(x).tolist() == [[0.0, -1000.0, -2000.0]]


def test_softmax_dtype_argument_casts_first():
    x = oar.to_tensor([[1.0, 2.0]], dtype="float32")
    assert F.softmax(x, dtype="float64").dtype == oar.float64
    assert F.log_softmax(x, dtype=oar.float64).dtype == oar.float64


def test_prelu_defaults_parameter_and_gradient():
    m = oar.nn.PReLU()
    assert list(m.state_dict()) == ["_weight"]
    assert m._weight.tolist() == [0.25] and not m._weight.stop_gradient
    per_channel = oar.nn.PReLU(num_parameters=3, init=0.1)
    x = oar.to_tensor(_rng.uniform(-1, 1, size=(2, 3, 2, 2)), dtype="float32")
    y = per_channel(x)
    expected = np.where(x.numpy() > 0, x.numpy(), 0.1 * x.numpy())
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    y.sum().backward()
    # d/dw_c sum(prelu) = the sum of the negative inputs of channel c
    negatives = np.where(x.numpy() < 0, x.numpy(), 0).sum(axis=(0, 2, 3))
    np.testing.assert_allclose(per_channel._weight.grad.numpy(), negatives, rtol=1e-5)
    nhwc = oar.nn.PReLU(2, data_format="NHWC")
    assert nhwc(oar.ones([1, 3, 3, 2]) * -1).tolist()[0][0][0] == [-0.25, -0.25]
    assert "num_parameters=3" in repr(per_channel) and "init=0.1" in repr(per_channel)
    attr = oar.nn.ParamAttr(initializer=oar.nn.initializer.Constant(0.5))
    assert oar.nn.PReLU(weight_attr=attr)._weight.tolist() == [0.5]


def _second_order(fn, x_np: np.ndarray, eps: float = 1e-5):
    """The gradient of <v, d<w, fn(x)>/dx> by double backward, and by finite differences of the
    first-order gradient."""
    w = _rng.standard_normal(np.shape(fn(oar.to_tensor(x_np)).numpy()))
    v = _rng.standard_normal(x_np.shape)

    def first(arr, create_graph=False):
        x = oar.to_tensor(arr, stop_gradient=False)
        (g,) = oar.grad((fn(x) * oar.to_tensor(w)).sum(), x, create_graph=create_graph)
        return x, g

    x, g = first(x_np, create_graph=True)
    (analytic,) = oar.grad((g * oar.to_tensor(v)).sum(), x, allow_unused=True)  # None: piecewise linear
    numeric = np.zeros_like(x_np)
    for k in range(x_np.size):
        values = []
        for sign in (1, -1):
            shifted = x_np.copy()
            shifted.reshape(-1)[k] += sign * eps
            values.append(float((first(shifted)[1].numpy() * v).sum()))
        numeric.reshape(-1)[k] = (values[0] - values[1]) / (2 * eps)
    return np.zeros_like(x_np) if analytic is None else analytic.numpy(), numeric


@pytest.mark.parametrize("fn", [F.relu, F.gelu, lambda x: F.gelu(x, True), F.softmax, F.log_softmax,
                                lambda x: F.softmax(x, axis=0), F.silu, F.elu, F.selu, F.mish, F.softplus,
                                F.softsign, F.leaky_relu, F.hardswish],
                         ids=["relu", "gelu", "gelu_tanh", "softmax", "log_softmax", "softmax_axis0", "silu", "elu",
                              "selu", "mish", "softplus", "softsign", "leaky_relu", "hardswish"])
def test_second_order_gradients(fn):
    x = _rng.uniform(-2, 2, size=(3, 4))
    x[np.abs(x) < 0.1] = 0.4
    analytic, numeric = _second_order(fn, x)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


def test_errors_name_the_function_and_argument():
    with pytest.raises(DTypeError, match="relu: x must be a floating tensor.*int64"):
        F.relu(oar.to_tensor([1, 2]))
    with pytest.raises(DTypeError, match="softmax"):
        oar.nn.Softmax()(oar.to_tensor([1, 2]))
    with pytest.raises(ArgumentError, match="softmax: axis=2 is out of range"):
        F.softmax(oar.ones([2, 2]), axis=2)
    with pytest.raises(ArgumentError, match="selu: scale must be greater than 1.0"):
        F.selu(oar.ones([2]), scale=1.0)
    with pytest.raises(ArgumentError, match="selu: alpha"):
        F.selu(oar.ones([2]), alpha=-1.0)
    with pytest.raises(ArgumentError, match="leaky_relu: negative_slope must be a number"):
        F.leaky_relu(oar.ones([2]), negative_slope="big")
    with pytest.raises(ArgumentError, match="gelu: approximate must be a bool"):
        F.gelu(oar.ones([2]), approximate="tanh")
    with pytest.raises(ShapeError, match="prelu: weight has 2 elements"):
        F.prelu(oar.ones([1, 3, 2]), oar.ones([2]))
    with pytest.raises(ArgumentError, match="maxout: groups"):
        F.maxout(oar.ones([1, 3, 2, 2]), groups=2)
    with pytest.raises(ShapeError, match="glu: the size of axis 1"):
        F.glu(oar.ones([2, 3]))
    with pytest.raises(ArgumentError, match="softshrink: threshold"):
        F.softshrink(oar.ones([2]), threshold=-1.0)
    with pytest.raises(ArgumentError, match="hardtanh: min"):
        F.hardtanh(oar.ones([2]), min=1.0, max=0.0)
    with pytest.raises(ArgumentError, match="celu: alpha must not be 0"):
        F.celu(oar.ones([2]), alpha=0.0)


def test_relu_inplace_and_layers_registered():
    x = oar.to_tensor([-1.0, 2.0])
    assert F.relu_(x) is x and x.tolist() == [0.0, 2.0]
    from oar.plugins import registries

    layers = registries().layers
    for name in ("ReLU", "GELU", "PReLU", "Softmax", "LogSoftmax", "Hardswish", "Mish", "Softsign"):
        assert layers.get(name) is getattr(oar.nn, name)
