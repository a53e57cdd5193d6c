"""``ConvNormActivation``: the Conv2D + norm + activation block of ``paddle.vision.ops``, built here
for the models that use it (MobileNetV1/V3, ShuffleNetV2, InceptionV3), with Paddle's sublayer
numbering (``0`` the convolution, ``1`` the norm, ``2`` the activation) and so its state-dict keys."""

from __future__ import annotations

from oar import nn


class ConvNormActivation(nn.Sequential):
    """Conv2D, then ``norm_layer(out_channels)`` and ``activation_layer()`` when they are not None.
    ``padding=None`` keeps the spatial size for odd kernels (``(kernel_size - 1) // 2 * dilation``);
    the convolution has a bias only when there is no norm layer (``bias=None``), as Paddle's.

    >>> import oar
    >>> from oar.vision.models._conv_norm import ConvNormActivation
    >>> block = ConvNormActivation(3, 8, kernel_size=3, stride=2)
    >>> block(oar.rand([1, 3, 8, 8])).shape, [k for k in block.state_dict()][:2]
    ([1, 8, 4, 4], ['0.weight', '1.weight'])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation: int = 1, bias: bool | None = None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers: list[nn.Layer] = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                                            groups=groups, bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
