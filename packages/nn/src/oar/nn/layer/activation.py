"""Activation layers of oar.nn: each wraps its ``oar.nn.functional`` function with Paddle's
constructor arguments and defaults.

>>> import oar
>>> oar.nn.LeakyReLU(0.1)(oar.to_tensor([-1.0, 1.0])).tolist()
[-0.10000000149011612, 1.0]
"""

from __future__ import annotations

from oar.nn import functional as F
from oar.nn.initializer import Constant
from oar.nn.layer.layers import Layer


class _Elementwise(Layer):
    """An activation without state: ``forward`` calls ``_fn`` with the stored keyword arguments."""

    _fn = None

    def __init__(self, name=None, **kwargs):
        super().__init__()
        self._kwargs = kwargs
        self._name = name

    def forward(self, x):
        return type(self)._fn(x, **self._kwargs)

    def extra_repr(self) -> str:
        parts = [f"{k}={v}" for k, v in self._kwargs.items()]
        if self._name:
            parts.append(f"name={self._name}")
        return ", ".join(parts)


class ReLU(_Elementwise):
    """``max(x, 0)``.

    >>> import oar
    >>> oar.nn.ReLU()(oar.to_tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    _fn = staticmethod(F.relu)

    def __init__(self, name=None):
        super().__init__(name)


class ReLU6(_Elementwise):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(F.relu6)

    def __init__(self, name=None):
        super().__init__(name)


class LeakyReLU(_Elementwise):
    """``x`` for ``x > 0``, else ``negative_slope * x`` (default 0.01)."""

    _fn = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope: float = 0.01, name=None):
        super().__init__(name, negative_slope=negative_slope)


class ELU(_Elementwise):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)`` (default ``alpha=1.0``)."""

    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, name=None):
        super().__init__(name, alpha=alpha)


class SELU(_Elementwise):
    """``scale * elu(x, alpha)`` with the self-normalising constants as defaults."""

    _fn = staticmethod(F.selu)

    def __init__(self, scale: float = F.activation.SELU_SCALE, alpha: float = F.activation.SELU_ALPHA, name=None):
        super().__init__(name, scale=scale, alpha=alpha)


class CELU(_Elementwise):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    _fn = staticmethod(F.celu)

    def __init__(self, alpha: float = 1.0, name=None):
        super().__init__(name, alpha=alpha)


class GELU(_Elementwise):
    """``x * Phi(x)``: exact (default) or with the tanh approximation (``approximate=True``)."""

    _fn = staticmethod(F.gelu)

    def __init__(self, approximate: bool = False, name=None):
        super().__init__(name, approximate=approximate)


class Swish(_Elementwise):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.swish)

    def __init__(self, name=None):
        super().__init__(name)


class Mish(_Elementwise):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)

    def __init__(self, name=None):
        super().__init__(name)


class Sigmoid(_Elementwise):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(F.sigmoid)

    def __init__(self, name=None):
        super().__init__(name)


class Hardsigmoid(_Elementwise):
    """``clip(x / 6 + 0.5, 0, 1)`` (Paddle's slope 0.1666667 and offset 0.5)."""

    _fn = staticmethod(F.hardsigmoid)

    def __init__(self, name=None):
        super().__init__(name)


class Hardswish(_Elementwise):
    """``x * min(max(x + 3, 0), 6) / 6``."""

    _fn = staticmethod(F.hardswish)

    def __init__(self, name=None):
        super().__init__(name)


class Tanh(_Elementwise):
    """Hyperbolic tangent."""

    _fn = staticmethod(F.tanh)

    def __init__(self, name=None):
        super().__init__(name)


class Softmax(_Elementwise):
    """``softmax`` along ``axis`` (default -1)."""

    _fn = staticmethod(F.softmax)

    def __init__(self, axis: int = -1, name=None):
        super().__init__(name, axis=axis)


class LogSoftmax(_Elementwise):
    """``log_softmax`` along ``axis`` (default -1)."""

    _fn = staticmethod(F.log_softmax)

    def __init__(self, axis: int = -1, name=None):
        super().__init__(name, axis=axis)


class Softplus(_Elementwise):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    _fn = staticmethod(F.softplus)

    def __init__(self, beta: float = 1, threshold: float = 20, name=None):
        super().__init__(name, beta=beta, threshold=threshold)


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)

    def __init__(self, name=None):
        super().__init__(name)


