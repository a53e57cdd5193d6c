"""Image operations, as ``paddle.vision.transforms.functional``.

Each function takes a numpy array (``HxW`` or ``HxWxC``, uint8 or float), a PIL image (when
Pillow is installed) or an ``oar.Tensor`` (``CxHxW`` or ``HxW``) and returns the same kind.
Numpy kernels do the work for arrays and tensors (see ``_kernels`` for the coordinate
conventions). PIL images use Pillow's own operations, the ones Paddle's ``pil`` backend calls, so
their results are Paddle's: ``resize``, ``rotate``, ``affine`` and ``perspective`` (Pillow's
resampling), ``hflip``, ``vflip``, ``crop``, constant ``pad``, ``to_grayscale``, the
``adjust_*`` functions (``ImageEnhance``; the hue through Pillow's 8-bit HSV, as Paddle) for
``L``, ``RGB`` and ``RGBA`` images. Other modes and the other ``pad`` modes go through numpy and
back. Pillow truncates blended values where the numpy kernels round them, so a PIL image's
result can be one level below the same array's; Pillow's HSV has 256 hues, so ``adjust_hue`` on
a PIL image can differ from the array's by a few levels.

Differences from Paddle: ``affine`` and ``perspective`` follow Pillow's convention for numpy
arrays and tensors too (Paddle calls OpenCV or its grid sampler for those, which can differ by a
pixel at the borders), and integer results of bilinear sampling are rounded where Pillow
truncates; their ``fill`` is honoured for PIL images (Paddle's ``pil`` backend hands it to an
argument Pillow ignores, so its uncovered area is always black). ``pad``'s numeric ``fill`` fills
every band of a PIL image (Pillow, under Paddle, reads an int as a packed colour: red only).

>>> import numpy as np
>>> from oar.vision.transforms import functional as F
>>> img = np.arange(12, dtype=np.uint8).reshape(3, 4)
>>> F.hflip(img)[0].tolist()
[3, 2, 1, 0]
>>> F.resize(img, (6, 8), interpolation="nearest").shape
(6, 8)
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.vision.transforms import _kernels as K


def _pil_image_module():
    return sys.modules.get("PIL.Image")  # an image cannot be a PIL image unless Pillow is imported


_PILLOW_COLOUR_MODES = ("L", "RGB", "RGBA")  # the 8-bit modes that take Pillow's colour operations and fills


def _is_pil_image(img) -> bool:
    image = _pil_image_module()
    return image is not None and isinstance(img, image.Image)


def _is_numpy_image(img) -> bool:
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


def _is_tensor_image(img) -> bool:
    return isinstance(img, oar.Tensor) and img.ndim in (2, 3)


def _check_image(img, fn: str) -> None:
    if not (_is_numpy_image(img) or _is_pil_image(img) or _is_tensor_image(img)):
        shape = f" of shape {list(img.shape)}" if hasattr(img, "shape") else ""
        raise TypeError(
            f"{fn}: expected a numpy image (HxW or HxWxC), a PIL image or an oar.Tensor (CxHxW), "
            f"got {type(img).__name__}{shape}"
        )


def _from_pil(img) -> np.ndarray:
    return np.asarray(img.convert("L") if img.mode == "1" else img)


def _to_pil(a: np.ndarray, like):
    image = _pil_image_module()
    out = image.fromarray(np.ascontiguousarray(a))  # the mode follows the array: L, LA, RGB, RGBA, I, F
    if like.mode == "P" and out.mode == "L":
        out.putpalette(like.getpalette())
    elif like.mode in ("CMYK", "YCbCr", "HSV", "LAB") and out.mode != like.mode and a.ndim == 3:
        out = image.frombytes(like.mode, out.size, out.tobytes())  # same bytes, not RGB(A)
    return out


def _apply(img, kernel, fn: str):
    """Run ``kernel`` (an HxW[xC] numpy function) on any image kind and return the same kind."""
    _check_image(img, fn)
    if isinstance(img, np.ndarray):
        return kernel(img)
    if _is_pil_image(img):
        return _to_pil(kernel(_from_pil(img)), img)
    a = img.numpy(copy=False)
    out = kernel(a if a.ndim == 2 else a.transpose(1, 2, 0))
    out = out if out.ndim == 2 else out.transpose(2, 0, 1)
    return oar.to_tensor(np.ascontiguousarray(out), place=img.place)


def _image_size(img, fn: str = "transform") -> tuple[int, int]:
    """``(height, width)`` of any image kind."""
    _check_image(img, fn)
    if _is_pil_image(img):
        return img.size[1], img.size[0]
    if _is_tensor_image(img):
        return tuple(img.shape[-2:])
    return img.shape[:2]


def _size_pair(size, what: str) -> tuple[int, int]:
    if isinstance(size, numbers.Number) and not isinstance(size, bool):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return int(size[0]), int(size[0])
    if isinstance(size, Sequence) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ArgumentError(f"{what}: size must be an int or a sequence (h, w), got {size!r}")


# -- conversion -----------------------------------------------------------------------------------
def to_tensor(pic, data_format: str = "CHW") -> oar.Tensor:
    """A numpy image or PIL image as an ``oar.Tensor`` (``CxHxW`` for ``data_format='CHW'``,
    else ``HxWxC``); uint8 values are divided by 255 into float32, other dtypes keep their
    values, as Paddle.

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> t = F.to_tensor(np.full((2, 3, 3), 255, np.uint8))
    >>> t.shape, t.dtype, float(t.max())
    ([3, 2, 3], oar.float32, 1.0)
    """
    if data_format not in ("CHW", "HWC"):
        raise ArgumentError(f"to_tensor: data_format must be 'CHW' or 'HWC', got {data_format!r}")
    if isinstance(pic, oar.Tensor):
        return pic
    _check_image(pic, "to_tensor")
    a = np.array(_from_pil(pic)) if _is_pil_image(pic) else np.asarray(pic)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    if a.ndim == 2:
        a = a[:, :, None]
    if data_format == "CHW":
        a = a.transpose(2, 0, 1)
    a = np.ascontiguousarray(a)
    if a.dtype == np.uint8:
        return oar.to_tensor(a.astype(np.float32) / np.float32(255.0))
    return oar.to_tensor(a)


def normalize(img, mean, std, data_format: str = "CHW", to_rgb: bool = False):
    """``(img - mean) / std`` per channel, as float32 (a Tensor stays a Tensor; numpy and PIL
    images give a numpy array). ``mean`` and ``std`` broadcast along the channel axis of
    ``data_format``; so ``normalize(hw_image, [127.5], [127.5])`` gives a ``1xHxW`` array, as
    Paddle's MNIST examples rely on. ``to_rgb`` reverses the channel order first (BGR -> RGB).

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.normalize(np.full((1, 2, 2), 255.0), [127.5], [127.5]).tolist()
    [[[1.0, 1.0], [1.0, 1.0]]]
    """
    if data_format not in ("CHW", "HWC"):
        raise ArgumentError(f"normalize: data_format must be 'CHW' or 'HWC', got {data_format!r}")
    shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
    mean = np.asarray(mean, np.float32).reshape(shape)
    std = np.asarray(std, np.float32).reshape(shape)
    if np.any(std == 0):
        raise ArgumentError(f"normalize: std must not contain 0, got {std.reshape(-1).tolist()}")
    channel_axis = 0 if data_format == "CHW" else -1
    if isinstance(img, oar.Tensor):
        x = img if img.dtype in (oar.float32, oar.float64) else img.cast("float32")
        if to_rgb and x.ndim == 3:
            x = oar.flip(x, axis=[channel_axis])
        return (x - oar.to_tensor(mean, dtype=x.dtype)) / oar.to_tensor(std, dtype=x.dtype)
    _check_image(img, "normalize")
    a = np.asarray(_from_pil(img) if _is_pil_image(img) else img, dtype=np.float32)
    if to_rgb and a.ndim == 3:  # an HxW image has no channels to reorder
        a = np.flip(a, axis=channel_axis)
    return (a - mean) / std


def to_grayscale(img, num_output_channels: int = 1):
    """The luma ``0.299 R + 0.587 G + 0.114 B`` with 1 or 3 (equal) channels."""
    if num_output_channels not in (1, 3):
        raise ArgumentError(f"to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels}")
    if _is_pil_image(img):
        gray = img.convert("L")
        return gray if num_output_channels == 1 else gray.convert("RGB")

    def kernel(a):
        gray = K.cast_like(K.grayscale(a), a)[:, :, None]
        return np.repeat(gray, num_output_channels, axis=2)

    return _apply(img, kernel, "to_grayscale")


# -- geometry -------------------------------------------------------------------------------------
_PIL_FLIP_LEFT_RIGHT, _PIL_FLIP_TOP_BOTTOM = 0, 1  # Pillow's Image.Transpose values


def hflip(img):
    """Mirror left-right."""
    if _is_pil_image(img):
        return img.transpose(_PIL_FLIP_LEFT_RIGHT)
    # np.take copies whole pixels; copying the reversed view goes value by value, twice as slow
    return _apply(img, lambda a: np.take(a, np.arange(a.shape[1] - 1, -1, -1), axis=1), "hflip")


def vflip(img):
    """Mirror top-bottom."""
    if _is_pil_image(img):
        return img.transpose(_PIL_FLIP_TOP_BOTTOM)
    return _apply(img, lambda a: np.ascontiguousarray(a[::-1]), "vflip")


def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` box at ``(top, left)``; parts outside the image are zeros."""
    if height <= 0 or width <= 0:
        raise ArgumentError(f"crop: height and width must be positive, got {height}x{width}")
    if _is_pil_image(img):  # Pillow fills the parts outside the image with zeros too
        top, left = int(top), int(left)
        return img.crop((left, top, left + int(width), top + int(height)))
    return _apply(img, lambda a: K.crop(a, int(top), int(left), int(height), int(width)), "crop")


