"""The convolution paths chosen by shape (pointwise, depthwise channels-last and direct loops, one output
position, gathered patches): each agrees with the numpy reference, forward and both gradients, and
a profile's Kernel Summary names the path every call took."""

from __future__ import annotations

import numpy as np
import pytest
from oar_numba import _conv

import oar
import oar.profiler as profiler
from oar.testing import sum_tolerance

REF = _conv._ref

# (x shape, weight shape, stride, padding, dilation, groups): the path each is meant to take
CASES = {
    "pointwise": ((4, 24, 2, 2), (40, 24, 1, 1), 1, 0, 1, 1),
    "channels_last": ((4, 12, 4, 4), (12, 1, 3, 3), 1, 1, 1, 12),
    "channels_last, stride 2 and dilation": ((3, 10, 9, 9), (10, 1, 3, 3), 2, 2, 2, 10),
    "direct": ((2, 6, 60, 60), (6, 1, 3, 3), 2, 1, 1, 6),
    "direct, stride 1": ((1, 3, 58, 58), (3, 1, 3, 3), 1, 1, 1, 3),
    "single": ((3, 16, 1, 1), (8, 16, 3, 3), 1, 1, 1, 1),
    "gathered": ((3, 64, 2, 2), (64, 64, 3, 3), 1, 1, 1, 1),
    "gathered, stride 2 and dilation": ((2, 48, 6, 6), (96, 48, 3, 3), 2, 2, 2, 1),
    "channels_last, 5x5 stride 2": ((2, 8, 6, 6), (8, 1, 5, 5), 2, 2, 1, 8),
}


def _arrays(case, seed=0):
    x_shape, w_shape, stride, pad, dilation, groups = CASES[case]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    args = ((stride,) * 2, (pad,) * 4, (dilation,) * 2, groups)
    y = REF._conv_kernel(x, w, *args)
    g = rng.standard_normal(y.shape).astype(np.float32)
    # the output_padding that gives x's size back, as the convolution's gradient rule asks for
    output_padding = tuple(size - ((out - 1) * stride - 2 * pad + dilation * (k - 1) + 1)
                           for size, out, k in zip(x_shape[2:], y.shape[2:], w_shape[2:]))
    return x, w, g, args, output_padding


def assert_same_sums(got, expected, terms: int):
    rtol, atol = sum_tolerance("float32", terms, scale=float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CASES)
def test_each_path_agrees_with_the_reference_forward_and_backward(case):
    x, w, g, args, output_padding = _arrays(case)
    stride, padding, dilation, groups = args
    taps = x.shape[1] // groups * w.shape[2] * w.shape[3]
    assert_same_sums(_conv.conv(x, w, *args), REF._conv_kernel(x, w, *args), taps)
    assert_same_sums(_conv.conv_weight_grad(x, g, w.shape[2:], *args),
                     REF._conv_weight_grad_kernel(x, g, w.shape[2:], *args), g[:, 0].size)
    assert_same_sums(_conv.conv_transpose(g, w, stride, padding, output_padding, dilation, groups),
                     REF._conv_transpose_kernel(g, w, stride, padding, output_padding, dilation, groups),
                     w.shape[0] * w.shape[2] * w.shape[3])


def test_the_kernel_summary_names_the_path_each_convolution_took(capsys):
    model = oar.nn.Sequential(oar.nn.Conv2D(12, 12, 3, padding=1, groups=12, bias_attr=False),
                              oar.nn.Conv2D(12, 40, 1, bias_attr=False))
    x = oar.rand([4, 12, 4, 4])
    x.stop_gradient = False  # its gradient takes the transposed depthwise path too
    with profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], on_trace_ready=None) as prof:
        model(x).sum().backward()
    prof.summary(views=[profiler.SummaryView.KernelView])
    table = capsys.readouterr().out
    assert "Kernel Summary" in table
    for line in ("conv: numba.channels_last", "conv: numba.pointwise", "conv_weight_grad: numba.channels_last",
                 "conv_weight_grad: numba.pointwise", "conv_transpose: numba.channels_last",
                 "conv_transpose: numba.pointwise"):
        assert line in table, table
