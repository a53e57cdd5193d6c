"""The quanter and observer interfaces, and the one scale conversion of oar.quantization.

Two conventions meet here. Paddle's user-facing one: a quanter's or observer's ``scales()`` is the
**abs-max**, the float value that maps to the largest integer ``qmax = 2**(bits-1) - 1``. The op
level (``oar.nn.quant.quantize_linear`` / ``dequantize_linear`` / ``fake_quantize_dequantize``)
takes ONNX's **step**: what one integer step is worth. ``absmax_to_step`` is the only place that
turns one into the other; every quanter, observer and converted layer calls it.
"""

from __future__ import annotations

import abc

import numpy as np

import oar
from oar.nn import Layer
from oar.ops import Tensor

# An abs-max below this is treated as this (a dead channel or an all-zero activation): the step
# stays positive, so quantize_linear never divides by zero.
MIN_ABSMAX = 1e-8


def qmax(bit_length: int) -> int:
    """The largest signed integer of ``bit_length`` bits: 8 -> 127."""
    return (1 << (int(bit_length) - 1)) - 1


def absmax_to_step(absmax, bit_length: int = 8):
    """Paddle's abs-max scale -> the op's step size: ``max(absmax, 1e-8) / qmax(bit_length)``.

    Takes and returns a Tensor (inside a traced graph too) or a numpy array / float.

    >>> import oar
    >>> from oar.quantization import absmax_to_step
    >>> round(absmax_to_step(12.7), 6)
    0.1
    >>> [round(v, 6) for v in absmax_to_step(oar.to_tensor([1.27, 0.0])).tolist()]
    [0.01, 0.0]
    """
    q = float(qmax(bit_length))
    if isinstance(absmax, Tensor):
        return oar.clip(absmax, min=MIN_ABSMAX) / q
    out = np.maximum(np.asarray(absmax, dtype=np.float64), MIN_ABSMAX) / q
    return float(out) if out.ndim == 0 else out


def per_tensor(quant_axis) -> bool:
    """Paddle's quanters say per-tensor with ``quant_axis() == -1`` (or None)."""
    return quant_axis is None or quant_axis == -1


class BaseQuanter(Layer, metaclass=abc.ABCMeta):
    """A layer that simulates quantization of what passes through it (Paddle's ``BaseQuanter``).

    ``scales()`` returns the abs-max (a scalar tensor per tensor, ``[C]`` per channel),
    ``quant_axis()`` -1 (or None) per tensor, else the channel axis.
    """

    def __init__(self) -> None:
        super().__init__()

    @abc.abstractmethod
    def forward(self, input: Tensor) -> Tensor: ...

    @abc.abstractmethod
    def scales(self) -> Tensor | None: ...

    @abc.abstractmethod
    def zero_points(self) -> Tensor | None: ...

    @abc.abstractmethod
    def quant_axis(self) -> int | None: ...

    @abc.abstractmethod
    def bit_length(self) -> int: ...


class SymmetricQuanter:
    """The accessors every symmetric oar quanter and observer shares: ``bit_length()`` is
    ``self._bit_length``, ``quant_axis()`` is ``self._quant_axis`` (-1, per tensor, unless set),
    ``zero_points()`` None (the zero point is 0)."""

    _quant_axis = -1

    def bit_length(self) -> int:
        return self._bit_length

    def quant_axis(self) -> int:
        return self._quant_axis

    def zero_points(self) -> None:
        return None


class BaseObserver(BaseQuanter):
    """A quanter that only watches: ``forward`` returns its input and records statistics, and
    ``cal_thresholds()`` turns them into ``scales()`` (Paddle's ``BaseObserver``)."""

    def cal_thresholds(self) -> None:
        """Compute the scales from what was observed (a no-op where ``scales()`` is running)."""

    def observed(self) -> bool:
        """Whether anything has been observed (convert refuses an activation observer that saw nothing)."""
        return True
