"""The gpu's convolution kernels beyond the op table: float16, bfloat16 and float64 against the
cpu, odd sizes, strides, padding, dilation, groups, depthwise (the direct kernel), 1x1, 5x5 and
7x7 kernels, channel-last (strided) inputs, conv_weight_grad's split reduction, fused_conv2d's
activations, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, ShapeError
from oar.nn.functional.conv import conv_transpose_op, conv_weight_grad_op
from oar.nn.functional.fused import fused_conv2d
from oar.ops import dispatch

rng = np.random.default_rng(3)
HALVES = ["float16", "bfloat16"]


def run(fn, arrays, dtype: str, device: str) -> list[np.ndarray]:
    """``fn`` on tensors of ``arrays`` (in ``dtype``) on ``device``: its outputs as numpy arrays."""
    target = oar.ops.get_dtype(dtype).np
    outs = fn(*[oar.to_tensor(a.astype(target), place=device) for a in arrays])
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    for o in outs:
        assert o.place.backend == device
    return [o.numpy() for o in outs]


def check(fn, arrays, dtype: str, terms: int, where: str) -> None:
    got, expected = run(fn, arrays, dtype, "gpu"), run(fn, arrays, dtype, "cpu")
    assert_same(got, expected, dtype, f"{where} [{dtype}]", terms=terms)


def conv_taps(w: np.ndarray) -> int:
    return int(np.prod(w.shape[1:]))


# (x shape, w shape, conv2d keyword arguments): each runs the GEMM kernel unless depthwise
CONV2D = {
    "odd_stride2_pad1_3x3": ((2, 3, 7, 7), (8, 3, 3, 3), {"stride": 2, "padding": 1}),
    "dilation2_asymmetric_padding": ((2, 4, 7, 6), (5, 4, 3, 2), {"padding": [2, 0, 1, 1], "dilation": 2}),
    "groups2": ((2, 6, 7, 7), (8, 3, 3, 3), {"padding": 1, "groups": 2}),
    "depthwise": ((2, 6, 7, 7), (6, 1, 3, 3), {"stride": 2, "padding": 1, "groups": 6}),
    "depthwise_multiplier2_5x5": ((2, 3, 7, 7), (6, 1, 5, 5), {"padding": 2, "groups": 3}),
    "1x1_groups2_two_column_tiles": ((2, 8, 7, 7), (136, 4, 1, 1), {"groups": 2}),
    "5x5_stride2": ((2, 3, 7, 7), (4, 3, 5, 5), {"stride": 2, "padding": 2}),
    "7x7_more_columns_than_a_tile": ((2, 3, 7, 7), (70, 3, 7, 7), {"padding": 3}),
}


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
@pytest.mark.parametrize("name", list(CONV2D))
def test_conv2d_matches_the_cpu(name, dtype):
    xs, ws, kwargs = CONV2D[name]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check(lambda x, w: F.conv2d(x, w, **kwargs), [x, w], dtype, conv_taps(w), f"conv2d {name}")


@pytest.mark.parametrize("name", ["groups2", "depthwise_multiplier2_5x5"])
def test_conv2d_in_float64(name):
    xs, ws, kwargs = CONV2D[name]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check(lambda x, w: F.conv2d(x, w, **kwargs), [x, w], "float64", conv_taps(w), f"conv2d {name}")


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_conv2d_of_a_channel_last_input_reads_it_through_its_strides(dtype):
    x, w, b = rng.standard_normal((2, 7, 5, 3)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    check(lambda x, w, b: F.conv2d(x, w, b, stride=[2, 1], padding=1, data_format="NHWC"), [x, w, b], dtype, 27,
          "conv2d NHWC")
    dw = rng.standard_normal((6, 1, 3, 3))
    check(lambda x, w: F.conv2d(x, w, padding=1, groups=3, data_format="NHWC"), [x, dw], dtype, 9,
          "depthwise conv2d NHWC")


def test_conv2d_of_a_broadcast_weight_reads_it_through_its_strides():
    # an expanded [1, C, k, k] weight: stride 0 along the output channels, never copied
    x, w = rng.standard_normal((2, 3, 7, 7)), rng.standard_normal((1, 3, 3, 3))
    check(lambda x, w: F.conv2d(x, oar.expand(w, [20, 3, 3, 3]), padding=1), [x, w], "float32", 27,
          "conv2d broadcast weight")
    check(lambda x, w: F.conv2d(x, oar.expand(w, [3, 1, 3, 3]), padding=1, groups=3), [x, w[:, :1]], "float32", 9,
          "depthwise conv2d broadcast weight")


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_conv1d_and_conv3d(dtype):
    x, w = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 2, 3))
    check(lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2), [x, w], dtype, 6, "conv1d")
    x, w = rng.standard_normal((2, 3, 5, 4, 5)), rng.standard_normal((4, 3, 3, 2, 3))
    check(lambda x, w: F.conv3d(x, w, stride=[2, 1, 2], padding=1), [x, w], dtype, 54, "conv3d")


# (x shape, w shape, attributes) of conv's two adjoints, as conv's gradient dispatches them
TRANSPOSED = {
    "stride2_padding_output_padding": ((2, 4, 4, 4), (4, 3, 3, 3),
                                       {"stride": [2, 2], "padding": [1, 1, 1, 0], "output_padding": [1, 0],
                                        "dilation": [1, 1], "groups": 1}),
    "groups_dilation": ((2, 4, 5, 3), (4, 2, 3, 2),
                        {"stride": [1, 2], "padding": [0, 0, 1, 1], "output_padding": [0, 1], "dilation": [2, 1],
                         "groups": 2}),
    "depthwise_stride2": ((2, 5, 4, 4), (5, 1, 3, 3),
                          {"stride": [2, 2], "padding": [1, 1, 1, 1], "output_padding": [1, 1], "dilation": [1, 1],
                           "groups": 5}),
}


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
@pytest.mark.parametrize("name", list(TRANSPOSED))
def test_conv_transpose_matches_the_cpu(name, dtype):
    xs, ws, attrs = TRANSPOSED[name]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check(lambda x, w: dispatch(conv_transpose_op, (x, w), attrs), [x, w], dtype, xs[1] * 9, f"conv_transpose {name}")


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_conv_weight_grad_splits_a_long_reduction(dtype):
    # 2 * 13 * 13 = 338 (sample, position) terms: 11 steps of 32, split in two parts, summed
    x, g = rng.standard_normal((2, 4, 13, 13)), rng.standard_normal((2, 6, 13, 13))
    attrs = {"kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 2}
    check(lambda x, g: dispatch(conv_weight_grad_op, (x, g), attrs), [x, g], dtype, 338, "conv_weight_grad split")


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_conv2d_gradients_match_the_cpu(dtype):
    # conv2d's rule: conv_transpose for x, conv_weight_grad for w (strided, dilated, grouped)
    x, w = rng.standard_normal((2, 4, 7, 7)), rng.standard_normal((6, 2, 3, 3))
    target = oar.ops.get_dtype(dtype).np
    grads = {}
    for device in ("gpu", "cpu"):
        xt = oar.to_tensor(x.astype(target), place=device, stop_gradient=False)
        wt = oar.to_tensor(w.astype(target), place=device, stop_gradient=False)
        y = F.conv2d(xt, wt, stride=2, padding=[1, 2, 0, 1], dilation=[1, 2], groups=2)
        y.backward(oar.to_tensor(np.ones(y.shape, target), place=device))
        grads[device] = [xt.grad.numpy(), wt.grad.numpy()]
    assert_same(grads["gpu"], grads["cpu"], dtype, f"conv2d gradients [{dtype}]", terms=2 * 4 * 4)


ACTS = [("relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("gelu", {"approximate": False}),
        ("gelu", {"approximate": True}), ("silu", {}), ("sigmoid", {}), ("tanh", {}), ("elu", {"alpha": 0.5}),
        ("hardswish", {}), ("hardsigmoid", {"slope": 0.2, "offset": 0.4}),
        ("softplus", {"beta": 2.0, "threshold": 3.0}), ("mish", {})]


@pytest.mark.parametrize(("act", "act_attrs"), ACTS, ids=[f"{a}{list(k.values())}" for a, k in ACTS])
def test_fused_conv2d_applies_each_activation_in_its_epilogue(act, act_attrs):
    x, w, b = rng.standard_normal((2, 3, 7, 7)) * 2, rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    check(lambda x, w, b: fused_conv2d(x, w, b, padding=[1, 1, 1, 1], act=act, act_attrs=act_attrs), [x, w, b],
          "float32", 27, f"fused_conv2d {act}")


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_fused_conv2d_depthwise_with_bias_relu6_and_max_pool(dtype):
    x, w, b = rng.standard_normal((2, 4, 7, 7)) * 4, rng.standard_normal((4, 1, 3, 3)), rng.standard_normal(4)
    target = oar.ops.get_dtype(dtype).np
    got = fused_conv2d(*[oar.to_tensor(a.astype(target), place="gpu") for a in (x, w, b)], padding=[1, 1, 1, 1],
                       groups=4, act="relu6", max_pool=2).numpy()
    y = F.conv2d(*[oar.to_tensor(a.astype(target), place="cpu") for a in (x, w, b)], padding=1, groups=4)
    expected = F.max_pool2d(oar.clip(y, 0.0, 6.0), 2).numpy()
    assert got.shape == (2, 4, 3, 3) and got.max() <= 6.0
    assert_same([got], [expected], dtype, f"fused_conv2d depthwise [{dtype}]", terms=9)


def test_an_empty_batch_gives_empty_outputs_and_zero_weight_gradients(gpu):
    x, w = oar.zeros([0, 4, 5, 5]), oar.ones([6, 2, 3, 3])
    assert F.conv2d(x, w, groups=2).shape == [0, 6, 3, 3]
    attrs = {"kernel_size": [3, 3], "stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 2}
    gw = dispatch(conv_weight_grad_op, (x, oar.zeros([0, 6, 3, 3])), attrs)
    np.testing.assert_array_equal(gw.numpy(), np.zeros((6, 2, 3, 3), np.float32))


def test_fused_conv2d_refuses_an_unknown_activation_and_a_3d_input(gpu):
    x, w = oar.ones([1, 2, 4, 4]), oar.ones([2, 2, 3, 3])
    with pytest.raises(ArgumentError, match="fused_conv2d: act must be None or one of"):
        fused_conv2d(x, w, act="softmax")
    with pytest.raises(ShapeError, match=r"fused_conv2d: x must be 4-d \[N, C, H, W\]"):
        fused_conv2d(oar.ones([1, 2, 4]), oar.ones([2, 2, 3]))
