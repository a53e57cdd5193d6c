"""Dropout of whole channels for 1-D inputs and SELU networks, with Paddle's names: ``dropout1d``
(zero channels of [N, C, L] or [C, L]) and ``feature_alpha_dropout`` (alpha dropout with one
draw per channel). Both compose ``oar.nn.functional.dropout``'s building blocks; no new op.

>>> import oar
>>> x = oar.ones([2, 3, 4])
>>> oar.nn.functional.dropout1d(x, training=False) is x
True
"""

from __future__ import annotations

import warnings

import oar
from oar.errors import ArgumentError, ShapeError
from oar.nn.functional.activation import SELU_ALPHA, SELU_SCALE, check_float
from oar.nn.functional.common import dropout
from oar.ops import Tensor, as_tensor


def _probability(fn: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{fn}: p must be a number in [0, 1], got {p!r}")
    return float(p)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``input`` ([N, C, L], or [C, L] unbatched) with probability ``p``,
    scaling the rest by ``1 / (1 - p)``; ``inplace`` is accepted and ignored, as in Paddle.

    >>> import oar
    >>> y = oar.nn.functional.dropout1d(oar.ones([2, 3, 4]), p=0.5)
    >>> sorted(set(y.flatten().tolist())) in ([0.0, 2.0], [0.0], [2.0])
    True
    """
    fn = "dropout1d"
    p = _probability(fn, p)
    input = as_tensor(input, "input", fn)
    if input.ndim not in (2, 3):
        raise ShapeError(f"{fn}: input must be 2-D [C, L] or 3-D [N, C, L], got shape {input.shape}")
    if inplace:
        warnings.warn("dropout1d: inplace=True is ignored (as in Paddle); the result is a new tensor", stacklevel=2)
    if input.ndim == 2:
        return oar.squeeze(dropout(oar.unsqueeze(input, 0), p=p, axis=[0, 1], training=training), 0)
    return dropout(input, p=p, axis=[0, 1], training=training)


def feature_alpha_dropout(x, p: float = 0.5, training: bool = True, name=None) -> Tensor:
    """Alpha dropout (see ``alpha_dropout``) of whole channels: one draw per (sample, channel)
    of an input with at least 2 dimensions, shared along the rest. Dropped channels take SELU's
    negative saturation value, and an affine correction keeps the mean and variance.

    >>> import oar
    >>> x = oar.ones([2, 3, 4])
    >>> oar.nn.functional.feature_alpha_dropout(x, training=False) is x
    True
    """
    fn = "feature_alpha_dropout"
    p = _probability(fn, p)
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if x.ndim < 2:
        raise ShapeError(f"{fn}: x must have at least 2 dimensions (batch and channel), got shape {x.shape}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    alpha_p = -SELU_ALPHA * SELU_SCALE
    a = ((1.0 - p) * (1.0 + p * alpha_p * alpha_p)) ** -0.5
    b = -a * alpha_p * p
    shape = x.shape[:2] + [1] * (x.ndim - 2)
    keep = oar.cast(oar.greater_equal(oar.uniform(shape, dtype="float32", min=0.0, max=1.0), p), x.dtype)
    return (x * keep + (1.0 - keep) * alpha_p) * a + b


OPS: list = []
__all__ = ["dropout1d", "feature_alpha_dropout"]
