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
"""

from __future__ import annotations

import math

import numpy as np

from oar.errors import ArgumentError

GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114])  # ITU-R 601-2 luma, as Pillow's "L" and OpenCV's RGB2GRAY


def _work_dtype(a: np.ndarray):
    return a.dtype if a.dtype in (np.float32, np.float64) else np.float32


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
    if interpolation not in ("nearest", "bilinear"):
        raise ArgumentError(
            f"rotate: interpolation {interpolation!r} is not available for numpy images; use 'nearest' or 'bilinear'"
        )
    in_h, in_w = a.shape[:2]
    (ma, mb, mc, md, me, mf), out_w, out_h = rotation_matrix(angle, in_w, in_h, center, expand)
    img = _with_channels(a)
    fill_values = channel_values(fill, img.shape[2], "rotate: fill")
    ys, xs = np.mgrid[0:out_h, 0:out_w].astype(np.float64) + 0.5  # output pixel centres
    xin = ma * xs + mb * ys + mc
    yin = md * xs + me * ys + mf
    inside = (xin >= 0) & (xin < in_w) & (yin >= 0) & (yin < in_h)
    if interpolation == "nearest":
        xi = np.clip(np.floor(xin), 0, in_w - 1).astype(np.int64)
        yi = np.clip(np.floor(yin), 0, in_h - 1).astype(np.int64)
        out = img[yi, xi].astype(np.float64)
    else:
        # Bilinear between the four nearest pixel centres, clamped at the border (as Pillow).
        u, v = xin - 0.5, yin - 0.5
        x0, y0 = np.floor(u), np.floor(v)
        wx, wy = (u - x0)[..., None], (v - y0)[..., None]
        x0i, x1i = (np.clip(x0 + k, 0, in_w - 1).astype(np.int64) for k in (0, 1))
        y0i, y1i = (np.clip(y0 + k, 0, in_h - 1).astype(np.int64) for k in (0, 1))
        src = img.astype(np.float64)
        top = src[y0i, x0i] * (1 - wx) + src[y0i, x1i] * wx
        bottom = src[y1i, x0i] * (1 - wx) + src[y1i, x1i] * wx
        out = top * (1 - wy) + bottom * wy
    out = np.where(inside[..., None], out, fill_values)
    out = cast_like(out, a)
    return out[:, :, 0] if a.ndim == 2 else out


# -- colour ---------------------------------------------------------------------------------------
def grayscale(a: np.ndarray) -> np.ndarray:
    """Luma as float, ``HxW``; a one-channel image is its own luma."""
    img = _with_channels(a).astype(np.float64)
    if img.shape[2] == 1:
        return img[:, :, 0]
    if img.shape[2] not in (3, 4):
        raise ArgumentError(f"grayscale: expected 1, 3 (RGB) or 4 (RGBA) channels, got {img.shape[2]}")
    return img[:, :, :3] @ GRAY_WEIGHTS


def _rgb_only(a: np.ndarray, fn, what: str) -> np.ndarray:
    """Apply ``fn`` (float RGB -> float RGB) to the colour channels; gray images are unchanged."""
    if a.ndim == 2 or a.shape[2] == 1:
        return a.copy()
    if a.shape[2] not in (3, 4):
        raise ArgumentError(f"{what}: expected 1, 3 (RGB) or 4 (RGBA) channels, got {a.shape[2]}")
    out = a.astype(np.float64)
    out[:, :, :3] = fn(out[:, :, :3])
    return cast_like(out, a)


def blend(a: np.ndarray, other, factor: float) -> np.ndarray:
    """``other + factor * (a - other)`` in float, back in ``a``'s dtype."""
    return cast_like(other + factor * (a.astype(np.float64) - other), a)


def adjust_saturation(a: np.ndarray, factor: float) -> np.ndarray:
    def saturate(rgb):
        gray = (rgb @ GRAY_WEIGHTS)[..., None]
        return gray + factor * (rgb - gray)

    return _rgb_only(a, saturate, "adjust_saturation")


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    span = v - rgb.min(axis=-1)
    safe_span = np.where(span > 0, span, 1.0)
    s = np.where(v > 0, span / np.where(v > 0, v, 1.0), 0.0)
    h = np.where(
        v == r, (g - b) / safe_span, np.where(v == g, 2.0 + (b - r) / safe_span, 4.0 + (r - g) / safe_span)
    )
    h = np.where(span > 0, (h / 6.0) % 1.0, 0.0)
    return np.stack([h, s, v], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    i = i.astype(np.int64) % 6
    choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    return np.stack([np.choose(i, [c[k] for c in choices]) for k in range(3)], axis=-1)


def adjust_hue(a: np.ndarray, factor: float) -> np.ndarray:
    def shift(rgb):
        hsv = rgb_to_hsv(rgb)
        hsv[..., 0] = (hsv[..., 0] + factor) % 1.0
        return hsv_to_rgb(hsv)

    return _rgb_only(a, shift, "adjust_hue")
