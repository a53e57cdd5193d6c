"""The numpy image kernels behind ``oar.vision.transforms.functional``.

Every kernel takes an ``HxW`` or ``HxWxC`` array and returns one of the same dtype and layout.
Integer images are rounded (half up) and clipped to their dtype's range; float images are not
clipped. Nothing here needs OpenCV or Pillow.

Coordinate conventions, chosen to match the libraries Paddle calls:

- ``resize``: bilinear is OpenCV's ``INTER_LINEAR`` (half-pixel centres: output pixel ``i``
  samples input coordinate ``(i + 0.5) * in / out - 0.5``, clamped to the edge pixels, no
  antialiasing); nearest is OpenCV's ``INTER_NEAREST`` (input pixel ``floor(i * in / out)``).
- ``rotate``: Pillow's ``Image.rotate`` (pixel centres at ``+0.5``, the default centre is
  ``(w / 2, h / 2)``, samples outside the image take ``fill``), so a rotation by 90 degrees
  of a square image is exactly ``np.rot90``.
- ``affine`` and ``perspective``: Pillow's ``Image.transform`` with ``AFFINE`` and
  ``PERSPECTIVE`` data (the inverse map, output pixel centre -> input point), which is what
  Paddle's ``pil`` backend calls; ``rotate`` is an affine map too.
"""

from __future__ import annotations

import math

import numpy as np

from oar.errors import ArgumentError

GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114])  # ITU-R 601-2 luma, as Pillow's "L" and OpenCV's RGB2GRAY


def _work_dtype(a: np.ndarray) -> np.dtype:
    """The float dtype a kernel computes ``a`` in: float64 only for float64 images."""
    return a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float32)


