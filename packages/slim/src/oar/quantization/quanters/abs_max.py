"""Fake quanters for quantization-aware training: the forward quantizes and dequantizes with
``oar.nn.quant.fake_quantize_dequantize``, whose gradient is straight-through (1 inside the
integer range, 0 where the value clipped). The scale is a buffer, never a trained parameter.
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.nn.quant import fake_quantize_dequantize
from oar.ops import apply_inplace

from ..base import BaseQuanter, SymmetricQuanter, absmax_to_step
from ..factory import QuanterFactory
from ..observers.abs_max import channel_axis, reduce_absmax


class FakeQuanterWithAbsMaxObserver(QuanterFactory):
    """Simulated per-tensor quantization with a moving-average abs-max scale (Paddle's
    ``FakeQuanterWithAbsMaxObserver``). In training each batch updates, as Paddle does from
    ``state = accum = 1`` and ``scale = 0.001``::

        state = rate * state + 1;  accum = rate * accum + max|x|;  scale = accum / state

    and the output is ``round(x / scale * qmax) * scale / qmax`` clipped to the integer range; in
    eval the stored scale is used as is.

    >>> import oar
    >>> from oar.quantization.quanters import FakeQuanterWithAbsMaxObserver
    >>> quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)._instance(None)
    >>> x = oar.to_tensor([0.3, -1.0], stop_gradient=False)
    >>> y = quanter(x)
    >>> round(float(quanter.scales()), 4)  # (0.9 * 1 + 1.0) / (0.9 * 1 + 1)
    1.0
    >>> y.sum().backward()
    >>> x.grad.tolist()
    [1.0, 1.0]
    """

    def __init__(self, moving_rate: float = 0.9, bit_length: int = 8, dtype: str = "float32", name=None):
        super().__init__(name=name, moving_rate=moving_rate, bit_length=bit_length, dtype=dtype)

    def _get_class(self):
        return FakeQuanterWithAbsMaxObserverLayer


class FakeQuanterWithAbsMaxObserverLayer(SymmetricQuanter, BaseQuanter):
    def __init__(self, layer, name=None, moving_rate: float = 0.9, bit_length: int = 8, dtype: str = "float32"):
        super().__init__()
        if not 0.0 <= moving_rate < 1.0:
            raise ArgumentError(f"FakeQuanterWithAbsMaxObserver: moving_rate must be in [0, 1), got {moving_rate}")
        self._moving_rate = float(moving_rate)
        self._bit_length = int(bit_length)
        self.register_buffer("_scale", oar.to_tensor(0.001, dtype=dtype))
        self.register_buffer("_state", oar.to_tensor(1.0, dtype=dtype))
        self.register_buffer("_accum", oar.to_tensor(1.0, dtype=dtype))

    def forward(self, input):
        if self.training:
            with oar.no_grad():
                rate = self._moving_rate
                current = reduce_absmax(input, None).astype(self._scale.dtype)
                state = apply_inplace(self._state, self._state * rate + 1.0, name="FakeQuanterWithAbsMaxObserver")
                accum = apply_inplace(self._accum, self._accum * rate + current, name="FakeQuanterWithAbsMaxObserver")
                # The moving average of the batches' abs-max: accum / state (state, their decayed count, is > 0).
                apply_inplace(self._scale, oar.where(state > 0, accum / state, self._scale),
                              name="FakeQuanterWithAbsMaxObserver")
        step = absmax_to_step(self._scale.detach(), self._bit_length)
        return fake_quantize_dequantize(input, step.astype(input.dtype), bit_length=self._bit_length)

    def scales(self):
        return self._scale


class FakeQuanterChannelWiseAbsMaxObserver(QuanterFactory):
    """Simulated per-output-channel quantization of a weight, each channel's scale its current
    ``max|w|`` (Paddle's ``FakeQuanterChannelWiseAbsMaxObserver``): Conv2D weights along axis 0,
    Linear ``[in, out]`` weights along axis 1.

    >>> import oar
    >>> from oar.quantization.quanters import FakeQuanterChannelWiseAbsMaxObserver
    >>> quanter = FakeQuanterChannelWiseAbsMaxObserver()._instance(oar.nn.Linear(2, 3))
    >>> w = oar.to_tensor([[1.0, -0.5, 0.2], [0.1, 2.0, -0.4]])
    >>> _ = quanter(w)
    >>> quanter.scales().tolist(), quanter.quant_axis()
    ([1.0, 2.0, 0.4000000059604645], 1)
    """

    def __init__(self, bit_length: int = 8, dtype: str = "float32", name=None):
        super().__init__(bit_length=bit_length, dtype=dtype, name=name)

    def _get_class(self):
        return FakeQuanterChannelWiseAbsMaxObserverLayer


class FakeQuanterChannelWiseAbsMaxObserverLayer(SymmetricQuanter, BaseQuanter):
    # Its scale is a function of the tensor it quantizes: convert recomputes it from the final weight.
    scale_from_input = True

    def __init__(self, layer, bit_length: int = 8, dtype: str = "float32", name=None):
        super().__init__()
        self._bit_length = int(bit_length)
        self._quant_axis = channel_axis(layer, "FakeQuanterChannelWiseAbsMaxObserver")
        channels = layer.weight.shape[self._quant_axis]
        self.register_buffer("_scale", oar.full([channels], 0.001, dtype=dtype))

    def forward(self, input):
        with oar.no_grad():
            current = reduce_absmax(input, self._quant_axis).astype(self._scale.dtype)
            if self.training:
                # An all-zero channel keeps its previous scale (and the read lets to_static capture it).
                apply_inplace(self._scale, oar.where(current > 0, current, self._scale),
                              name="FakeQuanterChannelWiseAbsMaxObserver")
        step = absmax_to_step(current, self._bit_length)
        return fake_quantize_dequantize(input, step.astype(input.dtype), axis=self._quant_axis,
                                        bit_length=self._bit_length)

    def scales(self):
        return self._scale

