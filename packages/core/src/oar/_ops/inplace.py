"""In-place ops: ``x.add_(y)``, ``x.exp_()``, ``x += y``, ... each its out-of-place op, then
``apply_inplace`` (``oar._engine.inplace``: the one mechanism under them, with the contract).

>>> import oar
>>> x = oar.to_tensor([1.0, 2.0])
>>> y = x.add_(1.0)
>>> y is x, x.tolist(), x.inplace_version
(True, [2.0, 3.0], 1)
"""

from __future__ import annotations

import numpy as np

from oar._engine.inplace import apply_inplace, check_target
from oar._engine.inplace import inplace_variant as _inplace
from oar._ops import creation
from oar._ops import elementwise as E
from oar._ops._common import Tensor
from oar.errors import ArgumentError

OPS: list = []  # no ops of its own: see the module docstring


add_ = _inplace(E.add, "add_", """In-place ``add``: ``x`` becomes ``x + y``; returns ``x`` (``x += y`` too).

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0])
    >>> x.add_(oar.to_tensor([10.0, 20.0])).tolist()
    [11.0, 22.0]
    """)
subtract_ = _inplace(E.subtract, "subtract_")
multiply_ = _inplace(E.multiply, "multiply_")
divide_ = _inplace(E.divide, "divide_")
floor_divide_ = _inplace(E.floor_divide, "floor_divide_")
remainder_ = _inplace(E.remainder, "remainder_")
mod_ = _inplace(E.remainder, "mod_")
floor_mod_ = _inplace(E.remainder, "floor_mod_")
pow_ = _inplace(E.pow, "pow_")
scale_ = _inplace(E.scale, "scale_")
clip_ = _inplace(E.clip, "clip_")
exp_ = _inplace(E.exp, "exp_")
log_ = _inplace(E.log, "log_")
log1p_ = _inplace(E.log1p, "log1p_")
log2_ = _inplace(E.log2, "log2_")
log10_ = _inplace(E.log10, "log10_")
sqrt_ = _inplace(E.sqrt, "sqrt_")
rsqrt_ = _inplace(E.rsqrt, "rsqrt_")
square_ = _inplace(E.square, "square_")
reciprocal_ = _inplace(E.reciprocal, "reciprocal_")
tanh_ = _inplace(E.tanh, "tanh_")
sigmoid_ = _inplace(E.sigmoid, "sigmoid_")
sin_ = _inplace(E.sin, "sin_")
cos_ = _inplace(E.cos, "cos_")
tan_ = _inplace(E.tan, "tan_")
erf_ = _inplace(E.erf, "erf_")
abs_ = _inplace(E.abs, "abs_")
neg_ = _inplace(E.neg, "neg_")
floor_ = _inplace(E.floor, "floor_")
ceil_ = _inplace(E.ceil, "ceil_")
round_ = _inplace(E.round, "round_")
trunc_ = _inplace(E.trunc, "trunc_")
logical_and_ = _inplace(E.logical_and, "logical_and_")
logical_or_ = _inplace(E.logical_or, "logical_or_")
logical_xor_ = _inplace(E.logical_xor, "logical_xor_")
logical_not_ = _inplace(E.logical_not, "logical_not_")
bitwise_and_ = _inplace(E.bitwise_and, "bitwise_and_")
bitwise_or_ = _inplace(E.bitwise_or, "bitwise_or_")
bitwise_xor_ = _inplace(E.bitwise_xor, "bitwise_xor_")
bitwise_not_ = _inplace(E.bitwise_not, "bitwise_not_")


def where_(condition, x=None, y=None, name=None) -> Tensor:
    """In-place ``where`` on ``x``: ``x`` becomes ``where(condition, x, y)``; returns ``x``."""
    if not isinstance(x, Tensor) or y is None:
        raise ArgumentError("where_: x must be a Tensor (the one modified in place) and y must be given")
    return apply_inplace(x, E.where(condition, x, y), "where_")


def zero_(x: Tensor) -> Tensor:
    """Fill ``x`` with zeros in place; returns ``x`` (``Tensor.zero_``).

    With grad enabled a non-leaf becomes a constant: no gradient flows through its old value.

    >>> import oar
    >>> oar.ones([2]).zero_().tolist()
    [0.0, 0.0]
    """
    check_target(x, "zero_")
    return apply_inplace(x, creation.zeros_like(x), "zero_")


def fill_(x: Tensor, value) -> Tensor:
    """Fill ``x`` with the number ``value`` in place; returns ``x`` (``Tensor.fill_``)."""
    check_target(x, "fill_")
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise ArgumentError(f"fill_: value must be a number, got {type(value).__name__}")
    return apply_inplace(x, creation.full_like(x, value), "fill_")


_NAMED = {
    "add_": add_, "subtract_": subtract_, "multiply_": multiply_, "divide_": divide_,
    "floor_divide_": floor_divide_, "remainder_": remainder_, "mod_": mod_, "floor_mod_": floor_mod_,
    "pow_": pow_, "scale_": scale_, "clip_": clip_, "exp_": exp_, "log_": log_, "log1p_": log1p_,
    "log2_": log2_, "log10_": log10_, "sqrt_": sqrt_, "rsqrt_": rsqrt_, "square_": square_,
    "reciprocal_": reciprocal_, "tanh_": tanh_, "sin_": sin_, "cos_": cos_, "tan_": tan_,
    "erf_": erf_, "abs_": abs_, "neg_": neg_, "floor_": floor_, "ceil_": ceil_, "round_": round_,
    "trunc_": trunc_, "logical_and_": logical_and_, "logical_or_": logical_or_,
    "logical_xor_": logical_xor_, "logical_not_": logical_not_, "bitwise_and_": bitwise_and_,
    "bitwise_or_": bitwise_or_, "bitwise_xor_": bitwise_xor_, "bitwise_not_": bitwise_not_,
    "where_": where_,
}

# At the top level as in Paddle (3.x keeps add_, exp_, sqrt_, ... as Tensor methods only; oar
# exports them too, as Paddle 2.x did). ``sigmoid_``, ``zero_`` and ``fill_`` are methods only.
__all__ = list(_NAMED)

METHODS = {
    **{name: fn for name, fn in _NAMED.items() if name != "where_"},  # where_ modifies x, not self
    "sigmoid_": sigmoid_, "zero_": zero_, "fill_": fill_,
    # ``x += y`` is in place, as in Paddle: Python binds the returned x to the name again.
    "__iadd__": add_, "__isub__": subtract_, "__imul__": multiply_, "__itruediv__": divide_,
}
