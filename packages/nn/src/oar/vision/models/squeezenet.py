"""SqueezeNet 1.0 and 1.1 as ``paddle.vision.models.SqueezeNet``, with Paddle's layer names
(``_conv.weight``, ``_conv1._conv_path2._conv.weight``, ``_conv9.bias``).

As Paddle's, the classifier is a dropout (``downscale_in_infer``: evaluation scales by 0.5) and a
1x1 convolution to ``num_classes`` channels; ``with_pool`` then applies ReLU, a global average
pool and squeezes to ``[N, num_classes]``.
"""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._pretrained import check_pretrained

# (squeeze, expand 1x1, expand 3x3) channels of the eight fire modules; both versions share them
FIRE_CHANNELS = [(16, 64, 64), (16, 64, 64), (32, 128, 128), (32, 128, 128), (48, 192, 192), (48, 192, 192),
                 (64, 256, 256), (64, 256, 256)]
# after which fire modules (by index) a max pool follows
POOL_AFTER = {"1.0": (2, 6), "1.1": (1, 3)}


class MakeFireConv(nn.Layer):
    """A convolution followed by ReLU, its weights under ``_conv``."""

    def __init__(self, input_channels: int, output_channels: int, filter_size: int, padding: int = 0):
        super().__init__()
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, padding=padding)

    def forward(self, x):
        return nn.functional.relu(self._conv(x))


class MakeFire(nn.Layer):
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated along channels.

    >>> import oar
    >>> from oar.vision.models.squeezenet import MakeFire
    >>> MakeFire(8, 4, 6, 10)(oar.rand([1, 8, 5, 5])).shape
    [1, 16, 5, 5]
    """

    def __init__(self, input_channels: int, squeeze_channels: int, expand1x1_channels: int,
                 expand3x3_channels: int):
        super().__init__()
        self._conv = MakeFireConv(input_channels, squeeze_channels, 1)
        self._conv_path1 = MakeFireConv(squeeze_channels, expand1x1_channels, 1)
        self._conv_path2 = MakeFireConv(squeeze_channels, expand3x3_channels, 3, padding=1)

    def forward(self, inputs):
        x = self._conv(inputs)
        return oar.concat([self._conv_path1(x), self._conv_path2(x)], axis=1)


class SqueezeNet(nn.Layer):
    """SqueezeNet from "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB
    model size" (Iandola et al., 2016). ``version`` is ``"1.0"`` (a 7x7 stem to 96 channels) or
    ``"1.1"`` (a 3x3 stem to 64 channels, earlier pooling: about 2.4x less computation).
    1,248,424 parameters for 1.0 and 1,235,496 for 1.1 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import SqueezeNet
    >>> SqueezeNet("1.1", num_classes=10)(oar.rand([1, 3, 64, 64])).shape
    [1, 10]
    """

    def __init__(self, version: str, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        if version not in POOL_AFTER:
            raise ArgumentError(f"SqueezeNet: version must be one of {list(POOL_AFTER)}, got {version!r}")
        self.version = version
        self.num_classes = num_classes
        self.with_pool = with_pool
        if version == "1.0":
            self._conv = nn.Conv2D(3, 96, 7, stride=2)
        else:
            self._conv = nn.Conv2D(3, 64, 3, stride=2, padding=1)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        in_channels = self._conv.weight.shape[0]
        for i, (squeeze, expand1, expand3) in enumerate(FIRE_CHANNELS):
            setattr(self, f"_conv{i + 1}", MakeFire(in_channels, squeeze, expand1, expand3))
            in_channels = expand1 + expand3
        self._drop = nn.Dropout(p=0.5, mode="downscale_in_infer")
        self._conv9 = nn.Conv2D(512, num_classes, 1)
        self._avg_pool = nn.AdaptiveAvgPool2D(1)

    def forward(self, inputs):
        x = self._pool(nn.functional.relu(self._conv(inputs)))
        pool_after = POOL_AFTER[self.version]
        for i in range(len(FIRE_CHANNELS)):
            x = getattr(self, f"_conv{i + 1}")(x)
            if i in pool_after:
                x = self._pool(x)
        if self.num_classes > 0:
            x = self._conv9(self._drop(x))
        if self.with_pool:
            x = oar.squeeze(self._avg_pool(nn.functional.relu(x)), axis=[2, 3])
        return x


def squeezenet1_0(pretrained: bool = False, **kwargs) -> SqueezeNet:
    """``SqueezeNet("1.0", **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("squeezenet1_0", pretrained)
    return SqueezeNet("1.0", **kwargs)


def squeezenet1_1(pretrained: bool = False, **kwargs) -> SqueezeNet:
    """``SqueezeNet("1.1", **kwargs)``; ``pretrained=True`` is an error (no downloads).

    >>> import oar
    >>> from oar.vision.models import squeezenet1_1
    >>> squeezenet1_1(with_pool=False)(oar.rand([1, 3, 64, 64])).shape
    [1, 1000, 3, 3]
    """
    check_pretrained("squeezenet1_1", pretrained)
    return SqueezeNet("1.1", **kwargs)
