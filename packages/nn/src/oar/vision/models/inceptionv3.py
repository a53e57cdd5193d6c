"""InceptionV3 as ``paddle.vision.models.InceptionV3``, with Paddle's layer names
(``inception_stem.conv_1a_3x3.0.weight``, ``inception_block_list.0.branch5x5_2.1._mean``,
``inception_block_list.10.branch3x3dbl_3b.0.weight``, ``fc.weight``).

Every convolution is a ConvNormActivation (conv without bias, batch norm, ReLU). As Paddle's,
``forward`` returns one tensor (no auxiliary head), the classifier reshapes the features to
``[-1, 2048]`` (so ``with_pool=False`` needs a 1x1 map), and the smallest input is 75x75."""

from __future__ import annotations

import math

import oar
from oar import nn
from oar.vision.models._conv_norm import ConvNormActivation
from oar.vision.models._pretrained import check_pretrained


def _conv_bn_relu(in_channels: int, out_channels: int, kernel_size, stride=1, padding=0) -> ConvNormActivation:
    return ConvNormActivation(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                              activation_layer=nn.ReLU)


class InceptionStem(nn.Layer):
    """Five conv-bn-relu layers and two 3x3 stride-2 max pools: 3 -> 192 channels, 1/8 the size."""

    def __init__(self):
        super().__init__()
        self.conv_1a_3x3 = _conv_bn_relu(3, 32, 3, stride=2, padding=0)
        self.conv_2a_3x3 = _conv_bn_relu(32, 32, 3, stride=1, padding=0)
        self.conv_2b_3x3 = _conv_bn_relu(32, 64, 3, padding=1)
        self.max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        self.conv_3b_1x1 = _conv_bn_relu(64, 80, 1, padding=0)
        self.conv_4a_3x3 = _conv_bn_relu(80, 192, 3, padding=0)

    def forward(self, x):
        x = self.max_pool(self.conv_2b_3x3(self.conv_2a_3x3(self.conv_1a_3x3(x))))
        return self.max_pool(self.conv_4a_3x3(self.conv_3b_1x1(x)))


