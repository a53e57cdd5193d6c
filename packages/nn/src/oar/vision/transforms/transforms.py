"""Transform classes, as ``paddle.vision.transforms``: callables on numpy ``HxWxC`` images (or
PIL images, or ``CxHxW`` tensors) built on ``functional``.

Random transforms draw from oar's global generator, so ``oar.seed(n)`` makes a pipeline
reproducible. Each call draws its random parameters once and applies them to every input it is
given, so with ``keys=("image", "mask")`` an image and its mask get the same crop or flip; this
holds for ``RandomAffine`` and ``RandomPerspective`` too, which in Paddle take no masks.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

import oar
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


def _angle_range(value, name: str, sizes=(2,)) -> list[float]:
    """Paddle's ``_setup_angle``: a number ``d`` -> ``[-d, d]``; else a sequence of ``sizes``."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ArgumentError(f"{name}: a single value must be non-negative, got {value}")
        return [-float(value), float(value)]
    if not (isinstance(value, Sequence) and len(value) in sizes):
        raise ArgumentError(f"{name}: expected a number or a sequence of {' or '.join(map(str, sizes))} numbers, "
                            f"got {value!r}")
    return [float(v) for v in value]


def _check_pair(value, name: str) -> None:
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise ArgumentError(f"{name}: expected a sequence of 2 numbers, got {value!r}")


def _check_interpolation(interpolation: str, name: str) -> None:
    if interpolation not in ("nearest", "bilinear", "bicubic"):
        raise ArgumentError(f"{name}: interpolation must be 'nearest', 'bilinear' or 'bicubic', got {interpolation!r}")


class RandomAffine(BaseTransform):
    """A random affine map (see ``functional.affine``): an angle drawn from ``degrees`` (``(-d,
    d)`` for a number ``d``), a translation of up to ``translate = (fx, fy)`` times the width
    and height (whole pixels), a scale drawn from ``scale = (min, max)``, and a shear drawn from
    ``shear`` (a number ``s`` -> x shear in ``(-s, s)``; ``(min, max)`` for x; ``(xmin, xmax,
    ymin, ymax)`` for both). Masks get the same map with nearest sampling and fill 0.

    >>> import numpy as np
    >>> import oar
    >>> import oar.vision.transforms as T
    >>> _ = oar.seed(0)
    >>> T.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5)(np.zeros((8, 8, 3), np.uint8)).shape
    (8, 8, 3)
    """

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation: str = "nearest", fill=0,
                 center=None, keys=None):
        self.degrees = _angle_range(degrees, "RandomAffine: degrees")
        super().__init__(keys)
        _check_interpolation(interpolation, "RandomAffine")
        self.interpolation = interpolation
        if translate is not None:
            _check_pair(translate, "RandomAffine: translate")
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ArgumentError(f"RandomAffine: translate values must be in [0, 1], got {translate!r}")
        self.translate = translate
        if scale is not None:
            _check_pair(scale, "RandomAffine: scale")
            if not all(s > 0 for s in scale):
                raise ArgumentError(f"RandomAffine: scale values must be positive, got {scale!r}")
        self.scale = scale
        self.shear = None if shear is None else _angle_range(shear, "RandomAffine: shear", sizes=(2, 4))
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise ArgumentError(f"RandomAffine: fill must be a number or a sequence, got {fill!r}")
        self.fill = fill
        if center is not None:
            _check_pair(center, "RandomAffine: center")
        self.center = center

    def _get_params(self, inputs):
        width_height = F._image_size(_first_image(inputs))[::-1]
        rng = default_generator()
        angle = float(rng.uniform(*self.degrees))
        if self.translate is not None:
            max_dx, max_dy = (float(f * size) for f, size in zip(self.translate, width_height))
            translations = (int(rng.uniform(-max_dx, max_dx)), int(rng.uniform(-max_dy, max_dy)))
        else:
            translations = (0, 0)
        scale = float(rng.uniform(*self.scale)) if self.scale is not None else 1.0
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = float(rng.uniform(self.shear[0], self.shear[1]))
            if len(self.shear) == 4:
                shear_y = float(rng.uniform(self.shear[2], self.shear[3]))
        return angle, translations, scale, (shear_x, shear_y)

    def _apply_image(self, img):
        return F.affine(img, *self.params, interpolation=self.interpolation, fill=self.fill, center=self.center)

    def _apply_mask(self, mask):
        return F.affine(mask, *self.params, interpolation="nearest", fill=0, center=self.center)


