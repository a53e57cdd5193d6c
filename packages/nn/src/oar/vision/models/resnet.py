"""ResNet as ``paddle.vision.models.ResNet``: BasicBlock, BottleneckBlock, ``ResNet(block, depth,
width, num_classes, with_pool, groups)`` and the constructors ``resnet18`` ... ``resnet152``,
``wide_resnet50_2``/``101_2`` and ``resnext*``. Layers carry Paddle's names, so state dicts carry
Paddle's keys (``layer1.0.conv1.weight``, ``layer2.0.downsample.1._mean``, ``fc.weight``)."""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._pretrained import check_pretrained

# depth -> blocks in each of the four stages
LAYER_CFG = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class BasicBlock(nn.Layer):
    """Two 3x3 convolutions with batch norm and a shortcut (ResNet-18/34). ``groups`` and
    ``base_width`` are accepted and ignored, as in Paddle.

    >>> import oar
    >>> from oar.vision.models.resnet import BasicBlock
    >>> BasicBlock(8, 8)(oar.rand([1, 8, 6, 6])).shape
    [1, 8, 6, 6]
    """

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Layer | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        if dilation > 1:
            raise ArgumentError(f"BasicBlock: dilation > 1 is not supported, got dilation={dilation}")
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class BottleneckBlock(nn.Layer):
    """1x1 reduce, 3x3 (grouped for ResNeXt), 1x1 expand by 4, with batch norm and a shortcut
    (ResNet-50 and deeper). The inner width is ``int(planes * base_width / 64) * groups``.

    >>> import oar
    >>> from oar.vision.models.resnet import BottleneckBlock
    >>> BottleneckBlock(32, 8)(oar.rand([1, 32, 6, 6])).shape
    [1, 32, 6, 6]
    """

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Layer | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2D(inplanes, width, 1, bias_attr=False)
        self.bn1 = norm_layer(width)
        self.conv2 = nn.Conv2D(width, width, 3, padding=dilation, stride=stride, groups=groups, dilation=dilation,
                               bias_attr=False)
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2D(width, planes * self.expansion, 1, bias_attr=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Layer):
    """ResNet from "Deep Residual Learning for Image Recognition" (He et al., 2015), as Paddle's.

    A 7x7/2 convolution with batch norm and ReLU, a 3x3/2 max pool, four stages of ``block``
    (64, 128, 256, 512 planes; stages 2-4 halve the size), an adaptive average pool to 1x1
    (``with_pool``) and ``fc`` (``num_classes <= 0`` leaves it out). ``depth`` is one of 18, 34,
    50, 101, 152; ``width`` is the base width of a bottleneck group and ``groups`` its number of
    groups (ResNeXt: ``width=4, groups=32``; wide ResNet: ``width=128``).

    >>> import oar
    >>> from oar.vision.models import ResNet
    >>> from oar.vision.models.resnet import BasicBlock
    >>> model = ResNet(BasicBlock, 18, num_classes=10)
    >>> model(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """

    def __init__(self, block, depth: int = 50, width: int = 64, num_classes: int = 1000, with_pool: bool = True,
                 groups: int = 1):
        super().__init__()
        if depth not in LAYER_CFG:
            raise ArgumentError(f"ResNet: depth must be one of {sorted(LAYER_CFG)}, got {depth!r}")
        layers = LAYER_CFG[depth]
        self.groups = groups
        self.base_width = width
        self.num_classes = num_classes
        self.with_pool = with_pool
        self._norm_layer = nn.BatchNorm2D
        self.inplanes = 64
        self.dilation = 1
        self.conv1 = nn.Conv2D(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias_attr=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1, dilate: bool = False) -> nn.Sequential:
        """One stage: ``blocks`` blocks, the first with the stride and, when the shape changes, a
        1x1 convolution + batch norm on the shortcut (``downsample``)."""
        norm_layer = self._norm_layer
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride, bias_attr=False),
                norm_layer(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.fc(oar.flatten(x, 1))
        return x


def _resnet(arch: str, block, depth: int, pretrained: bool, **kwargs) -> ResNet:
    check_pretrained(arch, pretrained)
    return ResNet(block, depth, **kwargs)


def resnet18(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-18 (11,689,512 parameters with 1000 classes); ``kwargs`` go to ``ResNet``.

    >>> import oar
    >>> from oar.vision.models import resnet18
    >>> resnet18(num_classes=10)(oar.rand([1, 3, 32, 32])).shape
    [1, 10]
    """
    return _resnet("resnet18", BasicBlock, 18, pretrained, **kwargs)


def resnet34(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-34 (21,797,672 parameters with 1000 classes); ``kwargs`` go to ``ResNet``."""
    return _resnet("resnet34", BasicBlock, 34, pretrained, **kwargs)


def resnet50(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-50 (25,557,032 parameters with 1000 classes); ``kwargs`` go to ``ResNet``."""
    return _resnet("resnet50", BottleneckBlock, 50, pretrained, **kwargs)


def resnet101(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-101 (44,549,160 parameters with 1000 classes); ``kwargs`` go to ``ResNet``."""
    return _resnet("resnet101", BottleneckBlock, 101, pretrained, **kwargs)


def resnet152(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-152 (60,192,808 parameters with 1000 classes); ``kwargs`` go to ``ResNet``."""
    return _resnet("resnet152", BottleneckBlock, 152, pretrained, **kwargs)


def _resnext(arch: str, depth: int, groups: int, width: int, pretrained: bool, **kwargs) -> ResNet:
    kwargs["groups"], kwargs["width"] = groups, width
    return _resnet(arch, BottleneckBlock, depth, pretrained, **kwargs)


def resnext50_32x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-50 32x4d (25,028,904 parameters with 1000 classes): 32 groups of width 4."""
    return _resnext("resnext50_32x4d", 50, 32, 4, pretrained, **kwargs)


def resnext50_64x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-50 64x4d: 64 groups of width 4."""
    return _resnext("resnext50_64x4d", 50, 64, 4, pretrained, **kwargs)


def resnext101_32x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-101 32x4d: 32 groups of width 4."""
    return _resnext("resnext101_32x4d", 101, 32, 4, pretrained, **kwargs)


def resnext101_64x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-101 64x4d: 64 groups of width 4."""
    return _resnext("resnext101_64x4d", 101, 64, 4, pretrained, **kwargs)


def resnext152_32x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-152 32x4d: 32 groups of width 4."""
    return _resnext("resnext152_32x4d", 152, 32, 4, pretrained, **kwargs)


def resnext152_64x4d(pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-152 64x4d: 64 groups of width 4."""
    return _resnext("resnext152_64x4d", 152, 64, 4, pretrained, **kwargs)


def wide_resnet50_2(pretrained: bool = False, **kwargs) -> ResNet:
    """Wide ResNet-50-2 (68,883,240 parameters with 1000 classes): bottlenecks twice as wide."""
    kwargs["width"] = 64 * 2
    return _resnet("wide_resnet50_2", BottleneckBlock, 50, pretrained, **kwargs)


def wide_resnet101_2(pretrained: bool = False, **kwargs) -> ResNet:
    """Wide ResNet-101-2: bottlenecks twice as wide."""
    kwargs["width"] = 64 * 2
    return _resnet("wide_resnet101_2", BottleneckBlock, 101, pretrained, **kwargs)
