"""DenseNet as ``paddle.vision.models.DenseNet``, with Paddle's layer names (``conv1_func._conv.weight``,
``db_conv_2.conv2_1.bn_ac_func1._batch_norm._mean``, ``tr_conv2_blk.conv_ac_func._conv.weight``,
``batch_norm.weight``, ``out.weight``).

Its pre-activation blocks use the ``BatchNorm(num_channels, act="relu")`` layer, as Paddle's, and
its dropout (when ``dropout > 0``) is ``downscale_in_infer``. Unlike Paddle, which fails on
``with_pool=False`` with a classifier, oar then flattens the unpooled features into ``out``
(which needs a 1x1 feature map, as the Linear's input size says)."""

from __future__ import annotations

import math

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._pretrained import check_pretrained

# layers -> (initial features, growth rate, dense layers per block)
DENSENET_SPEC = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (64, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32]),
    264: (64, 32, [6, 12, 64, 48]),
}


class BNACConvLayer(nn.Layer):
    """Batch norm with ReLU (``_batch_norm``), then a bias-free convolution (``_conv``)."""

    def __init__(self, num_channels: int, num_filters: int, filter_size, stride=1, pad=0, groups: int = 1,
                 act: str = "relu"):
        super().__init__()
        self._batch_norm = nn.BatchNorm(num_channels, act=act)
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride, padding=pad, groups=groups,
                               bias_attr=False)

    def forward(self, x):
        return self._conv(self._batch_norm(x))


class DenseLayer(nn.Layer):
    """A 1x1 bottleneck to ``bn_size * growth_rate`` channels, a 3x3 conv to ``growth_rate``,
    optional dropout; the result is concatenated after the input."""

    def __init__(self, num_channels: int, growth_rate: int, bn_size: int, dropout: float):
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels, bn_size * growth_rate, 1, pad=0, stride=1)
        self.bn_ac_func2 = BNACConvLayer(bn_size * growth_rate, growth_rate, 3, pad=1, stride=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer")

    def forward(self, x):
        conv = self.bn_ac_func2(self.bn_ac_func1(x))
        if self.dropout:
            conv = self.dropout_func(conv)
        return oar.concat([x, conv], axis=1)


class DenseBlock(nn.Layer):
    """``num_layers`` dense layers named ``"{name}_{i}"``, each adding ``growth_rate`` channels.

    >>> import oar
    >>> from oar.vision.models.densenet import DenseBlock
    >>> DenseBlock(8, 3, bn_size=2, growth_rate=4, dropout=0.0, name="conv2")(oar.rand([1, 8, 5, 5])).shape
    [1, 20, 5, 5]
    """

    def __init__(self, num_channels: int, num_layers: int, bn_size: int, growth_rate: int, dropout: float,
                 name: str | None = None):
        super().__init__()
        self.dropout = dropout
        self.dense_layer_func = []
        channels = num_channels
        for i in range(num_layers):
            layer = DenseLayer(channels, growth_rate, bn_size, dropout)
            self.dense_layer_func.append(self.add_sublayer(f"{name}_{i + 1}", layer))
            channels += growth_rate

    def forward(self, x):
        for layer in self.dense_layer_func:
            x = layer(x)
        return x


class TransitionLayer(nn.Layer):
    """Batch norm + ReLU + 1x1 conv to ``num_output_features``, then a 2x2 average pool."""

    def __init__(self, num_channels: int, num_output_features: int):
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels, num_output_features, 1, pad=0, stride=1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, x):
        return self.pool2d_avg(self.conv_ac_func(x))


class ConvBNLayer(nn.Layer):
    """A bias-free convolution (``_conv``), then batch norm with ``act`` (``_batch_norm``)."""

    def __init__(self, num_channels: int, num_filters: int, filter_size, stride=1, pad=0, groups: int = 1,
                 act: str = "relu"):
        super().__init__()
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride, padding=pad, groups=groups,
                               bias_attr=False)
        self._batch_norm = nn.BatchNorm(num_filters, act=act)

    def forward(self, x):
        return self._batch_norm(self._conv(x))


class DenseNet(nn.Layer):
    """DenseNet from "Densely Connected Convolutional Networks" (Huang et al., 2017), as Paddle's:
    ``layers`` is 121, 161, 169, 201 or 264; a 7x7 stem and max pool, four dense blocks
    (``db_conv_2`` ... ``db_conv_5``) with transitions halving the channels between them, a final
    batch norm + ReLU, a global average pool (``with_pool``) and ``out`` (left out when
    ``num_classes <= 0``). 8,062,504 parameters for DenseNet-121 with 1000 classes.

    >>> import oar
    >>> from oar.vision.models import DenseNet
    >>> DenseNet(layers=121, num_classes=10)(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, layers: int = 121, bn_size: int = 4, dropout: float = 0.0, num_classes: int = 1000,
                 with_pool: bool = True):
        super().__init__()
        if layers not in DENSENET_SPEC:
            raise ArgumentError(f"DenseNet: layers must be one of {list(DENSENET_SPEC)}, got {layers!r}")
        self.num_classes = num_classes
        self.with_pool = with_pool
        num_init_features, growth_rate, block_config = DENSENET_SPEC[layers]
        self.conv1_func = ConvBNLayer(3, num_init_features, 7, stride=2, pad=3, act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.block_config = block_config
        self.dense_block_func_list = []
        self.transition_func_list = []
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = DenseBlock(num_features, num_layers, bn_size, growth_rate, dropout, name=f"conv{i + 2}")
            self.dense_block_func_list.append(self.add_sublayer(f"db_conv_{i + 2}", block))
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                transition = TransitionLayer(num_features, num_features // 2)
                self.transition_func_list.append(self.add_sublayer(f"tr_conv{i + 2}_blk", transition))
                num_features //= 2
        self.batch_norm = nn.BatchNorm(num_features, act="relu")
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(num_features * 1.0)
            self.out = nn.Linear(num_features, num_classes,
                                 weight_attr=nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv)))

    def forward(self, x):
        x = self.pool2d_max(self.conv1_func(x))
        for i in range(len(self.block_config)):
            x = self.dense_block_func_list[i](x)
            if i != len(self.block_config) - 1:
                x = self.transition_func_list[i](x)
        x = self.batch_norm(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.out(oar.flatten(x, start_axis=1, stop_axis=-1))
        return x


def _densenet(arch: str, layers: int, pretrained: bool, **kwargs) -> DenseNet:
    check_pretrained(arch, pretrained)
    return DenseNet(layers=layers, **kwargs)


def densenet121(pretrained: bool = False, **kwargs) -> DenseNet:
    """``DenseNet(layers=121, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _densenet("densenet121", 121, pretrained, **kwargs)


def densenet161(pretrained: bool = False, **kwargs) -> DenseNet:
    """``DenseNet(layers=161, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _densenet("densenet161", 161, pretrained, **kwargs)


def densenet169(pretrained: bool = False, **kwargs) -> DenseNet:
    """``DenseNet(layers=169, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _densenet("densenet169", 169, pretrained, **kwargs)


def densenet201(pretrained: bool = False, **kwargs) -> DenseNet:
    """``DenseNet(layers=201, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _densenet("densenet201", 201, pretrained, **kwargs)


def densenet264(pretrained: bool = False, **kwargs) -> DenseNet:
    """``DenseNet(layers=264, **kwargs)``; ``pretrained=True`` is an error (no downloads)."""
    return _densenet("densenet264", 264, pretrained, **kwargs)