def cast_like(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``values`` (float) back in ``like``'s dtype: integers rounded half up and clipped."""
    if np.issubdtype(like.dtype, np.floating):
        return values.astype(like.dtype, copy=False)
    if like.dtype == np.bool_:
        return values >= 0.5
    info = np.iinfo(like.dtype)
    return np.clip(np.floor(values + 0.5), info.min, info.max).astype(like.dtype)


def channel_values(value, channels: int, what: str) -> np.ndarray:
    """A fill value per channel from a number or a sequence of one or ``channels`` numbers."""
    values = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if values.ndim != 1 or values.size not in (1, channels):
        raise ArgumentError(f"{what}: expected a number or {channels} numbers (one per channel), got {value!r}")
    return np.broadcast_to(values, (channels,))


def _with_channels(a: np.ndarray) -> np.ndarray:
    return a[:, :, None] if a.ndim == 2 else a


# -- resize --------------------------------------------------------------------------------------
def _linear_taps(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src = (np.arange(out_size, dtype=np.float64) + 0.5) * (in_size / out_size) - 0.5
    src = np.clip(src, 0.0, in_size - 1)
    low = np.floor(src).astype(np.int64)
    high = np.minimum(low + 1, in_size - 1)
    return low, high, src - low


def resize_bilinear(a: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    work = a.astype(_work_dtype(a), copy=False)
    y0, y1, wy = _linear_taps(a.shape[0], out_h)
    x0, x1, wx = _linear_taps(a.shape[1], out_w)
    wy = wy.astype(work.dtype).reshape((-1,) + (1,) * (a.ndim - 1))
    wx = wx.astype(work.dtype).reshape((1, -1) + (1,) * (a.ndim - 2))
    rows = work[y0] * (1 - wy) + work[y1] * wy
    out = rows[:, x0] * (1 - wx) + rows[:, x1] * wx
    return cast_like(out, a)


def resize_nearest(a: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    # Integer arithmetic: floor(i * in / out) exactly, without rounding error.
    rows = np.minimum(np.arange(out_h) * a.shape[0] // out_h, a.shape[0] - 1)
    cols = np.minimum(np.arange(out_w) * a.shape[1] // out_w, a.shape[1] - 1)
    return a[rows][:, cols]


RESIZE_KERNELS = {"bilinear": resize_bilinear, "nearest": resize_nearest}


def resize(a: np.ndarray, out_h: int, out_w: int, interpolation: str) -> np.ndarray:
    if interpolation not in RESIZE_KERNELS:
        raise ArgumentError(
            f"resize: interpolation {interpolation!r} is not available for numpy images; "
            f"use one of {sorted(RESIZE_KERNELS)} (PIL images accept Pillow's modes too)"
        )
    if (out_h, out_w) == a.shape[:2]:
        return a.copy()
    return RESIZE_KERNELS[interpolation](a, out_h, out_w)


# -- crop and pad --------------------------------------------------------------------------------
def crop(a: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    """``a[top:top+height, left:left+width]``; the parts outside the image are zeros (as Pillow)."""
    h, w = a.shape[:2]
    if 0 <= top and 0 <= left and top + height <= h and left + width <= w:
        return a[top : top + height, left : left + width].copy()
    out = np.zeros((height, width) + a.shape[2:], a.dtype)
    t0, l0 = max(top, 0), max(left, 0)
    t1, l1 = min(top + height, h), min(left + width, w)
    if t1 > t0 and l1 > l0:
        out[t0 - top : t1 - top, l0 - left : l1 - left] = a[t0:t1, l0:l1]
    return out


PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def pad(a: np.ndarray, left: int, top: int, right: int, bottom: int, fill, mode: str) -> np.ndarray:
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (a.ndim - 2)
    if mode != "constant":
        return np.pad(a, widths, mode=PAD_MODES[mode])
    channels = 1 if a.ndim == 2 else a.shape[2]
    values = channel_values(fill, channels, "pad: fill")
    out = np.empty((a.shape[0] + top + bottom, a.shape[1] + left + right) + a.shape[2:], a.dtype)
    out[...] = cast_like(values, a) if a.ndim == 3 else cast_like(values[:1], a)[0]
    out[top : top + a.shape[0], left : left + a.shape[1]] = a
    return out


# -- rotate --------------------------------------------------------------------------------------
def rotation_matrix(angle: float, w: int, h: int, center, expand: bool) -> tuple[list[float], int, int]:
    """Pillow's inverse affine map (output pixel -> input point) for a counter-clockwise rotation
    by ``angle`` degrees, and the output size."""
    cx, cy = (w / 2.0, h / 2.0) if center is None else (float(center[0]), float(center[1]))
    rad = -math.radians(angle)
    # Rounding to 15 places makes multiples of 90 degrees exact (cos(pi/2) is 6e-17, not 0).
    a, b, d, e = round(math.cos(rad), 15), round(math.sin(rad), 15), round(-math.sin(rad), 15), round(math.cos(rad), 15)

    def apply(x, y, c, f):
        return a * x + b * y + c, d * x + e * y + f

    c, f = apply(-cx, -cy, 0.0, 0.0)
    c, f = c + cx, f + cy
    if expand:
        corners = [apply(x, y, c, f) for x, y in ((0, 0), (w, 0), (w, h), (0, h))]
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        nw = math.ceil(max(xs)) - math.floor(min(xs))
        nh = math.ceil(max(ys)) - math.floor(min(ys))
        c, f = apply(-(nw - w) / 2.0, -(nh - h) / 2.0, c, f)
        w, h = nw, nh
    return [a, b, c, d, e, f], w, h


def rotate(a: np.ndarray, angle: float, interpolation: str, expand: bool, center, fill) -> np.ndarray:
    in_h, in_w = a.shape[:2]
    matrix, out_w, out_h = rotation_matrix(angle, in_w, in_h, center, expand)
    return affine(a, matrix, out_h, out_w, interpolation, fill, "rotate")


def _pixel_centres(out_h: int, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """The output pixel centres as a row of x and a column of y, which broadcast to the grid."""
    return np.arange(out_w, dtype=np.float64) + 0.5, (np.arange(out_h, dtype=np.float64) + 0.5)[:, None]


def affine(a: np.ndarray, matrix, out_h: int, out_w: int, interpolation: str, fill, what: str = "affine") -> np.ndarray:
    """Pillow's ``Image.transform(AFFINE)``: output pixel centre ``(x, y)`` samples the input at
    ``(m0 x + m1 y + m2, m3 x + m4 y + m5)``."""
    ma, mb, mc, md, me, mf = matrix
    xs, ys = _pixel_centres(out_h, out_w)
    return sample(a, ma * xs + mb * ys + mc, md * xs + me * ys + mf, interpolation, fill, what)


def perspective(a: np.ndarray, coeffs, interpolation: str, fill) -> np.ndarray:
    """Pillow's ``Image.transform(PERSPECTIVE)``: output pixel centre ``(x, y)`` samples the input
    at ``((c0 x + c1 y + c2) / (c6 x + c7 y + 1), (c3 x + c4 y + c5) / (c6 x + c7 y + 1))``."""
    c0, c1, c2, c3, c4, c5, c6, c7 = coeffs
    xs, ys = _pixel_centres(a.shape[0], a.shape[1])
    denominator = c6 * xs + c7 * ys + 1.0
    return sample(a, (c0 * xs + c1 * ys + c2) / denominator, (c3 * xs + c4 * ys + c5) / denominator, interpolation,
                  fill, "perspective")


def sample(a: np.ndarray, xin: np.ndarray, yin: np.ndarray, interpolation: str, fill, what: str) -> np.ndarray:
    """The image at the input points ``(xin, yin)`` (pixel centres at +0.5, as Pillow), one per
    output pixel; points outside the image take ``fill``.

    Pixels are gathered with ``np.take`` from flat arrays, never with fancy indexing or
    broadcasts over a short channel axis (both several times slower): nearest copies whole pixels
    in the image's dtype, from the image with the fill appended as one more pixel; bilinear works
    on one contiguous channel plane at a time, in float32 (float64 for float64 images)."""
    if interpolation not in ("nearest", "bilinear"):
        raise ArgumentError(
            f"{what}: interpolation {interpolation!r} is not available for numpy images; use 'nearest' or 'bilinear'"
        )
    in_h, in_w = a.shape[:2]
    img = _with_channels(a)
    channels = img.shape[2]
    fill_values = channel_values(fill, channels, f"{what}: fill")
    inside = (xin >= 0) & (xin < in_w) & (yin >= 0) & (yin < in_h)
    if interpolation == "nearest":
        xi = np.clip(np.floor(xin), 0, in_w - 1).astype(np.intp)
        yi = np.clip(np.floor(yin), 0, in_h - 1).astype(np.intp)
        pixels = np.concatenate([img.reshape(in_h * in_w, channels), cast_like(fill_values, a)[None]])
        out = np.take(pixels, np.where(inside, yi * in_w + xi, in_h * in_w), axis=0)
        return out[:, :, 0] if a.ndim == 2 else out
    # Bilinear between the four nearest pixel centres, clamped at the border (as Pillow).
    work = _work_dtype(a)
    u, v = xin - 0.5, yin - 0.5
    x0, y0 = np.floor(u), np.floor(v)
    wx, wy = (u - x0).astype(work), (v - y0).astype(work)
    x0i, x1i = (np.clip(x0 + k, 0, in_w - 1).astype(np.intp) for k in (0, 1))
    row0, row1 = (np.clip(y0 + k, 0, in_h - 1).astype(np.intp) * in_w for k in (0, 1))
    taps = (row0 + x0i, row0 + x1i, row1 + x0i, row1 + x1i)
    planes = np.moveaxis(img, 2, 0).reshape(channels, in_h * in_w).astype(work)
    out = []
    for plane, fill_value in zip(planes, fill_values):
        top_left, top_right, bottom_left, bottom_right = (np.take(plane, tap) for tap in taps)
        top = top_left + (top_right - top_left) * wx
        top += (bottom_left + (bottom_right - bottom_left) * wx - top) * wy
        out.append(cast_like(np.where(inside, top, work.type(fill_value)), a))
    return out[0] if a.ndim == 2 else np.stack(out, axis=-1)


# -- colour ---------------------------------------------------------------------------------------
# Colour kernels compute in float32 (float64 for float64 images): uint8 results are within one
# level of a float64 computation, at a fraction of its memory traffic.
def grayscale(a: np.ndarray) -> np.ndarray:
    """Luma as float, ``HxW``; a one-channel image is its own luma."""
    img = _with_channels(a)
    work = _work_dtype(a)
    if img.shape[2] == 1:
        return img[:, :, 0].astype(work)
    if img.shape[2] not in (3, 4):
        raise ArgumentError(f"grayscale: expected 1, 3 (RGB) or 4 (RGBA) channels, got {img.shape[2]}")
    return img[:, :, :3].astype(work) @ GRAY_WEIGHTS.astype(work)


def _rgb_only(a: np.ndarray, fn, what: str) -> np.ndarray:
    """Apply ``fn`` (float RGB -> float RGB) to the colour channels; gray images are unchanged."""
    if a.ndim == 2 or a.shape[2] == 1:
        return a.copy()
    if a.shape[2] not in (3, 4):
        raise ArgumentError(f"{what}: expected 1, 3 (RGB) or 4 (RGBA) channels, got {a.shape[2]}")
    rgb = cast_like(fn(a[:, :, :3].astype(_work_dtype(a))), a)
    return rgb if a.shape[2] == 3 else np.concatenate([rgb, a[:, :, 3:]], axis=2)


def blend(a: np.ndarray, other, factor: float) -> np.ndarray:
    """``other + factor * (a - other)`` in float, back in ``a``'s dtype."""
    work = _work_dtype(a)
    return cast_like(work.type(other) + work.type(factor) * (a.astype(work) - work.type(other)), a)


def adjust_saturation(a: np.ndarray, factor: float) -> np.ndarray:
    def saturate(rgb):
        gray = (rgb @ GRAY_WEIGHTS.astype(rgb.dtype))[..., None]
        return gray + rgb.dtype.type(factor) * (rgb - gray)

    return _rgb_only(a, saturate, "adjust_saturation")


def shift_hue(rgb: np.ndarray, turns: float) -> np.ndarray:
    """``rgb`` (float, ``HxWx3``) with its HSV hue turned by ``turns``, saturation and value kept.

    The hue in sixths of a turn, ``h6``, comes from the largest channel; the way back needs no
    per-sector table: channel ``n`` is ``v - (v - min) * clip(min(k, 4 - k), 0, 1)`` with
    ``k = (offset_n + h6) mod 6`` and offsets 5, 3, 1 for R, G, B (the six-sector HSV formula in
    one expression). Works on contiguous channel planes, so each pass streams through memory."""
    r, g, b = np.ascontiguousarray(np.moveaxis(rgb, -1, 0))
    v = np.maximum(np.maximum(r, g), b)
    span = v - np.minimum(np.minimum(r, g), b)
    safe_span = np.where(span > 0, span, 1)
    h6 = np.where(v == r, (g - b) / safe_span, np.where(v == g, 2 + (b - r) / safe_span, 4 + (r - g) / safe_span))
    h6 = (h6 + rgb.dtype.type(6.0 * turns)) % 6  # a gray pixel's hue does not matter: its span is 0
    out = np.empty(rgb.shape, rgb.dtype)
    for channel, offset in enumerate((5, 3, 1)):
        k = h6 + rgb.dtype.type(offset)
        k = np.where(k >= 6, k - 6, k)  # (offset + h6) mod 6, as h6 is in [0, 6)
        out[..., channel] = v - span * np.clip(np.minimum(k, 4 - k), 0, 1)
    return out


def adjust_hue(a: np.ndarray, factor: float) -> np.ndarray:
    return _rgb_only(a, lambda rgb: shift_hue(rgb, factor), "adjust_hue")
