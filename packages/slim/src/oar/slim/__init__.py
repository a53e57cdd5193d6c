"""``oar.slim``: model compression. Quantization, whose API is ``oar.quantization`` (Paddle 3's),
re-exported here; quantization sensitivity (``quant_sensitivity``, ``mixed_precision_config``) and
a per-layer diff report (``compare_quantized``); filter pruning is ``oar.slim.prune``; distillation
is planned (docs/slim.md).

>>> import oar.slim
>>> oar.slim.PTQ is oar.quantization.PTQ
True
"""

from oar.quantization import PTQ, QAT, QuantConfig, observers, quanters, weight_only_quantize

from . import prune
from .diff import LayerDiff, compare_quantized
from .prune import FPGMFilterPruner, L1NormFilterPruner, L2NormFilterPruner
from .sensitivity import (
    LayerSensitivity,
    MixedPrecisionResult,
    QuantSensitivity,
    load_sensitivities,
    mixed_precision_config,
    quant_sensitivity,
    quantizable_layers,
)

__all__ = ["PTQ", "QAT", "QuantConfig", "observers", "quanters", "weight_only_quantize", "quant_sensitivity",
           "mixed_precision_config", "load_sensitivities", "quantizable_layers", "QuantSensitivity", "LayerSensitivity",
           "MixedPrecisionResult", "compare_quantized", "LayerDiff", "prune", "L1NormFilterPruner", "L2NormFilterPruner",
           "FPGMFilterPruner"]
