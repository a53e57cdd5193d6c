"""Op cases of the pooling family: max_pool, avg_pool, the adaptive pools and their gradient ops.

The references loop over every output element and compute its window from Paddle's formulas:
window ``p`` of a dim covers padded positions ``[p * stride, p * stride + k)``, i.e. input
positions ``[p * stride - before, ... + k)``; the output size is
``(size + before + after - k [+ stride - 1 with ceil_mode]) // stride + 1``; adaptive window
``i`` is ``[floor(i * size / out), ceil((i + 1) * size / out))``.
"""

from __future__ import annotations

import math

import numpy as np

import oar.nn.functional as F
from oar.nn.functional.pooling import adaptive_avg_pool_grad_op, avg_pool_grad_op, max_pool_grad_op
from oar.ops import dispatch
from oar.testing import OpCase

_rng = np.random.default_rng(11)


def rand(*shape):
    return _rng.standard_normal(shape)


def _expand(v, nd):
    return [v] * nd if isinstance(v, int) else list(v)


def _windows(sizes, kernel, stride, pads, ceil_mode):
    """Per dim: the list of (start, stop) of each window in input coordinates (unclipped)."""
    result = []
    for i, size in enumerate(sizes):
        k, s, before, after = kernel[i], stride[i], pads[2 * i], pads[2 * i + 1]
        extra = s - 1 if ceil_mode else 0
        out = (size + before + after - k + extra) // s + 1
        result.append([(p * s - before, p * s - before + k) for p in range(out)])
    return result


def ref_max_pool(x, kernel, stride=None, pads=None, ceil_mode=False):
    """(out, mask) in channel-first layout; mask = flat index in the input plane, -1 when empty."""
    nd = x.ndim - 2
    kernel = _expand(kernel, nd)
    stride = kernel if stride is None else _expand(stride, nd)
    pads = [0] * (2 * nd) if pads is None else pads
    sizes = x.shape[2:]
    windows = _windows(sizes, kernel, stride, pads, ceil_mode)
    shape = x.shape[:2] + tuple(len(w) for w in windows)
    out, mask = np.full(shape, -np.inf), np.full(shape, -1, dtype=np.int32)
    for index in np.ndindex(*shape):
        n, c, pos = index[0], index[1], index[2:]
        ranges = [range(max(windows[i][p][0], 0), min(windows[i][p][1], sizes[i])) for i, p in enumerate(pos)]
        for src in np.ndindex(*[len(r) for r in ranges]):
            at = tuple(r[j] for r, j in zip(ranges, src))
            if x[(n, c) + at] > out[index]:
                out[index] = x[(n, c) + at]
                mask[index] = np.ravel_multi_index(at, sizes)
    return out, mask


def ref_avg_pool(x, kernel, stride=None, pads=None, ceil_mode=False, exclusive=True):
    nd = x.ndim - 2
    kernel = _expand(kernel, nd)
    stride = kernel if stride is None else _expand(stride, nd)
    pads = [0] * (2 * nd) if pads is None else pads
    sizes = x.shape[2:]
    windows = _windows(sizes, kernel, stride, pads, ceil_mode)
    shape = x.shape[:2] + tuple(len(w) for w in windows)
    out = np.zeros(shape)
    for index in np.ndindex(*shape):
        n, c, pos = index[0], index[1], index[2:]
        inside = [(max(windows[i][p][0], 0), min(windows[i][p][1], sizes[i])) for i, p in enumerate(pos)]
        # exclusive=False counts the padding too, but not past the after-padding (ceil_mode's overhang)
        counted = inside if exclusive else [
            (windows[i][p][0], min(windows[i][p][1], sizes[i] + pads[2 * i + 1])) for i, p in enumerate(pos)]
        region = x[(n, c) + tuple(slice(a, b) for a, b in inside)]
        out[index] = region.sum() / max(math.prod(b - a for a, b in counted), 1)
    return out


