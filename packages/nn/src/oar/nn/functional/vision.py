"""Vision functions of oar.nn.functional: pixel_shuffle, pixel_unshuffle, channel_shuffle,
affine_grid, grid_sample, temporal_shift.

The shuffles are a reshape, a transpose and a reshape; ``affine_grid`` is a matmul of a base
grid; ``grid_sample`` gathers the corners of each sampling point and weights them with
differentiable functions of the grid; ``temporal_shift`` slices and concatenates. All compose
core ops, so gradients (to ``x``, ``theta`` and ``grid``) come with them. Difference from
Paddle: nearest sampling leaves the grid without a gradient (None) where Paddle gives zeros.

>>> import oar
>>> oar.nn.functional.pixel_shuffle(oar.ones([1, 8, 2, 2]), 2).shape
[1, 2, 4, 4]
"""

from __future__ import annotations

import itertools

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
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


def _int_shape(fn: str, out_shape) -> list[int]:
    shape = out_shape.tolist() if isinstance(out_shape, Tensor) else out_shape
    if not isinstance(shape, (list, tuple)) or len(shape) not in (4, 5) or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in shape):
        raise ArgumentError(f"{fn}: out_shape must be 4 or 5 positive ints [N, C, (D,) H, W], got {out_shape!r}")
    return [int(v) for v in shape]


def _base_coordinates(size: int, align_corners: bool) -> np.ndarray:
    """The normalised [-1, 1] coordinates of ``size`` pixels: their corners' centres with
    ``align_corners``, else their centres (pixels then span [-1, 1] edge to edge)."""
    if size == 1:
        return np.zeros(1)
    steps = np.linspace(-1.0, 1.0, size)
    return steps if align_corners else steps * (size - 1) / size


def affine_grid(theta, out_shape, align_corners: bool = True, name=None) -> Tensor:
    """The sampling grid of a batch of affine maps: ``theta`` [N, 2, 3] (or [N, 3, 4] in 3-D)
    applied to the normalised coordinates of every pixel of ``out_shape`` [N, C, H, W] (or
    [N, C, D, H, W]); the result [N, H, W, 2] holds (x, y) per pixel (x, y, z in 3-D), as
    ``grid_sample`` reads them.

    >>> import oar
    >>> theta = oar.to_tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> oar.nn.functional.affine_grid(theta, [1, 1, 2, 2]).tolist()
    [[[[-1.0, -1.0], [1.0, -1.0]], [[-1.0, 1.0], [1.0, 1.0]]]]
    """
    fn = "affine_grid"
    theta = as_tensor(theta, "theta", fn)
    if not theta.dtype.is_floating:
        raise DTypeError(f"{fn}: theta must be a floating tensor, got {theta.dtype.name}")
    shape = _int_shape(fn, out_shape)
    nd = len(shape) - 2
    if theta.ndim != 3 or theta.shape[1:] != [nd, nd + 1] or theta.shape[0] != shape[0]:
        raise ShapeError(f"{fn}: theta must be [N, {nd}, {nd + 1}] with N = out_shape[0] = {shape[0]} for a "
                         f"{len(shape)}-D out_shape, got {theta.shape}")
    # pixel coordinates (x, y[, z], 1), x along the last dim: [prod(spatial), nd + 1]
    axes = [_base_coordinates(size, bool(align_corners)) for size in reversed(shape[2:])]
    mesh = np.meshgrid(*axes, indexing="ij")  # indexed (x, y[, z])
    points = np.stack([m.transpose(*reversed(range(nd))).reshape(-1) for m in mesh] + [np.ones(mesh[0].size)], -1)
    base = oar.to_tensor(points, dtype=theta.dtype, place=theta.place)
    grid = oar.matmul(base, oar.transpose(theta, [0, 2, 1]))  # [N, prod(spatial), nd]
    return reshape_to(grid, [shape[0], *shape[2:], nd])


