"""MobileNetV3 (small and large) as ``paddle.vision.models.MobileNetV3Small`` / ``MobileNetV3Large``,
with Paddle's layer names (``conv.0.weight``, ``blocks.0.mid_se.fc1.weight``,
``blocks.1.expand_conv.1._variance``, ``lastconv.0.weight``, ``classifier.3.bias``).

Batch norms use ``epsilon=0.001, momentum=0.99`` and the squeeze-excitation gate is Paddle's
``Hardsigmoid`` (slope 1/6, offset 0.5), as Paddle's."""

from __future__ import annotations

from functools import partial

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._conv_norm import ConvNormActivation
from oar.vision.models._pretrained import check_pretrained
from oar.vision.models.mobilenetv2 import make_divisible

ACTIVATIONS = {None: None, "relu": nn.ReLU, "hardswish": nn.Hardswish}

# in, kernel, expanded, out, squeeze-excitation, activation, stride (before scaling)
SMALL_CFG = [
    (16, 3, 16, 16, True, "relu", 2),
    (16, 3, 72, 24, False, "relu", 2),
    (24, 3, 88, 24, False, "relu", 1),
    (24, 5, 96, 40, True, "hardswish", 2),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 240, 40, True, "hardswish", 1),
    (40, 5, 120, 48, True, "hardswish", 1),
    (48, 5, 144, 48, True, "hardswish", 1),
    (48, 5, 288, 96, True, "hardswish", 2),
    (96, 5, 576, 96, True, "hardswish", 1),
    (96, 5, 576, 96, True, "hardswish", 1),
]
LARGE_CFG = [
    (16, 3, 16, 16, False, "relu", 1),
    (16, 3, 64, 24, False, "relu", 2),
    (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hardswish", 2),
    (80, 3, 200, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 184, 80, False, "hardswish", 1),
    (80, 3, 480, 112, True, "hardswish", 1),
    (112, 3, 672, 112, True, "hardswish", 1),
    (112, 5, 672, 160, True, "hardswish", 2),
    (160, 5, 960, 160, True, "hardswish", 1),
    (160, 5, 960, 160, True, "hardswish", 1),
]


class SqueezeExcitation(nn.Layer):
    """Scale each channel by a gate computed from its global average: pool, 1x1 conv (``fc1``),
    ``activation``, 1x1 conv (``fc2``), ``scale_activation``.

    >>> import oar
    >>> from oar.vision.models.mobilenetv3 import SqueezeExcitation
    >>> SqueezeExcitation(8, 4)(oar.rand([1, 8, 5, 5])).shape
    [1, 8, 5, 5]
    """

    def __init__(self, input_channels: int, squeeze_channels: int, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc1 = nn.Conv2D(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2D(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        scale = self.fc2(self.activation(self.fc1(self.avgpool(x))))
        return self.scale_activation(scale) * x


class InvertedResidualConfig:
    """One block's settings, its channel counts scaled and rounded to multiples of 8."""

    def __init__(self, in_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str | None, stride: int, scale: float = 1.0):
        if activation not in ACTIVATIONS:
            raise ArgumentError(f"InvertedResidualConfig: activation must be one of {list(ACTIVATIONS)}, "
                                f"got {activation!r}")
        self.in_channels = self.adjust_channels(in_channels, scale=scale)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, scale=scale)
        self.out_channels = self.adjust_channels(out_channels, scale=scale)
        self.use_se = use_se
        self.activation_layer = ACTIVATIONS[activation]
        self.stride = stride

    @staticmethod
    def adjust_channels(channels: float, scale: float = 1.0) -> int:
        return make_divisible(channels * scale, 8)


class InvertedResidual(nn.Layer):
    """Expand with a 1x1 conv (when the widths differ), filter depthwise, optionally gate with
    squeeze-excitation, project with a linear 1x1 conv; the input is added back when stride is 1
    and the channels match."""

    def __init__(self, in_channels: int, expanded_channels: int, out_channels: int, filter_size: int, stride: int,
                 use_se: bool, activation_layer, norm_layer):
        super().__init__()
        self.use_res_connect = stride == 1 and in_channels == out_channels
        self.use_se = use_se
        self.expand = in_channels != expanded_channels
        if self.expand:
            self.expand_conv = ConvNormActivation(in_channels, expanded_channels, kernel_size=1, stride=1, padding=0,
                                                  norm_layer=norm_layer, activation_layer=activation_layer)
        self.bottleneck_conv = ConvNormActivation(expanded_channels, expanded_channels, kernel_size=filter_size,
                                                  stride=stride, padding=(filter_size - 1) // 2,
                                                  groups=expanded_channels, norm_layer=norm_layer,
                                                  activation_layer=activation_layer)
        if use_se:
            self.mid_se = SqueezeExcitation(expanded_channels, make_divisible(expanded_channels // 4),
                                            scale_activation=nn.Hardsigmoid)
        self.linear_conv = ConvNormActivation(expanded_channels, out_channels, kernel_size=1, stride=1, padding=0,
                                              norm_layer=norm_layer, activation_layer=None)

    def forward(self, x):
        identity = x
        if self.expand:
            x = self.expand_conv(x)
        x = self.bottleneck_conv(x)
        if self.use_se:
            x = self.mid_se(x)
        x = self.linear_conv(x)
        return identity + x if self.use_res_connect else x


class MobileNetV3(nn.Layer):
    """The MobileNetV3 body shared by the small and large models: a stride-2 hardswish stem
    (``conv``), the inverted residual ``blocks`` of ``config``, a 1x1 conv to 6x the last width
    (``lastconv``), a global average pool (``with_pool``) and ``classifier`` = Linear, Hardswish,
    Dropout(0.2), Linear (left out when ``num_classes <= 0``)."""

    def __init__(self, config: list[InvertedResidualConfig], last_channel: int, scale: float = 1.0,
                 num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.config = config
        self.scale = scale
        self.last_channel = last_channel
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.firstconv_in_channels = config[0].in_channels
        self.lastconv_in_channels = config[-1].in_channels
        self.lastconv_out_channels = self.lastconv_in_channels * 6
        norm_layer = partial(nn.BatchNorm2D, epsilon=0.001, momentum=0.99)
        self.conv = ConvNormActivation(3, self.firstconv_in_channels, kernel_size=3, stride=2, padding=1, groups=1,
                                       activation_layer=nn.Hardswish, norm_layer=norm_layer)
        self.blocks = nn.Sequential(*[
            InvertedResidual(cfg.in_channels, cfg.expanded_channels, cfg.out_channels, cfg.kernel, cfg.stride,
                             cfg.use_se, cfg.activation_layer, norm_layer)
            for cfg in config
        ])
        self.lastconv = ConvNormActivation(self.lastconv_in_channels, self.lastconv_out_channels, kernel_size=1,
                                           stride=1, padding=0, groups=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Linear(self.lastconv_out_channels, last_channel), nn.Hardswish(),
                                            nn.Dropout(p=0.2), nn.Linear(last_channel, num_classes))

    def forward(self, x):
        x = self.lastconv(self.blocks(self.conv(x)))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(oar.flatten(x, 1))
        return x


class MobileNetV3Small(MobileNetV3):
    """MobileNetV3-Small from "Searching for MobileNetV3" (Howard et al., 2019), as Paddle's:
    eleven blocks, a classifier of width ``1024 * scale``. 2,554,968 parameters at scale 1.0 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import MobileNetV3Small
    >>> MobileNetV3Small(scale=0.5, num_classes=10)(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True):
        config = [InvertedResidualConfig(*row, scale=scale) for row in SMALL_CFG]
        super().__init__(config, last_channel=make_divisible(1024 * scale, 8), scale=scale, num_classes=num_classes,
                         with_pool=with_pool)


class MobileNetV3Large(MobileNetV3):
    """MobileNetV3-Large from "Searching for MobileNetV3" (Howard et al., 2019), as Paddle's:
    fifteen blocks, a classifier of width ``1280 * scale``. 5,507,432 parameters at scale 1.0 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import MobileNetV3Large
    >>> MobileNetV3Large(scale=0.5, num_classes=0, with_pool=False)(oar.rand([1, 3, 32, 32])).shape
    [1, 480, 1, 1]
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000, with_pool: bool = True):
        config = [InvertedResidualConfig(*row, scale=scale) for row in LARGE_CFG]
        super().__init__(config, last_channel=make_divisible(1280 * scale, 8), scale=scale, num_classes=num_classes,
                         with_pool=with_pool)


def mobilenet_v3_small(pretrained: bool = False, scale: float = 1.0, **kwargs) -> MobileNetV3Small:
    """``MobileNetV3Small(scale=scale, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("mobilenet_v3_small", pretrained)
    return MobileNetV3Small(scale=scale, **kwargs)


def mobilenet_v3_large(pretrained: bool = False, scale: float = 1.0, **kwargs) -> MobileNetV3Large:
    """``MobileNetV3Large(scale=scale, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("mobilenet_v3_large", pretrained)
    return MobileNetV3Large(scale=scale, **kwargs)