def center_crop(img, output_size):
    """The centred box of ``output_size`` (int or ``(h, w)``); offsets rounded as Paddle."""
    th, tw = _size_pair(output_size, "center_crop")
    h, w = _image_size(img, "center_crop")
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def _resize_target(h: int, w: int, size) -> tuple[int, int]:
    if isinstance(size, numbers.Number) and not isinstance(size, bool):
        # An int matches the shorter side and keeps the aspect ratio.
        size = int(size)
        if (w <= h and w == size) or (h <= w and h == size):
            return h, w
        return (int(size * h / w), size) if w < h else (size, int(size * w / h))
    return _size_pair(size, "resize")


_PIL_RESAMPLE = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5}


def resize(img, size, interpolation: str = "bilinear"):
    """Resize to ``size``: ``(h, w)``, or an int for the shorter side (aspect ratio kept).

    Numpy images and tensors support ``'bilinear'`` (OpenCV's half-pixel ``INTER_LINEAR``) and
    ``'nearest'`` (OpenCV's ``INTER_NEAREST``); PIL images use Pillow's resampling and also take
    ``'bicubic'``, ``'lanczos'``, ``'box'`` and ``'hamming'``.

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.resize(np.array([[0.0, 4.0]]), (1, 4)).tolist()
    [[0.0, 1.0, 3.0, 4.0]]
    """
    h, w = _image_size(img, "resize")
    out_h, out_w = _resize_target(h, w, size)
    if out_h <= 0 or out_w <= 0:
        raise ArgumentError(f"resize: the output size must be positive, got {out_h}x{out_w}")
    if _is_pil_image(img):
        if interpolation not in _PIL_RESAMPLE:
            raise ArgumentError(f"resize: interpolation must be one of {sorted(_PIL_RESAMPLE)}, got {interpolation!r}")
        return img.resize((out_w, out_h), _PIL_RESAMPLE[interpolation])
    return _apply(img, lambda a: K.resize(a, out_h, out_w, interpolation), "resize")


