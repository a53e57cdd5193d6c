"""``oar.slim``: model compression. Quantization, whose API is ``oar.quantization`` (Paddle 3's),
re-exported here; quantization sensitivity (``quant_sensitivity``, ``mixed_precision_config``) and
a per-layer diff report (``compare_quantized``); filter pruning is ``oar.slim.prune``; distillation
is planned (docs/slim.md).

>>> import oar.slim
>>> oar.slim.PTQ is oar.quantization.PTQ
True

The names load on first use: the plugin's registration imports this package on every program's
first op, and an eager program must not pay for quantization or the static graph.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    **dict.fromkeys(["PTQ", "QAT", "QuantConfig", "observers", "quanters", "weight_only_quantize"], "oar.quantization"),
    **dict.fromkeys(["LayerDiff", "compare_quantized"], "oar.slim.diff"),
    **dict.fromkeys(["LayerSensitivity", "MixedPrecisionResult", "QuantSensitivity", "load_sensitivities",
                     "mixed_precision_config", "quant_sensitivity", "quantizable_layers"], "oar.slim.sensitivity"),
    **dict.fromkeys(["FPGMFilterPruner", "L1NormFilterPruner", "L2NormFilterPruner"], "oar.slim.prune"),
}

__all__ = sorted([*_PUBLIC, "prune"])


def __getattr__(name: str):
    if name == "prune":
        return importlib.import_module("oar.slim.prune")
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'oar.slim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
