"""GoogLeNet (Inception v1) as ``paddle.vision.models.GoogLeNet``, with Paddle's layer names
(``_conv._conv.weight``, ``_ince3a._conv3r._conv.weight``, ``_fc_out.weight``, ``_out1.bias``).

As Paddle's, ``forward`` returns three tensors ``(out, out1, out2)``: the main output and the two
auxiliary heads (from ``inception 4a`` and ``4d``), in training and in evaluation alike. With
``num_classes > 0`` the auxiliary heads need a 224x224 input (their Linear layers take 128x3x3
features); with ``num_classes <= 0`` the three are the (pooled, when ``with_pool``) feature maps.
Its convolutions have no batch norm and no bias, and ReLU follows only each inception module's
concatenation, as in Paddle's.

Difference from Paddle: with ``with_pool`` the auxiliary maps go through 5x5 average pools, and
oar's ``AvgPool2D`` refuses a map smaller than its kernel, so inputs must be at least 93x93;
Paddle's pool averages a window clipped to the map and takes smaller inputs too."""

from __future__ import annotations

import oar
from oar import nn
from oar.vision.models._pretrained import check_pretrained


def xavier(channels: int, filter_size: int) -> nn.ParamAttr:
    """Paddle's initialization of GoogLeNet's Linear weights: uniform in ``+-sqrt(3 / fan_in)``."""
    stdv = (3.0 / (filter_size**2 * channels)) ** 0.5
    return nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv))


class ConvLayer(nn.Layer):
    """A bias-free convolution with "same" padding for odd kernels, its weight under ``_conv``."""

    def __init__(self, num_channels: int, num_filters: int, filter_size: int, stride=1, groups: int = 1):
        super().__init__()
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride,
                               padding=(filter_size - 1) // 2, groups=groups, bias_attr=False)

    def forward(self, x):
        return self._conv(x)


class Inception(nn.Layer):
    """Four parallel branches (1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3 max pool then 1x1),
    concatenated along channels and passed through ReLU. ``output_channels`` is unused, as in
    Paddle.

    >>> import oar
    >>> from oar.vision.models.googlenet import Inception
    >>> Inception(8, 8, 2, 3, 4, 1, 2, 2)(oar.rand([1, 8, 5, 5])).shape
    [1, 10, 5, 5]
    """

    def __init__(self, input_channels: int, output_channels: int, filter1: int, filter3R: int, filter3: int,
                 filter5R: int, filter5: int, proj: int):
        super().__init__()
        self._conv1 = ConvLayer(input_channels, filter1, 1)
        self._conv3r = ConvLayer(input_channels, filter3R, 1)
        self._conv3 = ConvLayer(filter3R, filter3, 3)
        self._conv5r = ConvLayer(input_channels, filter5R, 1)
        self._conv5 = ConvLayer(filter5R, filter5, 5)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=1, padding=1)
        self._convprj = ConvLayer(input_channels, proj, 1)

    def forward(self, x):
        branches = [self._conv1(x), self._conv3(self._conv3r(x)), self._conv5(self._conv5r(x)),
                    self._convprj(self._pool(x))]
        return nn.functional.relu(oar.concat(branches, axis=1))


class GoogLeNet(nn.Layer):
    """GoogLeNet from "Going Deeper with Convolutions" (Szegedy et al., 2015), as Paddle's; see
    the module docstring for its three outputs. 11,535,736 parameters with 1000 classes (the
    auxiliary heads included).

    >>> import oar
    >>> from oar.vision.models import GoogLeNet
    >>> out, aux1, aux2 = GoogLeNet(num_classes=0)(oar.rand([1, 3, 96, 96]))
    >>> out.shape, aux1.shape, aux2.shape
    ([1, 1024, 1, 1], [1, 512, 1, 1], [1, 528, 1, 1])
    """

    def __init__(self, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        self._conv = ConvLayer(3, 64, 7, 2)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2)
        self._conv_1 = ConvLayer(64, 64, 1)
        self._conv_2 = ConvLayer(64, 192, 3)
        self._ince3a = Inception(192, 192, 64, 96, 128, 16, 32, 32)
        self._ince3b = Inception(256, 256, 128, 128, 192, 32, 96, 64)
        self._ince4a = Inception(480, 480, 192, 96, 208, 16, 48, 64)
        self._ince4b = Inception(512, 512, 160, 112, 224, 24, 64, 64)
        self._ince4c = Inception(512, 512, 128, 128, 256, 24, 64, 64)
        self._ince4d = Inception(512, 512, 112, 144, 288, 32, 64, 64)
        self._ince4e = Inception(528, 528, 256, 160, 320, 32, 128, 128)
        self._ince5a = Inception(832, 832, 256, 160, 320, 32, 128, 128)
        self._ince5b = Inception(832, 832, 384, 192, 384, 48, 128, 128)
        if with_pool:
            self._pool_5 = nn.AdaptiveAvgPool2D(1)
            self._pool_o1 = nn.AvgPool2D(kernel_size=5, stride=3)
            self._pool_o2 = nn.AvgPool2D(kernel_size=5, stride=3)
        if num_classes > 0:
            self._drop = nn.Dropout(p=0.4, mode="downscale_in_infer")
            self._fc_out = nn.Linear(1024, num_classes, weight_attr=xavier(1024, 1))
            self._conv_o1 = ConvLayer(512, 128, 1)
            self._fc_o1 = nn.Linear(1152, 1024, weight_attr=xavier(2048, 1))
            self._drop_o1 = nn.Dropout(p=0.7, mode="downscale_in_infer")
            self._out1 = nn.Linear(1024, num_classes, weight_attr=xavier(1024, 1))
            self._conv_o2 = ConvLayer(528, 128, 1)
            self._fc_o2 = nn.Linear(1152, 1024, weight_attr=xavier(2048, 1))
            self._drop_o2 = nn.Dropout(p=0.7, mode="downscale_in_infer")
            self._out2 = nn.Linear(1024, num_classes, weight_attr=xavier(1024, 1))

    def forward(self, inputs):
        x = self._pool(self._conv(inputs))
        x = self._pool(self._conv_2(self._conv_1(x)))
        x = self._pool(self._ince3b(self._ince3a(x)))
        ince4a = self._ince4a(x)
        ince4d = self._ince4d(self._ince4c(self._ince4b(ince4a)))
        x = self._pool(self._ince4e(ince4d))
        out, out1, out2 = self._ince5b(self._ince5a(x)), ince4a, ince4d
        if self.with_pool:
            out, out1, out2 = self._pool_5(out), self._pool_o1(out1), self._pool_o2(out2)
        if self.num_classes > 0:
            out = self._fc_out(oar.squeeze(self._drop(out), axis=[2, 3]))
            out1 = oar.flatten(self._conv_o1(out1), start_axis=1, stop_axis=-1)
            out1 = self._out1(self._drop_o1(nn.functional.relu(self._fc_o1(out1))))
            # no ReLU on the second auxiliary head, as in Paddle's
            out2 = oar.flatten(self._conv_o2(out2), start_axis=1, stop_axis=-1)
            out2 = self._out2(self._drop_o2(self._fc_o2(out2)))
        return out, out1, out2


def googlenet(pretrained: bool = False, **kwargs) -> GoogLeNet:
    """``GoogLeNet(**kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("googlenet", pretrained)
    return GoogLeNet(**kwargs)
