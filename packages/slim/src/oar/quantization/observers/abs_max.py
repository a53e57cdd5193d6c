"""Abs-max observers: per tensor (``AbsmaxObserver``, Paddle's), per output channel for weights
(``AbsMaxChannelWiseWeightObserver``, PaddleSlim's) and a moving average
(``MovingAverageAbsmaxObserver``, the statistic of Paddle's ``moving_average_abs_max``).

Their state lives in buffers updated with ``apply_inplace`` under ``no_grad``, so calibration runs
in eager mode and under ``oar.jit.to_static`` alike.
"""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.ops import Tensor, apply_inplace

from ..base import BaseObserver, SymmetricQuanter
from ..factory import ObserverFactory

# The output-channel axis of each layer type's weight: Conv2D [out, in/groups, kh, kw], Linear [in, out].
CHANNEL_AXIS: dict[type, int] = {nn.Conv2D: 0, nn.Linear: 1}


def channel_axis(layer, who: str) -> int:
    """The output-channel axis of ``layer``'s weight (subclasses of Conv2D and Linear too)."""
    for cls in type(layer).__mro__:
        if cls in CHANNEL_AXIS:
            return CHANNEL_AXIS[cls]
    raise ArgumentError(f"{who}: a channel-wise weight quantizer needs a layer with a known weight layout "
                        f"({', '.join(c.__name__ for c in CHANNEL_AXIS)}), got {type(layer).__name__}; "
                        "use a per-tensor one (AbsmaxObserver, FakeQuanterWithAbsMaxObserver) for it")


def reduce_absmax(x: Tensor, axis: int | None) -> Tensor:
    """``max|x|`` over everything (``axis`` None) or over every axis but ``axis``."""
    a = x.detach().abs()
    if axis is None:
        return a.max()
    return a.max(axis=[d for d in range(a.ndim) if d != axis])


class AbsmaxObserver(ObserverFactory):
    """The largest ``|x|`` seen in every calibration batch, per tensor (Paddle's ``AbsmaxObserver``).

    >>> import oar
    >>> from oar.quantization import PTQ, QuantConfig
    >>> from oar.quantization.observers import AbsmaxObserver
    >>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
    >>> model = ptq.quantize(oar.nn.Sequential(oar.nn.Linear(4, 2)))
    >>> _ = model(oar.to_tensor([[1.0, -3.0, 2.0, 0.5]]))
    >>> float(model[0].activation_quanter.scales())
    3.0
    """

    def __init__(self, quant_bits: int = 8):
        super().__init__(quant_bits=quant_bits)

    def _get_class(self):
        return AbsmaxObserverLayer


class AbsmaxObserverLayer(SymmetricQuanter, BaseObserver):
    INIT_ABS_MAX = 1e-7  # Paddle's: what scales() holds before anything was observed

    def __init__(self, layer, quant_bits: int = 8):
        super().__init__()
        self._bit_length = int(quant_bits)
        self.register_buffer("abs_max_val", oar.to_tensor(self.INIT_ABS_MAX, dtype="float32"))

    def forward(self, input):
        with oar.no_grad():
            current = reduce_absmax(input, None).astype("float32")
            apply_inplace(self.abs_max_val, oar.maximum(current, self.abs_max_val), name="AbsmaxObserver")
        return input

    def observed(self) -> bool:
        return float(self.abs_max_val) > 2 * self.INIT_ABS_MAX

    def scales(self):
        return self.abs_max_val


class AbsMaxChannelWiseWeightObserver(ObserverFactory):
    """The largest ``|w|`` of each output channel of a weight (PaddleSlim's
    ``AbsMaxChannelWiseWeightObserver``): Conv2D weights along axis 0, Linear ``[in, out]`` along 1.

    >>> import oar
    >>> from oar.quantization import PTQ, QuantConfig
    >>> from oar.quantization.observers import AbsMaxChannelWiseWeightObserver
    >>> ptq = PTQ(QuantConfig(activation=None, weight=AbsMaxChannelWiseWeightObserver()))
    >>> model = ptq.quantize(oar.nn.Sequential(oar.nn.Linear(4, 3)))
    >>> _ = model(oar.rand([2, 4]))
    >>> model[0].weight_quanter.scales().shape, model[0].weight_quanter.quant_axis()
    ([3], 1)
    """

    def __init__(self, quant_bits: int = 8):
        super().__init__(quant_bits=quant_bits)

    def _get_class(self):
        return AbsMaxChannelWiseWeightObserverLayer


