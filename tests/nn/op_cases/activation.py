"""Op cases of the activation family: each op (and its backward op) against an independent
numpy reference, plus the activations composed from core ops."""

from __future__ import annotations

import math

import numpy as np

import oar
import oar.nn.functional as F
from oar.nn.functional import activation as A
from oar.ops import dispatch
from oar.testing import OpCase

_rng = np.random.default_rng(404)
ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")


def rand(*shape, low=-2.0, high=2.0) -> np.ndarray:
    return _rng.uniform(low, high, size=shape)


def away(values: np.ndarray, points=(0.0,), margin=0.15) -> np.ndarray:
    """Values moved at least ``margin`` away from ``points`` (kinks of the function under test)."""
    out = values.copy()
    for p in points:
        close = np.abs(out - p) < margin
        out[close] = p + np.where(out[close] >= p, 1.0, -1.0) * 2 * margin
    return out


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x, approximate=False):
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_derivative(x, approximate=False):
    if approximate:
        k = math.sqrt(2.0 / math.pi)
        t = np.tanh(k * (x + 0.044715 * x ** 3))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t ** 2) * k * (1.0 + 3 * 0.044715 * x ** 2)
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * np.exp(-x * x / 2) / math.sqrt(2.0 * math.pi)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    return np.log(_softmax(x, axis))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log(1.0 + np.exp(np.minimum(beta * x, threshold))) / beta)


def _call(op, attrs=None):
    return lambda *ts: dispatch(op, ts, dict(attrs or {}))


X = rand(3, 4)
X_KINK0 = away(rand(3, 4))
G = rand(3, 4)
SOFTMAX_OUT = _softmax(rand(3, 4))
LOG_SOFTMAX_OUT = _log_softmax(rand(2, 5))

