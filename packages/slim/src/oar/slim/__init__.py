"""``oar.slim``: model compression. Quantization, whose API is ``oar.quantization`` (Paddle 3's),
re-exported here; quantization sensitivity (``quant_sensitivity``, ``mixed_precision_config``) and
a per-layer diff report (``compare_quantized``); filter pruning is ``oar.slim.prune``; distillation
(``Distill`` and its losses) is ``oar.slim.dist`` (docs/slim.md).

>>> import oar.slim
>>> oar.slim.PTQ is oar.quantization.PTQ
True

The names load on first use: the plugin's registration imports this package on every program's
first op, and an eager program must not pay for quantization or the static graph.
"""

from __future__ import annotations

from oar.utils import lazy_exports

_EXPORTS = {
    "oar.quantization": ["PTQ", "QAT", "QuantConfig", "observers", "quanters", "weight_only_quantize"],
    "oar.slim.diff": ["LayerDiff", "compare_quantized"],
    "oar.slim.dist": ["Distill", "DistillError", "fsp_loss", "kl_loss", "l2_loss", "soft_label_loss"],
    "oar.slim.sensitivity": ["LayerSensitivity", "MixedPrecisionResult", "QuantSensitivity", "load_sensitivities",
                             "mixed_precision_config", "quant_sensitivity", "quantizable_layers"],
    "oar.slim.prune": ["FPGMFilterPruner", "GMPUnstructuredPruner", "L1NormFilterPruner", "L2NormFilterPruner",
                       "UnstructuredPruner"],
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)  # oar.slim.prune, a submodule, loads on first use too

__all__ = sorted([*(name for names in _EXPORTS.values() for name in names), "prune"])
