"""Op cases of the fused ops inference programs hold: fused_linear, fused_conv2d, max_pool_infer.

The references compose the unfused numpy references (conv's and max pooling's loops from this
folder), so each case checks the fused op against what the ops it replaces compute.
"""

from __future__ import annotations

import math

import numpy as np

from oar.nn.functional.fused import fused_conv2d, fused_linear, max_pool_infer
from oar.testing import OpCase

from .conv import ref_conv
from .pooling import ref_max_pool

_rng = np.random.default_rng(23)


def rand(*shape):
    return _rng.standard_normal(shape)


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _relu(x):
    return np.maximum(x, 0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


CASES = [
    OpCase("fused_linear", lambda x, w, b: fused_linear(x, w, b), lambda x, w, b: x @ w + b,
           [rand(3, 5), rand(5, 4), rand(4)], id="fused_linear_bias"),
    OpCase("fused_linear", lambda x, w, b: fused_linear(x, w, b, act="relu"), lambda x, w, b: _relu(x @ w + b),
           [rand(2, 3, 5), rand(5, 4), rand(4)], id="fused_linear_relu_3d"),
    OpCase("fused_linear", lambda x, w: fused_linear(x, w, act="sigmoid"), lambda x, w: _sigmoid(x @ w),
           [rand(3, 5), rand(5, 4)], id="fused_linear_no_bias_sigmoid"),
    OpCase("fused_linear", lambda x, w, b: fused_linear(x, w, b, act="gelu", act_attrs={"approximate": False}),
           lambda x, w, b: _gelu(x @ w + b), [rand(3, 5), rand(5, 4), rand(4)], id="fused_linear_gelu"),
    OpCase("fused_conv2d", lambda x, w, b: fused_conv2d(x, w, b, padding=[1, 1, 1, 1], act="relu"),
           lambda x, w, b: _relu(ref_conv(x, w, padding=1) + b.reshape(-1, 1, 1)),
           [rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4)], id="fused_conv2d_bias_relu"),
    OpCase("fused_conv2d", lambda x, w, b: fused_conv2d(x, w, b, stride=[2, 1], groups=2),
           lambda x, w, b: ref_conv(x, w, stride=[2, 1], groups=2) + b.reshape(-1, 1, 1),
           [rand(2, 4, 7, 6), rand(4, 2, 3, 2), rand(1, 4, 1, 1)], id="fused_conv2d_groups_bias_4d"),
    OpCase("fused_conv2d", lambda x, w: fused_conv2d(x, w, act="tanh"), lambda x, w: np.tanh(ref_conv(x, w)),
           [rand(1, 2, 5, 5), rand(3, 2, 2, 2)], id="fused_conv2d_no_bias_tanh"),
    OpCase("fused_conv2d", lambda x, w, b: fused_conv2d(x, w, b, padding=[1, 1, 1, 1], act="relu", max_pool=2),
           lambda x, w, b: ref_max_pool(_relu(ref_conv(x, w, padding=1) + b.reshape(-1, 1, 1)), [2, 2])[0],
           [rand(2, 3, 7, 6), rand(4, 3, 3, 3), rand(4)], id="fused_conv2d_bias_relu_max_pool"),
    OpCase("max_pool_infer", lambda x: max_pool_infer(x, [2, 2], [2, 2]), lambda x: ref_max_pool(x, [2, 2])[0],
           [rand(2, 3, 6, 8)], id="max_pool_infer_2x2"),
    OpCase("max_pool_infer", lambda x: max_pool_infer(x, [3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=True),
           lambda x: ref_max_pool(x, [3, 3], [2, 2], [1, 1, 1, 1], ceil_mode=True)[0], [rand(2, 2, 7, 6)],
           id="max_pool_infer_padded_ceil"),
    OpCase("max_pool_infer", lambda x: max_pool_infer(x, [3], [2], [1, 0]),
           lambda x: ref_max_pool(x, [3], [2], [1, 0])[0], [rand(2, 2, 9)], id="max_pool_infer_1d"),
]

# fused_elementwise (core's op) on chains with nn's activations: oar-numba's chain kernel runs these
from oar.ops import fused_elementwise  # noqa: E402

_SCALE = {"scale": 0.5, "bias": 1.0, "bias_after_scale": False}
CASES += [
    OpCase("fused_elementwise",
           lambda x, b: fused_elementwise(x, b, chain=[["add", [0, 1], {}], ["relu", [2], {}]]),
           lambda x, b: _relu(x + b), [rand(4, 6), rand(6)], id="fused_add_relu_broadcast"),
    OpCase("fused_elementwise",
           lambda x, y: fused_elementwise(x, y, chain=[["scale", [0], _SCALE], ["subtract", [2, 1], {}],
                                                       ["relu", [3], {}], ["multiply", [4, 0], {}],
                                                       ["divide", [5, 1], {}], ["neg", [6], {}], ["abs", [7], {}]]),
           lambda x, y: np.abs(-(_relu((x + 1.0) * 0.5 - y) * x / y)), [rand(3, 5), rand(3, 5) + 4.0],
           id="fused_long_chain_flat"),
    OpCase("fused_elementwise",
           lambda x, y: fused_elementwise(x, y, chain=[["multiply", [0, 1], {}], ["tanh", [2], {}],
                                                       ["silu", [3], {}]]),
           lambda x, y: (lambda t: t * _sigmoid(t))(np.tanh(x * y)), [rand(2, 1, 3), rand(4, 1)],
           id="fused_tanh_silu_reference_path"),
    OpCase("fused_elementwise", lambda x: fused_elementwise(x, chain=[["relu", [0], {}], ["scale", [1], _SCALE]]),
           lambda x: (_relu(x) + 1.0) * 0.5, [rand()], id="fused_relu_scale_0d"),
]