CASES = [
    # -- relu and its backward ---------------------------------------------------------------------
    OpCase("relu", F.relu, lambda x: np.maximum(x, 0), [X_KINK0], dtypes=ALL_FLOATS),
    OpCase("relu", F.relu, lambda x: np.maximum(x, 0), [away(rand()), ], id="relu_0d"),
    OpCase("relu", oar.nn.ReLU(), lambda x: np.maximum(x, 0), [away(rand(2, 0, 3))], id="relu_empty", grad=False),
    OpCase("relu_grad", _call(A.relu_grad_op), lambda out, g: np.where(out > 0, g, 0.0), [X_KINK0, G]),
    # -- gelu, exact and tanh, and its backward --------------------------------------------------------
    OpCase("gelu", F.gelu, _gelu, [X], dtypes=ALL_FLOATS),
    OpCase("gelu", lambda x: F.gelu(x, approximate=True), lambda x: _gelu(x, True), [X], id="gelu_tanh"),
    OpCase("gelu_grad", _call(A.gelu_grad_op, {"approximate": False}), lambda x, g: g * _gelu_derivative(x),
           [X, G]),
    OpCase("gelu_grad", _call(A.gelu_grad_op, {"approximate": True}), lambda x, g: g * _gelu_derivative(x, True),
           [X, G], id="gelu_grad_tanh"),
    # -- softmax, log_softmax and their backward ops ----------------------------------------------------
    OpCase("softmax", F.softmax, _softmax, [rand(3, 4)], dtypes=ALL_FLOATS),
    OpCase("softmax", lambda x: F.softmax(x, axis=1), lambda x: _softmax(x, 1), [rand(2, 3, 4) * 3], id="softmax_axis1"),
    OpCase("softmax", lambda x: F.softmax(x, axis=0), lambda x: _softmax(x, 0), [rand(4, 2) * 40], id="softmax_large"),
    OpCase("softmax", F.softmax, lambda x: np.ones_like(x), [rand()], id="softmax_0d"),
    OpCase("softmax", lambda x: F.softmax(x, dtype="float64"), lambda x: _softmax(x), [rand(2, 3)], id="softmax_dtype",
           dtypes=("float32",)),
    OpCase("softmax_grad", _call(A.softmax_grad_op, {"axis": 1}),
           lambda y, g: y * (g - (g * y).sum(axis=1, keepdims=True)), [SOFTMAX_OUT, G]),
    OpCase("log_softmax", F.log_softmax, _log_softmax, [rand(3, 4)], dtypes=ALL_FLOATS),
    OpCase("log_softmax", lambda x: F.log_softmax(x, 0), lambda x: _log_softmax(x, 0), [rand(3, 2) * 50],
           id="log_softmax_axis0_large"),
    OpCase("log_softmax_grad", _call(A.log_softmax_grad_op, {"axis": 1}),
           lambda y, g: g - np.exp(y) * g.sum(axis=1, keepdims=True), [LOG_SOFTMAX_OUT, rand(2, 5)]),
    # -- elementwise activations ---------------------------------------------------------------------
    OpCase("silu", F.silu, lambda x: x * _sigmoid(x), [X], dtypes=ALL_FLOATS),
    OpCase("silu", F.swish, lambda x: x * _sigmoid(x), [rand(2, 3) * 30], id="swish_wide"),
    OpCase("leaky_relu", F.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x), [X_KINK0], dtypes=ALL_FLOATS),
    OpCase("leaky_relu", lambda x: F.leaky_relu(x, 0.3), lambda x: np.where(x > 0, x, 0.3 * x), [X_KINK0],
           id="leaky_relu_slope"),
    OpCase("elu", F.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1), [X_KINK0], dtypes=ALL_FLOATS),
    OpCase("elu", lambda x: F.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), [X_KINK0],
           id="elu_alpha"),
    OpCase("selu", F.selu, lambda x: A.SELU_SCALE * np.where(x > 0, x, A.SELU_ALPHA * (np.exp(x) - 1)), [X_KINK0]),
    OpCase("selu", lambda x: F.selu(x, 1.5, 2.0), lambda x: 1.5 * np.where(x > 0, x, 2.0 * (np.exp(x) - 1)),
           [X_KINK0], id="selu_args"),
    OpCase("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x * 0.1666667 + 0.5, 0, 1),
           [away(rand(3, 4) * 3, (-3.0, 3.0))], dtypes=ALL_FLOATS),
    OpCase("hardsigmoid", lambda x: F.hardsigmoid(x, slope=0.2, offset=0.4), lambda x: np.clip(0.2 * x + 0.4, 0, 1),
           [away(rand(3, 4) * 3, (-2.0, 3.0))], id="hardsigmoid_args"),
    OpCase("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, [away(rand(3, 4) * 3, (-3.0, 3.0))],
           dtypes=ALL_FLOATS),
    OpCase("softplus", F.softplus, _softplus, [X], dtypes=ALL_FLOATS),
    OpCase("softplus", lambda x: F.softplus(x, beta=2.0, threshold=1.5), lambda x: _softplus(x, 2.0, 1.5),
           [away(rand(3, 4), (0.75,))], id="softplus_beta_threshold"),
    OpCase("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), [X], dtypes=ALL_FLOATS),
    OpCase("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), [X], dtypes=ALL_FLOATS),
    OpCase("mish", F.mish, lambda x: x * np.tanh(_softplus(x)), [np.array([-30.0, 25.0, 0.5])], id="mish_threshold"),
    # -- compositions of core ops ----------------------------------------------------------------------
    OpCase("clip", F.relu6, lambda x: np.clip(x, 0, 6), [away(rand(3, 4) * 5, (0.0, 6.0))]),
    OpCase("clip", F.hardtanh, lambda x: np.clip(x, -1, 1), [away(rand(3, 4), (-1.0, 1.0))]),
    OpCase("where", F.celu, lambda x: np.where(x > 0, x, np.exp(x) - 1), [X_KINK0]),
    OpCase("where", lambda x: F.celu(x, 2.0), lambda x: np.where(x > 0, x, 2.0 * (np.exp(x / 2.0) - 1)), [X_KINK0],
           id="celu_alpha"),
    OpCase("where", F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0), [away(X, (-0.5, 0.5))]),
    OpCase("where", F.softshrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)),
           [away(X, (-0.5, 0.5))], id="softshrink"),
    OpCase("where", lambda x: F.thresholded_relu(x, 0.5, -1.0), lambda x: np.where(x > 0.5, x, -1.0),
           [away(X, (0.5,))], id="thresholded_relu"),
    OpCase("tanh", F.tanhshrink, lambda x: x - np.tanh(x), [X]),
    OpCase("softplus", F.log_sigmoid, lambda x: np.log(_sigmoid(x)), [X], id="log_sigmoid"),
    OpCase("sigmoid", F.glu, lambda x: x[:, :2] * _sigmoid(x[:, 2:]), [rand(3, 4)], id="glu"),
    OpCase("max", lambda x: F.maxout(x, 2), lambda x: x.reshape(1, 2, 2, 2, 2).max(axis=2),
           [rand(1, 4, 2, 2)], id="maxout"),
    OpCase("where", F.prelu, lambda x, w: np.where(x > 0, x, x * w), [X_KINK0, np.array([0.25])], id="prelu_shared"),
    OpCase("where", F.prelu, lambda x, w: np.where(x > 0, x, x * w.reshape(1, 3, 1, 1)),
           [away(rand(2, 3, 2, 2)), rand(3)], id="prelu_channels"),
    OpCase("where", lambda x, w: F.prelu(x, w, data_format="NHWC"),
           lambda x, w: np.where(x > 0, x, x * w.reshape(1, 1, 1, 3)), [away(rand(2, 2, 2, 3)), rand(3)],
           id="prelu_nhwc"),
    OpCase("where", F.prelu, lambda x, w: np.where(x > 0, x, x * w[None]), [away(rand(2, 3, 2)), rand(3, 2)],
           id="prelu_elementwise"),
]