def _pad_sides(padding) -> tuple[int, int, int, int]:
    if isinstance(padding, numbers.Number) and not isinstance(padding, bool):
        return (int(padding),) * 4
    if isinstance(padding, Sequence) and len(padding) == 2:
        return int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])
    if isinstance(padding, Sequence) and len(padding) == 4:
        return tuple(int(p) for p in padding)
    raise ArgumentError(f"pad: padding must be an int or a sequence of 2 or 4 ints, got {padding!r}")


def _pil_band_colour(fill, img) -> tuple[int, ...]:
    """``fill`` (a number, or one per band) as one uint8 per band of ``img``: rounded half up and
    clipped, as the numpy kernels cast; in plain Python, as numpy's per-call overhead would cost
    as much as Pillow's whole pad."""
    bands = len(img.getbands())
    values = [fill] if isinstance(fill, numbers.Number) else list(fill) if isinstance(fill, Sequence) else None
    if values is None or len(values) not in (1, bands) or not all(isinstance(v, numbers.Number) for v in values):
        K.channel_values(fill, bands, "pad: fill")  # raises, with the message the numpy path gives
        raise ArgumentError(f"pad: fill: expected a number or {bands} numbers (one per channel), got {fill!r}")
    return tuple(min(max(math.floor(v + 0.5), 0), 255) for v in values * (bands // len(values)))


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad the borders. ``padding``: an int (all sides), ``(left/right, top/bottom)`` or
    ``(left, top, right, bottom)``; ``padding_mode``: ``'constant'`` (with ``fill``, a number
    or one per channel), ``'edge'``, ``'reflect'`` (without repeating the edge) or
    ``'symmetric'`` (repeating it).

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.pad(np.array([[1, 2]]), (1, 0), padding_mode="reflect").tolist()
    [[2, 1, 2, 1]]
    """
    if padding_mode not in K.PAD_MODES:
        raise ArgumentError(f"pad: padding_mode must be one of {list(K.PAD_MODES)}, got {padding_mode!r}")
    left, top, right, bottom = _pad_sides(padding)
    if min(left, top, right, bottom) < 0:
        raise ArgumentError(f"pad: padding must not be negative, got {padding!r}")
    h, w = _image_size(img, "pad")
    if padding_mode == "reflect" and (max(left, right) >= w or max(top, bottom) >= h):
        raise ArgumentError(f"pad: 'reflect' padding must be smaller than the image ({h}x{w}), got {padding!r}")
    if _is_pil_image(img) and padding_mode == "constant" and img.mode in _PILLOW_COLOUR_MODES:
        out = _pil_image_module().new(img.mode, (w + left + right, h + top + bottom), _pil_band_colour(fill, img))
        out.paste(img, (left, top))
        return out
    return _apply(img, lambda a: K.pad(a, left, top, right, bottom, fill, padding_mode), "pad")


def rotate(img, angle: float, interpolation: str = "nearest", expand: bool = False, center=None, fill=0):
    """Rotate counter-clockwise by ``angle`` degrees about ``center`` (``(x, y)``, default the
    image centre). ``expand=True`` enlarges the output to hold the whole rotated image; the
    uncovered area takes ``fill``. Follows Pillow's convention (pixel centres at +0.5), so 90
    degrees on a square image is ``np.rot90``; Paddle's OpenCV backend can differ by a pixel.

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.rotate(np.array([[1, 2], [3, 4]]), 90).tolist()
    [[2, 4], [1, 3]]
    """
    if _is_pil_image(img):
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ArgumentError(f"rotate: interpolation must be 'nearest', 'bilinear' or 'bicubic', got {interpolation!r}")
        fillcolor = tuple(int(v) for v in fill) if isinstance(fill, Sequence) else fill
        return img.rotate(angle, _PIL_RESAMPLE[interpolation], expand, center, fillcolor=fillcolor)
    return _apply(img, lambda a: K.rotate(a, float(angle), interpolation, bool(expand), center, fill), "rotate")


def _affine_matrix(center, angle: float, translate, scale: float, shear) -> list[float]:
    """Paddle's ``_get_affine_matrix``: the inverse map (output -> input) of a rotation by
    ``angle`` and shear by ``shear`` (degrees) about ``center``, scaling by ``scale``, then a
    translation by ``translate``, as Pillow's ``AFFINE`` data."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    cx, cy = center
    tx, ty = translate
    matrix = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty) + cx
    matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty) + cy
    return matrix


