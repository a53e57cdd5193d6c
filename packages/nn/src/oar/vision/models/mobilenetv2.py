"""MobileNetV2 as ``paddle.vision.models.MobileNetV2``, with Paddle's layer names
(``features.0.0.weight``, ``features.1.conv.0.0.weight``, ``classifier.1.weight``)."""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._pretrained import check_pretrained

# expansion t, output channels c, repeats n, first stride s
INVERTED_RESIDUAL_SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, default
    ``divisor``), and never more than 10% below ``v``: the channel rounding of MobileNets.

    >>> make_divisible(32 * 0.5), make_divisible(1280 * 0.75), make_divisible(10)
    (16, 960, 16)
    """
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    """Conv2D (no bias, "same" padding for odd kernels) + BatchNorm2D + ReLU6, as sublayers 0, 1, 2."""

    def __init__(self, in_planes: int, out_planes: int, kernel_size: int = 3, stride: int = 1, groups: int = 1,
                 norm_layer=nn.BatchNorm2D):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2D(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias_attr=False),
            norm_layer(out_planes),
            nn.ReLU6(),
        )


class InvertedResidual(nn.Layer):
    """Expand with a 1x1 convolution (unless ``expand_ratio`` is 1), filter depthwise 3x3, project
    linearly with a 1x1 convolution; the input is added back when stride is 1 and the channels
    match.

    >>> import oar
    >>> from oar.vision.models.mobilenetv2 import InvertedResidual
    >>> InvertedResidual(8, 8, stride=1, expand_ratio=2)(oar.rand([1, 8, 5, 5])).shape
    [1, 8, 5, 5]
    """

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: float, norm_layer=nn.BatchNorm2D):
        super().__init__()
        if stride not in (1, 2):
            raise ArgumentError(f"InvertedResidual: stride must be 1 or 2, got {stride!r}")
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Layer] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer))
        layers += [
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer),
            nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False),
            norm_layer(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Layer):
    """MobileNetV2 from "MobileNetV2: Inverted Residuals and Linear Bottlenecks" (Sandler et al.,
    2018), as Paddle's: ``features`` (a stride-2 ConvBNReLU to 32 channels, 17 inverted residual
    blocks, a 1x1 ConvBNReLU to 1280), an adaptive average pool (``with_pool``) and
    ``classifier`` = Dropout(0.2) + Linear (``num_classes <= 0`` leaves it out). ``scale``
    multiplies every channel count (rounded to multiples of 8; the last stays at least 1280).
    3,504,872 parameters at scale 1.0 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import MobileNetV2
    >>> model = MobileNetV2(scale=0.5, num_classes=10)
    >>> model(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        round_nearest = 8
        norm_layer = nn.BatchNorm2D
        input_channel = make_divisible(32 * scale, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, scale), round_nearest)
        features: list[nn.Layer] = [ConvBNReLU(3, input_channel, stride=2, norm_layer=norm_layer)]
        for t, c, n, s in INVERTED_RESIDUAL_SETTING:
            output_channel = make_divisible(c * scale, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t,
                                                 norm_layer=norm_layer))
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.classifier(oar.flatten(x, 1))
        return x


def mobilenet_v2(pretrained: bool = False, scale: float = 1.0, **kwargs) -> MobileNetV2:
    """``MobileNetV2(scale=scale, **kwargs)``; ``pretrained=True`` is an error (no downloads).

    >>> import oar
    >>> from oar.vision.models import mobilenet_v2
    >>> mobilenet_v2(scale=0.5, num_classes=0, with_pool=False)(oar.rand([1, 3, 32, 32])).shape
    [1, 1280, 1, 1]
    """
    check_pretrained("mobilenet_v2", pretrained)
    return MobileNetV2(scale=scale, **kwargs)
