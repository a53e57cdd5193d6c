"""bfloat16 (an ml_dtypes dtype, numpy kind 'V') is a floating dtype to autograd: results computed
from a bfloat16 tensor that needs a gradient need one too, in eager code and through a PyLayer."""

from __future__ import annotations

import numpy as np

import oar


def test_bfloat16_results_carry_gradients_back():
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    low = x.astype("bfloat16")
    y = low * low
    assert not low.stop_gradient and not y.stop_gradient
    y.astype("float32").sum().backward()
    assert x.grad.dtype == oar.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_a_pylayer_output_in_bfloat16_is_differentiable():
    class Double(oar.autograd.PyLayer):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = oar.to_tensor([1.0, -1.0], stop_gradient=False)
    out = Double.apply(x.astype("bfloat16"))
    assert not out.stop_gradient
    out.astype("float32").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