def _shear_pair(shear) -> tuple[float, float]:
    if isinstance(shear, numbers.Number) and not isinstance(shear, bool):
        return float(shear), 0.0
    if isinstance(shear, Sequence) and len(shear) == 1:
        return float(shear[0]), float(shear[0])
    if isinstance(shear, Sequence) and len(shear) == 2:
        return float(shear[0]), float(shear[1])
    raise ArgumentError(f"affine: shear must be a number or a sequence of 1 or 2 numbers (degrees), got {shear!r}")


def _pil_fill(fill, mode: str):
    """A Pillow fill colour: one number per band (Paddle repeats an int three times, which
    Pillow rejects for a one-band image)."""
    if isinstance(fill, Sequence):
        return tuple(int(v) if mode not in ("F", "I") else v for v in fill)
    return fill


def affine(img, angle: float, translate, scale: float, shear, interpolation: str = "nearest", fill=0, center=None):
    """Rotate by ``angle`` degrees clockwise (the opposite of ``rotate``, as Paddle's), scale by
    ``scale``, shear by ``shear`` (degrees: a number for x, or ``(x, y)``) about ``center``
    (``(x, y)``, default the image centre), then translate by ``translate`` (``(dx, dy)``
    pixels); the output keeps the input's size and the uncovered area takes ``fill``.

    The map is Paddle's; it is applied as Pillow's ``AFFINE`` transform (Paddle's ``pil``
    backend) for every image kind: numpy arrays and tensors too, where Paddle calls OpenCV or
    its grid sampler, which can differ by a pixel at the borders.

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.affine(np.arange(9).reshape(3, 3), angle=0, translate=(1, 0), scale=1.0, shear=0).tolist()
    [[0, 0, 1], [0, 3, 4], [0, 6, 7]]
    """
    if isinstance(angle, bool) or not isinstance(angle, numbers.Number):
        raise ArgumentError(f"affine: angle must be a number (degrees), got {angle!r}")
    if not (isinstance(translate, Sequence) and len(translate) == 2):
        raise ArgumentError(f"affine: translate must be a sequence (dx, dy), got {translate!r}")
    if not isinstance(scale, numbers.Number) or scale <= 0:
        raise ArgumentError(f"affine: scale must be a positive number, got {scale!r}")
    if center is not None and not (isinstance(center, Sequence) and len(center) == 2):
        raise ArgumentError(f"affine: center must be None or a sequence (x, y), got {center!r}")
    shear = _shear_pair(shear)
    h, w = _image_size(img, "affine")
    center = (w * 0.5, h * 0.5) if center is None else (float(center[0]), float(center[1]))
    matrix = _affine_matrix(center, float(angle), [float(t) for t in translate], float(scale), shear)
    if _is_pil_image(img):
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ArgumentError(f"affine: interpolation must be 'nearest', 'bilinear' or 'bicubic', got {interpolation!r}")
        image = _pil_image_module()
        return img.transform(img.size, image.AFFINE, matrix, _PIL_RESAMPLE[interpolation],
                             fillcolor=_pil_fill(fill, img.mode))
    return _apply(img, lambda a: K.affine(a, matrix, h, w, interpolation, fill), "affine")


