"""In-place ops: ``x.add_(y)``, ``x.exp_()``, ``x += y``, ... and the one mechanism under them.

Every in-place variant computes its result with the ordinary (out-of-place) op from ``x`` itself,
then hands it to ``apply_inplace(x, result)``, which

1. refuses a leaf that requires grad while grad is enabled (as Paddle: use ``x.detach()`` or
   ``oar.no_grad()``);
2. checks that the result fits ``x``: same shape, and a dtype ``x`` can hold without changing kind
   (an int tensor cannot take a float result);
3. writes the result into ``x``'s buffer (or gives ``x`` a fresh buffer when its array is a
   read-only or shared view), so tensors sharing the buffer (``x.detach()``, views of ``x``) see
   the new values; a view of another tensor thus gets a buffer of its own, leaving that tensor as
   it was;
4. bumps ``x``'s version counter, which tensors sharing its buffer share (``x.detach()``, the
   outputs of view ops), so a node that saved any of them and reads it in backward raises a
   ``GradientError`` instead of using the new values;
5. with grad enabled, makes ``x`` the output of the result's tape node, so later ops and backward
   see the new value. Nodes recorded before keep their edge to ``x``'s old node (the autograd
   engine fixes a node's edges when it records it). Under ``oar.no_grad()`` the change is
   invisible to autograd: ``x`` keeps its node and ``stop_gradient`` (optimizer updates).

No in-place op has its own kernel or gradient rule: each is its out-of-place op plus this copy.

>>> import oar
>>> x = oar.to_tensor([1.0, 2.0])
>>> y = x.add_(1.0)
>>> y is x, x.tolist(), x.inplace_version
(True, [2.0, 3.0], 1)
"""

from __future__ import annotations

import numpy as np

from oar._core import dispatch as _dispatch
from oar._ops import elementwise as E
from oar._ops._common import Tensor, fmt_shape
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

OPS: list = []  # no ops of its own: see the module docstring

_KIND_RANK = {"bool": 0, "int": 1, "float": 2}


def apply_inplace(x: Tensor, result: Tensor, name: str | None = None) -> Tensor:
    """Make ``x`` hold ``result`` (computed from ``x`` by ordinary ops) in place; returns ``x``.

    This is the whole in-place contract (see the module docstring); ``x[index] = v``, ``out=``
    arguments and every ``*_`` op go through it.
    """
    op = name or "in-place op"
    check_target(x, op)
    if tuple(result._data.shape) != tuple(x._data.shape):
        raise ShapeError(
            f"{op}: the result has shape {fmt_shape(result._data.shape)} but x has shape "
            f"{fmt_shape(x._data.shape)}; an in-place op cannot change its tensor's shape (broadcasting "
            f"may only grow the other operand); use the out-of-place op"
        )
    target = x.dtype
    if result.dtype is not target:
        if _KIND_RANK[result.dtype.kind] > _KIND_RANK[target.kind]:
            raise DTypeError(
                f"{op}: the result has dtype {result.dtype.name} but x is {target.name}; an in-place op "
                f"cannot turn a {target.kind} tensor into a {result.dtype.kind} one; use the out-of-place "
                f"op or cast x first"
            )
        result = E.cast(result, target)
    _write(x, result)
    x._bump_version()
    if len(_dispatch._mode_stack) > 1:  # a tracing mode follows x to its new value
        for mode in _dispatch._mode_stack[1:]:
            mode.rebind(x, result)
    if _dispatch.grad_enabled:
        x._node, x._out_index, x.stop_gradient = result._node, result._out_index, result.stop_gradient
    return x


def check_target(x, op: str) -> None:
    """Raise unless ``x`` may be modified in place now (see ``apply_inplace``)."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op}: expected a Tensor to modify in place, got {type(x).__name__}")
    if _dispatch.grad_enabled and x._node is None and not x.stop_gradient:
        raise GradientError(
            f"{op}: a leaf tensor that requires grad (shape {x.shape}, stop_gradient=False) cannot be "
            f"modified in place, as its gradient would be lost; modify x.detach() or do it under "
            f"oar.no_grad() (as an optimizer does), or work on x.clone()"
        )


def _write(x: Tensor, result: Tensor) -> None:
    data, new = x._data, result._data
    if new is data:
        return
    if (type(data) is np.ndarray and type(new) is np.ndarray and data.flags.writeable
            and data.base is None):
        np.copyto(data, new)
        return
    # A read-only or borrowed array (a broadcast or reshape view shares another tensor's
    # memory, which must not change): x gets a buffer of its own instead.
    if result._node is not None or getattr(new, "base", None) is not None:
        new = _copy(new, x._backend)  # the node keeps its own output buffer
    x._set_buffer(new)


def _copy(data, backend: str):
    if type(data) is np.ndarray:
        return data.copy()
    b = _dispatch.BACKENDS.get(backend)
    return b.from_numpy(b.to_numpy(data).copy())


def _inplace(fn, name: str, doc: str | None = None):
    """The in-place variant ``name`` of the out-of-place function ``fn``."""

    def inplace(x, *args, **kwargs):
        check_target(x, name)  # before computing: a refused call records nothing
        return apply_inplace(x, fn(x, *args, **kwargs), name)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = doc or f"In-place ``{fn.__name__}``: ``x`` becomes ``{fn.__name__}(x, ...)``; returns ``x``."
    return inplace


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
    from oar._ops.creation import zeros_like

    check_target(x, "zero_")
    return apply_inplace(x, zeros_like(x), "zero_")


def fill_(x: Tensor, value) -> Tensor:
    """Fill ``x`` with the number ``value`` in place; returns ``x`` (``Tensor.fill_``)."""
    from oar._ops.creation import full_like

    check_target(x, "fill_")
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise ArgumentError(f"fill_: value must be a number, got {type(value).__name__}")
    return apply_inplace(x, full_like(x, value), "fill_")


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
