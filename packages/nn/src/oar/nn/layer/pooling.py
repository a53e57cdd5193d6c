"""Pooling layers: MaxPool1D/2D/3D, AvgPool1D/2D/3D, AdaptiveAvgPool1D/2D/3D, AdaptiveMaxPool1D/2D/3D,
LPPool1D/2D, MaxUnPool1D/2D/3D and FractionalMaxPool2D/3D (with Paddle 3.3's lower-case ``...1d``
aliases where Paddle has them).

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


class MaxPool3D(Layer):
    """Max pooling over ``[N, C, D, H, W]`` (or NDHWC); ``stride`` defaults to ``kernel_size``.

    >>> import oar
    >>> oar.nn.MaxPool3D(kernel_size=2)(oar.ones([1, 3, 4, 8, 8])).shape
    [1, 3, 2, 4, 4]
    """

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
                 name=None):
        super().__init__()
        _check_window("MaxPool3D", 3, kernel_size, stride, padding, data_format)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format, self.name = return_mask, ceil_mode, data_format, name

    def forward(self, x):
        return F.max_pool3d(x, self.ksize, self.stride, self.padding, self.return_mask, self.ceil_mode,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AvgPool3D(Layer):
    """Average pooling over ``[N, C, D, H, W]`` (or NDHWC), with Paddle's ``exclusive`` and ``divisor_override``.

    >>> import oar
    >>> oar.nn.AvgPool3D(kernel_size=2, stride=2)(oar.ones([1, 3, 4, 8, 8])).shape
    [1, 3, 2, 4, 4]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCDHW", name=None):
        super().__init__()
        _check_window("AvgPool3D", 3, kernel_size, stride, padding, data_format)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive, self.divisor = ceil_mode, exclusive, divisor_override
        self.data_format, self.name = data_format, name

    def forward(self, x):
        return F.avg_pool3d(x, self.ksize, self.stride, self.padding, self.ceil_mode, self.exclusive, self.divisor,
                            self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3D(Layer):
    """Average pooling of ``[N, C, D, H, W]`` (or NDHWC) into an ``output_size`` grid of adaptive
    windows (``None`` keeps that input size).

    >>> import oar
    >>> oar.nn.AdaptiveAvgPool3D(output_size=3)(oar.ones([2, 3, 8, 8, 8])).shape
    [2, 3, 3, 3, 3]
    """

    def __init__(self, output_size, data_format="NCDHW", name=None):
        super().__init__()
        _check_output_size("AdaptiveAvgPool3D", 3, output_size)
        channel_last("AdaptiveAvgPool3D", data_format, 3)
        self._output_size, self._data_format, self.name = output_size, data_format, name

    def forward(self, x):
        return F.adaptive_avg_pool3d(x, self._output_size, self._data_format)

    def extra_repr(self) -> str:
        return f"output_size={self._output_size}"


class AdaptiveMaxPool3D(Layer):
    """Max pooling of ``[N, C, D, H, W]`` into an ``output_size`` grid of adaptive windows.

    >>> import oar
    >>> oar.nn.AdaptiveMaxPool3D(output_size=2)(oar.ones([2, 3, 8, 8, 8])).shape
    [2, 3, 2, 2, 2]
    """

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        _check_output_size("AdaptiveMaxPool3D", 3, output_size)
        self._output_size, self._return_mask, self.name = output_size, return_mask, name

    def forward(self, x):
        return F.adaptive_max_pool3d(x, self._output_size, self._return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self._output_size}, return_mask={self._return_mask}"


class _LPPoolNd(Layer):
    _nd = 0

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format=None, name=None):
        super().__init__()
        cls = type(self).__name__
        _check_window(cls, self._nd, kernel_size, stride, padding, data_format)
        if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type == 0:
            raise ArgumentError(f"{cls}: norm_type must be a non-zero number (or inf), got {norm_type!r}")
        self.norm_type, self.kernel_size, self.stride, self.padding = norm_type, kernel_size, stride, padding
        self.ceil_mode, self.data_format, self.name = ceil_mode, data_format, name

    def forward(self, x):
        pool = F.lp_pool1d if self._nd == 1 else F.lp_pool2d
        return pool(x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.data_format)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, " \
               f"padding={self.padding}"


class LPPool1D(_LPPoolNd):
    """Power-average pooling over ``[N, C, L]`` (or NLC): ``(sum of x ** norm_type) ** (1 / norm_type)``
    over each window.

    >>> import oar
    >>> oar.nn.LPPool1D(2, kernel_size=2)(oar.ones([1, 3, 8])).shape
    [1, 3, 4]
    """

    _nd = 1

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL", name=None):
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format, name)


