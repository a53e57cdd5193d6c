"""Initializers (``oar.nn.initializer``): fill a parameter in place, with Paddle's formulas.

Every initializer draws from oar's global generator, so ``oar.seed(n)`` makes model
initialisation reproducible.

>>> import oar
>>> from oar.nn.initializer import Constant
>>> w = oar.zeros([2, 2])
>>> Constant(0.5)(w).tolist()
[[0.5, 0.5], [0.5, 0.5]]
"""

from __future__ import annotations

import math

import numpy as np

from oar._core.tensor import Tensor
from oar._ops.random import default_generator as _generator
from oar.errors import ArgumentError


def compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) with Paddle's convention: Linear weights are ``[in, out]``, conv weights
    ``[out_channels, in_channels, *kernel]``."""
    shape = list(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Base class: subclasses implement ``generate(shape, np_dtype) -> np.ndarray``."""

    def generate(self, shape: list[int], np_dtype) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, param: Tensor, block=None) -> Tensor:
        values = self.generate(list(param._data.shape), param._data.dtype)
        if list(values.shape) != list(param._data.shape):
            raise ArgumentError(f"{type(self).__name__}: generated shape {list(values.shape)} for a parameter of shape {param.shape}")
        if not param._data.flags.writeable:
            param._data = param._data.copy()
        param._data[...] = values.astype(param._data.dtype, copy=False)
        return param

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Constant(Initializer):
    """Every element equals ``value`` (default 0.0)."""

    def __init__(self, value: float = 0.0):
        self.value = value

    def generate(self, shape, np_dtype):
        return np.full(shape, self.value, dtype=np_dtype)


class Normal(Initializer):
    """Gaussian with ``mean`` and ``std``."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, name=None):
        self.mean, self.std = mean, std

    def generate(self, shape, np_dtype):
        return _generator().normal(self.mean, self.std, size=shape)


class Uniform(Initializer):
    """Uniform on ``[low, high)``."""

    def __init__(self, low: float = -1.0, high: float = 1.0, name=None):
        if low > high:
            raise ArgumentError(f"Uniform: low={low} must not exceed high={high}")
        self.low, self.high = low, high

    def generate(self, shape, np_dtype):
        return _generator().uniform(self.low, self.high, size=shape)


class XavierUniform(Initializer):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)). Paddle's default for Linear."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def generate(self, shape, np_dtype):
        fi, fo = compute_fans(shape)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        limit = self.gain * math.sqrt(6.0 / float(fi + fo))
        return _generator().uniform(-limit, limit, size=shape)


class XavierNormal(Initializer):
    """Glorot normal: N(0, gain * sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def generate(self, shape, np_dtype):
        fi, fo = compute_fans(shape)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        return _generator().normal(0.0, self.gain * math.sqrt(2.0 / float(fi + fo)), size=shape)


__all__ = ["Initializer", "Constant", "Normal", "Uniform", "XavierUniform", "XavierNormal", "compute_fans"]
