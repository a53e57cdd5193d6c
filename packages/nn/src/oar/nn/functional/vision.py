"""Vision functions of oar.nn.functional: pixel_shuffle, pixel_unshuffle, channel_shuffle.

Each is a reshape, a transpose and a reshape (core ops, so gradients come with them).

>>> import oar
>>> oar.nn.functional.pixel_shuffle(oar.ones([1, 8, 2, 2]), 2).shape
[1, 2, 4, 4]
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, ShapeError
from oar.ops import Tensor, as_tensor, reshape_to

OPS: list = []


def _image_args(fn: str, x, factor, factor_name: str, data_format: str):
    x = as_tensor(x, "x", fn)
    if x.ndim != 4:
        raise ShapeError(f"{fn}: x must be a 4-D tensor, got shape {x.shape}")
    if data_format not in ("NCHW", "NHWC"):
        raise ArgumentError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor <= 0:
        raise ArgumentError(f"{fn}: {factor_name} must be a positive int, got {factor!r}")
    if data_format == "NCHW":
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    return x, int(factor), (n, c, h, w)


def pixel_shuffle(x, upscale_factor: int, data_format: str = "NCHW", name=None) -> Tensor:
    """Rearrange ``[N, C * r * r, H, W]`` into ``[N, C, H * r, W * r]`` (``r = upscale_factor``).

    >>> import oar
    >>> oar.nn.functional.pixel_shuffle(oar.arange(4, dtype="float32").reshape([1, 4, 1, 1]), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    fn = "pixel_shuffle"
    x, r, (n, c, h, w) = _image_args(fn, x, upscale_factor, "upscale_factor", data_format)
    if c % (r * r):
        raise ShapeError(f"{fn}: the {c} channels of x {x.shape} are not divisible by upscale_factor^2 = {r * r}")
    oc = c // (r * r)
    if data_format == "NCHW":
        y = oar.transpose(reshape_to(x, [n, oc, r, r, h, w]), [0, 1, 4, 2, 5, 3])
        return reshape_to(y, [n, oc, h * r, w * r])
    y = oar.transpose(reshape_to(x, [n, h, w, oc, r, r]), [0, 1, 4, 2, 5, 3])
    return reshape_to(y, [n, h * r, w * r, oc])


def pixel_unshuffle(x, downscale_factor: int, data_format: str = "NCHW", name=None) -> Tensor:
    """The inverse of ``pixel_shuffle``: ``[N, C, H * r, W * r]`` into ``[N, C * r * r, H, W]``.

    >>> import oar
    >>> oar.nn.functional.pixel_unshuffle(oar.ones([1, 1, 4, 4]), 2).shape
    [1, 4, 2, 2]
    """
    fn = "pixel_unshuffle"
    x, r, (n, c, h, w) = _image_args(fn, x, downscale_factor, "downscale_factor", data_format)
    if h % r or w % r:
        raise ShapeError(f"{fn}: the height {h} and width {w} of x {x.shape} must be divisible by downscale_factor {r}")
    oh, ow = h // r, w // r
    if data_format == "NCHW":
        y = oar.transpose(reshape_to(x, [n, c, oh, r, ow, r]), [0, 1, 3, 5, 2, 4])
        return reshape_to(y, [n, c * r * r, oh, ow])
    y = oar.transpose(reshape_to(x, [n, oh, r, ow, r, c]), [0, 1, 3, 5, 2, 4])
    return reshape_to(y, [n, oh, ow, c * r * r])


def channel_shuffle(x, groups: int, data_format: str = "NCHW", name=None) -> Tensor:
    """Interleave the channels of ``groups`` groups: ``[N, g * k, H, W]`` viewed as
    ``[N, g, k, H, W]``, transposed to ``[N, k, g, H, W]``.

    >>> import oar
    >>> x = oar.arange(4, dtype="float32").reshape([1, 4, 1, 1])
    >>> oar.nn.functional.channel_shuffle(x, 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    fn = "channel_shuffle"
    x, g, (n, c, h, w) = _image_args(fn, x, groups, "groups", data_format)
    if c % g:
        raise ShapeError(f"{fn}: the {c} channels of x {x.shape} are not divisible by groups={g}")
    if data_format == "NCHW":
        y = oar.transpose(reshape_to(x, [n, g, c // g, h, w]), [0, 2, 1, 3, 4])
    else:
        y = oar.transpose(reshape_to(x, [n, h, w, g, c // g]), [0, 1, 2, 4, 3])
    return reshape_to(y, x.shape)


__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]
