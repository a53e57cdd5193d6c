"""A layer built on the plugin's op: ``LogCoshLoss``, registered by name for configs to find.

This module needs oar-nn (``oar.nn.Layer``); the plugin registers it only where oar-nn is
installed, so the op and kernel still work with oar-core alone.
"""

from __future__ import annotations

import oar
from oar_plugin_example.ops import logcosh


class LogCoshLoss(oar.nn.Layer):
    """Mean (or sum, or none) of ``log(cosh(input - label))``: a robust regression loss.

    >>> import oar
    >>> from oar_plugin_example.layers import LogCoshLoss
    >>> round(float(LogCoshLoss()(oar.to_tensor([0.0, 2.0]), oar.to_tensor([0.0, 0.0]))), 4)
    0.6625
    """

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"LogCoshLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def forward(self, input, label):
        loss = logcosh(input - label)
        if self.reduction == "mean":
            return loss.mean()
        if self.reduction == "sum":
            return loss.sum()
        return loss

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