def _adaptive_ranges(size, out):
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def ref_adaptive(x, output_size, reduce):
    sizes = x.shape[2:]
    ranges = [_adaptive_ranges(s, o) for s, o in zip(sizes, output_size)]
    shape = x.shape[:2] + tuple(output_size)
    out, mask = np.zeros(shape), np.zeros(shape, dtype=np.int32)
    for index in np.ndindex(*shape):
        n, c, pos = index[0], index[1], index[2:]
        bounds = [ranges[i][p] for i, p in enumerate(pos)]
        region = x[(n, c) + tuple(slice(a, b) for a, b in bounds)]
        if reduce == "avg":
            out[index] = region.mean()
        else:
            at = np.unravel_index(np.argmax(region), region.shape)
            out[index] = region[at]
            mask[index] = np.ravel_multi_index(tuple(a + j for (a, _), j in zip(bounds, at)), sizes)
    return out if reduce == "avg" else (out, mask)


def ref_scatter_at_mask(g, mask, input_size):
    out = np.zeros(g.shape[:2] + tuple(input_size))
    for index in np.ndindex(*g.shape):
        if mask[index] >= 0:
            out[index[:2] + np.unravel_index(mask[index], input_size)] += g[index]
    return out


def ref_avg_pool_grad(g, input_size, kernel, stride, pads, ceil_mode, exclusive):
    """The adjoint of avg_pool, built column by column from the reference itself."""
    n, c = g.shape[:2]
    out = np.zeros((n, c, *input_size))
    for at in np.ndindex(*input_size):
        unit = np.zeros((1, 1, *input_size))
        unit[(0, 0) + at] = 1.0
        weights = ref_avg_pool(unit, kernel, stride, pads, ceil_mode, exclusive)[0, 0]
        out[(slice(None), slice(None)) + at] = (g * weights).reshape(n, c, -1).sum(-1)
    return out


def _nhwc(fn):
    def ref(x):
        y = fn(np.moveaxis(x, -1, 1))
        return np.moveaxis(y, 1, -1)
    return ref


_MASK = np.array([[[0, 3, 3, -1], [2, 2, 5, 1]]], dtype=np.int32)  # repeats accumulate, -1 is skipped