class RandomPerspective(BaseTransform):
    """With probability ``prob``, a random perspective warp (see ``functional.perspective``):
    each corner moves inwards by up to ``distortion_scale`` times half the width and height
    (``distortion_scale`` in [0, 1]). Masks get the same warp with nearest sampling and fill 0.

    >>> import numpy as np
    >>> import oar.vision.transforms as T
    >>> T.RandomPerspective(prob=1.0, distortion_scale=0.5)(np.zeros((8, 8, 3), np.uint8)).shape
    (8, 8, 3)
    """

    def __init__(self, prob: float = 0.5, distortion_scale: float = 0.5, interpolation: str = "nearest", fill=0,
                 keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ArgumentError(f"RandomPerspective: prob must be in [0, 1], got {prob}")
        if not 0.0 <= distortion_scale <= 1.0:
            raise ArgumentError(f"RandomPerspective: distortion_scale must be in [0, 1], got {distortion_scale}")
        _check_interpolation(interpolation, "RandomPerspective")
        if not isinstance(fill, (numbers.Number, str, Sequence)):
            raise ArgumentError(f"RandomPerspective: fill must be a number or a sequence, got {fill!r}")
        self.prob = prob
        self.distortion_scale = distortion_scale
        self.interpolation = interpolation
        self.fill = fill

    def get_params(self, width: int, height: int, distortion_scale: float):
        """``(startpoints, endpoints)``: the image corners and where they move, as Paddle's."""
        rng = default_generator()
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))

        def near(low, high):
            return int(rng.uniform(low, high))

        topleft = [near(0, dx + 1), near(0, dy + 1)]
        topright = [near(width - dx - 1, width), near(0, dy + 1)]
        botright = [near(width - dx - 1, width), near(height - dy - 1, height)]
        botleft = [near(0, dx + 1), near(height - dy - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def _get_params(self, inputs):
        if default_generator().random() >= self.prob:
            return None
        height, width = F._image_size(_first_image(inputs))
        return self.get_params(width, height, self.distortion_scale)

    def _apply_image(self, img):
        return img if self.params is None else F.perspective(img, *self.params, self.interpolation, self.fill)

    def _apply_mask(self, mask):
        return mask if self.params is None else F.perspective(mask, *self.params, "nearest", 0)


class RandomErasing(BaseTransform):
    """With probability ``prob``, erase a random box (an area fraction in ``scale``, aspect
    ratio in ``ratio``, sampled log-uniformly; up to 10 draws, else nothing is erased) with
    ``value``: a number, one per channel, or ``"random"`` (standard normal noise, times 255 for
    numpy and PIL images, as Paddle). ``inplace`` writes into a numpy array or tensor. Numpy and
    PIL images are ``HxWxC``, tensors ``CxHxW``.

    >>> import numpy as np
    >>> import oar
    >>> import oar.vision.transforms as T
    >>> _ = oar.seed(0)
    >>> out = T.RandomErasing(prob=1.0, value=0)(np.full((8, 8, 3), 9, np.uint8))
    >>> out.shape, bool((out == 0).any()), bool((out == 9).any())
    ((8, 8, 3), True, True)
    """

    def __init__(self, prob: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace: bool = False,
                 keys=None):
        super().__init__(keys)
        if not (isinstance(scale, (tuple, list)) and len(scale) == 2 and 0 <= scale[0] <= scale[1] <= 1):
            raise ArgumentError(f"RandomErasing: scale must be (min, max) within [0, 1], got {scale!r}")
        if not (isinstance(ratio, (tuple, list)) and len(ratio) == 2 and 0 <= ratio[0] <= ratio[1]):
            raise ArgumentError(f"RandomErasing: ratio must be (min, max) with 0 <= min <= max, got {ratio!r}")
        if not 0.0 <= prob <= 1.0:
            raise ArgumentError(f"RandomErasing: prob must be in [0, 1], got {prob}")
        if isinstance(value, str) and value != "random":
            raise ArgumentError(f"RandomErasing: a string value must be 'random', got {value!r}")
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise ArgumentError(f"RandomErasing: value must be a number, a sequence or 'random', got {value!r}")
        if isinstance(value, (tuple, list)) and len(value) not in (1, 3):
            raise ArgumentError(f"RandomErasing: value must have 1 or 3 entries (one per channel), got {value!r}")
        self.prob = prob
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace

    def _get_params(self, inputs):
        rng = default_generator()
        if rng.random() >= self.prob:
            return None
        img = _first_image(inputs)
        h, w = F._image_size(img)
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            erase_area = rng.uniform(*self.scale) * h * w
            aspect_ratio = math.exp(rng.uniform(*log_ratio))
            erase_h = int(round(math.sqrt(erase_area * aspect_ratio)))
            erase_w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if erase_h >= h or erase_w >= w:
                continue
            top, left = int(rng.integers(0, h - erase_h + 1)), int(rng.integers(0, w - erase_w + 1))
            return top, left, erase_h, erase_w, self._fill_value(img, erase_h, erase_w, rng)
        return None

    def _fill_value(self, img, erase_h: int, erase_w: int, rng):
        tensor = F._is_tensor_image(img)
        channels = (img.shape[0] if img.ndim == 3 else 1) if tensor else self._numpy_channels(img)
        if self.value == "random":
            noise = rng.standard_normal((channels, erase_h, erase_w) if tensor else (erase_h, erase_w, channels))
            return noise if tensor else noise * 255
        values = np.atleast_1d(np.asarray(self.value, np.float64))
        return values[:, None, None] if tensor else values[None, None, :]

    @staticmethod
    def _numpy_channels(img) -> int:
        a = F._from_pil(img) if F._is_pil_image(img) else img
        return 1 if a.ndim == 2 else a.shape[2]

    def _apply_image(self, img):
        if self.params is None:
            return img
        top, left, erase_h, erase_w, value = self.params
        if F._is_tensor_image(img):
            value = oar.to_tensor(np.asarray(value), dtype=img.dtype)
        return F.erase(img, top, left, erase_h, erase_w, value, self.inplace)


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
    "RandomAffine", "RandomPerspective", "RandomErasing",
]
