"""Op cases of fused_elementwise: chains against the numpy composition of their steps."""

from __future__ import annotations

import numpy as np

from oar.ops import fused_elementwise
from oar.testing import OpCase

from ._data import positive, rand

SCALE = {"scale": 2.0, "bias": -0.5, "bias_after_scale": True}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


CASES = [
    OpCase("fused_elementwise",
           lambda x, b: fused_elementwise(x, b, chain=[["multiply", [0, 1], {}], ["add", [2, 0], {}],
                                                       ["tanh", [3], {}]]),
           lambda x, b: np.tanh(x * b + x), [rand(3, 4), rand(4)], id="fused_mul_add_tanh_broadcast"),
    OpCase("fused_elementwise",
           lambda x: fused_elementwise(x, chain=[["scale", [0], SCALE], ["sigmoid", [1], {}], ["multiply", [2, 0], {}]]),
           lambda x: _sigmoid(x * 2.0 - 0.5) * x, [rand(2, 3)], id="fused_scale_sigmoid_mul"),
    OpCase("fused_elementwise",
           lambda x, y: fused_elementwise(x, y, chain=[["divide", [0, 1], {}], ["sqrt", [2], {}], ["neg", [3], {}],
                                                       ["exp", [4], {}]]),
           lambda x, y: np.exp(-np.sqrt(x / y)), [positive(2, 1, 3), positive(4, 1)], id="fused_div_sqrt_neg_exp"),
    OpCase("fused_elementwise",
           lambda x, y: fused_elementwise(x, y, chain=[["subtract", [0, 1], {}], ["maximum", [2, 1], {}]]),
           lambda x, y: np.maximum(x - y, y), [rand(5), rand()], id="fused_sub_max_0d"),
]