CASES = [
    # max_pool through max_pool1d/2d: stride defaults, padding forms, ceil_mode, masks, layouts
    OpCase("max_pool", lambda x: F.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True, return_mask=True),
           lambda x: ref_max_pool(x, [3], [2], [1, 1], True), [rand(2, 3, 6)], id="max_pool1d_ceil_mask"),
    OpCase("max_pool", lambda x: F.max_pool1d(x, 2), lambda x: ref_max_pool(x, [2])[0], [rand(2, 2, 7)],
           id="max_pool1d_default_stride"),
    OpCase("max_pool", lambda x: F.max_pool2d(x, 3, stride=1, padding=1, return_mask=True),
           lambda x: ref_max_pool(x, [3, 3], [1, 1], [1, 1, 1, 1]), [rand(1, 2, 4, 5)],
           dtypes=("float32", "float64", "float16"), id="max_pool2d_overlapping_mask"),
    OpCase("max_pool", lambda x: F.max_pool2d(x, [2, 3], stride=[2, 1], padding=[0, 1, 1, 0], ceil_mode=True),
           lambda x: ref_max_pool(x, [2, 3], [2, 1], [0, 1, 1, 0], True)[0], [rand(1, 2, 5, 4)],
           id="max_pool2d_asymmetric_padding_ceil"),
    OpCase("max_pool", lambda x: F.max_pool2d(x, 3, stride=2, padding="SAME", data_format="NHWC"),
           _nhwc(lambda x: ref_max_pool(x, [3, 3], [2, 2], [0, 1, 1, 1])[0]), [rand(1, 4, 3, 3)],
           id="max_pool2d_nhwc_same"),
    OpCase("max_pool", lambda x: F.max_pool2d(x, 2, padding=[[0, 0], [0, 0], [1, 1], [0, 0]]),
           lambda x: ref_max_pool(x, [2, 2], None, [1, 1, 0, 0])[0], [rand(2, 1, 4, 4)], id="max_pool2d_padding_pairs"),
    OpCase("max_pool", lambda x: F.max_pool1d(x, 2, stride=2, padding=1, ceil_mode=True, return_mask=True),
           lambda x: ref_max_pool(x, [2], [2], [1, 1], True), [rand(1, 1, 5)], grad=False,
           id="max_pool1d_window_of_padding_only"),
    OpCase("max_pool_grad", lambda g, m: dispatch(max_pool_grad_op, (g, m), {"input_size": [2, 3]}),
           lambda g, m: ref_scatter_at_mask(g, m, [2, 3]), [rand(1, 2, 4), _MASK], id="max_pool_grad_repeats_and_empty"),

    # avg_pool through avg_pool1d/2d: exclusive, ceil_mode overhang, divisor_override, layouts
    OpCase("avg_pool", lambda x: F.avg_pool1d(x, 3, stride=2, padding=1), lambda x: ref_avg_pool(x, [3], [2], [1, 1]),
           [rand(2, 3, 6)], id="avg_pool1d_exclusive"),
    OpCase("avg_pool", lambda x: F.avg_pool1d(x, 3, stride=2, padding=1, exclusive=False, ceil_mode=True),
           lambda x: ref_avg_pool(x, [3], [2], [1, 1], True, False), [rand(2, 2, 6)], id="avg_pool1d_inclusive_ceil"),
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, [3, 2], stride=[2, 1], padding=[1, 0, 0, 1], ceil_mode=True,
                                              exclusive=False),
           lambda x: ref_avg_pool(x, [3, 2], [2, 1], [1, 0, 0, 1], True, False), [rand(1, 2, 5, 4)],
           dtypes=("float32", "float64", "bfloat16"), id="avg_pool2d_asymmetric_inclusive_ceil"),
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, 2, padding=1, divisor_override=3, data_format="NHWC"),
           _nhwc(lambda x: ref_avg_pool(x, [2, 2], None, [1, 1, 1, 1]) * 4 / 3), [rand(1, 3, 3, 2)],
           id="avg_pool2d_divisor_override_nhwc"),
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, 3, stride=2, padding="same"),
           lambda x: ref_avg_pool(x, [3, 3], [2, 2], [0, 1, 1, 1]), [rand(1, 2, 4, 3)], id="avg_pool2d_same"),
    # 2x2 windows of stride 2 (oar-numba's compiled path): an odd size leaves a row/column out
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, 2), lambda x: ref_avg_pool(x, [2, 2]), [rand(2, 3, 6, 7)],
           id="avg_pool2d_2x2_odd_width"),
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, 2, ceil_mode=True), lambda x: ref_avg_pool(x, [2, 2], None, None, True),
           [rand(1, 2, 5, 4)], id="avg_pool2d_2x2_ceil_overhang"),
    OpCase("avg_pool_grad", lambda g: dispatch(avg_pool_grad_op, (g,), {
               "input_size": [5, 7], "kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0, 0, 0],
               "ceil_mode": False, "exclusive": True}),
           lambda g: ref_avg_pool_grad(g, [5, 7], [2, 2], [2, 2], [0, 0, 0, 0], False, True), [rand(2, 3, 2, 3)],
           id="avg_pool_grad_2x2_odd_sizes"),
    OpCase("avg_pool_grad", lambda g: dispatch(avg_pool_grad_op, (g,), {
               "input_size": [5, 4], "kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0, 0, 1],
               "ceil_mode": True, "exclusive": False}),
           lambda g: ref_avg_pool_grad(g, [5, 4], [3, 2], [2, 1], [1, 0, 0, 1], True, False), [rand(1, 2, 3, 4)],
           id="avg_pool_grad_inclusive_ceil"),
    OpCase("avg_pool_grad", lambda g: dispatch(avg_pool_grad_op, (g,), {
               "input_size": [6], "kernel_size": [3], "stride": [2], "padding": [1, 1], "ceil_mode": False,
               "exclusive": True}),
           lambda g: ref_avg_pool_grad(g, [6], [3], [2], [1, 1], False, True), [rand(2, 2, 3)],
           id="avg_pool_grad_exclusive"),

    # adaptive pools
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool1d(x, 3), lambda x: ref_adaptive(x, [3], "avg"),
           [rand(2, 2, 7)], id="adaptive_avg_pool1d"),
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, [2, None]), lambda x: ref_adaptive(x, [2, 6], "avg"),
           [rand(1, 1, 5, 6)], id="adaptive_avg_pool2d_keep_width"),
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, [4, 5], data_format="NHWC"),
           _nhwc(lambda x: ref_adaptive(x, [4, 5], "avg")), [rand(1, 3, 4, 2)], id="adaptive_avg_pool2d_nhwc_upsampling"),
    OpCase("adaptive_avg_pool_grad", lambda g: dispatch(adaptive_avg_pool_grad_op, (g,), {"input_size": [5, 3]}),
           lambda g: np.einsum("ncij,ip,jq->ncpq", g, *[
               np.array([[1.0 / (b - a) if a <= p < b else 0.0 for p in range(s)] for a, b in _adaptive_ranges(s, o)])
               for s, o in ((5, 2), (3, 4))]),
           [rand(2, 2, 2, 4)], id="adaptive_avg_pool_grad"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool2d(x, [2, 3], return_mask=True),
           lambda x: ref_adaptive(x, [2, 3], "max"), [rand(1, 2, 5, 4)], id="adaptive_max_pool2d_mask"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool2d(x, 3), lambda x: ref_adaptive(x, [3, 3], "max")[0],
           [rand(1, 1, 2, 4)], id="adaptive_max_pool2d_upsampling"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool1d(x, 4, return_mask=True),
           lambda x: ref_adaptive(x, [4], "max"), [rand(2, 2, 9)], id="adaptive_max_pool1d_mask"),
]

