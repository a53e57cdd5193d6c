"""Shape and data-movement ops: reshape, transpose, concat, split, gather, pad, ..."""

from __future__ import annotations

import numpy as np

from oar._core.op import Op
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    broadcast_shapes,
    dispatch,
    fmt_shape,
    unbroadcast,
)
from oar.errors import ShapeError

SHAPE = ("shape",)


# -- reshape ----------------------------------------------------------------------------------
def resolve_reshape(op: str, in_shape, shape) -> tuple:
    """Paddle's reshape rule: 0 copies the input dim, one -1 is inferred; checks the size."""
    shape = [int(d) for d in shape]
    out = [in_shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if out.count(-1) > 1:
        raise ShapeError(f"{op}: at most one dimension of shape may be -1, got {shape}")
    if any(d is None for d in in_shape):
        return tuple(out)
    total = int(np.prod(in_shape))
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        if known == 0 or total % known:
            raise ShapeError(f"{op}: cannot reshape a tensor of shape {fmt_shape(in_shape)} ({total} elements) to {shape}")
        out[out.index(-1)] = total // known
    elif int(np.prod(out)) != total:
        raise ShapeError(f"{op}: cannot reshape a tensor of shape {fmt_shape(in_shape)} ({total} elements) to {shape}")
    return tuple(out)


def _reshape_kernel(x, shape):
    return np.reshape(x, shape)


def _reshape_meta(x: TensorMeta, shape) -> TensorMeta:
    return TensorMeta(resolve_reshape("reshape", x.shape, shape), x.dtype)


reshape_op = Op("reshape", reference=_reshape_kernel, meta=_reshape_meta, traits=SHAPE + ("view",))


@reshape_op.defgrad
def _reshape_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return reshape(g, list(shape))


def reshape(x, shape, name=None) -> Tensor:
    """``x`` with a new shape of the same size; 0 keeps a dim, -1 infers one (Paddle's rule).

    >>> import oar
    >>> oar.reshape(oar.arange(6), [2, -1]).shape
    [2, 3]
    """
    x = as_tensor(x, "x", "reshape")
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    shape = [int(d) for d in shape]
    resolved = resolve_reshape("reshape", x._data.shape, shape)
    if resolved == x._data.shape:
        return x
    return dispatch(reshape_op, (x,), {"shape": list(resolved)})


# -- broadcast_to -----------------------------------------------------------------------------
def _broadcast_to_kernel(x, shape):
    return np.broadcast_to(x, shape)


def _broadcast_to_meta(x: TensorMeta, shape) -> TensorMeta:
    out = broadcast_shapes("broadcast_to", x.shape, tuple(shape), names=["x", "shape"])
    if tuple(out) != tuple(shape):
        raise ShapeError(f"broadcast_to: cannot broadcast x {fmt_shape(x.shape)} to {list(shape)}")
    return TensorMeta(tuple(shape), x.dtype)


broadcast_to_op = Op("broadcast_to", reference=_broadcast_to_kernel, meta=_broadcast_to_meta, traits=SHAPE + ("view",))


@broadcast_to_op.defgrad
def _broadcast_to_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return unbroadcast(g, shape)


def broadcast_to(x, shape, name=None) -> Tensor:
    """``x`` broadcast to ``shape`` (-1 keeps that dim of ``x``)."""
    x = as_tensor(x, "x", "broadcast_to")
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    shape = list(shape)
    lead = len(shape) - x._data.ndim
    shape = [x._data.shape[i - lead] if d == -1 and i >= lead else int(d) for i, d in enumerate(shape)]
    if tuple(shape) == x._data.shape:
        return x
    _broadcast_to_meta(TensorMeta(x._data.shape, x.dtype), shape)
    return dispatch(broadcast_to_op, (x,), {"shape": shape})


OPS = [reshape_op, broadcast_to_op]
__all__ = ["reshape", "broadcast_to"]

METHODS = {"reshape": reshape, "broadcast_to": broadcast_to}