def _perspective_coeffs(startpoints, endpoints) -> list[float]:
    """The 8 coefficients of the projective map taking each end point to its start point (the
    inverse map Pillow's ``PERSPECTIVE`` transform wants), solved by least squares as Paddle."""
    rows = np.zeros((2 * len(startpoints), 8))
    for i, ((x, y), (u, v)) in enumerate(zip(endpoints, startpoints)):
        rows[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
        rows[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y]
    return np.linalg.lstsq(rows, np.asarray(startpoints, np.float64).reshape(-1), rcond=None)[0].tolist()


def _check_points(points, what: str) -> list[list[float]]:
    a = np.asarray(points, dtype=np.float64) if isinstance(points, (Sequence, np.ndarray)) else None
    if a is None or a.shape != (4, 2):
        raise ArgumentError(f"perspective: {what} must be four [x, y] corners, got {points!r}")
    return a.tolist()


def perspective(img, startpoints, endpoints, interpolation: str = "nearest", fill=0):
    """Warp so that the four corners ``startpoints`` (``[[x, y], ...]``: top-left, top-right,
    bottom-right, bottom-left) land on ``endpoints``; the output keeps the input's size and the
    uncovered area takes ``fill``. Applied as Pillow's ``PERSPECTIVE`` transform (Paddle's
    ``pil`` backend) for every image kind, like ``affine``.

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
    >>> F.perspective(np.arange(16).reshape(4, 4), corners, corners).tolist()[1]
    [4, 5, 6, 7]
    """
    coeffs = _perspective_coeffs(_check_points(startpoints, "startpoints"), _check_points(endpoints, "endpoints"))
    if _is_pil_image(img):
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ArgumentError(
                f"perspective: interpolation must be 'nearest', 'bilinear' or 'bicubic', got {interpolation!r}")
        image = _pil_image_module()
        return img.transform(img.size, image.PERSPECTIVE, coeffs, _PIL_RESAMPLE[interpolation],
                             fillcolor=_pil_fill(fill, img.mode))
    return _apply(img, lambda a: K.perspective(a, coeffs, interpolation, fill), "perspective")


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """Replace the ``h x w`` box at row ``i``, column ``j`` with ``v``: a value, one per channel,
    or an array of the box's shape (``HxWxC`` for numpy and PIL images, ``CxHxW`` for
    tensors). Float values written into an integer image are rounded and clipped to its range
    (Paddle lets numpy wrap them around). ``inplace=True`` writes into a numpy array or tensor
    (a PIL image is always copied).

    >>> import numpy as np
    >>> from oar.vision.transforms import functional as F
    >>> F.erase(np.ones((3, 3), np.uint8), 1, 1, 2, 2, 0).tolist()
    [[1, 1, 1], [1, 0, 0], [1, 0, 0]]
    """
    _check_image(img, "erase")
    i, j, h, w = int(i), int(j), int(h), int(w)
    if h < 0 or w < 0:
        raise ArgumentError(f"erase: h and w must not be negative, got {h}x{w}")
    if _is_tensor_image(img):
        out = img if inplace else img.clone()
        value = v if isinstance(v, oar.Tensor) else oar.to_tensor(np.asarray(v, np.float64), dtype=img.dtype)
        out[..., i : i + h, j : j + w] = value
        return out
    pil = _is_pil_image(img)
    out = np.array(_from_pil(img)) if pil else (img if inplace else img.copy())
    value = np.asarray(v)
    if out.ndim == 2 and value.ndim == 3:
        value = value[..., 0]  # one value per channel, for a one-channel image
    if np.issubdtype(value.dtype, np.floating) and not np.issubdtype(out.dtype, np.floating):
        value = K.cast_like(value, out)  # rounded and clipped (numpy's cast would wrap noise * 255 around)
    out[i : i + h, j : j + w, ...] = value
    return _to_pil(out, img) if pil else out


# -- colour ---------------------------------------------------------------------------------------
def _check_factor(factor, what: str) -> float:
    if not isinstance(factor, numbers.Number) or factor < 0:
        raise ArgumentError(f"{what}: the factor must be a non-negative number, got {factor!r}")
    return float(factor)


def _pil_enhance(img, enhancer: str, factor: float):
    """Pillow's ``ImageEnhance.<enhancer>`` by ``factor`` (what Paddle's ``pil`` backend calls)."""
    from PIL import ImageEnhance  # Pillow is optional: imported only once a PIL image is here

    return getattr(ImageEnhance, enhancer)(img).enhance(factor)


def adjust_brightness(img, brightness_factor: float):
    """Scale the values by ``brightness_factor`` (0 gives black, 1 the original)."""
    factor = _check_factor(brightness_factor, "adjust_brightness")
    if _is_pil_image(img) and img.mode in _PILLOW_COLOUR_MODES:
        return _pil_enhance(img, "Brightness", factor)  # alpha kept
    return _apply(img, lambda a: K.blend(a, 0.0, factor), "adjust_brightness")


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean luma: 0 gives a uniform gray image, 1 the original."""
    factor = _check_factor(contrast_factor, "adjust_contrast")
    if _is_pil_image(img) and img.mode in _PILLOW_COLOUR_MODES:
        return _pil_enhance(img, "Contrast", factor)  # the mean luma rounded to an integer first
    return _apply(img, lambda a: K.blend(a, K.grayscale(a).mean(), factor), "adjust_contrast")


def adjust_saturation(img, saturation_factor: float):
    """Blend with the luma: 0 gives a gray image, 1 the original, 2 doubles the saturation."""
    factor = _check_factor(saturation_factor, "adjust_saturation")
    if _is_pil_image(img) and img.mode in _PILLOW_COLOUR_MODES:
        return _pil_enhance(img, "Color", factor)
    return _apply(img, lambda a: K.adjust_saturation(a, factor), "adjust_saturation")


def adjust_hue(img, hue_factor: float):
    """Shift the hue by ``hue_factor`` turns, in ``[-0.5, 0.5]`` (HSV round trip)."""
    if not isinstance(hue_factor, numbers.Number) or not -0.5 <= hue_factor <= 0.5:
        raise ArgumentError(f"adjust_hue: hue_factor must be in [-0.5, 0.5], got {hue_factor!r}")
    if _is_pil_image(img) and img.mode == "L":
        return img.copy()
    if _is_pil_image(img) and img.mode == "RGB":
        # Paddle's pil backend: Pillow's 8-bit HSV, the hue shifted by whole 1/255 turns (truncated).
        image = _pil_image_module()
        hue, saturation, value = img.convert("HSV").split()
        shifted = (np.asarray(hue, np.int16) + int(hue_factor * 255)) % 256
        return image.merge("HSV", (image.fromarray(shifted.astype(np.uint8)), saturation, value)).convert("RGB")
    return _apply(img, lambda a: K.adjust_hue(a, float(hue_factor)), "adjust_hue")


__all__ = [
    "to_tensor", "normalize", "to_grayscale", "hflip", "vflip", "crop", "center_crop", "resize", "pad",
    "rotate", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "affine", "perspective", "erase",
]
