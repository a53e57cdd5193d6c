"""Quantized layers (Paddle's ``paddle.nn.quant.qat``): a Linear or Conv2D with a weight quanter
and an activation quanter, which ``convert`` turns into an INT8 layer.

Before convert (``PTQ.quantize`` / ``QAT.quantize``)::

    x -> activation_quanter -> linear(x, weight_quanter(weight) [float], bias)

After convert (``_convert``), the same forward runs on an int8 artefact::

    x -> quantize_linear -> dequantize_linear -> linear(x, dequantize_linear(weight [int8]), bias)

The int8 weight is a buffer named ``weight`` (the float Parameter is gone), its per-channel steps
sit in the dequanter, and the activation's step in the QDQ pair (one buffer both halves share; no
zero-point buffers, they are 0): ``oar.jit.save`` writes the int8 weight, the bias and two steps.
"""

from __future__ import annotations

import abc

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.ops import Tensor

from .base import BaseObserver
from .format import LinearDequanter, LinearQuanter, LinearQuanterDequanter


class ConvertibleQuantedLayer(nn.Layer, metaclass=abc.ABCMeta):
    """A layer that ``convert`` can turn into its inference form (Paddle's).

    ``weights_to_quanters()`` names ``(weight, quanter)`` pairs: each weight is quantized to an
    int8 buffer and its quanter becomes a dequanter; ``activation_quanters()`` names quanters that
    become QDQ pairs.
    """

    def __init__(self):
        super().__init__()
        self.converted = False

    @abc.abstractmethod
    def weights_to_quanters(self) -> list[tuple[str, str]]: ...

    @abc.abstractmethod
    def activation_quanters(self) -> list[str]: ...

    def _convert(self, remain_weight: bool = False) -> None:
        if self.converted:
            raise ArgumentError(f"{type(self).__name__} {self.full_name()!r} was converted already")
        for weight_name, quanter_name in self.weights_to_quanters():
            quanter = getattr(self, quanter_name)
            if quanter is None:
                continue
            weight = getattr(self, weight_name)
            if isinstance(quanter, BaseObserver) or getattr(quanter, "scale_from_input", False):
                # A weight's own statistic, taken on the final weight (after the last optimizer step).
                was_training = quanter.training
                quanter.train()
                with oar.no_grad():
                    quanter(weight.detach())
                quanter.training = was_training
            if remain_weight:
                setattr(self, quanter_name, LinearQuanterDequanter.from_quanter(quanter))
                continue
            with oar.no_grad():
                q = LinearQuanter.from_quanter(quanter)(weight.detach())
            del self._parameters[weight_name]
            self.register_buffer(weight_name, q)
            setattr(self, quanter_name, LinearQuanterDequanter(None, LinearDequanter.from_quanter(quanter)))
        for quanter_name in self.activation_quanters():
            quanter = getattr(self, quanter_name)
            if quanter is not None:
                setattr(self, quanter_name, LinearQuanterDequanter.from_quanter(quanter))
        self.converted = True


def _quanters(layer: nn.Layer, q_config) -> tuple:
    weight = None if q_config is None or q_config.weight is None else q_config.weight._instance(layer)
    activation = None if q_config is None or q_config.activation is None else q_config.activation._instance(layer)
    return weight, activation


class QuantedLinear(ConvertibleQuantedLayer):
    """``nn.Linear`` with quanters (Paddle's ``QuantedLinear``); shares the Linear's parameters."""

    def __init__(self, layer: nn.Linear, q_config):
        super().__init__()
        self.weight = layer.weight
        self.bias = layer.bias
        self.name = getattr(layer, "name", None)
        self.weight_quanter, self.activation_quanter = _quanters(layer, q_config)

    def forward(self, input):
        x = self.activation_quanter(input) if self.activation_quanter is not None else input
        w = self.weight_quanter(self.weight) if self.weight_quanter is not None else self.weight
        return F.linear(x, w, self.bias)

    def weights_to_quanters(self):
        return [("weight", "weight_quanter")]

    def activation_quanters(self):
        return ["activation_quanter"]


class QuantedConv2D(ConvertibleQuantedLayer):
    """``nn.Conv2D`` with quanters (Paddle's ``QuantedConv2D``); shares the Conv2D's parameters."""

    def __init__(self, layer: nn.Conv2D, q_config):
        super().__init__()
        if layer._padding_mode != "zeros":
            raise ArgumentError(f"QuantedConv2D: padding_mode={layer._padding_mode!r} is not supported yet (only "
                                f"'zeros'); skip this layer with layer.skip_quant = True")
        self.weight = layer.weight
        self.bias = layer.bias
        self._stride, self._padding, self._dilation = layer._stride, layer._padding, layer._dilation
        self._groups, self._data_format = layer._groups, layer._data_format
        self.weight_quanter, self.activation_quanter = _quanters(layer, q_config)

    def forward(self, input):
        x = self.activation_quanter(input) if self.activation_quanter is not None else input
        w = self.weight_quanter(self.weight) if self.weight_quanter is not None else self.weight
        return F.conv2d(x, w, self.bias, stride=self._stride, padding=self._padding, dilation=self._dilation,
                        groups=self._groups, data_format=self._data_format)

    def weights_to_quanters(self):
        return [("weight", "weight_quanter")]

    def activation_quanters(self):
        return ["activation_quanter"]


def int8_weight(layer: nn.Layer) -> Tensor | None:
    """The int8 weight buffer of a converted layer (None before convert)."""
    w = layer._buffers.get("weight")
    return w if w is not None and w.dtype is oar.int8 else None
