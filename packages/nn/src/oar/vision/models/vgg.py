"""VGG as ``paddle.vision.models.VGG``: ``VGG(features, num_classes, with_pool)``,
``make_layers(cfg, batch_norm)`` and ``vgg11`` ... ``vgg19``, with Paddle's layer names
(``features.0.weight``, ``classifier.6.bias``)."""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models._pretrained import check_pretrained

# output channels of each 3x3 convolution, "M" a 2x2 max pool: VGG-11 (A), 13 (B), 16 (D), 19 (E)
CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Layer):
    """VGG from "Very Deep Convolutional Networks for Large-Scale Image Recognition" (Simonyan and
    Zisserman, 2014), as Paddle's: ``features`` (from ``make_layers``), an adaptive average pool
    to 7x7 (``with_pool``) and ``classifier`` = Linear(25088, 4096), ReLU, Dropout,
    Linear(4096, 4096), ReLU, Dropout, Linear(4096, num_classes) (``num_classes <= 0`` leaves it
    out).

    >>> import oar
    >>> from oar.vision.models.vgg import VGG, make_layers
    >>> model = VGG(make_layers([8, "M", 16, "M"]), num_classes=0, with_pool=False)
    >>> model(oar.rand([1, 3, 16, 16])).shape
    [1, 16, 4, 4]
    """

    def __init__(self, features: nn.Layer, num_classes: int = 1000, with_pool: bool = True):
        super().__init__()
        self.features = features
        self.num_classes = num_classes
        self.with_pool = with_pool
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7))
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, 4096),
                nn.ReLU(),
                nn.Dropout(),
                nn.Linear(4096, num_classes),
            )

    def forward(self, x):
        x = self.features(x)
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(oar.flatten(x, 1))
        return x


def make_layers(cfg: list, batch_norm: bool = False) -> nn.Sequential:
    """The VGG feature extractor for ``cfg``: each int a 3x3 convolution (padding 1) to that many
    channels followed by ReLU (BatchNorm2D and ReLU with ``batch_norm``), each ``"M"`` a 2x2 max
    pool. The input has 3 channels.

    >>> from oar.vision.models.vgg import make_layers
    >>> make_layers([8, "M"], batch_norm=True)
    Sequential(
      (0): Conv2D(3, 8, kernel_size=[3, 3], padding=1, data_format=NCHW)
      (1): BatchNorm2D(num_features=8, momentum=0.9, epsilon=1e-05, data_format=NCHW)
      (2): ReLU()
      (3): MaxPool2D(kernel_size=2, stride=2, padding=0)
    )
    """
    layers: list[nn.Layer] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2))
        elif isinstance(v, int) and not isinstance(v, bool) and v > 0:
            layers.append(nn.Conv2D(in_channels, v, kernel_size=3, padding=1))
            layers += [nn.BatchNorm2D(v), nn.ReLU()] if batch_norm else [nn.ReLU()]
            in_channels = v
        else:
            raise ArgumentError(f"make_layers: each cfg entry must be a positive int or 'M', got {v!r}")
    return nn.Sequential(*layers)


def _vgg(arch: str, cfg: str, batch_norm: bool, pretrained: bool, **kwargs) -> VGG:
    check_pretrained(arch + ("_bn" if batch_norm else ""), pretrained)
    return VGG(make_layers(CFGS[cfg], batch_norm=batch_norm), **kwargs)


def vgg11(pretrained: bool = False, batch_norm: bool = False, **kwargs) -> VGG:
    """VGG-11 (132,863,336 parameters with 1000 classes); ``kwargs`` go to ``VGG``."""
    return _vgg("vgg11", "A", batch_norm, pretrained, **kwargs)


def vgg13(pretrained: bool = False, batch_norm: bool = False, **kwargs) -> VGG:
    """VGG-13 (133,047,848 parameters with 1000 classes); ``kwargs`` go to ``VGG``."""
    return _vgg("vgg13", "B", batch_norm, pretrained, **kwargs)


def vgg16(pretrained: bool = False, batch_norm: bool = False, **kwargs) -> VGG:
    """VGG-16 (138,357,544 parameters with 1000 classes; 138,365,992 with ``batch_norm``);
    ``kwargs`` go to ``VGG``.

    >>> import oar
    >>> from oar.vision.models import vgg16
    >>> vgg16(num_classes=0, with_pool=False)(oar.rand([1, 3, 32, 32])).shape
    [1, 512, 1, 1]
    """
    return _vgg("vgg16", "D", batch_norm, pretrained, **kwargs)


def vgg19(pretrained: bool = False, batch_norm: bool = False, **kwargs) -> VGG:
    """VGG-19 (143,667,240 parameters with 1000 classes); ``kwargs`` go to ``VGG``."""
    return _vgg("vgg19", "E", batch_norm, pretrained, **kwargs)