# Zero-size batches (issue #24): empty outputs of the right shape, forward and backward.
CASES += [
    OpCase("max_pool", lambda x: F.max_pool1d(x, 2, return_mask=True), lambda x: ref_max_pool(x, [2]),
           [rand(0, 2, 5)], id="max_pool1d_empty"),
    OpCase("max_pool", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, data_format="NHWC"),
           _nhwc(lambda x: ref_max_pool(x, [3, 3], [2, 2], [1, 1, 1, 1])[0]), [rand(0, 4, 4, 2)],
           id="max_pool2d_nhwc_empty"),
    OpCase("max_pool_grad", lambda g, m: dispatch(max_pool_grad_op, (g, m), {"input_size": [2, 3]}),
           lambda g, m: ref_scatter_at_mask(g, m, [2, 3]), [rand(0, 2, 4), np.zeros((0, 2, 4), np.int32)],
           id="max_pool_grad_empty"),
    OpCase("avg_pool", lambda x: F.avg_pool2d(x, 2), lambda x: ref_avg_pool(x, [2, 2]), [rand(0, 3, 4, 4)],
           id="avg_pool2d_empty"),
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, 2), lambda x: ref_adaptive(x, [2, 2], "avg"),
           [rand(0, 2, 5, 4)], id="adaptive_avg_pool2d_empty"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool2d(x, [2, 3], return_mask=True),
           lambda x: ref_adaptive(x, [2, 3], "max"), [rand(0, 2, 5, 4)], id="adaptive_max_pool2d_empty"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool1d(x, 3), lambda x: ref_adaptive(x, [3], "max")[0],
           [rand(0, 2, 7)], id="adaptive_max_pool1d_empty"),
]
