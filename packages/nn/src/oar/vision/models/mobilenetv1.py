"""MobileNetV1 as ``paddle.vision.models.MobileNetV1``, with Paddle's layer names (``conv1.0.weight``,
``conv2_1._depthwise_conv.1._mean``, ``conv5_3._pointwise_conv.0.weight``, ``fc.weight``)."""

from __future__ import annotations

import oar
from oar import nn
from oar.vision.models._conv_norm import ConvNormActivation
from oar.vision.models._pretrained import check_pretrained

# (name, input channels, depthwise channels, pointwise channels, groups, stride) before scaling
DEPTHWISE_SEPARABLE_CFG = [
    ("conv2_1", 32, 32, 64, 32, 1),
    ("conv2_2", 64, 64, 128, 64, 2),
    ("conv3_1", 128, 128, 128, 128, 1),
    ("conv3_2", 128, 128, 256, 128, 2),
    ("conv4_1", 256, 256, 256, 256, 1),
    ("conv4_2", 256, 256, 512, 256, 2),
    *[(f"conv5_{i}", 512, 512, 512, 512, 1) for i in range(1, 6)],
    ("conv5_6", 512, 512, 1024, 512, 2),
    ("conv6", 1024, 1024, 1024, 1024, 1),
]


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise ConvNormActivation then a 1x1 pointwise one; channel counts and groups
    are multiplied by ``scale`` (truncated, as Paddle).

    >>> import oar
    >>> from oar.vision.models.mobilenetv1 import DepthwiseSeparable
    >>> DepthwiseSeparable(8, 8, 16, 8, stride=2, scale=1.0)(oar.rand([1, 8, 6, 6])).shape
    [1, 16, 3, 3]
    """

    def __init__(self, in_channels: int, out_channels1: int, out_channels2: int, num_groups: int, stride,
                 scale: float):
        super().__init__()
        self._depthwise_conv = ConvNormActivation(in_channels, int(out_channels1 * scale), kernel_size=3,
                                                  stride=stride, padding=1, groups=int(num_groups * scale))
        self._pointwise_conv = ConvNormActivation(int(out_channels1 * scale), int(out_channels2 * scale),
                                                  kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


class MobileNetV1(nn.Layer):
    """MobileNetV1 from "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
    Applications" (Howard et al., 2017), as Paddle's: a stride-2 3x3 stem (``conv1``), thirteen
    depthwise-separable blocks (``conv2_1`` ... ``conv6``), a global average pool (``with_pool``)
    and ``fc`` (left out when ``num_classes <= 0``). ``scale`` multiplies every channel count.
    4,253,864 parameters at scale 1.0 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import MobileNetV1
    >>> MobileNetV1(scale=0.25, num_classes=10)(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.conv1 = ConvNormActivation(3, int(32 * scale), kernel_size=3, stride=2, padding=1)
        self.dwsl = []
        for name, in_channels, depthwise, pointwise, groups, stride in DEPTHWISE_SEPARABLE_CFG:
            block = DepthwiseSeparable(int(in_channels * scale), depthwise, pointwise, groups, stride, scale)
            self.dwsl.append(self.add_sublayer(name, block))
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x):
        x = self.conv1(x)
        for block in self.dwsl:
            x = block(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.fc(oar.flatten(x, 1))
        return x


def mobilenet_v1(pretrained: bool = False, scale: float = 1.0, **kwargs) -> MobileNetV1:
    """``MobileNetV1(scale=scale, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("mobilenet_v1", pretrained)
    return MobileNetV1(scale=scale, **kwargs)
