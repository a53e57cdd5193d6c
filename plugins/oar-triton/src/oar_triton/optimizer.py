"""The gpu backend's optimizer updates: SGD, Momentum, Adam and AdamW as fused Triton kernels.

Optimizer updates are no ops: oar-nn keeps a registry of update rules keyed by (optimizer type,
backend) (``oar.optimizer.register_update_rule``). ``register_update_rules()`` puts a thin rule for
each optimizer under ``"gpu"``; the rule imports its Triton module (``oar_triton.kernels.optimizer``,
which says how the kernels work) on its first call, so registering costs no Triton import, like the
kernels of ``oar_triton.plugin``.

Each rule is marked ``updates_low_precision``: oar-nn then hands it a float16/bfloat16 parameter
itself, with its float32 master weights when the optimizer keeps them, and the kernel writes the
parameter's buffer in place instead of oar-nn casting the gradient and rebinding the parameter to a
new buffer.

>>> import oar                                                              # doctest: +SKIP
>>> w = oar.to_tensor([1.0, 2.0], place="gpu", stop_gradient=False)        # doctest: +SKIP
>>> opt = oar.optimizer.Adam(learning_rate=0.1, parameters=[w])            # doctest: +SKIP
>>> (w * w).sum().backward(); opt.step()   # one Triton launch updates w    # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

KERNEL_MODULE = "oar_triton.kernels.optimizer"
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")


def _on_first_call(optimizer_type: str) -> Callable:
    """An update rule that imports the kernel module on its first call and is then its rule."""
    found = []

    def rule(param, grad, lr, state, **hyperparameters) -> None:
        if not found:
            found.append(importlib.import_module(KERNEL_MODULE).RULES[optimizer_type])
        found[0](param, grad, lr, state, **hyperparameters)

    rule.__name__ = f"{optimizer_type}_update@gpu"
    rule.updates_low_precision = True  # takes float16/bfloat16 parameters and their master weights itself
    return rule


def register_update_rules() -> None:
    """Register the gpu update of every optimizer in ``OPTIMIZERS`` with oar-nn (no Triton import)."""
    # Imported here, when the plugin registers its kernels: oar.optimizer imports oar.nn, which the
    # plugin module itself must not pull in while oar loads its plugins.
    from oar.optimizer import register_update_rule

    for optimizer_type in OPTIMIZERS:
        register_update_rule(optimizer_type, "gpu", _on_first_call(optimizer_type))


__all__ = ["OPTIMIZERS", "register_update_rules"]