class AbsMaxChannelWiseWeightObserverLayer(SymmetricQuanter, BaseObserver):
    def __init__(self, layer, quant_bits: int = 8):
        super().__init__()
        self._bit_length = int(quant_bits)
        self._quant_axis = channel_axis(layer, "AbsMaxChannelWiseWeightObserver")
        channels = layer.weight.shape[self._quant_axis]
        self.register_buffer("abs_max_val", oar.full([channels], AbsmaxObserverLayer.INIT_ABS_MAX, dtype="float32"))

    def forward(self, input):
        with oar.no_grad():
            current = reduce_absmax(input, self._quant_axis).astype("float32")
            apply_inplace(self.abs_max_val, oar.maximum(current, self.abs_max_val),
                          name="AbsMaxChannelWiseWeightObserver")
        return input

    def observed(self) -> bool:
        return float(self.abs_max_val.max()) > 2 * AbsmaxObserverLayer.INIT_ABS_MAX

    def scales(self):
        return self.abs_max_val


class MovingAverageAbsmaxObserver(ObserverFactory):
    """A moving average of each batch's ``max|x|``, as Paddle's ``moving_average_abs_max`` computes
    it: ``state = rate * state + 1``, ``accum = rate * accum + max|x|``, ``scale = accum / state``,
    from ``state = accum = 0`` (so the first batch's scale is its own abs-max).

    >>> import oar
    >>> from oar.quantization.observers import MovingAverageAbsmaxObserver
    >>> observer = MovingAverageAbsmaxObserver(moving_rate=0.5)._instance(None)
    >>> for v in (2.0, 4.0):
    ...     _ = observer(oar.to_tensor([v]))
    >>> round(float(observer.scales()), 4)  # (0.5 * 2 + 4) / (0.5 * 1 + 1)
    3.3333
    """

    def __init__(self, moving_rate: float = 0.9, quant_bits: int = 8):
        super().__init__(moving_rate=moving_rate, quant_bits=quant_bits)

    def _get_class(self):
        return MovingAverageAbsmaxObserverLayer


class MovingAverageAbsmaxObserverLayer(SymmetricQuanter, BaseObserver):
    def __init__(self, layer, moving_rate: float = 0.9, quant_bits: int = 8):
        super().__init__()
        if not 0.0 <= moving_rate < 1.0:
            raise ArgumentError(f"MovingAverageAbsmaxObserver: moving_rate must be in [0, 1), got {moving_rate}")
        self._moving_rate = float(moving_rate)
        self._bit_length = int(quant_bits)
        self.register_buffer("_state", oar.to_tensor(0.0, dtype="float32"))
        self.register_buffer("_accum", oar.to_tensor(0.0, dtype="float32"))
        self.register_buffer("_scale", oar.to_tensor(AbsmaxObserverLayer.INIT_ABS_MAX, dtype="float32"))

    def forward(self, input):
        with oar.no_grad():
            current = reduce_absmax(input, None).astype("float32")
            rate = self._moving_rate
            state = apply_inplace(self._state, self._state * rate + 1.0, name="MovingAverageAbsmaxObserver")
            accum = apply_inplace(self._accum, self._accum * rate + current, name="MovingAverageAbsmaxObserver")
            # (reading the old scale lets to_static capture the buffer, which it misses when only written)
            apply_inplace(self._scale, oar.where(state > 0, accum / state, self._scale),
                          name="MovingAverageAbsmaxObserver")
        return input

    def observed(self) -> bool:
        return float(self._state) > 0.0

    def scales(self):
        return self._scale