class LPPool2D(_LPPoolNd):
    """Power-average pooling over ``[N, C, H, W]`` (or NHWC): ``(sum of x ** norm_type) ** (1 / norm_type)``
    over each window.

    >>> import oar
    >>> oar.nn.LPPool2D(2, kernel_size=2)(oar.ones([1, 3, 8, 8])).shape
    [1, 3, 4, 4]
    """

    _nd = 2

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW",
                 name=None):
        super().__init__(norm_type, kernel_size, stride, padding, ceil_mode, data_format, name)


class _MaxUnPoolNd(Layer):
    _nd = 0

    def __init__(self, kernel_size, stride=None, padding=0, data_format=None, output_size=None, name=None):
        super().__init__()
        _check_window(type(self).__name__, self._nd, kernel_size, stride, padding)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.data_format, self.output_size, self.name = data_format, output_size, name

    def forward(self, x, indices):
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._nd - 1]
        return unpool(x, indices, self.ksize, self.stride, self.padding, self.data_format, self.output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class MaxUnPool1D(_MaxUnPoolNd):
    """The partial inverse of MaxPool1D: ``forward(x, indices)`` writes ``x`` at the pooling mask.

    >>> import oar
    >>> out, mask = oar.nn.functional.max_pool1d(oar.rand([1, 2, 8]), 2, return_mask=True)
    >>> oar.nn.MaxUnPool1D(2)(out, mask).shape
    [1, 2, 8]
    """

    _nd = 1

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class MaxUnPool2D(_MaxUnPoolNd):
    """The partial inverse of MaxPool2D: ``forward(x, indices)`` writes ``x`` at the pooling mask.

    >>> import oar
    >>> out, mask = oar.nn.functional.max_pool2d(oar.rand([1, 2, 4, 4]), 2, return_mask=True)
    >>> oar.nn.MaxUnPool2D(2)(out, mask).shape
    [1, 2, 4, 4]
    """

    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class MaxUnPool3D(_MaxUnPoolNd):
    """The partial inverse of MaxPool3D: ``forward(x, indices)`` writes ``x`` at the pooling mask.

    >>> import oar
    >>> out, mask = oar.nn.functional.max_pool3d(oar.rand([1, 2, 4, 4, 4]), 2, return_mask=True)
    >>> oar.nn.MaxUnPool3D(2)(out, mask).shape
    [1, 2, 4, 4, 4]
    """

    _nd = 3

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
        super().__init__(kernel_size, stride, padding, data_format, output_size, name)


class _FractionalMaxPoolNd(Layer):
    _nd = 0

    def __init__(self, output_size, kernel_size=None, random_u=None, return_mask=False, name=None):
        super().__init__()
        cls = type(self).__name__
        _check_output_size(cls, self._nd, output_size)
        if kernel_size is not None:
            int_list(cls, "kernel_size", kernel_size, self._nd, minimum=1)
        self._output_size, self._kernel_size, self._random_u = output_size, kernel_size, random_u
        self._return_mask, self.name = return_mask, name

    def forward(self, x):
        pool = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return pool(x, self._output_size, self._kernel_size, self._random_u, self._return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self._output_size}, kernel_size={self._kernel_size}, return_mask={self._return_mask}"


class FractionalMaxPool2D(_FractionalMaxPoolNd):
    """Fractional max pooling of ``[N, C, H, W]`` into ``output_size`` (see ``F.fractional_max_pool2d``).

    >>> import oar
    >>> oar.nn.FractionalMaxPool2D(output_size=3, random_u=0.3)(oar.rand([2, 3, 8, 8])).shape
    [2, 3, 3, 3]
    """

    _nd = 2


class FractionalMaxPool3D(_FractionalMaxPoolNd):
    """Fractional max pooling of ``[N, C, D, H, W]`` into ``output_size`` (see ``F.fractional_max_pool3d``).

    >>> import oar
    >>> oar.nn.FractionalMaxPool3D(output_size=2, kernel_size=2)(oar.rand([1, 1, 5, 5, 5])).shape
    [1, 1, 2, 2, 2]
    """

    _nd = 3


# Paddle 3.3's lower-case aliases (the same classes)
AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d = AdaptiveMaxPool1D, AdaptiveMaxPool2D, AdaptiveMaxPool3D
LPPool1d, LPPool2d = LPPool1D, LPPool2D

__all__ = [
    "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "AdaptiveAvgPool1D",
    "AdaptiveAvgPool2D", "AdaptiveAvgPool3D", "AdaptiveMaxPool1D", "AdaptiveMaxPool2D", "AdaptiveMaxPool3D",
    "LPPool1D", "LPPool2D", "MaxUnPool1D", "MaxUnPool2D", "MaxUnPool3D", "FractionalMaxPool2D", "FractionalMaxPool3D",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
]
