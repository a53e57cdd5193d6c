"""Transform classes, as ``paddle.vision.transforms``: callables on numpy ``HxWxC`` images (or
PIL images, or ``CxHxW`` tensors) built on ``functional``.

Random transforms draw from oar's global generator, so ``oar.seed(n)`` makes a pipeline
reproducible. Each call draws its random parameters once and applies them to every input it is
given, so with ``keys=("image", "mask")`` an image and its mask get the same crop or flip.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from oar.errors import ArgumentError
from oar.ops import default_generator
from oar.vision.transforms import functional as F


class Compose:
    """Apply transforms in order.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> t = T.Compose([T.CenterCrop(2), T.ToTensor()])
    >>> t(np.zeros((4, 4, 3), np.uint8)).shape
    [3, 2, 2]
    """

    def __init__(self, transforms: Sequence):
        self.transforms = list(transforms)

    def __call__(self, data):
        for f in self.transforms:
            try:
                data = f(data)
            except Exception as exc:
                if hasattr(exc, "add_note"):  # Python 3.11+: say which transform failed, keep the type
                    exc.add_note(f"in transform {f!r} of Compose")
                raise
        return data

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose({inner}\n)"


class BaseTransform:
    """Base class of transforms, as Paddle's: ``keys`` names what each element of a tuple input
    is (``"image"`` or ``"mask"``); inputs beyond ``keys`` pass through unchanged.

    A subclass implements ``_apply_image`` (and ``_apply_mask`` when it applies to masks), and
    draws its random parameters in ``_get_params(inputs)``, which runs once per call and whose
    result is ``self.params``.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> flip = T.RandomHorizontalFlip(prob=1.0, keys=("image", "mask"))
    >>> image, mask, label = flip((np.array([[1, 2]]), np.array([[0, 1]]), 7))
    >>> image.tolist(), mask.tolist(), label
    ([[2, 1]], [[1, 0]], 7)
    """

    def __init__(self, keys: Sequence[str] | None = None):
        if keys is None:
            keys = ("image",)
        elif isinstance(keys, str) or not isinstance(keys, Sequence):
            raise ArgumentError(f"{type(self).__name__}: keys must be a sequence of names, got {keys!r}")
        for key in keys:
            if self._get_apply(key) is None:
                supported = sorted(name[len("_apply_"):] for name in dir(self) if name.startswith("_apply_"))
                raise ArgumentError(f"{type(self).__name__}: key {key!r} is not supported; use one of {supported}")
        self.keys = tuple(keys)
        self.params = None

    def _get_params(self, inputs):
        return None

    def _get_apply(self, key: str):
        return getattr(self, f"_apply_{key}", None)

    def __call__(self, inputs):
        single = not isinstance(inputs, tuple)
        if single:
            inputs = (inputs,)
        self.params = self._get_params(inputs)
        outputs = [self._get_apply(key)(value) for key, value in zip(self.keys, inputs)]
        outputs.extend(inputs[len(self.keys) :])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _apply_image(self, image):
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_image")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k not in ("keys", "params"))
        return f"{type(self).__name__}({fields})"


def _first_image(inputs):
    return inputs[0]


# -- conversion -----------------------------------------------------------------------------------
class ToTensor(BaseTransform):
    """HxWxC uint8 (or PIL) image -> ``oar.Tensor`` CxHxW float32 in [0, 1] (``data_format='CHW'``);
    other dtypes keep their values, as Paddle. An HxW image gains a channel axis.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.ToTensor()(np.full((2, 2), 51, np.uint8)).tolist()
    [[[0.20000000298023224, 0.20000000298023224], [0.20000000298023224, 0.20000000298023224]]]
    """

    def __init__(self, data_format: str = "CHW", keys=None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ArgumentError(f"ToTensor: data_format must be 'CHW' or 'HWC', got {data_format!r}")
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Normalize(BaseTransform):
    """``(img - mean) / std`` per channel (see ``functional.normalize``). ``mean`` and ``std``
    are numbers or one value per channel. Unlike Paddle, a single number stays one value (Paddle
    repeats it three times, which turns a one-channel image into three).

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.Normalize(mean=[127.5], std=[127.5])(np.zeros((2, 2), np.float32)).shape
    (1, 2, 2)
    """

    def __init__(self, mean=0.0, std=1.0, data_format: str = "CHW", to_rgb: bool = False, keys=None):
        super().__init__(keys)
        self.mean = [float(mean)] if isinstance(mean, numbers.Number) else [float(m) for m in mean]
        self.std = [float(std)] if isinstance(std, numbers.Number) else [float(s) for s in std]
        if data_format not in ("CHW", "HWC"):
            raise ArgumentError(f"Normalize: data_format must be 'CHW' or 'HWC', got {data_format!r}")
        self.data_format = data_format
        self.to_rgb = to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Transpose(BaseTransform):
    """Permute the axes of a numpy (or PIL) image, HWC -> CHW by default; an HxW image is
    treated as HxWx1. Tensors are permuted as they are.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.Transpose()(np.zeros((28, 28), np.uint8)).shape
    (1, 28, 28)
    """

    def __init__(self, order: Sequence[int] = (2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = tuple(order)

    def _apply_image(self, img):
        if F._is_tensor_image(img):
            return img.transpose(list(self.order))
        a = np.asarray(img)
        if a.ndim == 2:
            a = a[..., np.newaxis]
        return a.transpose(self.order)

    _apply_mask = _apply_image


class Grayscale(BaseTransform):
    """Convert to gray (luma), with ``num_output_channels`` 1 or 3."""

    def __init__(self, num_output_channels: int = 1, keys=None):
        super().__init__(keys)
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return F.to_grayscale(img, self.num_output_channels)


# -- geometry -------------------------------------------------------------------------------------
class Resize(BaseTransform):
    """Resize to ``size`` (``(h, w)``, or an int for the shorter side); masks always use nearest.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.Resize(4)(np.zeros((8, 16, 3), np.uint8)).shape
    (4, 8, 3)
    """

    def __init__(self, size, interpolation: str = "bilinear", keys=None):
        super().__init__(keys)
        if not (isinstance(size, int) or (isinstance(size, Sequence) and len(size) == 2)):
            raise ArgumentError(f"Resize: size must be an int or a sequence (h, w), got {size!r}")
        self.size = size
        self.interpolation = interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)

    def _apply_mask(self, mask):
        return F.resize(mask, self.size, "nearest")


class CenterCrop(BaseTransform):
    """Crop the centre to ``size`` (an int or ``(h, w)``)."""

    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = F._size_pair(size, "CenterCrop")

    def _apply_image(self, img):
        return F.center_crop(img, self.size)

    _apply_mask = _apply_image


class Pad(BaseTransform):
    """Pad the borders (see ``functional.pad``); masks are padded with 0 in constant mode.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.Pad(1, fill=9)(np.array([[1]])).tolist()
    [[9, 9, 9], [9, 1, 9], [9, 9, 9]]
    """

    def __init__(self, padding, fill=0, padding_mode: str = "constant", keys=None):
        super().__init__(keys)
        F._pad_sides(padding)  # validates
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ArgumentError(f"Pad: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def _apply_mask(self, mask):
        return F.pad(mask, self.padding, 0, self.padding_mode)


class RandomCrop(BaseTransform):
    """Crop a random ``size`` box, after optional ``padding``; ``pad_if_needed`` pads an image
    smaller than ``size`` (width on the left and right, height on the top and bottom, as Paddle).

    >>> import numpy as np
    >>> import oar
    >>> import oar.vision.transforms as T
    >>> _ = oar.seed(0)
    >>> T.RandomCrop(2, padding=1)(np.ones((3, 3), np.uint8)).shape
    (2, 2)
    """

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant",
                 keys=None):
        super().__init__(keys)
        self.size = F._size_pair(size, "RandomCrop")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def _padded(self, img, fill):
        if self.padding is not None:
            img = F.pad(img, self.padding, fill, self.padding_mode)
        h, w = F._image_size(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, (self.size[1] - w, 0), fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, (0, self.size[0] - h), fill, self.padding_mode)
        return img

    def _get_params(self, inputs):
        h, w = F._image_size(_first_image(inputs))
        if self.padding is not None:
            left, top, right, bottom = F._pad_sides(self.padding)
            h, w = h + top + bottom, w + left + right
        th, tw = self.size
        if self.pad_if_needed:
            h, w = max(h, h + 2 * (th - h)), max(w, w + 2 * (tw - w))
        if h < th or w < tw:
            raise ArgumentError(f"RandomCrop: the crop {th}x{tw} is larger than the (padded) image {h}x{w}")
        rng = default_generator()
        return int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1))

    def _apply_image(self, img):
        top, left = self.params
        return F.crop(self._padded(img, self.fill), top, left, *self.size)

    def _apply_mask(self, mask):
        top, left = self.params
        return F.crop(self._padded(mask, 0), top, left, *self.size)


class RandomResizedCrop(BaseTransform):
    """Crop a random area (a fraction in ``scale`` of the image, aspect ratio in ``ratio``,
    sampled log-uniformly) and resize it to ``size``; after 10 failed draws, a centre crop at
    the nearest allowed ratio, as Paddle.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.RandomResizedCrop(8)(np.zeros((20, 30, 3), np.uint8)).shape
    (8, 8, 3)
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4, 4.0 / 3), interpolation: str = "bilinear",
                 keys=None):
        super().__init__(keys)
        self.size = F._size_pair(size, "RandomResizedCrop")
        if scale[0] > scale[1] or ratio[0] > ratio[1] or min(ratio) <= 0 or min(scale) <= 0:
            raise ArgumentError(f"RandomResizedCrop: scale and ratio must be positive (min, max), got {scale}, {ratio}")
        self.scale = tuple(scale)
        self.ratio = tuple(ratio)
        self.interpolation = interpolation

    def _get_params(self, inputs, attempts: int = 10):
        height, width = F._image_size(_first_image(inputs))
        area = height * width
        rng = default_generator()
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(attempts):
            target_area = rng.uniform(*self.scale) * area
            aspect_ratio = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def _apply_image(self, img):
        return F.resize(F.crop(img, *self.params), self.size, self.interpolation)

    def _apply_mask(self, mask):
        return F.resize(F.crop(mask, *self.params), self.size, "nearest")


