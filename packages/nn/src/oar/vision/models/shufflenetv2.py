"""ShuffleNetV2 as ``paddle.vision.models.ShuffleNetV2``, with Paddle's layer names (``_conv1.0.weight``,
``2_1._conv_dw_1.1._mean``, ``3_2._conv_linear.0.weight``, ``_last_conv.1._variance``, ``_fc.weight``).

``act`` is ``"relu"`` or ``"swish"`` (``shufflenet_v2_swish``); ``scale`` is one of Paddle's six
widths, 0.25, 0.33, 0.5, 1.0, 1.5 and 2.0."""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._conv_norm import ConvNormActivation
from oar.vision.models._pretrained import check_pretrained

ACTIVATIONS = {"relu": nn.ReLU, "swish": nn.Swish, None: None}
# scale -> output channels of the stem, the three stages and the last 1x1 conv
STAGE_OUT_CHANNELS = {
    0.25: [24, 24, 48, 96, 512],
    0.33: [24, 32, 64, 128, 512],
    0.5: [24, 48, 96, 192, 1024],
    1.0: [24, 116, 232, 464, 1024],
    1.5: [24, 176, 352, 704, 1024],
    2.0: [24, 224, 488, 976, 2048],
}
STAGE_REPEATS = [4, 8, 4]


