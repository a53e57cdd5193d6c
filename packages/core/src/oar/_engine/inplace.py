"""The one mechanism under every in-place op (``x.add_(y)``, ``x[i] = v``, ``out=``): ``apply_inplace``.

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

No in-place op has its own kernel or gradient rule: each is its out-of-place op plus this copy
(``oar._ops.inplace`` defines them). A result of another dtype is cast with core's ``cast`` op,
looked up in the op registry.

>>> import oar
>>> x = oar.to_tensor([1.0, 2.0])
>>> y = x.add_(1.0)
>>> y is x, x.tolist(), x.inplace_version
(True, [2.0, 3.0], 1)
"""

from __future__ import annotations

import numpy as np

from oar._engine import eager as _eager
from oar._engine.dispatch import dispatch, modes_above_eager
from oar._engine.op import fmt_shape
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

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
        result = dispatch(OPS.get("cast"), (result,), {"dtype": target.name})
    _write(x, result)
    x._bump_version()
    for mode in modes_above_eager():  # a tracing mode follows x to its new value
        mode.rebind(x, result)
    if _eager.grad_enabled:
        x._node, x._out_index, x.stop_gradient = result._node, result._out_index, result.stop_gradient
    return x


def check_target(x, op: str) -> None:
    """Raise unless ``x`` may be modified in place now (see ``apply_inplace``)."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op}: expected a Tensor to modify in place, got {type(x).__name__}")
    if _eager.grad_enabled and x._node is None and not x.stop_gradient:
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
    b = BACKENDS.get(backend)
    return b.from_numpy(b.to_numpy(data).copy())


def inplace_variant(fn, name: str, doc: str | None = None):
    """The in-place variant ``name`` of the out-of-place function ``fn``: ``x`` becomes
    ``fn(x, ...)`` through ``apply_inplace``; returns ``x``."""

    def inplace(x, *args, **kwargs):
        check_target(x, name)  # before computing: a refused call records nothing
        return apply_inplace(x, fn(x, *args, **kwargs), name)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = doc or f"In-place ``{fn.__name__}``: ``x`` becomes ``{fn.__name__}(x, ...)``; returns ``x``."
    return inplace
