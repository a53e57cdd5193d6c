"""Reductions: sum, mean, max, min, prod, ... over ``axis`` with ``keepdim``."""

from __future__ import annotations

import builtins

import numpy as np

from oar._core import dtypes as _dt
from oar._core.op import AMP_FP32, Op
from oar._ops._common import Tensor, TensorMeta, as_tensor, dispatch, normalize_axes
from oar.errors import ArgumentError

REDUCTION = ("reduction",)


def reduced_shape(shape, axis, keepdim: bool) -> tuple:
    """The shape after reducing ``axis`` (a tuple of non-negative axes, or None for all)."""
    if axis is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def _reduce_meta(result: str = "same"):
    def meta(x: TensorMeta, axis=None, keepdim=False, **attrs) -> TensorMeta:
        if axis is not None:
            for a in axis:
                if not 0 <= a < builtins.max(len(x.shape), 1):
                    raise ArgumentError(f"reduction: axis {a} is out of range for a {len(x.shape)}-d tensor")
        dtype = x.dtype
        if result == "sum" and (dtype.is_bool or dtype.is_integer):
            dtype = _dt.int64
        elif result == "float" and not dtype.is_floating:
            dtype = _dt.default_float()
        return TensorMeta(reduced_shape(x.shape, axis, keepdim), dtype)

    return meta


def expand_reduced(g: Tensor, in_shape, axis, keepdim: bool) -> Tensor:
    """Broadcast the gradient of a reduction back to the input's shape."""
    from oar._ops.shape import broadcast_to, reshape

    if not keepdim:
        g = reshape(g, list(reduced_shape(in_shape, axis, True)))
    return broadcast_to(g, list(in_shape))


# -- sum --------------------------------------------------------------------------------------
def _sum_kernel(x, axis=None, keepdim=False):
    dtype = np.int64 if x.dtype.kind in "biu" else x.dtype
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdim, dtype=dtype))


sum_op = Op("sum", reference=_sum_kernel, meta=_reduce_meta("sum"), traits=REDUCTION, amp=AMP_FP32)


@sum_op.defgrad
def _sum_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return expand_reduced(g, shape, ctx.attrs["axis"], ctx.attrs["keepdim"])


def sum(x, axis=None, dtype=None, keepdim=False, name=None) -> Tensor:
    """Sum over ``axis`` (all axes when None); integer and bool inputs sum to int64 as in Paddle.

    >>> import oar
    >>> oar.sum(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).tolist()
    [4.0, 6.0]
    """
    x = as_tensor(x, "x", "sum")
    if dtype is not None:
        from oar._ops.elementwise import cast

        x = cast(x, dtype)
    axes = normalize_axes(axis, x._data.ndim, "sum")
    return dispatch(sum_op, (x,), {"axis": axes, "keepdim": bool(keepdim)})


# -- mean -------------------------------------------------------------------------------------
def _mean_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.mean(x, axis=axis, keepdims=keepdim, dtype=x.dtype))


mean_op = Op(
    "mean", reference=_mean_kernel, meta=_reduce_meta("float"), traits=REDUCTION, amp=AMP_FP32,
    float_only=True, dtypes=(_dt.float16, _dt.float32, _dt.float64),
)


@mean_op.defgrad
def _mean_grad(ctx, g):
    (shape,) = ctx.in_shapes
    axis = ctx.attrs["axis"]
    count = int(np.prod([shape[a] for a in (axis if axis is not None else range(len(shape)))]))
    return expand_reduced(g, shape, axis, ctx.attrs["keepdim"]) / builtins.max(count, 1)


def mean(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes when None)."""
    x = as_tensor(x, "x", "mean")
    return dispatch(mean_op, (x,), {"axis": normalize_axes(axis, x._data.ndim, "mean"), "keepdim": bool(keepdim)})


OPS = [sum_op, mean_op]
__all__ = ["sum", "mean"]

METHODS = {"sum": sum, "mean": mean}
