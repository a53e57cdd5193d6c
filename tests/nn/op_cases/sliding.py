"""Op cases of sliding windows: ``im2col`` (``F.unfold``) and ``col2im`` (``F.fold``), and the pooling ops
through their 3-D functions (max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d).

The unfold/fold references loop over every block and kernel element with Paddle's formulas:
block ``(bh, bw)`` reads input ``(bh * sh - top + i * dh, bw * sw - left + j * dw)`` into row
``c * kh * kw + i * kw + j``; paddings are ``[top, left, bottom, right]``. Fold adds each
column back at those positions. The pooling references are the N-d loops of the pooling family.
"""

from __future__ import annotations

import numpy as np

import oar.nn.functional as F
from oar.testing import OpCase

from .pooling import _nhwc, ref_adaptive, ref_avg_pool, ref_max_pool

_rng = np.random.default_rng(2024)


def rand(*shape):
    return _rng.standard_normal(shape)


def _block_positions(sizes, kernel, stride, pads, dilation):
    """Per (block, kernel element): the input position it reads, or None in the padding."""
    counts = [(sizes[d] + pads[d] + pads[d + 2] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in (0, 1)]
    table = {}
    for bh in range(counts[0]):
        for bw in range(counts[1]):
            for i in range(kernel[0]):
                for j in range(kernel[1]):
                    h = bh * stride[0] - pads[0] + i * dilation[0]
                    w = bw * stride[1] - pads[1] + j * dilation[1]
                    inside = 0 <= h < sizes[0] and 0 <= w < sizes[1]
                    table[(bh * counts[1] + bw, i * kernel[1] + j)] = (h, w) if inside else None
    return counts[0] * counts[1], table


def ref_unfold(x, kernel, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1)):
    n, c = x.shape[:2]
    blocks, table = _block_positions(x.shape[2:], kernel, stride, pads, dilation)
    k = kernel[0] * kernel[1]
    out = np.zeros((n, c * k, blocks))
    for (block, element), at in table.items():
        if at is not None:
            out[:, np.arange(c) * k + element, block] = x[:, :, at[0], at[1]]
    return out


def ref_fold(cols, sizes, kernel, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1)):
    k = kernel[0] * kernel[1]
    n, c = cols.shape[0], cols.shape[1] // k
    _, table = _block_positions(sizes, kernel, stride, pads, dilation)
    out = np.zeros((n, c, *sizes))
    for (block, element), at in table.items():
        if at is not None:
            out[:, :, at[0], at[1]] += cols[:, np.arange(c) * k + element, block]
    return out


CASES = [
    OpCase("im2col", lambda x: F.unfold(x, [2, 3]), lambda x: ref_unfold(x, [2, 3]), [rand(2, 3, 4, 5)],
           id="unfold_kernel_only"),
    OpCase("im2col", lambda x: F.unfold(x, 3, strides=[2, 1], paddings=[1, 0, 2, 1], dilations=[1, 2]),
           lambda x: ref_unfold(x, [3, 3], [2, 1], [1, 0, 2, 1], [1, 2]), [rand(1, 2, 6, 6)],
           id="unfold_asymmetric_padding_dilation"),
    OpCase("im2col", lambda x: F.unfold(x, 2, strides=2, paddings=[1, 2]),
           lambda x: ref_unfold(x, [2, 2], [2, 2], [1, 2, 1, 2]), [rand(2, 1, 3, 4)], id="unfold_pair_padding"),
    OpCase("col2im", lambda c: F.fold(c, [4, 5], [2, 3]), lambda c: ref_fold(c, [4, 5], [2, 3]), [rand(2, 12, 9)],
           id="fold_overlapping"),
    OpCase("col2im", lambda c: F.fold(c, [6, 6], 3, strides=[2, 1], paddings=[1, 0, 2, 1], dilations=[1, 2]),
           lambda c: ref_fold(c, [6, 6], [3, 3], [2, 1], [1, 0, 2, 1], [1, 2]), [rand(1, 18, 12)],
           id="fold_asymmetric_padding_dilation"),
    OpCase("im2col", lambda x: F.unfold(x, 2), lambda x: ref_unfold(x, [2, 2]), [rand(0, 2, 3, 3)], id="unfold_empty"),

    # the pooling ops through the 3-D functions: masks, padding, ceil_mode, NDHWC, adaptive windows
    OpCase("max_pool", lambda x: F.max_pool3d(x, 2, stride=[1, 2, 2], padding=1, ceil_mode=True, return_mask=True),
           lambda x: ref_max_pool(x, [2, 2, 2], [1, 2, 2], [1, 1, 1, 1, 1, 1], True), [rand(1, 2, 3, 4, 4)],
           id="max_pool3d_ceil_mask"),
    OpCase("max_pool", lambda x: F.max_pool3d(x, [1, 2, 2], data_format="NDHWC"),
           _nhwc(lambda x: ref_max_pool(x, [1, 2, 2])[0]), [rand(1, 2, 4, 4, 3)], id="max_pool3d_ndhwc"),
    OpCase("avg_pool", lambda x: F.avg_pool3d(x, [2, 3, 2], stride=[1, 2, 2], padding=[0, 1, 1], exclusive=False),
           lambda x: ref_avg_pool(x, [2, 3, 2], [1, 2, 2], [0, 0, 1, 1, 1, 1], False, False), [rand(1, 2, 3, 4, 3)],
           id="avg_pool3d_inclusive"),
    OpCase("avg_pool", lambda x: F.avg_pool3d(x, 2, ceil_mode=True, divisor_override=3, data_format="NDHWC"),
           _nhwc(lambda x: ref_avg_pool(x, [2, 2, 2], None, None, True) * 8 / 3), [rand(1, 3, 3, 2, 2)],
           id="avg_pool3d_ceil_divisor_ndhwc"),
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool3d(x, [2, None, 3]),
           lambda x: ref_adaptive(x, [2, 3, 3], "avg"), [rand(1, 2, 5, 3, 4)], id="adaptive_avg_pool3d"),
    OpCase("adaptive_avg_pool", lambda x: F.adaptive_avg_pool3d(x, 2, data_format="NDHWC"),
           _nhwc(lambda x: ref_adaptive(x, [2, 2, 2], "avg")), [rand(1, 3, 3, 4, 2)], id="adaptive_avg_pool3d_ndhwc"),
    OpCase("adaptive_max_pool", lambda x: F.adaptive_max_pool3d(x, [2, 3, 2], return_mask=True),
           lambda x: ref_adaptive(x, [2, 3, 2], "max"), [rand(1, 2, 3, 5, 4)], id="adaptive_max_pool3d_mask"),
]
