"""Pooling, padding and sampling added for Paddle API breadth (issue #19): lp pooling, max
unpooling, fractional max pooling, the 3-D pooling layers, the mode-specific pad layers,
Fold/Unfold, affine_grid, grid_sample and temporal_shift.

The ops themselves (unfold/fold and the pooling ops through the 3-D functions) are in the op
table (tests/nn/op_cases/sliding.py); the functions here compose ops, so they are checked against
loop-by-loop numpy references (or numbers recorded from Paddle 3.3.1 where the windows are
Paddle's own pseudo-random sequence) and their gradients against finite differences in float64.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn
from oar.errors import ArgumentError, ShapeError
from oar.testing import TOLERANCES, OpCase, check_grad

_rng = np.random.default_rng(19)
RTOL, ATOL = TOLERANCES["float64"]


def rand(*shape, low=-1.0, high=1.0):
    return _rng.uniform(low, high, size=shape)


def check_gradient(fn, *arrays, grad_inputs=None):
    """The autograd gradient of a composed function against central finite differences (float64)."""
    check_grad(OpCase("composed", fn, lambda *a: None, list(arrays), grad_inputs=grad_inputs))


def run(fn, *arrays):
    out = fn(*[oar.to_tensor(a) for a in arrays])
    return [o.numpy() for o in out] if isinstance(out, (tuple, list)) else out.numpy()


# -- lp pooling ----------------------------------------------------------------------------------
def ref_lp_pool(x, p, kernel, stride, pads, ceil_mode=False):
    """(sum of x ** p over the input elements of each window) ** (1 / p); pads are (before, after) per dim."""
    sizes = x.shape[2:]
    ranges = []
    for size, k, s, (before, after) in zip(sizes, kernel, stride, pads):
        n = (size + before + after - k + (s - 1 if ceil_mode else 0)) // s + 1
        ranges.append([(max(i * s - before, 0), min(i * s - before + k, size)) for i in range(n)])
    out = np.zeros(x.shape[:2] + tuple(len(r) for r in ranges))
    for index in itertools.product(*[range(len(r)) for r in ranges]):
        window = x[(Ellipsis, *(slice(*ranges[d][i]) for d, i in enumerate(index)))]
        total = window.reshape(*x.shape[:2], -1)
        out[(Ellipsis, *index)] = total.max(-1) if p == math.inf else (total ** p).sum(-1) ** (1 / p)
    return out


@pytest.mark.parametrize("p, kernel, stride, padding, ceil_mode", [
    (2, 3, 2, 1, False), (3, 2, 1, 0, True), (1.5, 3, 2, 0, True), (math.inf, 2, 2, 1, False)])
def test_lp_pool1d_matches_the_window_sums(p, kernel, stride, padding, ceil_mode):
    x = rand(1, 2, 7, low=0.2, high=1.5)  # positive: an odd p of a negative sum is NaN, as in Paddle
    out = run(lambda t: F.lp_pool1d(t, p, kernel, stride, padding, ceil_mode), x)
    ref = ref_lp_pool(x, p, [kernel], [stride], [(padding, padding)], ceil_mode)
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
    check_gradient(lambda t: F.lp_pool1d(t, p, kernel, stride, padding, ceil_mode), x)


def test_lp_pool2d_matches_the_window_sums_in_both_layouts():
    x = rand(1, 2, 5, 6, low=0.2, high=1.5)
    ref = ref_lp_pool(x, 2.5, [2, 3], [2, 1], [(1, 1), (0, 0)], True)
    np.testing.assert_allclose(run(lambda t: F.lp_pool2d(t, 2.5, [2, 3], [2, 1], [1, 0], True), x), ref,
                               rtol=RTOL, atol=ATOL)
    nhwc = run(lambda t: F.lp_pool2d(t, 2.5, [2, 3], [2, 1], [1, 0], True, data_format="NHWC"), x.transpose(0, 2, 3, 1))
    np.testing.assert_allclose(nhwc, ref.transpose(0, 2, 3, 1), rtol=RTOL, atol=ATOL)
    check_gradient(lambda t: F.lp_pool2d(t, 2.5, [2, 3], [2, 1], [1, 0]), x)  # no window of padding only
    layer = nn.LPPool2D(2.5, [2, 3], [2, 1], [1, 0], True)
    np.testing.assert_allclose(layer(oar.to_tensor(x)).numpy(), ref, rtol=RTOL, atol=ATOL)
    assert nn.LPPool2d is nn.LPPool2D and nn.LPPool1d is nn.LPPool1D


def test_lp_pool_matches_recorded_paddle_values():
    # Paddle 3.3.1's outputs
    x = oar.to_tensor([[[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]]])
    np.testing.assert_allclose(F.lp_pool1d(x, 3, 3, stride=2, padding=1, ceil_mode=True).numpy(),
                               [[[1.0400419, 2.3130326, 3.6993182, 4.1188307]]], rtol=1e-5)
    x2 = oar.to_tensor(np.arange(1, 21, dtype="float32").reshape(1, 1, 4, 5) / 10)
    np.testing.assert_allclose(F.lp_pool2d(x2, 1.5, [2, 3], stride=[2, 1], padding=[0, 1]).numpy(), [[[
        [1.1112828, 1.6144540, 1.9206400, 2.2345107, 1.8224880],
        [3.5570371, 4.8272014, 5.1548481, 5.4828038, 4.3078237]]]], rtol=1e-5)
    np.testing.assert_allclose(F.lp_pool2d(x2, float("inf"), 2).numpy(), [[[[0.7, 0.9], [1.7, 1.9]]]], rtol=1e-6)


def test_lp_pool_rejects_a_zero_norm():
    with pytest.raises(ArgumentError, match="lp_pool1d: norm_type"):
        F.lp_pool1d(oar.ones([1, 1, 4]), 0, 2)
    with pytest.raises(ArgumentError, match="LPPool2D: norm_type"):
        nn.LPPool2D("2", 2)


# -- max unpooling -------------------------------------------------------------------------------
def ref_max_unpool(x, indices, out_sizes):
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    planes = out.reshape(*x.shape[:2], -1)
    for index in np.ndindex(*x.shape):
        planes[index[:2] + (indices[index],)] = x[index]  # later windows overwrite, as in Paddle
    return out


@pytest.mark.parametrize("nd, shape, kernel, stride, padding", [
    (1, (2, 3, 9), 3, 2, 1), (2, (1, 2, 5, 6), 2, None, 0), (2, (1, 1, 7, 5), [3, 2], [2, 1], [1, 0]),
    (3, (1, 2, 4, 4, 6), 2, 2, 0)])
def test_max_unpool_writes_the_pooled_values_back_at_the_mask(nd, shape, kernel, stride, padding):
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nd - 1]
    x = rand(*shape)
    pooled, mask = pool(oar.to_tensor(x), kernel, stride, padding, return_mask=True)
    out = unpool(pooled, mask, kernel, stride, padding)
    k = [kernel] * nd if isinstance(kernel, int) else kernel
    s = k if stride is None else [stride] * nd if isinstance(stride, int) else stride
    p = [padding] * nd if isinstance(padding, int) else padding
    sizes = [(n - 1) * si - 2 * pi + ki for n, ki, si, pi in zip(pooled.shape[2:], k, s, p)]
    np.testing.assert_array_equal(out.numpy(), ref_max_unpool(pooled.numpy(), mask.numpy(), sizes))
    # Paddle's gradient gathers at the mask, so a value another window overwrote still gets one
    # (not the finite difference, 0): checked as such, and against finite differences without repeats
    values = oar.to_tensor(pooled.numpy().astype(np.float64), stop_gradient=False)
    weights = rand(*out.shape)
    (unpool(values, mask, kernel, stride, padding) * oar.to_tensor(weights)).sum().backward()
    planes = weights.reshape(*weights.shape[:2], -1)
    gathered = np.take_along_axis(planes, mask.numpy().reshape(*mask.shape[:2], -1), axis=2)
    np.testing.assert_allclose(values.grad.numpy(), gathered.reshape(pooled.shape), rtol=RTOL, atol=ATOL)
    if stride is None or stride == kernel:
        check_gradient(lambda t: unpool(t, mask, kernel, stride, padding), pooled.numpy().astype(np.float64))
    layer = (nn.MaxUnPool1D, nn.MaxUnPool2D, nn.MaxUnPool3D)[nd - 1](kernel, stride, padding)
    np.testing.assert_array_equal(layer(pooled, mask).numpy(), out.numpy())


def test_max_unpool_output_size_and_repeated_indices():
    x = oar.to_tensor([[[1.0, 2.0, 3.0]]])
    # two windows pointing at one position: the later value stays (Paddle 3.3.1 gives [3, 2, 0, 0, 0, 0])
    out = F.max_unpool1d(x, oar.to_tensor([[[1, 1, 0]]], dtype="int32"), 2)
    assert out.tolist() == [[[3.0, 2.0, 0.0, 0.0, 0.0, 0.0]]]
    pooled, mask = F.max_pool2d(oar.rand([1, 1, 4, 4]), 2, return_mask=True)
    assert F.max_unpool2d(pooled, mask.astype("int64"), 2, output_size=[5, 5]).shape == [1, 1, 5, 5]
    assert F.max_unpool2d(pooled, mask, 2, output_size=[1, 1, 5, 5]).shape == [1, 1, 5, 5]
    with pytest.raises(ArgumentError, match="max_unpool2d: output_size"):
        F.max_unpool2d(pooled, mask, 2, output_size=[7, 4])
    with pytest.raises(ArgumentError, match="max_unpool2d: indices"):
        F.max_unpool2d(pooled, mask + 100, 2)
    with pytest.raises(ShapeError, match="max_unpool2d: indices"):
        F.max_unpool2d(pooled, mask.astype("float32"), 2)


# -- fractional max pooling ----------------------------------------------------------------------
# Paddle 3.3.1's windows [starts, ends) per (input size, output size, kernel (0: disjoint), u)
PADDLE_FRACTIONAL_WINDOWS = [
    ((7, 5, 0, 0.95), ([0, 1, 3, 4, 5], [1, 3, 4, 5, 7])),
    ((5, 3, 0, 0.5), ([0, 2, 4], [2, 4, 5])),
    ((5, 3, 0, 0.95), ([0, 1, 3], [1, 3, 5])),
    ((9, 3, 2, 0.3), ([0, 3, 7], [2, 5, 9])),
    ((10, 3, 3, 0.9), ([0, 3, 7], [3, 6, 10])),
    ((5, 3, 2, 0.5), ([0, 2, 3], [2, 4, 5])),
]


@pytest.mark.parametrize("args, windows", PADDLE_FRACTIONAL_WINDOWS)
def test_fractional_windows_are_paddles(args, windows):
    from oar.nn.functional.pooling import fractional_bounds

    starts, ends = fractional_bounds(*args)
    assert (starts.tolist(), ends.tolist()) == windows


def test_fractional_max_pool_matches_recorded_paddle_values():
    # Paddle 3.3.1's outputs and masks on a permutation of 0..41 (and of 0..59 in 3-D)
    x = oar.to_tensor((np.arange(42) * 17 % 42).reshape(1, 1, 6, 7).astype("float32"))
    out, mask = F.fractional_max_pool2d(x, [3, 4], random_u=0.6, return_mask=True)
    assert out.tolist() == [[[[35, 34, 36, 18], [38, 37, 29, 39], [31, 41, 40, 32]]]]
    assert mask.tolist() == [[[[7, 2, 12, 6], [22, 17, 19, 27], [29, 37, 32, 34]]]]
    out, mask = F.fractional_max_pool2d(x, [3, 3], kernel_size=[3, 2], random_u=0.25, return_mask=True)
    assert out.tolist() == [[[[35, 37, 36], [38, 37, 39], [38, 40, 39]]]]
    assert mask.tolist() == [[[[7, 17, 12], [22, 17, 27], [22, 32, 27]]]]
    x3 = oar.to_tensor((np.arange(60) * 7 % 60).reshape(1, 1, 3, 4, 5).astype("float32"))
    out, mask = nn.FractionalMaxPool3D([2, 2, 3], random_u=0.4, return_mask=True)(x3)
    assert out.tolist() == [[[[[55, 49, 56], [52, 59, 58]], [[47, 54, 43], [57, 39, 53]]]]]
    assert mask.tolist() == [[[[[25, 7, 8], [16, 17, 34]], [[41, 42, 49], [51, 57, 59]]]]]
    docs = oar.to_tensor([[[[2.0, 4, 3, 1, 5, 2, 3]]]])  # Paddle's documented example
    assert F.fractional_max_pool2d(docs, [1, 5], random_u=0.3).tolist() == [[[[2.0, 4.0, 1.0, 5.0, 3.0]]]]


def test_fractional_max_pool_gradient_and_random_u():
    x = rand(1, 2, 7, 6)
    check_gradient(lambda t: F.fractional_max_pool2d(t, [3, 4], random_u=0.7), x)
    check_gradient(lambda t: F.fractional_max_pool3d(t, 2, kernel_size=2, random_u=0.2), rand(1, 1, 4, 5, 4))
    oar.seed(5)
    first = nn.FractionalMaxPool2D(3)(oar.to_tensor(x)).numpy()
    oar.seed(5)
    np.testing.assert_array_equal(nn.FractionalMaxPool2D(3)(oar.to_tensor(x)).numpy(), first)
    with pytest.raises(ArgumentError, match="random_u"):
        F.fractional_max_pool2d(oar.to_tensor(x), 3, random_u=1.0)
    with pytest.raises(ShapeError, match="too small"):
        F.fractional_max_pool2d(oar.to_tensor(x), [6, 6], kernel_size=2, random_u=0.5)


# -- 3-D pooling layers and aliases ------------------------------------------------------------------
def test_3d_pooling_layers_call_their_functions():
    x = oar.to_tensor(rand(2, 3, 4, 6, 5))
    pairs = [
        (nn.MaxPool3D(2, 2, 1, ceil_mode=True), F.max_pool3d(x, 2, 2, 1, ceil_mode=True)),
        (nn.AvgPool3D(3, 1, 1, exclusive=False), F.avg_pool3d(x, 3, 1, 1, exclusive=False)),
        (nn.AdaptiveAvgPool3D([2, None, 3]), F.adaptive_avg_pool3d(x, [2, None, 3])),
        (nn.AdaptiveMaxPool3D(2), F.adaptive_max_pool3d(x, 2)),
    ]
    for layer, expected in pairs:
        np.testing.assert_array_equal(layer(x).numpy(), expected.numpy())
    out, mask = nn.AdaptiveMaxPool3d(2, return_mask=True)(x)
    assert mask.dtype == oar.int32 and out.shape == mask.shape == [2, 3, 2, 2, 2]
    assert nn.AdaptiveMaxPool1d is nn.AdaptiveMaxPool1D and nn.AdaptiveMaxPool2d is nn.AdaptiveMaxPool2D
    with pytest.raises(ArgumentError, match="MaxPool3D"):
        nn.MaxPool3D(0)


# -- padding layers ----------------------------------------------------------------------------------
NUMPY_MODES = {"Circular": "wrap", "Reflection": "reflect", "Replication": "edge"}


@pytest.mark.parametrize("kind", ["Circular", "Reflection", "Replication", "Constant", "Zero"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_layers_match_numpy_pad(kind, nd):
    x = rand(2, 3, *[4, 5, 3][:nd])
    padding = [1, 2, 2, 1, 0, 1][:2 * nd]  # from the last dim: [left, right, top, bottom, front, back]
    widths = [(0, 0), (0, 0)] + [(padding[2 * i], padding[2 * i + 1]) for i in reversed(range(nd))]
    if kind == "Constant":
        layer, ref = getattr(nn, f"ConstantPad{nd}D")(padding, 2.5), np.pad(x, widths, constant_values=2.5)
    elif kind == "Zero":
        layer, ref = getattr(nn, f"ZeroPad{nd}D")(padding), np.pad(x, widths)
    else:
        layer, ref = getattr(nn, f"{kind}Pad{nd}D")(padding), np.pad(x, widths, mode=NUMPY_MODES[kind])
    np.testing.assert_array_equal(layer(oar.to_tensor(x)).numpy(), ref)
    if kind != "Zero":
        assert getattr(nn, f"{kind}Pad{nd}d") is type(layer)


def test_pad_layers_take_one_int_and_channel_last():
    x = rand(1, 4, 3, 2)
    out = nn.ReplicationPad2D(1, data_format="NHWC")(oar.to_tensor(x)).numpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="edge"))
    assert nn.CircularPad3D(1)(oar.ones([1, 1, 2, 2, 2])).shape == [1, 1, 4, 4, 4]
    with pytest.raises(ArgumentError, match="ReflectionPad1D: padding"):
        nn.ReflectionPad1D([1, 2, 3])


# -- Fold / Unfold layers ------------------------------------------------------------------------------
def test_fold_and_unfold_layers_are_adjoint():
    x, cols = rand(2, 3, 5, 6), rand(2, 3 * 4, 3 * 7)
    unfold, fold = nn.Unfold([2, 2], dilations=[2, 1], paddings=1, strides=[2, 1]), nn.Fold(
        [5, 6], [2, 2], dilations=[2, 1], paddings=1, strides=[2, 1])
    unfolded = unfold(oar.to_tensor(x)).numpy()
    assert unfolded.shape == cols.shape
    # <unfold(x), cols> == <x, fold(cols)>
    np.testing.assert_allclose((unfolded * cols).sum(), (x * fold(oar.to_tensor(cols)).numpy()).sum(), rtol=1e-12)
    with pytest.raises(ShapeError, match="fold"):
        F.fold(oar.to_tensor(cols), [4, 4], 2)
    with pytest.raises(ArgumentError, match="unfold: paddings"):
        F.unfold(oar.to_tensor(x), 2, paddings=[1, 2, 3])


# -- affine_grid, grid_sample, temporal_shift -------------------------------------------------------
def ref_affine_grid(theta, shape, align_corners):
    nd = len(shape) - 2

    def coords(n):
        if n == 1:
            return np.zeros(1)
        return np.linspace(-1, 1, n) * (1 if align_corners else (n - 1) / n)

    spatial = shape[2:]
    out = np.zeros((shape[0], *spatial, nd))
    for index in np.ndindex(*spatial):
        point = [coords(spatial[d])[index[d]] for d in reversed(range(nd))] + [1.0]  # (x, y[, z], 1)
        out[(slice(None), *index)] = theta @ np.array(point)
    return out


@pytest.mark.parametrize("shape", [[2, 3, 4, 5], [1, 2, 3, 2, 4], [1, 1, 1, 3]])
@pytest.mark.parametrize("align_corners", [True, False])
def test_affine_grid_maps_the_pixel_coordinates(shape, align_corners):
    nd = len(shape) - 2
    theta = rand(shape[0], nd, nd + 1)
    np.testing.assert_allclose(run(lambda t: F.affine_grid(t, shape, align_corners), theta),
                               ref_affine_grid(theta, shape, align_corners), rtol=RTOL, atol=ATOL)
    check_gradient(lambda t: F.affine_grid(t, shape, align_corners), theta)


def _source(g, size, padding_mode, align_corners):
    c = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, high = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        span = high - low
        if span <= 0:
            c = 0.0
        else:
            d = abs(c - low)
            flips, extra = int(d // span), d % span
            c = low + extra if flips % 2 == 0 else high - extra
    if padding_mode != "zeros":
        c = min(max(c, 0.0), size - 1.0)
    return c


def ref_grid_sample(x, grid, mode, padding_mode, align_corners):
    """Point by point: the (bi/tri)linear blend of the neighbouring pixels, or the nearest one."""
    n, c, *sizes = x.shape
    nd = len(sizes)
    out = np.zeros((n, c, *grid.shape[1:-1]))
    for b in range(n):
        for at in np.ndindex(*grid.shape[1:-1]):
            point = [_source(grid[(b, *at, nd - 1 - d)], sizes[d], padding_mode, align_corners) for d in range(nd)]
            if mode == "nearest":
                taps = [[(int(np.rint(p)), 1.0)] for p in point]
            else:
                taps = [[(math.floor(p), 1 - (p - math.floor(p))), (math.floor(p) + 1, p - math.floor(p))]
                        for p in point]
            for corner in itertools.product(*taps):
                if all(0 <= i < s for (i, _), s in zip(corner, sizes)):
                    out[(b, slice(None), *at)] += math.prod(w for _, w in corner) * x[(b, slice(None),
                                                                                         *(i for i, _ in corner))]
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_2d_matches_the_pointwise_reference(mode, padding_mode, align_corners):
    x, grid = rand(2, 1, 3, 4), rand(2, 2, 2, 2, low=-1.7, high=1.7)
    fn = lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners)  # noqa: E731
    np.testing.assert_allclose(run(fn, x, grid), ref_grid_sample(x, grid, mode, padding_mode, align_corners),
                               rtol=RTOL, atol=ATOL)
    # the grid's gradient: bilinear weights are smooth away from pixel borders (where the
    # random points are not); nearest sampling gives the grid no gradient, as in Paddle
    check_gradient(fn, x, grid, grad_inputs=[0, 1] if mode == "bilinear" else [0])


@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_3d_matches_the_pointwise_reference(padding_mode):
    x, grid = rand(1, 1, 3, 2, 4), rand(1, 2, 1, 1, 3, low=-1.4, high=1.4)
    fn = lambda a, g: F.grid_sample(a, g, "bilinear", padding_mode, False)  # noqa: E731
    np.testing.assert_allclose(run(fn, x, grid), ref_grid_sample(x, grid, "bilinear", padding_mode, False),
                               rtol=RTOL, atol=ATOL)
    check_gradient(fn, x, grid)


def test_grid_sample_rounds_ties_to_even_and_checks_arguments():
    # Paddle 3.3.1: source positions 0.5, 1.5, 2.5, 3.5, -0.5 of [0, 1, 2, 3, 4] -> [0, 2, 2, 4, 0]
    x = oar.to_tensor(np.arange(5.0).reshape(1, 1, 1, 5))
    grid = oar.to_tensor([[[[-0.75, 0], [-0.25, 0], [0.25, 0], [0.75, 0], [-1.25, 0]]]])
    assert F.grid_sample(x, grid, "nearest").tolist() == [[[[0.0, 2.0, 2.0, 4.0, 0.0]]]]
    with pytest.raises(ArgumentError, match="grid_sample: mode"):
        F.grid_sample(x, grid, "bicubic")
    with pytest.raises(ShapeError, match="grid_sample"):
        F.grid_sample(x, oar.zeros([1, 1, 5, 3]))


def ref_temporal_shift(x, seg_num, ratio):
    n, c = x.shape[0] // seg_num, x.shape[1]
    frames = x.reshape(n, seg_num, *x.shape[1:])
    out = np.zeros_like(frames)
    back, forward = int(c * ratio), int(c * 2 * ratio)
    for t in range(seg_num):
        if t > 0:
            out[:, t, :back] = frames[:, t - 1, :back]
        if t < seg_num - 1:
            out[:, t, back:forward] = frames[:, t + 1, back:forward]
        out[:, t, forward:] = frames[:, t, forward:]
    return out.reshape(x.shape)


@pytest.mark.parametrize("seg_num, ratio", [(3, 0.25), (2, 0.2), (1, 0.4)])
def test_temporal_shift_moves_channels_between_frames(seg_num, ratio):
    x = rand(2 * seg_num, 5, 2, 3)
    np.testing.assert_array_equal(run(lambda t: F.temporal_shift(t, seg_num, ratio), x),
                                  ref_temporal_shift(x, seg_num, ratio))
    nhwc = run(lambda t: F.temporal_shift(t, seg_num, ratio, data_format="NHWC"), x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(nhwc, ref_temporal_shift(x, seg_num, ratio).transpose(0, 2, 3, 1))
    check_gradient(lambda t: F.temporal_shift(t, seg_num, ratio), x)
    with pytest.raises(ArgumentError, match="temporal_shift: shift_ratio"):
        F.temporal_shift(oar.to_tensor(x), seg_num, 0.5)
