"""Pooling layers: MaxPool1D/2D, AvgPool1D/2D, AdaptiveAvgPool1D/2D, AdaptiveMaxPool1D/2D.

Each stores its arguments under Paddle's attribute names (``ksize``, ``_output_size``, ...) and
calls the function of ``oar.nn.functional`` of the same name; arguments are checked when the
layer is built, so a bad kernel size fails there rather than at the first forward.
"""

from __future__ import annotations

from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.nn.functional.conv import channel_last, int_list, parse_padding
from oar.nn.layer.layers import Layer


def _check_window(cls: str, nd: int, kernel_size, stride, padding, data_format=None) -> None:
    last = channel_last(cls, data_format, nd) if data_format is not None else False
    int_list(cls, "kernel_size", kernel_size, nd, minimum=1)
    if stride is not None:
        int_list(cls, "stride", stride, nd, minimum=1)
    parse_padding(cls, padding, nd, last)


def _check_output_size(cls: str, nd: int, output_size) -> None:
    sizes = output_size if isinstance(output_size, (list, tuple)) else [output_size]
    if isinstance(output_size, (list, tuple)) and len(output_size) != nd:
        raise ArgumentError(f"{cls}: output_size must be an int or a list of {nd}, got {output_size!r}")
    for s in sizes:
        if s is not None:
            int_list(cls, "output_size", s, 1, minimum=1)


class MaxPool1D(Layer):
    """Max pooling over ``[N, C, L]``; ``stride`` defaults to ``kernel_size``.

    >>> import oar
    >>> oar.nn.MaxPool1D(2)(oar.ones([1, 3, 32])).shape
    [1, 3, 16]
    """

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
        super().__init__()
        _check_window("MaxPool1D", 1, kernel_size, stride, padding)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.name = return_mask, ceil_mode, name

    def forward(self, x):
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2D(Layer):
    """Max pooling over ``[N, C, H, W]`` (or NHWC); ``stride`` defaults to ``kernel_size``.

    >>> import oar
    >>> oar.nn.MaxPool2D(kernel_size=2, stride=2)(oar.ones([1, 3, 32, 32])).shape
    [1, 3, 16, 16]
    """

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
                 name=None):
        super().__init__()
        _check_window("MaxPool2D", 2, kernel_size, stride, padding, data_format)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format, self.name = return_mask, ceil_mode, data_format, name

    def forward(self, x):
        return F.max_pool2d(x, self.ksize, self.stride, self.padding, self.return_mask, self.ceil_mode,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AvgPool1D(Layer):
    """Average pooling over ``[N, C, L]``; ``exclusive=True`` leaves the padding out of the divisor.

    >>> import oar
    >>> oar.nn.AvgPool1D(kernel_size=2, stride=2)(oar.ones([1, 3, 32])).shape
    [1, 3, 16]
    """

    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
        super().__init__()
        _check_window("AvgPool1D", 1, kernel_size, stride, padding)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.ceil_mode, self.name = exclusive, ceil_mode, name

    def forward(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Layer):
    """Average pooling over ``[N, C, H, W]`` (or NHWC), with Paddle's ``exclusive`` and ``divisor_override``.

    >>> import oar
    >>> oar.nn.AvgPool2D(kernel_size=2, stride=2)(oar.ones([1, 3, 32, 32])).shape
    [1, 3, 16, 16]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCHW", name=None):
        super().__init__()
        _check_window("AvgPool2D", 2, kernel_size, stride, padding, data_format)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive, self.divisor = ceil_mode, exclusive, divisor_override
        self.data_format, self.name = data_format, name

    def forward(self, x):
        return F.avg_pool2d(x, self.ksize, self.stride, self.padding, self.ceil_mode, self.exclusive, self.divisor,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1D(Layer):
    """Average pooling of ``[N, C, L]`` into ``output_size`` adaptive windows.

    >>> import oar
    >>> oar.nn.AdaptiveAvgPool1D(output_size=16)(oar.ones([1, 3, 32])).shape
    [1, 3, 16]
    """

    def __init__(self, output_size, name=None):
        super().__init__()
        _check_output_size("AdaptiveAvgPool1D", 1, output_size)
        self.output_size, self.name = output_size, name

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2D(Layer):
    """Average pooling of ``[N, C, H, W]`` (or NHWC) into an ``output_size`` grid of adaptive
    windows (``None`` keeps that input size).

    >>> import oar
    >>> oar.nn.AdaptiveAvgPool2D(output_size=3)(oar.ones([2, 3, 32, 32])).shape
    [2, 3, 3, 3]
    """

    def __init__(self, output_size, data_format="NCHW", name=None):
        super().__init__()
        _check_output_size("AdaptiveAvgPool2D", 2, output_size)
        channel_last("AdaptiveAvgPool2D", data_format, 2)
        self._output_size, self._data_format, self.name = output_size, data_format, name

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self._output_size, self._data_format)

    def extra_repr(self) -> str:
        return f"output_size={self._output_size}"


class AdaptiveMaxPool1D(Layer):
    """Max pooling of ``[N, C, L]`` into ``output_size`` adaptive windows.

    >>> import oar
    >>> oar.nn.AdaptiveMaxPool1D(output_size=16)(oar.ones([1, 3, 32])).shape
    [1, 3, 16]
    """

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        _check_output_size("AdaptiveMaxPool1D", 1, output_size)
        self.output_size, self.return_mask, self.name = output_size, return_mask, name

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, return_mask={self.return_mask}"


class AdaptiveMaxPool2D(Layer):
    """Max pooling of ``[N, C, H, W]`` into an ``output_size`` grid of adaptive windows.

    >>> import oar
    >>> oar.nn.AdaptiveMaxPool2D(output_size=3)(oar.ones([2, 3, 32, 32])).shape
    [2, 3, 3, 3]
    """

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        _check_output_size("AdaptiveMaxPool2D", 2, output_size)
        self._output_size, self._return_mask, self.name = output_size, return_mask, name

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self._output_size, self._return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self._output_size}, return_mask={self._return_mask}"


__all__ = [
    "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D", "AdaptiveAvgPool1D", "AdaptiveAvgPool2D",
    "AdaptiveMaxPool1D", "AdaptiveMaxPool2D",
]