class Hardtanh(_Elementwise):
    """``x`` clipped to ``[min, max]`` (default ``[-1, 1]``)."""

    _fn = staticmethod(F.hardtanh)

    def __init__(self, min: float = -1.0, max: float = 1.0, name=None):  # noqa: A002 - Paddle's names
        super().__init__(name, min=min, max=max)


class Hardshrink(_Elementwise):
    """``x`` where ``|x| > threshold``, else 0."""

    _fn = staticmethod(F.hardshrink)

    def __init__(self, threshold: float = 0.5, name=None):
        super().__init__(name, threshold=threshold)


class Softshrink(_Elementwise):
    """``x -+ threshold`` outside ``[-threshold, threshold]``, else 0."""

    _fn = staticmethod(F.softshrink)

    def __init__(self, threshold: float = 0.5, name=None):
        super().__init__(name, threshold=threshold)


class Tanhshrink(_Elementwise):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)

    def __init__(self, name=None):
        super().__init__(name)


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(F.log_sigmoid)

    def __init__(self, name=None):
        super().__init__(name)


class ThresholdedReLU(_Elementwise):
    """``x`` where ``x > threshold``, else ``value``."""

    _fn = staticmethod(F.thresholded_relu)

    def __init__(self, threshold: float = 1.0, value: float = 0.0, name=None):
        super().__init__(name, threshold=threshold, value=value)


class Maxout(_Elementwise):
    """The maximum over runs of ``groups`` channels along ``axis``."""

    _fn = staticmethod(F.maxout)

    def __init__(self, groups: int, axis: int = 1, name=None):
        super().__init__(name, groups=groups, axis=axis)


class GLU(_Elementwise):
    """Gated linear unit along ``axis``."""

    _fn = staticmethod(F.glu)

    def __init__(self, axis: int = -1, name=None):
        super().__init__(name, axis=axis)


class PReLU(Layer):
    """``x`` for ``x > 0``, else ``weight * x`` with a learnt ``weight``: one value shared
    (``num_parameters=1``) or one per channel, initialised to ``init`` (0.25). As in Paddle the
    parameter is ``_weight`` (its state-dict key).

    >>> import oar
    >>> m = oar.nn.PReLU()
    >>> m._weight.tolist(), m(oar.to_tensor([-4.0, 4.0])).tolist()
    ([0.25], [-1.0, 4.0])
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, weight_attr=None, data_format: str = "NCHW",
                 name=None):
        super().__init__()
        self._num_parameters = num_parameters
        self._init = init
        self._data_format = data_format
        self._name = name
        self._weight = self.create_parameter([num_parameters], attr=weight_attr, default_initializer=Constant(init))

    def forward(self, x):
        return F.prelu(x, self._weight, data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_parameters={self._num_parameters}, data_format={self._data_format}, init={self._init}, dtype={self._dtype}"


class SiLU(_Elementwise):
    """``x * sigmoid(x)``; with ``inplace`` the result is written into ``x``. ``Silu`` is the
    same class, as in Paddle 3.3.

    >>> import oar
    >>> [round(v, 4) for v in oar.nn.SiLU()(oar.to_tensor([-1.0, 1.0])).tolist()]
    [-0.2689, 0.7311]
    """

    _fn = staticmethod(F.silu)

    def __init__(self, inplace: bool = False, name=None):
        super().__init__(name, inplace=inplace)


Silu = SiLU


class RReLU(Layer):
    """The randomized leaky ReLU (``F.rrelu``): a slope drawn from ``[lower, upper]`` per element
    for negative inputs in training, ``(lower + upper) / 2`` in evaluation.

    >>> import oar
    >>> oar.nn.RReLU().eval()(oar.to_tensor([-1.0, 2.0])).tolist()
    [-0.2291666716337204, 2.0]
    """

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, name=None):
        super().__init__()
        self._lower, self._upper = lower, upper
        self._name = name

    def forward(self, x):
        return F.rrelu(x, lower=self._lower, upper=self._upper, training=self.training)

    def extra_repr(self) -> str:
        return f"lower={self._lower}, upper={self._upper}"


__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "Silu", "Swish", "Mish", "Sigmoid",
    "Hardsigmoid", "Hardswish", "Tanh", "Softmax", "LogSoftmax", "Softplus", "Softsign", "Hardtanh",
    "Hardshrink", "Softshrink", "Tanhshrink", "LogSigmoid", "ThresholdedReLU", "Maxout", "GLU", "PReLU",
    "SiLU", "RReLU",
]
