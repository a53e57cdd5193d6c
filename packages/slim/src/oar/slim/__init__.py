"""``oar.slim``: model compression. For now quantization, whose API is ``oar.quantization``
(Paddle 3's), re-exported here; pruning, distillation and sensitivity analysis are planned
(docs/slim.md).

>>> import oar.slim
>>> oar.slim.PTQ is oar.quantization.PTQ
True
"""

from oar.quantization import PTQ, QAT, QuantConfig, observers, quanters, weight_only_quantize

__all__ = ["PTQ", "QAT", "QuantConfig", "observers", "quanters", "weight_only_quantize"]
