"""Image operations, as ``paddle.vision.transforms.functional``.

Each function takes a numpy array (``HxW`` or ``HxWxC``, uint8 or float), a PIL image (when
Pillow is installed) or an ``oar.Tensor`` (``CxHxW`` or ``HxW``) and returns the same kind.
Numpy kernels do the work (see ``_kernels`` for the coordinate conventions); PIL images go
through numpy and back, except ``resize`` and ``rotate``, which use Pillow's own resampling, as
Paddle's ``pil`` backend does.

>>> import numpy as np
>>> from oar.vision.transforms import functional as F
>>> img = np.arange(12, dtype=np.uint8).reshape(3, 4)
>>> F.hflip(img)[0].tolist()
[3, 2, 1, 0]
>>> F.resize(img, (6, 8), interpolation="nearest").shape
(6, 8)
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Sequence

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.vision.transforms import _kernels as K


def _pil_image_module():
    return sys.modules.get("PIL.Image")  # an image cannot be a PIL image unless Pillow is imported


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
def hflip(img):
    """Mirror left-right."""
    return _apply(img, lambda a: np.ascontiguousarray(a[:, ::-1]), "hflip")


def vflip(img):
    """Mirror top-bottom."""
    return _apply(img, lambda a: np.ascontiguousarray(a[::-1]), "vflip")


def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` box at ``(top, left)``; parts outside the image are zeros."""
    if height <= 0 or width <= 0:
        raise ArgumentError(f"crop: height and width must be positive, got {height}x{width}")
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


# -- colour ---------------------------------------------------------------------------------------
def _check_factor(factor, what: str) -> float:
    if not isinstance(factor, numbers.Number) or factor < 0:
        raise ArgumentError(f"{what}: the factor must be a non-negative number, got {factor!r}")
    return float(factor)


def adjust_brightness(img, brightness_factor: float):
    """Scale the values by ``brightness_factor`` (0 gives black, 1 the original)."""
    factor = _check_factor(brightness_factor, "adjust_brightness")
    return _apply(img, lambda a: K.blend(a, 0.0, factor), "adjust_brightness")


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean luma: 0 gives a uniform gray image, 1 the original."""
    factor = _check_factor(contrast_factor, "adjust_contrast")
    return _apply(img, lambda a: K.blend(a, K.grayscale(a).mean(), factor), "adjust_contrast")


def adjust_saturation(img, saturation_factor: float):
    """Blend with the luma: 0 gives a gray image, 1 the original, 2 doubles the saturation."""
    factor = _check_factor(saturation_factor, "adjust_saturation")
    return _apply(img, lambda a: K.adjust_saturation(a, factor), "adjust_saturation")


def adjust_hue(img, hue_factor: float):
    """Shift the hue by ``hue_factor`` turns, in ``[-0.5, 0.5]`` (HSV round trip)."""
    if not isinstance(hue_factor, numbers.Number) or not -0.5 <= hue_factor <= 0.5:
        raise ArgumentError(f"adjust_hue: hue_factor must be in [-0.5, 0.5], got {hue_factor!r}")
    return _apply(img, lambda a: K.adjust_hue(a, float(hue_factor)), "adjust_hue")


__all__ = [
    "to_tensor", "normalize", "to_grayscale", "hflip", "vflip", "crop", "center_crop", "resize", "pad",
    "rotate", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
]
