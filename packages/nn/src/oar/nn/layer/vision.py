"""Vision layers of oar.nn: PixelShuffle, PixelUnshuffle, ChannelShuffle, Softmax2D.

>>> import oar
>>> oar.nn.PixelShuffle(2)(oar.ones([1, 8, 3, 3])).shape
[1, 2, 6, 6]
"""

from __future__ import annotations

from oar.errors import ArgumentError, ShapeError
from oar.nn import functional as F
from oar.nn.layer.layers import Layer


class _ImageRearrange(Layer):
    _fn = None
    _arg = ""

    def __init__(self, factor: int, data_format: str = "NCHW", name=None):
        super().__init__()
        if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
            raise ArgumentError(f"{type(self).__name__}: {self._arg} must be a positive int, got {factor!r}")
        if data_format not in ("NCHW", "NHWC"):
            raise ArgumentError(f"{type(self).__name__}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
        self._factor, self._data_format, self._name = factor, data_format, name

    def forward(self, x):
        return type(self)._fn(x, self._factor, self._data_format)

    def extra_repr(self) -> str:
        text = f"{self._arg}={self._factor}"
        if self._data_format != "NCHW":
            text += f", data_format={self._data_format}"
        return text + (f", name={self._name}" if self._name else "")


class PixelShuffle(_ImageRearrange):
    """``[N, C * r * r, H, W] -> [N, C, H * r, W * r]`` with ``r = upscale_factor``."""

    _fn = staticmethod(F.pixel_shuffle)
    _arg = "upscale_factor"

    def __init__(self, upscale_factor: int, data_format: str = "NCHW", name=None):
        super().__init__(upscale_factor, data_format, name)


class PixelUnshuffle(_ImageRearrange):
    """``[N, C, H * r, W * r] -> [N, C * r * r, H, W]`` with ``r = downscale_factor``."""

    _fn = staticmethod(F.pixel_unshuffle)
    _arg = "downscale_factor"

    def __init__(self, downscale_factor: int, data_format: str = "NCHW", name=None):
        super().__init__(downscale_factor, data_format, name)


class ChannelShuffle(_ImageRearrange):
    """Interleave the channels of ``groups`` groups."""

    _fn = staticmethod(F.channel_shuffle)
    _arg = "groups"

    def __init__(self, groups: int, data_format: str = "NCHW", name=None):
        super().__init__(groups, data_format, name)


class Softmax2D(Layer):
    """Softmax over the channels of every pixel: axis -3 of ``[N, C, H, W]`` or ``[C, H, W]``.

    >>> import oar
    >>> y = oar.nn.Softmax2D()(oar.rand([2, 3, 4, 5]))
    >>> round(float(y.sum(axis=1).mean()), 4)
    1.0
    """

    def __init__(self, name=None):
        super().__init__()
        self._name = name

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2D: x must be 3-D [C, H, W] or 4-D [N, C, H, W], got shape {x.shape}")
        return F.softmax(x, axis=-3)


__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Softmax2D"]
