"""The layers of a converted model (Paddle's ``paddle.nn.quant.format``): ``LinearQuanter`` turns
a float tensor into int8 (``quantize_linear``), ``LinearDequanter`` turns int8 back into float
(``dequantize_linear``), ``LinearQuanterDequanter`` chains them (QDQ, ONNX's form).

They are built from a calibrated quanter's ``scales()`` (Paddle's abs-max) and keep the op's step
(``absmax_to_step``) in a buffer, so the saved program holds the step and names only nn's ops. What
the file holds is only what the model needs: a QDQ pair's two layers share one step buffer, and a
zero point that is all zeros (oar's symmetric quantization) is no buffer (``_zero_point`` is None):
forward passes zeros of the step's shape, which a saved program holds once per shape (``jit.save``
stores identical constants once) instead of twice per layer.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.nn import Layer
from oar.nn.quant import dequantize_linear, quantize_linear
from oar.ops import Tensor

from .base import absmax_to_step, per_tensor


def _qparams(layer: Layer, scales, zero_point, quant_axis, bit_length) -> None:
    if scales is None:
        raise ArgumentError(f"{type(layer).__name__}: the quanter has no scales (was it calibrated?)")
    absmax = np.asarray(scales.numpy() if isinstance(scales, Tensor) else scales, dtype=np.float64)
    if per_tensor(quant_axis):
        if absmax.size != 1:
            raise ArgumentError(f"{type(layer).__name__}: a per-tensor quanter (quant_axis {quant_axis}) gave "
                                f"{absmax.size} scales")
        absmax, axis = absmax.reshape(()), None
    else:
        absmax, axis = absmax.reshape(-1), int(quant_axis)
    step = np.asarray(absmax_to_step(absmax, bit_length), dtype=np.float32)
    zp = None
    if zero_point is not None:
        zp = np.rint(np.asarray(zero_point.numpy() if isinstance(zero_point, Tensor) else zero_point)).astype(np.int8)
        zp = np.broadcast_to(zp.reshape(-1)[0] if zp.size == 1 else zp, step.shape).copy()
    layer.register_buffer("_scales", oar.to_tensor(step))
    layer.register_buffer("_zero_point", oar.to_tensor(zp) if zp is not None and zp.any() else None)
    layer._quant_axis = axis
    layer._bit_length = int(bit_length)


def _zero_point(layer: Layer) -> Tensor:
    """The layer's zero point: its buffer, or zeros made from the step's shape (symmetric)."""
    return layer._zero_point if layer._zero_point is not None else oar.zeros(layer._scales.shape, "int8")


class LinearQuanter(Layer):
    """``quantize_linear`` with a fixed scale: float in, int8 out.

    ``scales`` is Paddle's abs-max (what ``qmax`` stands for); ``quant_axis`` -1 or None per tensor.

    >>> import oar
    >>> from oar.quantization.format import LinearQuanter
    >>> LinearQuanter(1.27)(oar.to_tensor([0.5, -2.0])).tolist()  # clipped to the int8 range
    [50, -128]
    """

    def __init__(self, scales, zero_point=None, quant_axis=None, bit_length: int = 8):
        super().__init__()
        _qparams(self, scales, zero_point, quant_axis, bit_length)

    def forward(self, input):
        return quantize_linear(input, self._scales, _zero_point(self), axis=self._quant_axis or 0,
                               bit_length=self._bit_length)

    @staticmethod
    def from_quanter(quanter) -> LinearQuanter:
        return LinearQuanter(quanter.scales(), zero_point=quanter.zero_points(), quant_axis=quanter.quant_axis(),
                             bit_length=quanter.bit_length())


class LinearDequanter(Layer):
    """``dequantize_linear`` with a fixed scale: int8 in, float32 out.

    >>> import oar
    >>> from oar.quantization.format import LinearDequanter
    >>> [round(v, 4) for v in LinearDequanter(1.27)(oar.to_tensor([50, -127], dtype="int8")).tolist()]
    [0.5, -1.27]
    """

    def __init__(self, scales, zero_point=None, quant_axis=None, bit_length: int = 8):
        super().__init__()
        _qparams(self, scales, zero_point, quant_axis, bit_length)

    def forward(self, input):
        return dequantize_linear(input, self._scales, _zero_point(self), axis=self._quant_axis or 0,
                                 bit_length=self._bit_length)

    @staticmethod
    def from_quanter(quanter) -> LinearDequanter:
        return LinearDequanter(quanter.scales(), zero_point=quanter.zero_points(), quant_axis=quanter.quant_axis(),
                               bit_length=quanter.bit_length())


class LinearQuanterDequanter(Layer):
    """A ``LinearQuanter`` then a ``LinearDequanter`` (either may be None): QDQ on an activation,
    or, with the quanter removed, the dequantization of an int8 weight."""

    def __init__(self, quanter: LinearQuanter | None, dequanter: LinearDequanter | None):
        super().__init__()
        self._quanter = quanter
        self._dequanter = dequanter

    def forward(self, input):
        out = input
        if self._quanter is not None:
            out = self._quanter(out)
        if self._dequanter is not None:
            out = self._dequanter(out)
        return out

    @staticmethod
    def from_quanter(quanter) -> LinearQuanterDequanter:
        """The QDQ pair of a calibrated quanter; both halves hold the same step and zero point
        tensors, so ``oar.jit.save`` stores them once.

        >>> import oar
        >>> from oar.quantization.format import LinearQuanterDequanter
        >>> from oar.quantization.observers import AbsmaxObserver
        >>> observer = AbsmaxObserver()._instance(None)
        >>> _ = observer(oar.to_tensor([0.5, -1.27]))
        >>> qdq = LinearQuanterDequanter.from_quanter(observer)
        >>> qdq._quanter._scales is qdq._dequanter._scales, qdq._dequanter._zero_point
        (True, None)
        >>> [round(v, 4) for v in qdq(oar.to_tensor([0.5, -1.27])).tolist()]
        [0.5, -1.27]
        """
        q, dq = LinearQuanter.from_quanter(quanter), LinearDequanter.from_quanter(quanter)
        dq._scales, dq._zero_point = q._scales, q._zero_point
        return LinearQuanterDequanter(q, dq)