def _reflect(coordinate: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``coordinate`` mirrored into [twice_low / 2, twice_high / 2] as often as it takes."""
    if twice_low == twice_high:
        return coordinate * 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = oar.abs(coordinate - low)
    extra = oar.remainder(distance, oar.full_like(distance, span))
    even = oar.remainder(oar.floor(distance / span), oar.full_like(distance, 2.0)) == 0
    return oar.where(even, extra + low, (span - extra) + low)


def _source_coordinate(g: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Normalised grid values -> pixel coordinates of the input, after the padding mode."""
    c = (g + 1.0) * ((size - 1) / 2) if align_corners else ((g + 1.0) * size - 1.0) / 2
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
    if padding_mode != "zeros":
        c = oar.clip(c, 0.0, float(size - 1))
    return c


_SAMPLE_MODES, _PADDING_MODES = ("bilinear", "nearest"), ("zeros", "border", "reflection")


def grid_sample(x, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool = True,
                name=None) -> Tensor:
    """Sample ``x`` [N, C, H, W] at the points of ``grid`` [N, Ho, Wo, 2] (x, y normalised to
    [-1, 1]; 5-D ``x`` with a [N, Do, Ho, Wo, 3] grid in 3-D) into [N, C, Ho, Wo]: bilinear (or
    trilinear) weights of the neighbouring pixels, or the nearest one. Points outside read zeros
    (``padding_mode='zeros'``), the edge (``'border'``) or the mirror image (``'reflection'``).
    ``align_corners=True`` puts -1 and 1 on the centres of the corner pixels, else on their edges.

    >>> import oar
    >>> x = oar.to_tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    >>> oar.nn.functional.grid_sample(x, oar.to_tensor([[[[0.0, 0.0], [1.0, -1.0]]]])).tolist()
    [[[[1.5, 1.0]]]]
    """
    fn = "grid_sample"
    x, grid = as_tensor(x, "x", fn), as_tensor(grid, "grid", fn)
    for arg, t in (("x", x), ("grid", grid)):
        if not t.dtype.is_floating:
            raise DTypeError(f"{fn}: {arg} must be a floating tensor, got {t.dtype.name}")
    if mode not in _SAMPLE_MODES:
        raise ArgumentError(f"{fn}: mode must be one of {list(_SAMPLE_MODES)}, got {mode!r}")
    if padding_mode not in _PADDING_MODES:
        raise ArgumentError(f"{fn}: padding_mode must be one of {list(_PADDING_MODES)}, got {padding_mode!r}")
    nd = x.ndim - 2
    if nd not in (2, 3) or grid.ndim != x.ndim or grid.shape[-1] != nd or grid.shape[0] != x.shape[0]:
        raise ShapeError(f"{fn}: x must be [N, C, H, W] with grid [N, Ho, Wo, 2] (or 5-D with a 3 in the last dim "
                         f"of grid), with the same N; got x {x.shape} and grid {grid.shape}")
    n, c, sizes, out = x.shape[0], x.shape[1], x.shape[2:], grid.shape[1:-1]
    # coordinates per spatial dim of x (D, H, W order); grid's last axis lists them as (x, y, z)
    coords = [_source_coordinate(grid[..., nd - 1 - i], size, padding_mode, bool(align_corners))
              for i, size in enumerate(sizes)]
    if mode == "nearest":
        corners = [[(oar.round(cd), None)] for cd in coords]
    else:
        corners = []
        for cd in coords:
            low = oar.floor(cd)
            frac = cd - low  # carries the gradient to the grid
            corners.append([(low, 1.0 - frac), (low + 1.0, frac)])
    flat_x = oar.reshape(x, [n, c, -1])
    total = None
    for corner in itertools.product(*corners):
        flat, inside, weight = None, None, None
        for (position, w), size in zip(corner, sizes):
            ok = (position >= 0) & (position <= size - 1)
            index = oar.clip(position, 0, size - 1).astype("int64")
            flat = index if flat is None else flat * size + index
            inside = ok if inside is None else inside & ok
            weight = w if weight is None else (weight if w is None else weight * w)
        index = oar.expand(oar.reshape(flat, [n, 1, -1]), [n, c, flat.size // n])
        values = oar.take_along_axis(flat_x, index, axis=2)
        scale = inside.astype(x.dtype) if weight is None else weight * inside.astype(x.dtype)
        term = values * oar.reshape(scale, [n, 1, -1])
        total = term if total is None else total + term
    return oar.reshape(total, [n, c, *out])


def temporal_shift(x, seg_num: int, shift_ratio: float = 0.25, name=None, data_format: str = "NCHW") -> Tensor:
    """The temporal shift of TSM: ``x`` [N * seg_num, C, H, W] seen as ``seg_num`` frames per
    clip; the first ``C * shift_ratio`` channels take the previous frame's values, the next
    ``C * shift_ratio`` the next frame's (zeros at the clip ends), the rest stay.

    >>> import oar
    >>> x = oar.arange(8, dtype="float32").reshape([2, 4, 1, 1])
    >>> oar.nn.functional.temporal_shift(x, seg_num=2).reshape([2, 4]).tolist()
    [[0.0, 5.0, 2.0, 3.0], [0.0, 0.0, 6.0, 7.0]]
    """
    fn = "temporal_shift"
    x = as_tensor(x, "x", fn)
    if x.ndim != 4:
        raise ShapeError(f"{fn}: x must be a 4-D tensor, got shape {x.shape}")
    if data_format not in ("NCHW", "NHWC"):
        raise ArgumentError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if isinstance(seg_num, bool) or not isinstance(seg_num, (int, np.integer)) or seg_num < 1 or x.shape[0] % seg_num:
        raise ArgumentError(f"{fn}: seg_num must be a positive int dividing the batch {x.shape[0]}, got {seg_num!r}")
    if isinstance(shift_ratio, bool) or not isinstance(shift_ratio, (int, float)) or not 0 < shift_ratio < 0.5:
        raise ArgumentError(f"{fn}: shift_ratio must lie in (0, 0.5), got {shift_ratio!r}")
    last = data_format == "NHWC"
    channel_first = oar.transpose(x, [0, 3, 1, 2]) if last else x
    frames = oar.reshape(channel_first, [-1, seg_num, *channel_first.shape[1:]])  # [N, T, C, H, W]
    channels = frames.shape[2]
    back, forward = int(channels * shift_ratio), int(channels * 2 * shift_ratio)
    zeros = oar.zeros([frames.shape[0], 1, *frames.shape[2:]], dtype=x.dtype, device=x.place)
    from_previous = oar.concat([zeros, frames[:, :-1]], axis=1)[:, :, :back]
    from_next = oar.concat([frames[:, 1:], zeros], axis=1)[:, :, back:forward]
    out = oar.reshape(oar.concat([from_previous, from_next, frames[:, :, forward:]], axis=2), [-1, *frames.shape[2:]])
    return oar.transpose(out, [0, 2, 3, 1]) if last else out


__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "affine_grid", "grid_sample", "temporal_shift"]
