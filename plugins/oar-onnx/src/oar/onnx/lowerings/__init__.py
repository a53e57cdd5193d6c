"""oar-onnx's lowerings: how each op of oar-core and oar-nn is written as ONNX nodes.

Each module fills ``LOWERINGS`` (op name -> ``fn(node, ctx)``) with ``@lowers("op", ...)``; the
plugin registers them all through ``oar_register_op_lowerings`` under the target ``"onnx"``.
A lowering module imports no onnx (the ``LoweringContext`` writes the protos), so that loading
the plugin, which every oar program does on its first op, stays cheap.

The modules, by op family: ``elementwise`` (arithmetic, comparisons, activations of core),
``shape`` (reshape, transpose, concat, slicing, gather, ...), ``reduction``, ``nn`` (conv,
pooling, normalisation, linear, embedding, attention pieces, interpolate, activations of nn),
``fused`` (the fused ops of oar-nn's passes), ``quant`` (quantization in QDQ form),
``control_flow`` (``cond`` -> If, ``while`` -> Loop) and ``linalg`` (oar.linalg's ops, not
lowered: the reasons).
"""

from __future__ import annotations

from collections.abc import Callable

LOWERINGS: dict[str, Callable] = {}
# Ops that get no lowering on purpose, with the reason (docs/onnx.md lists them): gradients
# (an exported model infers), ops whose ONNX form would differ from oar's results, ...
NOT_LOWERED: dict[str, str] = {}
GRADIENT_OP = "a gradient op: an exported model runs inference only (export the model in eval mode, without its backward)"


def lowers(*op_names: str):
    """Decorator: the function is the ONNX lowering of ``op_names``."""

    def register(fn: Callable) -> Callable:
        for name in op_names:
            if name in LOWERINGS:
                raise ValueError(f"two ONNX lowerings for op {name!r}")
            LOWERINGS[name] = fn
        return fn

    return register


def not_lowered(reason: str, *op_names: str) -> None:
    """Record that ``op_names`` have no ONNX lowering, and why."""
    for name in op_names:
        NOT_LOWERED[name] = reason


MODULES = ("elementwise", "shape", "reduction", "nn", "fused", "quant", "control_flow", "linalg")


def all_lowerings() -> dict[str, Callable]:
    """Every lowering of the plugin's modules, by op name."""
    import importlib

    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return dict(LOWERINGS)


def not_lowered_ops() -> dict[str, str]:
    """The ops that have no lowering on purpose, with the reason."""
    all_lowerings()
    return dict(NOT_LOWERED)
