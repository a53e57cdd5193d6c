"""The antialiased resize of ``interpolate(antialias=True)`` (Paddle 3.3, as PyTorch's): each output
sample averages the input under the bilinear (triangle) or bicubic (Keys, a = -0.5) filter,
stretched by the downsampling ratio so that it covers every input sample it stands for, and
normalised to sum to 1 (also where the border cuts the filter off).

Each axis is one matrix product with a constant ``[n_out, n_in]`` weight matrix built here, so the
resize is composed of core ops: autograd, tracing and every backend apply unchanged.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.ops import Tensor

_FILTER_SIZE = {"bilinear": 2, "bicubic": 4}
_KEYS_A = -0.5  # the bicubic filter of antialiased resizing (plain bicubic uses -0.75)


def _filter(mode: str, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, 1 - x, 0.0)
    a = _KEYS_A
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def antialias_weights(mode: str, n_in: int, n_out: int, scale, align_corners: bool) -> np.ndarray:
    """The ``[n_out, n_in]`` matrix of one axis: row ``k`` weighs the inputs output ``k`` reads.
    ``scale`` is the user's scale factor (or None: ``n_out / n_in``).

    >>> from oar.nn.functional.antialias import antialias_weights
    >>> antialias_weights("bilinear", 4, 2, None, False).round(4).tolist()  # halving: 3 taps each
    [[0.4286, 0.4286, 0.1429, 0.0], [0.0, 0.1429, 0.4286, 0.4286]]
    """
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale else n_in / n_out
    half_width = _FILTER_SIZE[mode] * 0.5
    support = half_width * ratio if ratio >= 1 else half_width
    stretch = 1.0 / ratio if ratio >= 1 else 1.0  # downsampling widens the filter by the ratio
    center = ratio * (np.arange(n_out) + 0.5)
    first = np.maximum((center - support + 0.5).astype(np.int64), 0)
    stop = np.minimum((center + support + 0.5).astype(np.int64), n_in)
    inputs = np.arange(n_in)
    inside = (inputs[None, :] >= first[:, None]) & (inputs[None, :] < stop[:, None])
    weights = np.where(inside, _filter(mode, (inputs[None, :] - center[:, None] + 0.5) * stretch), 0.0)
    total = weights.sum(axis=1, keepdims=True)
    return np.where(total != 0, weights / np.where(total != 0, total, 1.0), 0.0)


def antialias_resize(x: Tensor, axes, out_sizes, scales, mode: str, align_corners: bool) -> Tensor:
    """``x`` resized along ``axes`` to ``out_sizes``, one weight matrix per axis."""
    out = x
    for axis, n_out, scale in zip(axes, out_sizes, scales):
        weights = antialias_weights(mode, out.shape[axis], n_out, scale, align_corners)
        perm = [d for d in range(x.ndim) if d != axis] + [axis]
        moved = oar.matmul(oar.transpose(out, perm), oar.to_tensor(weights.T.astype(x.dtype.name), place=x.place))
        out = oar.transpose(moved, list(np.argsort(perm)))
    return out