class InceptionA(nn.Layer):
    """Branches 1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; 3x3 average pool -> 1x1 (``pool_features``)."""

    def __init__(self, num_channels: int, pool_features: int):
        super().__init__()
        self.branch1x1 = _conv_bn_relu(num_channels, 64, 1)
        self.branch5x5_1 = _conv_bn_relu(num_channels, 48, 1)
        self.branch5x5_2 = _conv_bn_relu(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = _conv_bn_relu(num_channels, 64, 1)
        self.branch3x3dbl_2 = _conv_bn_relu(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = _conv_bn_relu(96, 96, 3, padding=1)
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False)
        self.branch_pool_conv = _conv_bn_relu(num_channels, pool_features, 1)

    def forward(self, x):
        return oar.concat([
            self.branch1x1(x),
            self.branch5x5_2(self.branch5x5_1(x)),
            self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
            self.branch_pool_conv(self.branch_pool(x)),
        ], axis=1)


class InceptionB(nn.Layer):
    """The first grid reduction: strided 3x3; 1x1 -> 3x3 -> strided 3x3; strided max pool."""

    def __init__(self, num_channels: int):
        super().__init__()
        self.branch3x3 = _conv_bn_relu(num_channels, 384, 3, stride=2, padding=0)
        self.branch3x3dbl_1 = _conv_bn_relu(num_channels, 64, 1)
        self.branch3x3dbl_2 = _conv_bn_relu(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = _conv_bn_relu(96, 96, 3, stride=2, padding=0)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2)

    def forward(self, x):
        return oar.concat([
            self.branch3x3(x),
            self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
            self.branch_pool(x),
        ], axis=1)


class InceptionC(nn.Layer):
    """Factorized 7x7 branches (1x7 and 7x1 convolutions) with ``channels_7x7`` inner channels."""

    def __init__(self, num_channels: int, channels_7x7: int):
        super().__init__()
        c7 = channels_7x7
        self.branch1x1 = _conv_bn_relu(num_channels, 192, 1)
        self.branch7x7_1 = _conv_bn_relu(num_channels, c7, 1)
        self.branch7x7_2 = _conv_bn_relu(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7_3 = _conv_bn_relu(c7, 192, (7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = _conv_bn_relu(num_channels, c7, 1)
        self.branch7x7dbl_2 = _conv_bn_relu(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = _conv_bn_relu(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = _conv_bn_relu(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = _conv_bn_relu(c7, 192, (1, 7), padding=(0, 3))
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False)
        self.branch_pool_conv = _conv_bn_relu(num_channels, 192, 1)

    def forward(self, x):
        double = self.branch7x7dbl_2(self.branch7x7dbl_1(x))
        double = self.branch7x7dbl_5(self.branch7x7dbl_4(self.branch7x7dbl_3(double)))
        return oar.concat([
            self.branch1x1(x),
            self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x))),
            double,
            self.branch_pool_conv(self.branch_pool(x)),
        ], axis=1)


class InceptionD(nn.Layer):
    """The second grid reduction: 1x1 -> strided 3x3; 1x1 -> 1x7 -> 7x1 -> strided 3x3; max pool."""

    def __init__(self, num_channels: int):
        super().__init__()
        self.branch3x3_1 = _conv_bn_relu(num_channels, 192, 1)
        self.branch3x3_2 = _conv_bn_relu(192, 320, 3, stride=2, padding=0)
        self.branch7x7x3_1 = _conv_bn_relu(num_channels, 192, 1)
        self.branch7x7x3_2 = _conv_bn_relu(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = _conv_bn_relu(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = _conv_bn_relu(192, 192, 3, stride=2, padding=0)
        self.branch_pool = nn.MaxPool2D(kernel_size=3, stride=2)

    def forward(self, x):
        seven = self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x)))
        return oar.concat([
            self.branch3x3_2(self.branch3x3_1(x)),
            self.branch7x7x3_4(seven),
            self.branch_pool(x),
        ], axis=1)


class InceptionE(nn.Layer):
    """Expanded filter banks: 3x3 branches split into parallel 1x3 and 3x1 convolutions."""

    def __init__(self, num_channels: int):
        super().__init__()
        self.branch1x1 = _conv_bn_relu(num_channels, 320, 1)
        self.branch3x3_1 = _conv_bn_relu(num_channels, 384, 1)
        self.branch3x3_2a = _conv_bn_relu(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = _conv_bn_relu(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = _conv_bn_relu(num_channels, 448, 1)
        self.branch3x3dbl_2 = _conv_bn_relu(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = _conv_bn_relu(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = _conv_bn_relu(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = nn.AvgPool2D(kernel_size=3, stride=1, padding=1, exclusive=False)
        self.branch_pool_conv = _conv_bn_relu(num_channels, 192, 1)

    def forward(self, x):
        single = self.branch3x3_1(x)
        double = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        return oar.concat([
            self.branch1x1(x),
            self.branch3x3_2a(single), self.branch3x3_2b(single),
            self.branch3x3dbl_3a(double), self.branch3x3dbl_3b(double),
            self.branch_pool_conv(self.branch_pool(x)),
        ], axis=1)


class InceptionV3(nn.Layer):
    """Inception-v3 from "Rethinking the Inception Architecture for Computer Vision" (Szegedy et
    al., 2016), as Paddle's: the stem, eleven blocks in ``inception_block_list`` (3 A, 1 B, 4 C,
    1 D, 2 E), a global average pool (``with_pool``) and Dropout(0.2) + ``fc`` (left out when
    ``num_classes <= 0``). 23,869,000 parameters with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import InceptionV3
    >>> InceptionV3(num_classes=10)(oar.rand([1, 3, 75, 75])).shape
    [1, 10]
    """

    def __init__(self, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.layers_config = {
            "inception_a": [[192, 256, 288], [32, 64, 64]],
            "inception_b": [288],
            "inception_c": [[768, 768, 768, 768], [128, 160, 160, 192]],
            "inception_d": [768],
            "inception_e": [1280, 2048],
        }
        cfg = self.layers_config
        self.inception_stem = InceptionStem()
        self.inception_block_list = nn.LayerList()
        for channels, pool_features in zip(*cfg["inception_a"]):
            self.inception_block_list.append(InceptionA(channels, pool_features))
        for channels in cfg["inception_b"]:
            self.inception_block_list.append(InceptionB(channels))
        for channels, channels_7x7 in zip(*cfg["inception_c"]):
            self.inception_block_list.append(InceptionC(channels, channels_7x7))
        for channels in cfg["inception_d"]:
            self.inception_block_list.append(InceptionD(channels))
        for channels in cfg["inception_e"]:
            self.inception_block_list.append(InceptionE(channels))
        if with_pool:
            self.avg_pool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.dropout = nn.Dropout(p=0.2, mode="downscale_in_infer")
            stdv = 1.0 / math.sqrt(2048 * 1.0)
            self.fc = nn.Linear(2048, num_classes,
                                weight_attr=nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv)))

    def forward(self, x):
        x = self.inception_stem(x)
        for block in self.inception_block_list:
            x = block(x)
        if self.with_pool:
            x = self.avg_pool(x)
        if self.num_classes > 0:
            x = self.fc(self.dropout(oar.reshape(x, [-1, 2048])))
        return x


def inception_v3(pretrained: bool = False, **kwargs) -> InceptionV3:
    """``InceptionV3(**kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    check_pretrained("inception_v3", pretrained)
    return InceptionV3(**kwargs)
