"""Common functions of oar.nn.functional: linear, dropout, pad, embedding, interpolate, ..."""

from __future__ import annotations

import oar
from oar._core.tensor import Tensor

OPS: list = []


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, name=None) -> Tensor:
    """``x @ weight + bias`` with Paddle's weight layout ``[in_features, out_features]``.

    >>> import oar
    >>> oar.nn.functional.linear(oar.ones([2, 3]), oar.ones([3, 4])).shape
    [2, 4]
    """
    out = oar.matmul(x, weight)
    return out if bias is None else out + bias


__all__ = ["linear"]
