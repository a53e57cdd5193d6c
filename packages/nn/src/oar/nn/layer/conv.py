"""Convolution layers: Conv1D/2D/3D and Conv1D/2D/3DTranspose, with Paddle's arguments and defaults.

Weights follow Paddle's layout, ``[out_channels, in_channels / groups, *kernel]`` and for the
transposed layers ``[in_channels, out_channels / groups, *kernel]``. A convolution's weight
defaults to ``Normal(0, sqrt(2 / (in_channels * prod(kernel_size))))`` (Paddle counts all input
channels, not those of one group); a transposed convolution's to ``XavierUniform``; biases to zero.

As in Paddle 3.3, the convolutions take ``bias=False`` (no bias), ``dtype`` and ``device`` as
keywords after ``groups`` (``padding_mode`` too, keyword-only now), and ``Conv1d``/``Conv2d``/
``Conv3d`` are the same classes as ``Conv1D``/``Conv2D``/``Conv3D``.
"""

from __future__ import annotations

import math

from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.nn.functional.conv import CHANNEL_LAST, _is_int, channel_last, int_list
from oar.nn.initializer import Normal
from oar.nn.layer.layers import Layer
from oar.ops import pad_axes

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Layer):
    """What the convolution layers share: argument checks, parameters and ``extra_repr``."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, padding_mode="zeros",
                 output_padding=0, dilation=1, groups=1, weight_attr=None, bias_attr=None, data_format="NCHW",
                 bias=True, device=None, dtype=None):
        super().__init__(dtype=dtype)
        cls, nd = type(self).__name__, self._nd
        if weight_attr is False:
            raise ArgumentError(f"{cls}: weight_attr=False is not allowed; a convolution needs its weight")
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if not _is_int(value) or value < 1:
                raise ArgumentError(f"{cls}: {arg} must be a positive int, got {value!r}")
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(f"{cls}: in_channels ({in_channels}) and out_channels ({out_channels}) must both "
                                f"be divisible by groups ({groups})")
        if padding_mode not in PADDING_MODES:
            raise ArgumentError(f"{cls}: padding_mode must be one of {PADDING_MODES}, got {padding_mode!r}")
        if padding_mode != "zeros" and not _is_int(padding):
            raise ArgumentError(f"{cls}: padding_mode={padding_mode!r} needs an int padding, got {padding!r}")
        channel_last(cls, data_format, nd)
        self._in_channels, self._out_channels, self._groups = int(in_channels), int(out_channels), int(groups)
        self._kernel_size = int_list(cls, "kernel_size", kernel_size, nd, minimum=1)
        self._stride = int_list(cls, "stride", stride, nd, minimum=1)
        self._dilation = int_list(cls, "dilation", dilation, nd, minimum=1)
        self._padding, self._padding_mode, self.output_padding = padding, padding_mode, output_padding
        self._data_format = data_format
        self._channel_dim = nd + 1 if data_format == CHANNEL_LAST[nd] else 1
        if self._transposed:
            shape = [self._in_channels, self._out_channels // self._groups, *self._kernel_size]
            default = None  # create_parameter's default, XavierUniform, as in Paddle
        else:
            shape = [self._out_channels, self._in_channels // self._groups, *self._kernel_size]
            default = Normal(0.0, math.sqrt(2.0 / (self._in_channels * math.prod(self._kernel_size))))
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=default)
        # bias=False (Paddle 3.3) drops the bias as bias_attr=False does
        self.bias = self.create_parameter([self._out_channels], attr=False if bias is False else bias_attr, is_bias=True)
        if device is not None:
            self.to(device=device)

    def _padded_input(self, x):
        """``x`` padded by ``padding_mode`` (the non-'zeros' modes), and the padding left for the conv."""
        if self._padding_mode == "zeros":
            return x, self._padding
        pads = [0, 0] * (self._nd + 2)
        spatial = range(1, self._nd + 1) if self._channel_dim != 1 else range(2, self._nd + 2)
        for axis in spatial:
            pads[2 * axis] = pads[2 * axis + 1] = self._padding
        return pad_axes(x, pads, mode=self._padding_mode), 0

    def extra_repr(self) -> str:
        text = f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"
        if self._stride != [1] * self._nd:
            text += f", stride={self._stride}"
        if self._padding != 0:
            text += f", padding={self._padding}"
        if self._padding_mode != "zeros":
            text += f", padding_mode={self._padding_mode}"
        if self.output_padding != 0:
            text += f", output_padding={self.output_padding}"
        if self._dilation != [1] * self._nd:
            text += f", dilation={self._dilation}"
        if self._groups != 1:
            text += f", groups={self._groups}"
        return text + f", data_format={self._data_format}"


class Conv1D(_ConvNd):
    """1-d convolution over ``[N, in_channels, L]`` (or NLC); weight ``[out_channels, in_channels / groups, k]``.

    >>> import oar
    >>> conv = oar.nn.Conv1D(3, 2, 3)
    >>> conv.weight.shape, conv(oar.ones([1, 3, 4])).shape
    ([2, 3, 3], [1, 2, 2])
    """

    _nd = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format, bias=bias, device=device, dtype=dtype)

    def forward(self, x):
        x, padding = self._padded_input(x)
        return F.conv1d(x, self.weight, self.bias, stride=self._stride, padding=padding, dilation=self._dilation,
                        groups=self._groups, data_format=self._data_format)


class Conv2D(_ConvNd):
    """2-d convolution over ``[N, in_channels, H, W]`` (or NHWC); weight ``[out_channels, in_channels / groups, kh, kw]``.

    >>> import oar
    >>> conv = oar.nn.Conv2D(4, 6, (3, 3))
    >>> conv(oar.ones([2, 4, 8, 8])).shape
    [2, 6, 6, 6]
    """

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format, bias=bias, device=device, dtype=dtype)

    def forward(self, x):
        x, padding = self._padded_input(x)
        return F.conv2d(x, self.weight, self.bias, stride=self._stride, padding=padding, dilation=self._dilation,
                        groups=self._groups, data_format=self._data_format)


class Conv3D(_ConvNd):
    """3-d convolution over ``[N, in_channels, D, H, W]`` (or NDHWC).

    >>> import oar
    >>> oar.nn.Conv3D(4, 6, (3, 3, 3))(oar.ones([2, 4, 8, 8, 8])).shape
    [2, 6, 6, 6, 6]
    """

    _nd = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, *,
                 bias=True, padding_mode="zeros", device=None, dtype=None, weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format, bias=bias, device=device, dtype=dtype)

    def forward(self, x):
        x, padding = self._padded_input(x)
        return F.conv3d(x, self.weight, self.bias, stride=self._stride, padding=padding, dilation=self._dilation,
                        groups=self._groups, data_format=self._data_format)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def _output_padding(self, output_size):
        # an explicit output_size replaces the layer's output_padding (Paddle's Conv2DTranspose)
        return 0 if output_size is not None else self.output_padding


class Conv1DTranspose(_ConvTransposeNd):
    """Transposed 1-d convolution; weight ``[in_channels, out_channels / groups, k]``.
    ``forward(x, output_size=None)``.

    >>> import oar
    >>> conv = oar.nn.Conv1DTranspose(2, 1, 2)
    >>> conv.weight.shape, conv(oar.ones([1, 2, 4])).shape
    ([2, 1, 2], [1, 1, 5])
    """

    _nd = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         output_padding=output_padding, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)

    def forward(self, x, output_size=None):
        return F.conv1d_transpose(x, self.weight, self.bias, stride=self._stride, padding=self._padding,
                                  output_padding=self._output_padding(output_size), groups=self._groups,
                                  dilation=self._dilation, output_size=output_size, data_format=self._data_format)


class Conv2DTranspose(_ConvTransposeNd):
    """Transposed 2-d convolution; weight ``[in_channels, out_channels / groups, kh, kw]``.
    ``forward(x, output_size=None)``.

    >>> import oar
    >>> oar.nn.Conv2DTranspose(4, 6, (3, 3))(oar.ones([2, 4, 8, 8])).shape
    [2, 6, 10, 10]
    """

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         output_padding=output_padding, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)

    def forward(self, x, output_size=None):
        return F.conv2d_transpose(x, self.weight, self.bias, stride=self._stride, padding=self._padding,
                                  output_padding=self._output_padding(output_size), dilation=self._dilation,
                                  groups=self._groups, output_size=output_size, data_format=self._data_format)


class Conv3DTranspose(_ConvTransposeNd):
    """Transposed 3-d convolution; weight ``[in_channels, out_channels / groups, kd, kh, kw]``.

    >>> import oar
    >>> oar.nn.Conv3DTranspose(2, 3, 2, stride=2)(oar.ones([1, 2, 2, 2, 2])).shape
    [1, 3, 4, 4, 4]
    """

    _nd = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         output_padding=output_padding, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)

    def forward(self, x, output_size=None):
        return F.conv3d_transpose(x, self.weight, self.bias, stride=self._stride, padding=self._padding,
                                  output_padding=self._output_padding(output_size), groups=self._groups,
                                  dilation=self._dilation, output_size=output_size, data_format=self._data_format)


# Paddle 3.3's lower-case spellings name the same classes
Conv1d, Conv2d, Conv3d = Conv1D, Conv2D, Conv3D

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "Conv1d", "Conv2d",
           "Conv3d"]