class RandomHorizontalFlip(BaseTransform):
    """Mirror left-right with probability ``prob``."""

    def __init__(self, prob: float = 0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ArgumentError(f"RandomHorizontalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _get_params(self, inputs):
        return default_generator().random() < self.prob

    def _apply_image(self, img):
        return F.hflip(img) if self.params else img

    _apply_mask = _apply_image


class RandomVerticalFlip(BaseTransform):
    """Mirror top-bottom with probability ``prob``."""

    def __init__(self, prob: float = 0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ArgumentError(f"RandomVerticalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _get_params(self, inputs):
        return default_generator().random() < self.prob

    def _apply_image(self, img):
        return F.vflip(img) if self.params else img

    _apply_mask = _apply_image


class RandomRotation(BaseTransform):
    """Rotate by an angle drawn uniformly from ``degrees`` (``(-d, d)`` for a number ``d``),
    counter-clockwise; see ``functional.rotate``. Masks rotate with nearest and fill 0.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.RandomRotation((90, 90))(np.array([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """

    def __init__(self, degrees, interpolation: str = "nearest", expand: bool = False, center=None, fill=0,
                 keys=None):
        super().__init__(keys)
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ArgumentError(f"RandomRotation: a single degrees value must be non-negative, got {degrees}")
            degrees = (-degrees, degrees)
        elif not (isinstance(degrees, Sequence) and len(degrees) == 2):
            raise ArgumentError(f"RandomRotation: degrees must be a number or a (min, max) pair, got {degrees!r}")
        self.degrees = (float(degrees[0]), float(degrees[1]))
        self.interpolation = interpolation
        self.expand = expand
        self.center = center
        self.fill = fill

    def _get_params(self, inputs):
        return float(default_generator().uniform(*self.degrees))

    def _apply_image(self, img):
        return F.rotate(img, self.params, self.interpolation, self.expand, self.center, self.fill)

    def _apply_mask(self, mask):
        return F.rotate(mask, self.params, "nearest", self.expand, self.center, 0)


# -- colour ---------------------------------------------------------------------------------------
def _factor_range(value, name: str, center: float = 1.0, bound=(0.0, float("inf")), clip_first_on_zero=True):
    """Paddle's ``_check_input``: a number ``v`` -> ``[center - v, center + v]``; None if no-op."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ArgumentError(f"{name}: a single value must be non-negative, got {value}")
        low, high = center - value, center + value
        if clip_first_on_zero:
            low = max(low, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        low, high = float(value[0]), float(value[1])
        if not bound[0] <= low <= high <= bound[1]:
            raise ArgumentError(f"{name}: values must be ordered and within {list(bound)}, got {value!r}")
    else:
        raise ArgumentError(f"{name}: expected a number or a (min, max) pair, got {value!r}")
    return None if low == high == center else (low, high)


class _ColorTransform(BaseTransform):
    """A colour adjustment by a factor drawn uniformly from a range; masks pass through."""

    adjust = None  # the functional op, set by subclasses
    center, bound, clip_first_on_zero = 1.0, (0.0, float("inf")), True

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _factor_range(value, type(self).__name__, self.center, self.bound, self.clip_first_on_zero)

    def _get_params(self, inputs):
        return None if self.value is None else float(default_generator().uniform(*self.value))

    def _apply_image(self, img):
        return img if self.params is None else type(self).adjust(img, self.params)

    def _apply_mask(self, mask):
        return mask


class BrightnessTransform(_ColorTransform):
    """Scale brightness by a factor in ``[max(0, 1 - value), 1 + value]``."""

    adjust = staticmethod(F.adjust_brightness)


class ContrastTransform(_ColorTransform):
    """Scale contrast by a factor in ``[max(0, 1 - value), 1 + value]``."""

    adjust = staticmethod(F.adjust_contrast)


class SaturationTransform(_ColorTransform):
    """Scale saturation by a factor in ``[max(0, 1 - value), 1 + value]``."""

    adjust = staticmethod(F.adjust_saturation)


class HueTransform(_ColorTransform):
    """Shift hue by a factor in ``[-value, value]``, ``value`` <= 0.5."""

    adjust = staticmethod(F.adjust_hue)
    center, bound, clip_first_on_zero = 0.0, (-0.5, 0.5), False

    def __init__(self, value, keys=None):
        if isinstance(value, numbers.Number) and value > 0.5:
            raise ArgumentError(f"HueTransform: value must be in [0, 0.5], got {value}")
        super().__init__(value, keys)


class ColorJitter(BaseTransform):
    """Randomly change brightness, contrast, saturation and hue, in a random order.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.ColorJitter(0.4, 0.4, 0.4, 0.1)(np.full((4, 4, 3), 128, np.uint8)).dtype
    dtype('uint8')
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys=None):
        super().__init__(keys)
        self.brightness, self.contrast, self.saturation, self.hue = brightness, contrast, saturation, hue
        self._transforms = [
            BrightnessTransform(brightness), ContrastTransform(contrast),
            SaturationTransform(saturation), HueTransform(hue),
        ]

    def _get_params(self, inputs):
        order = default_generator().permutation(len(self._transforms))
        return [self._transforms[i] for i in order]

    def _apply_image(self, img):
        for transform in self.params:
            img = transform(img)
        return img

    def _apply_mask(self, mask):
        return mask

    def __repr__(self) -> str:
        return (f"ColorJitter(brightness={self.brightness!r}, contrast={self.contrast!r}, "
                f"saturation={self.saturation!r}, hue={self.hue!r})")


__all__ = [
    "BaseTransform", "Compose", "ToTensor", "Normalize", "Transpose", "Grayscale", "Resize", "CenterCrop", "Pad",
    "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation",
    "BrightnessTransform", "ContrastTransform", "SaturationTransform", "HueTransform", "ColorJitter",
]
