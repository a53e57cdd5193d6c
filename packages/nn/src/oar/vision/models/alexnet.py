"""AlexNet as ``paddle.vision.models.AlexNet``, with Paddle's layer names (``_conv1._conv.weight``,
``_conv3.weight``, ``_fc6.weight``, ``_fc8.bias``) and initialization (uniform in
``+-1/sqrt(fan_in)``). Its dropouts are ``downscale_in_infer``: evaluation scales by 0.5."""

from __future__ import annotations

import math

import oar
from oar import nn
from oar.vision.models._pretrained import check_pretrained


def _uniform_attr(fan_in: int) -> nn.ParamAttr:
    stdv = 1.0 / math.sqrt(fan_in)
    return nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv))


class ConvPoolLayer(nn.Layer):
    """A convolution (``_conv``), ReLU when ``act == "relu"``, and a 3x3 stride-2 max pool."""

    def __init__(self, input_channels: int, output_channels: int, filter_size, stride, padding, stdv: float,
                 groups: int = 1, act: str | None = None):
        super().__init__()
        self.relu = nn.ReLU() if act == "relu" else None
        attr = nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv))
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, stride=stride, padding=padding,
                               groups=groups, weight_attr=attr,
                               bias_attr=nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv)))
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)

    def forward(self, inputs):
        x = self._conv(inputs)
        if self.relu is not None:
            x = self.relu(x)
        return self._pool(x)


class AlexNet(nn.Layer):
    """AlexNet from "ImageNet Classification with Deep Convolutional Neural Networks"
    (Krizhevsky et al., 2012), as Paddle's: five convolutions (three followed by max pools) and,
    when ``num_classes > 0``, three fully connected layers with dropout. It needs 224x224 inputs
    for the classifier (256x6x6 features); with ``num_classes <= 0`` it returns the features.
    61,100,840 parameters with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import AlexNet
    >>> AlexNet(num_classes=0)(oar.rand([1, 3, 64, 64])).shape
    [1, 256, 1, 1]
    """

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.num_classes = num_classes
        self._conv1 = ConvPoolLayer(3, 64, 11, 4, 2, 1.0 / math.sqrt(3 * 11 * 11), act="relu")
        self._conv2 = ConvPoolLayer(64, 192, 5, 1, 2, 1.0 / math.sqrt(64 * 5 * 5), act="relu")
        self._conv3 = nn.Conv2D(192, 384, 3, stride=1, padding=1, weight_attr=_uniform_attr(192 * 3 * 3),
                                bias_attr=_uniform_attr(192 * 3 * 3))
        self._conv4 = nn.Conv2D(384, 256, 3, stride=1, padding=1, weight_attr=_uniform_attr(384 * 3 * 3),
                                bias_attr=_uniform_attr(384 * 3 * 3))
        self._conv5 = ConvPoolLayer(256, 256, 3, 1, 1, 1.0 / math.sqrt(256 * 3 * 3), act="relu")
        if num_classes > 0:
            fan_in = 256 * 6 * 6  # Paddle initializes all three fully connected layers from this fan-in
            self._drop1 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc6 = nn.Linear(256 * 6 * 6, 4096, weight_attr=_uniform_attr(fan_in), bias_attr=_uniform_attr(fan_in))
            self._drop2 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc7 = nn.Linear(4096, 4096, weight_attr=_uniform_attr(fan_in), bias_attr=_uniform_attr(fan_in))
            self._fc8 = nn.Linear(4096, num_classes, weight_attr=_uniform_attr(fan_in),
                                  bias_attr=_uniform_attr(fan_in))

    def forward(self, inputs):
        x = self._conv2(self._conv1(inputs))
        x = nn.functional.relu(self._conv3(x))
        x = nn.functional.relu(self._conv4(x))
        x = self._conv5(x)
        if self.num_classes > 0:
            x = oar.flatten(x, start_axis=1, stop_axis=-1)
            x = nn.functional.relu(self._fc6(self._drop1(x)))
            x = nn.functional.relu(self._fc7(self._drop2(x)))
            x = self._fc8(x)
        return x


def alexnet(pretrained: bool = False, **kwargs) -> AlexNet:
    """``AlexNet(**kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("alexnet", pretrained)
    return AlexNet(**kwargs)
