"""``oar.quantization``: Paddle 3's quantization API, from oar-slim.

- ``QuantConfig``: which quanter or observer each layer gets (global, by type, name or layer).
- ``PTQ(config).quantize(model)`` -> calibrate -> ``ptq.convert(model)``; ``QAT`` likewise with a
  training loop in between.
- ``observers`` (``AbsmaxObserver``, ``AbsMaxChannelWiseWeightObserver``,
  ``MovingAverageAbsmaxObserver``, ``HistObserver``, ``KLObserver``, ``MSEObserver``) and
  ``quanters`` (``FakeQuanterWithAbsMaxObserver``, ``FakeQuanterChannelWiseAbsMaxObserver``).
- ``convert`` gives an INT8 model: int8 weight buffers, per-channel steps, QDQ activations; it
  saves with ``oar.jit.save`` and runs without oar-slim.
- ``weight_only_quantize``: Linear layers with int8 weights and float activations.
- ``fuse_conv_bn(model, inputs)``: each batch norm folded into the conv it follows (read from the
  captured program), before ``PTQ.quantize``; ``conv_bn_pairs`` lists the pairs.

Scales: ``scales()`` of quanters and observers are abs-max values (Paddle's convention); the ops
take the step, ``absmax_to_step(absmax, bits) = absmax / (2**(bits-1) - 1)``, the one conversion.

>>> import oar
>>> from oar.quantization import PTQ, QuantConfig
>>> from oar.quantization.observers import AbsmaxObserver
>>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
>>> observed = ptq.quantize(oar.nn.Sequential(oar.nn.Linear(4, 2)))
>>> _ = observed(oar.rand([8, 4]))
>>> ptq.convert(observed)[0].weight.dtype.name
'int8'
"""

from . import observers, quanters
from .base import BaseObserver, BaseQuanter, absmax_to_step, qmax
from .config import DEFAULT_QAT_LAYER_MAPPINGS, QuantConfig, QuantConfigError, SingleLayerConfig
from .factory import ObserverFactory, QuanterFactory, quanter
from .format import LinearDequanter, LinearQuanter, LinearQuanterDequanter
from .fuse import conv_bn_pairs, fuse_conv_bn
from .quanted import ConvertibleQuantedLayer, QuantedConv2D, QuantedLinear
from .quantize import PTQ, QAT, Quantization
from .weight_only import WeightOnlyLinear, weight_only_quantize

__all__ = [
    "QuantConfig", "SingleLayerConfig", "QuantConfigError", "DEFAULT_QAT_LAYER_MAPPINGS",
    "PTQ", "QAT", "Quantization",
    "BaseQuanter", "BaseObserver", "QuanterFactory", "ObserverFactory", "quanter",
    "ConvertibleQuantedLayer", "QuantedLinear", "QuantedConv2D",
    "LinearQuanter", "LinearDequanter", "LinearQuanterDequanter",
    "WeightOnlyLinear", "weight_only_quantize", "fuse_conv_bn", "conv_bn_pairs",
    "absmax_to_step", "qmax", "observers", "quanters",
]