def channel_shuffle(x, groups: int):
    """Interleave the channels of ``groups`` equal groups: ``[N, g*c, H, W]`` viewed as
    ``[N, g, c, H, W]``, transposed to ``[N, c, g, H, W]`` and flattened back.

    >>> import oar
    >>> from oar.vision.models.shufflenetv2 import channel_shuffle
    >>> channel_shuffle(oar.arange(4, dtype="float32").reshape([1, 4, 1, 1]), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    batch_size, num_channels, height, width = x.shape[0:4]
    x = oar.reshape(x, [batch_size, groups, num_channels // groups, height, width])
    x = oar.transpose(x, perm=[0, 2, 1, 3, 4])
    return oar.reshape(x, [batch_size, num_channels, height, width])


class InvertedResidual(nn.Layer):
    """The stride-1 unit: split the channels in half, pass one half through 1x1, depthwise 3x3 and
    1x1 convs, concatenate with the other half and shuffle."""

    def __init__(self, in_channels: int, out_channels: int, stride, activation_layer=nn.ReLU):
        super().__init__()
        half = out_channels // 2
        self._conv_pw = ConvNormActivation(in_channels // 2, half, kernel_size=1, stride=1, padding=0,
                                           activation_layer=activation_layer)
        self._conv_dw = ConvNormActivation(half, half, kernel_size=3, stride=stride, padding=1, groups=half,
                                           activation_layer=None)
        self._conv_linear = ConvNormActivation(half, half, kernel_size=1, stride=1, padding=0,
                                               activation_layer=activation_layer)

    def forward(self, inputs):
        half = inputs.shape[1] // 2
        x1, x2 = oar.split(inputs, num_or_sections=[half, half], axis=1)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return channel_shuffle(oar.concat([x1, x2], axis=1), 2)


class InvertedResidualDS(nn.Layer):
    """The downsampling unit: two strided branches (depthwise then 1x1; 1x1, depthwise, 1x1),
    each to half the output channels, concatenated and shuffled."""

    def __init__(self, in_channels: int, out_channels: int, stride, activation_layer=nn.ReLU):
        super().__init__()
        half = out_channels // 2
        self._conv_dw_1 = ConvNormActivation(in_channels, in_channels, kernel_size=3, stride=stride, padding=1,
                                             groups=in_channels, activation_layer=None)
        self._conv_linear_1 = ConvNormActivation(in_channels, half, kernel_size=1, stride=1, padding=0,
                                                 activation_layer=activation_layer)
        self._conv_pw_2 = ConvNormActivation(in_channels, half, kernel_size=1, stride=1, padding=0,
                                             activation_layer=activation_layer)
        self._conv_dw_2 = ConvNormActivation(half, half, kernel_size=3, stride=stride, padding=1, groups=half,
                                             activation_layer=None)
        self._conv_linear_2 = ConvNormActivation(half, half, kernel_size=1, stride=1, padding=0,
                                                 activation_layer=activation_layer)

    def forward(self, inputs):
        x1 = self._conv_linear_1(self._conv_dw_1(inputs))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(inputs)))
        return channel_shuffle(oar.concat([x1, x2], axis=1), 2)


class ShuffleNetV2(nn.Layer):
    """ShuffleNetV2 from "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture
    Design" (Ma et al., 2018), as Paddle's: a stride-2 3x3 stem (``_conv1``), a max pool, three
    stages of 4, 8 and 4 units named ``"{stage}_{unit}"`` (``2_1`` ... ``4_4``), a 1x1 conv
    (``_last_conv``), a global average pool (``with_pool``) and ``_fc`` (left out when
    ``num_classes <= 0``). 2,294,784 parameters at scale 1.0 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import ShuffleNetV2
    >>> ShuffleNetV2(scale=0.25, num_classes=10)(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, scale: float = 1.0, act: str = "relu", num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        if scale not in STAGE_OUT_CHANNELS:
            raise ArgumentError(f"ShuffleNetV2: scale must be one of {list(STAGE_OUT_CHANNELS)}, got {scale!r}")
        if act not in ACTIVATIONS:
            raise ArgumentError(f"ShuffleNetV2: act must be 'relu', 'swish' or None, got {act!r}")
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        activation_layer = ACTIVATIONS[act]
        channels = STAGE_OUT_CHANNELS[scale]
        self._conv1 = ConvNormActivation(3, channels[0], kernel_size=3, stride=2, padding=1,
                                         activation_layer=activation_layer)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self._block_list = []
        for stage, repeats in enumerate(STAGE_REPEATS):
            for i in range(repeats):
                if i == 0:
                    block = InvertedResidualDS(channels[stage], channels[stage + 1], 2, activation_layer)
                else:
                    block = InvertedResidual(channels[stage + 1], channels[stage + 1], 1, activation_layer)
                self._block_list.append(self.add_sublayer(f"{stage + 2}_{i + 1}", block))
        self._last_conv = ConvNormActivation(channels[-2], channels[-1], kernel_size=1, stride=1, padding=0,
                                             activation_layer=activation_layer)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self._out_c = channels[-1]
            self._fc = nn.Linear(channels[-1], num_classes)

    def forward(self, inputs):
        x = self._max_pool(self._conv1(inputs))
        for block in self._block_list:
            x = block(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        if self.num_classes > 0:
            x = self._fc(oar.flatten(x, start_axis=1, stop_axis=-1))
        return x


def _shufflenet_v2(arch: str, scale: float, pretrained: bool, **kwargs) -> ShuffleNetV2:
    check_pretrained(arch, pretrained)
    return ShuffleNetV2(scale=scale, **kwargs)


def shufflenet_v2_x0_25(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=0.25, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x0_25", 0.25, pretrained, **kwargs)


def shufflenet_v2_x0_33(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=0.33, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x0_33", 0.33, pretrained, **kwargs)


def shufflenet_v2_x0_5(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=0.5, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x0_5", 0.5, pretrained, **kwargs)


def shufflenet_v2_x1_0(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=1.0, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x1_0", 1.0, pretrained, **kwargs)


def shufflenet_v2_x1_5(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=1.5, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x1_5", 1.5, pretrained, **kwargs)


def shufflenet_v2_x2_0(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=2.0, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _shufflenet_v2("shufflenet_v2_x2_0", 2.0, pretrained, **kwargs)


def shufflenet_v2_swish(pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """``ShuffleNetV2(scale=1.0, act="swish", **kwargs)``; ``pretrained=True`` is an error."""
    return _shufflenet_v2("shufflenet_v2_swish", 1.0, pretrained, act="swish", **kwargs)
