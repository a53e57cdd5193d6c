"""Reductions and scans: sum, mean, prod, max/min, arg-reductions, statistics, norms, sorting.

Each op is defined in adjacent lines: the ``Op`` (name, reference kernel, meta, traits), its
gradient rule written with oar ops, and the public Paddle-named function that validates the
arguments and turns them into plain attributes (axes become sorted tuples of non-negative ints,
``None`` meaning every axis).

Sort and top-k send their gradient back through the permutation with two private ops defined
here, ``_take_along_axis`` and ``_scatter_add_along_axis``; each is the other's gradient, so the
rules can be differentiated again.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import eager as _eager
from oar._engine.dispatch import _mode_stack
from oar._engine.op import AMP_FP32, COMPLEX, Op
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    dispatch,
    fmt_shape,
    normalize_axes,
    normalize_axis,
)
from oar._ops.shape import broadcast_to, broadcast_to_op, reshape, reshape_to
from oar.errors import ArgumentError, DTypeError, ShapeError

REDUCTION = ("reduction",)
NONDIFF_REDUCTION = ("reduction", "nondiff")
NATIVE_FLOATS = (_dt.float16, _dt.float32, _dt.float64)  # bfloat16 computes in float32


# -- shared helpers -----------------------------------------------------------------------------
def reduced_shape(shape, axis, keepdim: bool) -> tuple:
    """The shape after reducing ``axis`` (a tuple of non-negative axes, or None for all)."""
    if axis is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def reduce_axes(axis, ndim: int, op: str) -> tuple | None:
    """Paddle's ``axis`` of a reduction as an attribute: a sorted tuple of axes, None for all.

    An empty list reduces every axis (Paddle's ``reduce_all``); so does any axis of a 0-d tensor.
    """
    if axis is None:
        return None
    axes = normalize_axes(axis, ndim, op)
    if ndim == 0 or not axes:
        return None
    return axes


def _check_axes(op: str, x: TensorMeta, axis) -> None:
    ndim = len(x.shape)
    for a in axis or ():
        if not 0 <= a < builtins.max(ndim, 1):
            raise ArgumentError(f"{op}: axis {a} is out of range for a {ndim}-d tensor (expected {-ndim}..{ndim - 1})")


def _reduce_meta(op: str, result: str = "same"):
    """Meta of a reduction over ``axis``: output dtype 'same' as x, 'float' or 'bool'."""

    def meta(x: TensorMeta, axis=None, keepdim=False, **attrs) -> TensorMeta:
        _check_axes(op, x, axis)
        dtype = x.dtype
        if result == "float" and not dtype.is_floating:
            dtype = _dt.default_float()
        elif result == "bool":
            dtype = _dt.bool_
        return TensorMeta(reduced_shape(x.shape, axis, keepdim), dtype)

    return meta


def _require_nonempty(op: str, x: Tensor, axes) -> None:
    """Reductions without an identity (max, argmax, median, ...) need a non-empty slice."""
    shape = x._data.shape
    dims = range(len(shape)) if axes is None else axes
    if builtins.any(shape[a] == 0 for a in dims) or (axes is None and x._data.size == 0):
        raise ArgumentError(f"{op}: cannot reduce a zero-size tensor of shape {fmt_shape(shape)} "
                            f"over axis {None if axes is None else list(axes)}: the result has no value")


def expand_reduced(g: Tensor, in_shape, axis, keepdim: bool) -> Tensor:
    """Broadcast the gradient of a reduction back to the input's shape."""
    if not keepdim and (axis is None or tuple(axis) == tuple(range(len(axis)))):
        # Leading dims broadcast without a reshape (a loss's sum or mean: one op less per step),
        # and the shape is known to fit: the op itself, without broadcast_to's argument checks.
        shape = [int(d) for d in in_shape]
        if tuple(shape) == g._data.shape:
            return g
        data = g._data
        if not _eager.grad_enabled and len(_mode_stack) == 1 and type(data) is np.ndarray:
            # a plain backward records nothing: the kernel's broadcast view, without the dispatch
            if data.ndim == 0:  # a full sum's or mean's: the zero-stride view made directly, cheaper
                view = np.ndarray(shape, data.dtype, data, 0, (0,) * len(shape))  # than np.broadcast_to
                view.flags.writeable = False  # read-only, as broadcast_to's: one element seen many times
            else:
                view = np.broadcast_to(data, shape)
            return Tensor._wrap(view, "cpu", True, None, 0, None)
        return dispatch(broadcast_to_op, (g,), {"shape": shape})
    return broadcast_to(keep_reduced(g, in_shape, axis, keepdim), list(in_shape))


def keep_reduced(t: Tensor, in_shape, axis, keepdim: bool) -> Tensor:
    """A reduced tensor reshaped so that it broadcasts against the input (the keepdim shape)."""
    if keepdim:
        return t
    # reshape_to: a 0 in the shape is a zero-size dim here, not Paddle's "copy this dim"
    return reshape_to(t, list(reduced_shape(in_shape, axis, True)))


def _count(shape, axis) -> int:
    dims = range(len(shape)) if axis is None else axis
    return int(np.prod([shape[a] for a in dims], dtype=np.int64))


def _float_mask(condition: Tensor, like: Tensor) -> Tensor:

    return condition.astype(like.dtype)


def _sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 of ``x``, a constant of the gradient rules (comparisons carry no gradient)."""

    return _float_mask((x > 0.0), x) - _float_mask((x < 0.0), x)


def _dtype_name(dtype, op: str) -> str:
    try:
        return _dt.get_dtype(dtype).name
    except DTypeError as exc:
        raise DTypeError(f"{op}: {exc}") from None


# -- sum --------------------------------------------------------------------------------------
def _sum_kernel(x, axis=None, keepdim=False):
    # np.add.reduce is what np.sum calls for an ndarray, without np.sum's Python-level wrapper
    return np.asarray(np.add.reduce(x, axis=axis, dtype=x.dtype, keepdims=keepdim))


sum_op = Op("sum", reference=_sum_kernel, meta=_reduce_meta("sum"), traits=REDUCTION + COMPLEX, amp=AMP_FP32)


@sum_op.defgrad
def _sum_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return expand_reduced(g, shape, ctx.attrs["axis"], ctx.attrs["keepdim"])


def sum(x, axis=None, dtype=None, keepdim=False, name=None) -> Tensor:
    """Sum over ``axis`` (all axes when None). As in Paddle, bool and int32 inputs sum to int64
    unless ``dtype`` says otherwise; ``dtype`` casts the input before summing.

    >>> import oar
    >>> oar.sum(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).tolist()
    [4.0, 6.0]
    >>> oar.sum(oar.to_tensor([True, True, False])).dtype
    oar.int64
    """
    x = as_tensor(x, "x", "sum")
    axes = reduce_axes(axis, x._data.ndim, "sum")
    if dtype is None and x.dtype in (_dt.bool_, _dt.int32):
        dtype = _dt.int64
    if dtype is not None:
        x = x.astype(_dtype_name(dtype, "sum"))
    return dispatch(sum_op, (x,), {"axis": axes, "keepdim": bool(keepdim)})


# -- mean -------------------------------------------------------------------------------------
def _mean_kernel(x, axis=None, keepdim=False):
    if x.size:
        return np.asarray(np.mean(x, axis=axis, keepdims=keepdim, dtype=x.dtype))
    # The mean of an empty slice is nan, as in Paddle, without numpy's RuntimeWarning (an error
    # under -W error)
    return np.full(np.shape(np.add.reduce(x, axis=axis, keepdims=keepdim)), np.nan, dtype=x.dtype)


mean_op = Op(
    "mean", reference=_mean_kernel, meta=_reduce_meta("mean", "float"), traits=REDUCTION, amp=AMP_FP32,
    float_only=True, dtypes=NATIVE_FLOATS,
)


@mean_op.defgrad
def _mean_grad(ctx, g):
    (shape,) = ctx.in_shapes
    axis = ctx.attrs["axis"]
    return expand_reduced(g, shape, axis, ctx.attrs["keepdim"]) / builtins.max(_count(shape, axis), 1)


def mean(x, axis=None, keepdim=False, name=None, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes when None); integers average as floats, and
    ``dtype`` (Paddle 3.3's keyword) casts the input first.

    >>> import oar
    >>> oar.mean(oar.to_tensor([[1.0, 2.0], [3.0, 5.0]]), axis=-1).tolist()
    [1.5, 4.0]
    """
    x = as_tensor(x, "x", "mean")
    if dtype is not None:
        x = x.astype(_dtype_name(dtype, "mean"))
    return dispatch(mean_op, (x,), {"axis": reduce_axes(axis, x._data.ndim, "mean"), "keepdim": bool(keepdim)})


# -- prod -------------------------------------------------------------------------------------
def _prod_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.prod(x, axis=axis, keepdims=keepdim, dtype=x.dtype))


prod_op = Op("prod", reference=_prod_kernel, meta=_reduce_meta("prod"), traits=REDUCTION, amp=AMP_FP32)


@prod_op.defgrad
def _prod_grad(ctx, g):
    # d prod / d x_i is the product of the other elements. Dividing the product by x_i fails at
    # zeros, so: replace zeros by one, and keep the quotient only where it is the true value --
    # everywhere when the slice has no zero, at the zero itself when it has exactly one.

    (x,) = ctx.inputs
    (shape,) = ctx.in_shapes
    axis = ctx.attrs["axis"]
    is_zero = _float_mask((x == 0.0), x)
    safe = x + is_zero
    nonzero_product = dispatch(prod_op, (safe,), {"axis": axis, "keepdim": True})
    zeros = dispatch(sum_op, (is_zero,), {"axis": axis, "keepdim": True})
    keep = (1.0 - is_zero) * _float_mask((zeros == 0.0), x) + is_zero * _float_mask((zeros == 1.0), x)
    return expand_reduced(g, shape, axis, ctx.attrs["keepdim"]) * (nonzero_product / safe) * keep


def prod(x, axis=None, keepdim=False, dtype=None, name=None) -> Tensor:
    """Product over ``axis`` (all axes when None), in the dtype of ``x`` (``dtype`` casts first).

    >>> import oar
    >>> oar.prod(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).tolist()
    [2.0, 12.0]
    """
    x = as_tensor(x, "x", "prod")
    axes = reduce_axes(axis, x._data.ndim, "prod")
    if dtype is not None:
        x = x.astype(_dtype_name(dtype, "prod"))
    return dispatch(prod_op, (x,), {"axis": axes, "keepdim": bool(keepdim)})


# -- max, min, amax, amin -------------------------------------------------------------------------
def _extreme_grad(ctx, g, *, even: bool):
    # The gradient goes to the elements equal to the result: all of them in full (max/min), or
    # shared evenly among ties (amax/amin), as Paddle documents.

    (x,) = ctx.inputs
    (shape,) = ctx.in_shapes
    axis, keepdim = ctx.attrs["axis"], ctx.attrs["keepdim"]
    hit = _float_mask((x == keep_reduced(ctx.out, shape, axis, keepdim)), g)
    if even:
        hit = hit / dispatch(sum_op, (hit,), {"axis": axis, "keepdim": True})
    return expand_reduced(g, shape, axis, keepdim) * hit


def _max_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.max(x, axis=axis, keepdims=keepdim))


def _min_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.min(x, axis=axis, keepdims=keepdim))


max_op = Op("max", reference=_max_kernel, meta=_reduce_meta("max"), traits=REDUCTION)


@max_op.defgrad
def _max_grad(ctx, g):
    return _extreme_grad(ctx, g, even=False)


min_op = Op("min", reference=_min_kernel, meta=_reduce_meta("min"), traits=REDUCTION)


@min_op.defgrad
def _min_grad(ctx, g):
    return _extreme_grad(ctx, g, even=False)


amax_op = Op("amax", reference=_max_kernel, meta=_reduce_meta("amax"), traits=REDUCTION)


@amax_op.defgrad
def _amax_grad(ctx, g):
    return _extreme_grad(ctx, g, even=True)


amin_op = Op("amin", reference=_min_kernel, meta=_reduce_meta("amin"), traits=REDUCTION)


@amin_op.defgrad
def _amin_grad(ctx, g):
    return _extreme_grad(ctx, g, even=True)


def _extreme(op: Op, x, axis, keepdim) -> Tensor:
    x = as_tensor(x, "x", op.name)
    axes = reduce_axes(axis, x._data.ndim, op.name)
    _require_nonempty(op.name, x, axes)
    return dispatch(op, (x,), {"axis": axes, "keepdim": bool(keepdim)})


def max(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Maximum over ``axis``; the gradient goes in full to every element equal to the maximum.

    >>> import oar
    >>> oar.max(oar.to_tensor([[1.0, 5.0], [3.0, 2.0]]), axis=0).tolist()
    [3.0, 5.0]
    """
    return _extreme(max_op, x, axis, keepdim)


def min(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Minimum over ``axis``; the gradient goes in full to every element equal to the minimum."""
    return _extreme(min_op, x, axis, keepdim)


def amax(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Maximum over ``axis``; the gradient is shared evenly among elements tied for the maximum.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 3.0, 3.0], stop_gradient=False)
    >>> oar.amax(x).backward()
    >>> x.grad.tolist()
    [0.0, 0.5, 0.5]
    """
    return _extreme(amax_op, x, axis, keepdim)


def amin(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Minimum over ``axis``; the gradient is shared evenly among elements tied for the minimum."""
    return _extreme(amin_op, x, axis, keepdim)


# -- argmax, argmin -----------------------------------------------------------------------------
def _arg_kernel(fn):
    def kernel(x, axis=None, keepdim=False, dtype="int64"):
        if axis is None:
            out = np.asarray(fn(x.reshape(-1)))
            if keepdim:
                out = out.reshape((1,) * x.ndim)
        else:
            out = fn(x, axis=axis, keepdims=keepdim)
        return np.asarray(out, dtype=_dt.get_dtype(dtype).np)

    return kernel


def _arg_meta(op: str):
    def meta(x: TensorMeta, axis=None, keepdim=False, dtype="int64") -> TensorMeta:
        _check_axes(op, x, None if axis is None else (axis,))
        shape = reduced_shape(x.shape, None if axis is None else (axis,), keepdim)
        return TensorMeta(shape, _dt.get_dtype(dtype))

    return meta


argmax_op = Op("argmax", reference=_arg_kernel(np.argmax), meta=_arg_meta("argmax"), traits=NONDIFF_REDUCTION)
argmin_op = Op("argmin", reference=_arg_kernel(np.argmin), meta=_arg_meta("argmin"), traits=NONDIFF_REDUCTION)


def _arg_extreme(op: Op, x, axis, keepdim, dtype) -> Tensor:
    x = as_tensor(x, "x", op.name)
    name = _dtype_name(dtype, op.name)
    if name not in ("int32", "int64"):
        raise DTypeError(f"{op.name}: dtype must be 'int32' or 'int64', got {name!r}")
    ndim = x._data.ndim
    if axis is not None:
        axis = normalize_axis(axis, ndim, op.name)
        if ndim == 0:
            axis = None
    _require_nonempty(op.name, x, None if axis is None else (axis,))
    return dispatch(op, (x,), {"axis": axis, "keepdim": bool(keepdim), "dtype": name})


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None) -> Tensor:
    """Index of the maximum along ``axis`` (of the flattened tensor when None); the first on ties.

    >>> import oar
    >>> oar.argmax(oar.to_tensor([[5, 8, 9, 5], [0, 0, 1, 7]]), axis=1).tolist()
    [2, 3]
    """
    return _arg_extreme(argmax_op, x, axis, keepdim, dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None) -> Tensor:
    """Index of the minimum along ``axis`` (of the flattened tensor when None); the first on ties."""
    return _arg_extreme(argmin_op, x, axis, keepdim, dtype)


# -- var, std -----------------------------------------------------------------------------------
def _divisor(count: int, unbiased: bool) -> int:
    # N - 1 when unbiased; 0 when that is <= 0, so that 0 / 0 gives NaN (numpy, Paddle 3), not 0.
    return builtins.max(count - 1, 0) if unbiased else count


def _var_kernel(x, axis=None, unbiased=True, keepdim=False):
    count = _count(x.shape, axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        centered = x - np.sum(x, axis=axis, keepdims=True, dtype=x.dtype) / x.dtype.type(count)
        squares = np.sum(centered * centered, axis=axis, keepdims=keepdim, dtype=x.dtype)
        return np.asarray(squares / x.dtype.type(_divisor(count, unbiased)))


def _std_kernel(x, axis=None, unbiased=True, keepdim=False):
    return np.sqrt(_var_kernel(x, axis, unbiased, keepdim))


def _centered_over_divisor(ctx) -> Tensor:
    (x,) = ctx.inputs
    axis = ctx.attrs["axis"]
    divisor = _divisor(_count(ctx.in_shapes[0], axis), ctx.attrs["unbiased"])
    return (x - dispatch(mean_op, (x,), {"axis": axis, "keepdim": True})) * (1.0 / divisor if divisor else math.nan)


var_op = Op(
    "var", reference=_var_kernel, meta=_reduce_meta("var", "float"), traits=REDUCTION, amp=AMP_FP32,
    float_only=True, dtypes=NATIVE_FLOATS,
)


@var_op.defgrad
def _var_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return expand_reduced(g, shape, ctx.attrs["axis"], ctx.attrs["keepdim"]) * 2.0 * _centered_over_divisor(ctx)


std_op = Op(
    "std", reference=_std_kernel, meta=_reduce_meta("std", "float"), traits=REDUCTION, amp=AMP_FP32,
    float_only=True, dtypes=NATIVE_FLOATS,
)


@std_op.defgrad
def _std_grad(ctx, g):
    (shape,) = ctx.in_shapes
    return expand_reduced(g / ctx.out, shape, ctx.attrs["axis"], ctx.attrs["keepdim"]) * _centered_over_divisor(ctx)


def _moment(op: Op, x, axis, unbiased, keepdim) -> Tensor:
    x = as_tensor(x, "x", op.name)
    attrs = {"axis": reduce_axes(axis, x._data.ndim, op.name), "unbiased": bool(unbiased), "keepdim": bool(keepdim)}
    if attrs["unbiased"] and _count(x._data.shape, attrs["axis"]) <= 1:  # NaN, and Paddle 3 warns too
        warnings.warn(f"{op.name}: degrees of freedom <= 0 (unbiased, at most one element along axis {list(attrs['axis'] or range(x._data.ndim))} of x {list(x._data.shape)}): the result is NaN", stacklevel=3)  # noqa: E501
    return dispatch(op, (x,), attrs)


def var(x, axis=None, unbiased=True, keepdim=False, name=None) -> Tensor:
    """Variance over ``axis``; ``unbiased=True`` divides by N - 1, so N <= 1 gives NaN (with a
    warning), as Paddle 3 and numpy.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0, 3.0], [1.0, 4.0, 5.0]])
    >>> oar.var(x, axis=1).tolist()
    [1.0, 4.333333492279053]
    """
    return _moment(var_op, x, axis, unbiased, keepdim)


def std(x, axis=None, unbiased=True, keepdim=False, name=None) -> Tensor:
    """Standard deviation over ``axis``; ``unbiased=True`` divides the variance by N - 1.

    >>> import oar
    >>> round(float(oar.std(oar.to_tensor([1.0, 2.0, 3.0, 4.0]), unbiased=False)), 4)
    1.118
    """
    return _moment(std_op, x, axis, unbiased, keepdim)


# -- logsumexp ----------------------------------------------------------------------------------
def _logsumexp_kernel(x, axis=None, keepdim=False):
    # Shift by the maximum so that exp never overflows; infinite maxima shift by zero.
    peak = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    peak = np.where(np.isfinite(peak), peak, 0).astype(x.dtype)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True, dtype=x.dtype)) + peak
    if not keepdim:
        out = out.reshape(reduced_shape(x.shape, axis, False))
    return np.asarray(out, dtype=x.dtype)


logsumexp_op = Op(
    "logsumexp", reference=_logsumexp_kernel, meta=_reduce_meta("logsumexp", "float"), traits=REDUCTION,
    amp=AMP_FP32, float_only=True, dtypes=NATIVE_FLOATS,
)


@logsumexp_op.defgrad
def _logsumexp_grad(ctx, g):

    (x,) = ctx.inputs
    (shape,) = ctx.in_shapes
    axis, keepdim = ctx.attrs["axis"], ctx.attrs["keepdim"]
    softmax = (x - keep_reduced(ctx.out, shape, axis, keepdim)).exp()
    return expand_reduced(g, shape, axis, keepdim) * softmax


def logsumexp(x, axis=None, keepdim=False, name=None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed without overflow.

    >>> import oar
    >>> round(float(oar.logsumexp(oar.to_tensor([1000.0, 1000.0], dtype="float64"))), 4)
    1000.6931
    """
    x = as_tensor(x, "x", "logsumexp")
    axes = reduce_axes(axis, x._data.ndim, "logsumexp")
    return dispatch(logsumexp_op, (x,), {"axis": axes, "keepdim": bool(keepdim)})


# -- all, any -----------------------------------------------------------------------------------
def _all_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.all(x, axis=axis, keepdims=keepdim))


def _any_kernel(x, axis=None, keepdim=False):
    return np.asarray(np.any(x, axis=axis, keepdims=keepdim))


all_op = Op("all", reference=_all_kernel, meta=_reduce_meta("all", "bool"), traits=NONDIFF_REDUCTION)
any_op = Op("any", reference=_any_kernel, meta=_reduce_meta("any", "bool"), traits=NONDIFF_REDUCTION)


def all(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Whether every element over ``axis`` is true (nonzero); True over an empty tensor.

    >>> import oar
    >>> oar.all(oar.to_tensor([[True, False], [True, True]]), axis=1).tolist()
    [False, True]
    """
    x = as_tensor(x, "x", "all")
    return dispatch(all_op, (x,), {"axis": reduce_axes(axis, x._data.ndim, "all"), "keepdim": bool(keepdim)})


def any(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Whether some element over ``axis`` is true (nonzero); False over an empty tensor."""
    x = as_tensor(x, "x", "any")
    return dispatch(any_op, (x,), {"axis": reduce_axes(axis, x._data.ndim, "any"), "keepdim": bool(keepdim)})


# -- cumsum, cumprod ----------------------------------------------------------------------------
def _scan_meta(op: str):
    def meta(x: TensorMeta, axis=0, reverse=False) -> TensorMeta:
        _check_axes(op, x, (axis,))
        return TensorMeta(x.shape, x.dtype)

    return meta


def _scan(fn, x, axis, reverse):
    if x.ndim == 0:
        return x.copy()
    if reverse:
        return np.flip(fn(np.flip(x, axis), axis=axis, dtype=x.dtype), axis).copy()
    return fn(x, axis=axis, dtype=x.dtype)


def _cumsum_kernel(x, axis=0, reverse=False):
    return _scan(np.cumsum, x, axis, reverse)


cumsum_op = Op("cumsum", traits=COMPLEX, reference=_cumsum_kernel, meta=_scan_meta("cumsum"), amp=AMP_FP32)


@cumsum_op.defgrad
def _cumsum_grad(ctx, g):
    # Each input adds to every output after it (before it, for the reversed scan).
    return dispatch(cumsum_op, (g,), {"axis": ctx.attrs["axis"], "reverse": not ctx.attrs["reverse"]})


def _cumprod_kernel(x, axis=0, reverse=False):
    return _scan(np.cumprod, x, axis, reverse)


cumprod_op = Op("cumprod", reference=_cumprod_kernel, meta=_scan_meta("cumprod"), amp=AMP_FP32)


@cumprod_op.defgrad
def _cumprod_grad(ctx, g):
    # dx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k. Before the first zero of a slice this
    # is reverse-cumsum(g * out) / x_i; at the first zero it is reverse-cumsum(g * cumprod(x with
    # that zero set to one)); after it, every product contains the zero.

    (x,) = ctx.inputs
    axis, reverse = ctx.attrs["axis"], ctx.attrs["reverse"]

    def scan(op, t, rev):
        return dispatch(op, (t,), {"axis": axis, "reverse": rev})

    is_zero = _float_mask((x == 0.0), x)
    zeros_so_far = scan(cumsum_op, is_zero, reverse)
    before_zero = _float_mask((zeros_so_far == 0.0), x)
    first_zero = is_zero * _float_mask((zeros_so_far == 1.0), x)
    at_zero_product = scan(cumprod_op, x + first_zero, reverse)
    return (before_zero * scan(cumsum_op, g * ctx.out, not reverse) / (x + is_zero)
            + first_zero * scan(cumsum_op, g * at_zero_product, not reverse))


def _scan_input(op: str, x, axis, dtype) -> tuple[Tensor, int]:
    x = as_tensor(x, "x", op)
    if dtype is not None:
        x = x.astype(_dtype_name(dtype, op))
    if axis is None:
        return reshape(x, [-1]), 0
    axis = normalize_axis(axis, x._data.ndim, op, "axis" if op == "cumsum" else "dim")
    return x, axis


def cumsum(x, axis=None, dtype=None, name=None) -> Tensor:
    """Cumulative sum along ``axis`` (of the flattened tensor when None). As in Paddle, bool,
    int8, int16 and int32 inputs accumulate in int64 unless ``dtype`` is given.

    >>> import oar
    >>> oar.cumsum(oar.to_tensor([[1, 2], [3, 4]])).tolist()
    [1, 3, 6, 10]
    """
    x = as_tensor(x, "x", "cumsum")
    if dtype is None and x.dtype in (_dt.bool_, _dt.int8, _dt.int16, _dt.int32):
        dtype = _dt.int64
    x, axis = _scan_input("cumsum", x, axis, dtype)
    return dispatch(cumsum_op, (x,), {"axis": axis, "reverse": False})


def cumprod(x, dim=None, dtype=None, name=None) -> Tensor:
    """Cumulative product along ``dim`` (Paddle's name; the flattened tensor when None).

    >>> import oar
    >>> oar.cumprod(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), dim=1).tolist()
    [[1.0, 2.0], [3.0, 12.0]]
    """
    x, dim = _scan_input("cumprod", x, dim, dtype)
    return dispatch(cumprod_op, (x,), {"axis": dim, "reverse": False})


# -- norm ---------------------------------------------------------------------------------------
def _p_norm_kernel(x, porder, axis=None, keepdim=False):
    magnitude = np.abs(x)
    with np.errstate(divide="ignore", over="ignore"):
        if porder == "inf":
            out = np.max(magnitude, axis=axis, keepdims=keepdim, initial=0)
        elif porder == "-inf":
            out = np.min(magnitude, axis=axis, keepdims=keepdim, initial=np.inf)
        elif porder == 0:
            out = np.sum(x != 0, axis=axis, keepdims=keepdim, dtype=x.dtype)
        elif porder == 1:
            out = np.sum(magnitude, axis=axis, keepdims=keepdim, dtype=x.dtype)
        elif porder == 2:
            out = np.sqrt(np.sum(magnitude * magnitude, axis=axis, keepdims=keepdim, dtype=x.dtype))
        else:
            powered = np.sum(magnitude ** porder, axis=axis, keepdims=keepdim, dtype=x.dtype)
            out = powered ** (1.0 / porder)
    return np.asarray(out, dtype=x.dtype)


p_norm_op = Op(
    "p_norm", paddle=("linalg.norm", "norm", "Tensor.norm"), reference=_p_norm_kernel, meta=_reduce_meta("norm", "float"), traits=REDUCTION, amp=AMP_FP32,
    float_only=True, dtypes=NATIVE_FLOATS,
)


def _positive_pow(t: Tensor, exponent: float) -> Tensor:

    return (t.log() * exponent).exp()


@p_norm_op.defgrad
def _p_norm_grad(ctx, g):

    (x,) = ctx.inputs
    (shape,) = ctx.in_shapes
    axis, keepdim, p = ctx.attrs["axis"], ctx.attrs["keepdim"], ctx.attrs["porder"]
    g = expand_reduced(g, shape, axis, keepdim)
    out = keep_reduced(ctx.out, shape, axis, keepdim)
    sign = _sign(x)
    if p == 0:
        return g * 0.0
    if p == 1:
        return g * sign
    if p in ("inf", "-inf"):  # like max/min: every element at the extreme gets the full gradient
        return g * sign * _float_mask((x * sign == out), x)
    safe_out = out + _float_mask((out == 0.0), x)  # an all-zero slice has gradient 0
    if p == 2:
        return g * x / safe_out
    # g * sign(x) * |x|^(p-1) / out^(p-1); |x|^(p-1) is taken as 0 at x = 0.
    magnitude = x * sign
    nonzero = _float_mask((magnitude != 0.0), x)
    scaled = _positive_pow(magnitude + (1.0 - nonzero), p - 1.0) * nonzero
    return g * sign * scaled / _positive_pow(safe_out, p - 1.0)


def _porder(p, op: str):
    if isinstance(p, Tensor):
        p = p.item()
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"{op}: p must be a number, 'fro', 'nuc' or None, got {p!r}")
    p = float(p)
    if math.isnan(p):
        raise ArgumentError(f"{op}: p must be a number, got nan")
    if math.isinf(p):
        return "inf" if p > 0 else "-inf"
    return int(p) if p.is_integer() else p


def _vector_norm(x: Tensor, porder, axes, keepdim: bool) -> Tensor:
    return dispatch(p_norm_op, (x,), {"porder": porder, "axis": axes, "keepdim": keepdim})


def norm(x, p=None, axis=None, keepdim=False, name=None) -> Tensor:
    """Vector or matrix norm, as ``paddle.linalg.norm``.

    ``axis`` None or an int (or a one-element list): the vector p-norm over those elements (the
    whole tensor when None); ``p`` is None/'fro' (2-norm), ``inf``, ``-inf``, 0 (count of
    nonzeros) or any real number. ``axis`` a two-element list: a matrix norm; ``p`` is
    None/'fro' (Frobenius), 1, -1, ``inf`` or ``-inf`` (largest/smallest absolute column/row sum).

    >>> import oar
    >>> x = oar.to_tensor([[3.0, -4.0], [0.0, 0.0]])
    >>> float(oar.norm(x)), oar.norm(x, p=1, axis=1).tolist()
    (5.0, [7.0, 0.0])
    """
    x = as_tensor(x, "x", "norm")
    ndim = x._data.ndim
    keepdim = bool(keepdim)
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    if axis is None:
        axes = None
    else:
        listed = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        if not 1 <= len(listed) <= 2:
            raise ArgumentError(f"norm: axis must be an int or a list of one or two ints, got {axis!r}")
        axes = [normalize_axis(a, ndim, "norm") for a in listed]
        if len(axes) == 2 and axes[0] == axes[1]:
            raise ArgumentError(f"norm: the two axes of a matrix norm must differ, got {axis!r}")
    if isinstance(p, str) and p not in ("fro", "nuc"):
        raise ArgumentError(f"norm: p must be a number, 'fro', 'nuc' or None, got {p!r}")
    if axes is not None and len(axes) == 2:
        return _matrix_norm(x, p, axes, keepdim)
    if p == "nuc":
        raise ArgumentError("norm: p='nuc' is a matrix norm; give axis as a list of two axes")
    porder = 2 if p in (None, "fro") else _porder(p, "norm")
    return _vector_norm(x, porder, reduce_axes(axes, ndim, "norm"), keepdim)


def _matrix_norm(x: Tensor, p, axes, keepdim: bool) -> Tensor:
    rows, cols = axes
    if p in (None, "fro"):
        return _vector_norm(x, 2, tuple(sorted(axes)), keepdim)
    porder = _porder(p, "norm") if p != "nuc" else p
    if porder not in (1, -1, "inf", "-inf"):
        raise ArgumentError(
            f"norm: matrix norm p={p!r} over axis {list(axes)} is not supported by oar-core (it needs "
            f"singular values); supported: None, 'fro', 1, -1, inf, -inf"
        )
    # 1/-1: largest/smallest absolute column sum; inf/-inf: largest/smallest absolute row sum.
    summed, extreme_axis = (rows, cols) if porder in (1, -1) else (cols, rows)
    sums = _vector_norm(x, 1, (summed,), True)
    op = amax_op if porder in (1, "inf") else amin_op
    out = dispatch(op, (sums,), {"axis": (extreme_axis,), "keepdim": True})
    if keepdim:
        return out
    return reshape(out, list(reduced_shape(x._data.shape, tuple(sorted(axes)), False)))


# -- gather / scatter along an axis (the gradients of sort, topk and median) --------------------
def _along_axis_index(index: np.ndarray, axis: int) -> tuple:
    """Open-mesh index: ``index`` on ``axis``, the position itself on every other axis."""
    grids = [np.arange(n).reshape([-1 if d == i else 1 for d in range(index.ndim)]) for i, n in enumerate(index.shape)]
    grids[axis] = index
    return tuple(grids)


def _take_along_axis_kernel(x, index, axis):
    if x.ndim == 0:
        return x.copy()
    return np.take_along_axis(x, index, axis=axis)


def _check_index(op: str, x_shape, index: TensorMeta, axis: int) -> None:
    if not index.dtype.is_integer:
        raise DTypeError(f"{op}: index must be an integer tensor, got {index.dtype.name}")
    if len(index.shape) != len(x_shape) or builtins.any(
        a != b for i, (a, b) in enumerate(zip(index.shape, x_shape)) if i != axis
    ):
        raise ShapeError(f"{op}: index {fmt_shape(index.shape)} must match {fmt_shape(x_shape)} on every axis but {axis}")


def _take_along_axis_meta(x: TensorMeta, index: TensorMeta, axis) -> TensorMeta:
    _check_index("_take_along_axis", x.shape, index, axis)
    return TensorMeta(index.shape, x.dtype)


take_along_axis_op = Op(
    "_take_along_axis", traits=COMPLEX, paddle=(), reference=_take_along_axis_kernel, meta=_take_along_axis_meta, nondiff_inputs=(1,)
)


@take_along_axis_op.defgrad
def _take_along_axis_grad(ctx, g):
    _, index = ctx.inputs
    return scatter_add_along_axis(g, index.detach(), ctx.attrs["axis"], ctx.in_shapes[0]), None


def _scatter_add_along_axis_kernel(src, index, axis, shape):
    out = np.zeros(shape, dtype=src.dtype)
    if src.ndim == 0:
        return out + src
    np.add.at(out, _along_axis_index(index, axis), src)
    return out


def _scatter_add_along_axis_meta(src: TensorMeta, index: TensorMeta, axis, shape) -> TensorMeta:
    _check_index("_scatter_add_along_axis", shape, index, axis)
    if tuple(src.shape) != tuple(index.shape):
        raise ShapeError(f"_scatter_add_along_axis: src {fmt_shape(src.shape)} and index {fmt_shape(index.shape)} differ")
    return TensorMeta(tuple(shape), src.dtype)


scatter_add_along_axis_op = Op(
    "_scatter_add_along_axis", traits=COMPLEX, paddle=(), reference=_scatter_add_along_axis_kernel, meta=_scatter_add_along_axis_meta,
    nondiff_inputs=(1,),
)


@scatter_add_along_axis_op.defgrad
def _scatter_add_along_axis_grad(ctx, g):
    _, index = ctx.inputs
    return take_along_axis(g, index.detach(), ctx.attrs["axis"]), None


def take_along_axis(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """``x`` gathered at ``index`` along ``axis`` (private: the gradient of scatter-add)."""
    return dispatch(take_along_axis_op, (x, index), {"axis": int(axis)})


def scatter_add_along_axis(src: Tensor, index: Tensor, axis: int, shape) -> Tensor:
    """Zeros of ``shape`` with ``src`` added at ``index`` along ``axis`` (private: the gradient
    of sort, topk and median)."""
    return dispatch(scatter_add_along_axis_op, (src, index), {"axis": int(axis), "shape": [int(d) for d in shape]})


# -- sort, argsort, topk ------------------------------------------------------------------------
def _order(x, axis: int, descending: bool):
    """Stable sorting indices; descending keeps the first of equal elements first too."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(flipped, axis)


def _sort_kernel(x, axis=-1, descending=False, stable=False):
    # Always stable: ``stable=False`` allows any order of equal elements, so stable is one of them.
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = _order(x, axis, descending).astype(np.int64)
    return np.take_along_axis(x, index, axis=axis), index


def _sort_meta(x: TensorMeta, axis=-1, descending=False, stable=False):
    _check_axes("sort", x, (axis,))
    return TensorMeta(x.shape, x.dtype), TensorMeta(x.shape, _dt.int64)


sort_op = Op("sort", reference=_sort_kernel, meta=_sort_meta, num_outputs=2)


@sort_op.defgrad
def _sort_grad(ctx, g, _):
    (shape,) = ctx.in_shapes
    return scatter_add_along_axis(g, ctx.outputs[1].detach(), ctx.attrs["axis"], shape)


def _sort_call(op: str, x, axis, descending, stable) -> tuple[Tensor, Tensor]:
    x = as_tensor(x, "x", op)
    axis = normalize_axis(axis, x._data.ndim, op)
    return dispatch(sort_op, (x,), {"axis": axis, "descending": bool(descending), "stable": bool(stable)})


def sort(x, axis=-1, descending=False, stable=False, name=None) -> Tensor:
    """The values of ``x`` sorted along ``axis`` (Paddle returns the values only; see argsort).

    >>> import oar
    >>> oar.sort(oar.to_tensor([[3.0, 1.0, 2.0]]), descending=True).tolist()
    [[3.0, 2.0, 1.0]]
    """
    return _sort_call("sort", x, axis, descending, stable)[0]


def argsort(x, axis=-1, descending=False, stable=False, name=None) -> Tensor:
    """The int64 indices that sort ``x`` along ``axis``; equal elements keep their order.

    >>> import oar
    >>> oar.argsort(oar.to_tensor([3.0, 1.0, 2.0])).tolist()
    [1, 2, 0]
    """
    return _sort_call("argsort", x, axis, descending, stable)[1]


def _topk_kernel(x, k, axis=-1, largest=True, sorted=True):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = np.take(_order(x, axis, largest), np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, index, axis=axis), index


def _topk_meta(x: TensorMeta, k, axis=-1, largest=True, sorted=True):
    _check_axes("topk", x, (axis,))
    shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
    return TensorMeta(shape, x.dtype), TensorMeta(shape, _dt.int64)


topk_op = Op("topk", reference=_topk_kernel, meta=_topk_meta, num_outputs=2)


@topk_op.defgrad
def _topk_grad(ctx, g, _):
    (shape,) = ctx.in_shapes
    return scatter_add_along_axis(g, ctx.outputs[1].detach(), ctx.attrs["axis"], shape)


def k_along_axis(op: str, x, k, axis) -> tuple[Tensor, int, int]:
    """``(x, k, axis)`` checked for an op that picks the ``k``-th values along ``axis`` (default the
    last): ``k`` an int (or a one-element tensor) in ``1..size``."""
    x = as_tensor(x, "x", op)
    ndim = x._data.ndim
    axis = normalize_axis(-1 if axis is None else axis, ndim, op)
    if isinstance(k, Tensor):
        k = k.item()
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ArgumentError(f"{op}: k must be an int, got {type(k).__name__}")
    size = x._data.shape[axis] if ndim else 1
    if not 1 <= k <= size:
        raise ArgumentError(f"{op}: k={k} is out of range for axis {axis} of size {size} (expected 1..{size})")
    return x, int(k), axis


def topk(x, k, axis=None, largest=True, sorted=True, name=None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values along ``axis`` (-1 when None) and their int64
    indices; among equal values the one with the lower index comes first.

    >>> import oar
    >>> values, indices = oar.topk(oar.to_tensor([1.0, 4.0, 5.0, 7.0]), k=2)
    >>> values.tolist(), indices.tolist()
    ([7.0, 5.0], [3, 2])
    """
    x, k, axis = k_along_axis("topk", x, k, axis)
    attrs = {"k": int(k), "axis": axis, "largest": bool(largest), "sorted": bool(sorted)}
    return dispatch(topk_op, (x,), attrs)


# -- median ---------------------------------------------------------------------------------------
def _median_kernel(x, axis=0, keepdim=False, mode="avg"):
    values = x.astype(np.float64) if x.dtype.kind not in "biu" else x
    order = np.argsort(values, axis=axis, kind="stable")  # NaN sorts last
    size = x.shape[axis]
    half = size // 2
    low_pos, high_pos = (half - 1, half) if size % 2 == 0 else (half, half)
    low = np.take(order, [low_pos], axis=axis)
    high = np.take(order, [high_pos], axis=axis)
    low_value = np.take_along_axis(x, low, axis=axis)
    if mode == "avg":
        out_dtype = np.float64 if x.dtype == np.float64 else np.float32
        out = (np.take_along_axis(values, low, axis=axis) + np.take_along_axis(values, high, axis=axis)) / 2
        out = out.astype(out_dtype)
    else:
        out, high = low_value, low
    # A slice with NaN has median NaN, and its index is the first NaN (Paddle).
    nan = np.isnan(values)
    if nan.any():
        has_nan = nan.any(axis=axis, keepdims=True)
        first_nan = np.argmax(nan, axis=axis, keepdims=True)
        out = np.where(has_nan, np.array(np.nan, out.dtype), out)
        low = np.where(has_nan, first_nan, low)
        high = np.where(has_nan, first_nan, high)
    if not keepdim:
        out, low, high = (np.squeeze(a, axis) for a in (out, low, high))
    return out, low.astype(np.int64), high.astype(np.int64)


def _median_meta(x: TensorMeta, axis=0, keepdim=False, mode="avg"):
    _check_axes("median", x, (axis,))
    shape = reduced_shape(x.shape, (axis,), keepdim)
    dtype = x.dtype if mode == "min" else (_dt.float64 if x.dtype is _dt.float64 else _dt.float32)
    return TensorMeta(shape, dtype), TensorMeta(shape, _dt.int64), TensorMeta(shape, _dt.int64)


median_op = Op("median", reference=_median_kernel, meta=_median_meta, traits=REDUCTION, num_outputs=3)


@median_op.defgrad
def _median_grad(ctx, g, _low, _high):
    # The two middle elements each get half (the same element both halves when N is odd).

    (x,) = ctx.inputs
    if not x.dtype.is_floating:
        return None
    (shape,) = ctx.in_shapes
    axis, keepdim = ctx.attrs["axis"], ctx.attrs["keepdim"]
    _, low, high = (t.detach() for t in ctx.outputs)
    g = keep_reduced(g.astype(x.dtype), shape, (axis,), keepdim)
    low = keep_reduced(low, shape, (axis,), keepdim)
    if ctx.attrs["mode"] == "min":
        return scatter_add_along_axis(g, low, axis, shape)
    high = keep_reduced(high, shape, (axis,), keepdim)
    return scatter_add_along_axis(g * 0.5, low, axis, shape) + scatter_add_along_axis(g * 0.5, high, axis, shape)


def median(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median along ``axis`` (of the flattened tensor when None).

    ``mode='avg'`` averages the two middle values of an even count and returns float32 (float64
    for float64 input); ``mode='min'`` takes the lower one in the dtype of ``x`` and, when
    ``axis`` is given, also returns its int64 index. A slice containing NaN has median NaN.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 4.0, 2.0, 3.0]])
    >>> oar.median(x, axis=1).tolist()
    [2.5]
    >>> values, index = oar.median(x, axis=1, mode="min")
    >>> values.tolist(), index.tolist()
    ([2.0], [2])
    """
    x = as_tensor(x, "x", "median")
    if mode not in ("avg", "min"):
        raise ArgumentError(f"median: mode must be 'avg' or 'min', got {mode!r}")
    if x._data.size == 0:
        raise ArgumentError(f"median: x must not be empty, got shape {x.shape}")
    ndim = x._data.ndim
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"median: axis must be an int or None, got {axis!r}")
    need_index = axis is not None and mode == "min"
    if axis is None or ndim == 0:
        if axis is not None:
            normalize_axis(axis, ndim, "median")
        flat = reshape(x, [-1])
        out, index, _ = dispatch(median_op, (flat,), {"axis": 0, "keepdim": False, "mode": mode})
        shape = [1] * ndim if keepdim else []
        out, index = reshape(out, shape), reshape(index, shape)
    else:
        attrs = {"axis": normalize_axis(axis, ndim, "median"), "keepdim": bool(keepdim), "mode": mode}
        out, index, _ = dispatch(median_op, (x,), attrs)
    return (out, index) if need_index else out


OPS = [
    sum_op, mean_op, prod_op, max_op, min_op, amax_op, amin_op, argmax_op, argmin_op, var_op, std_op,
    logsumexp_op, all_op, any_op, cumsum_op, cumprod_op, p_norm_op, take_along_axis_op,
    scatter_add_along_axis_op, sort_op, topk_op, median_op,
]
__all__ = [
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp",
    "all", "any", "cumsum", "cumprod", "sort", "argsort", "topk", "median",
]  # norm: the full one (singular-value norms too) is linalg_ext's, which calls this one

METHODS = {
    "sum": sum, "mean": mean, "prod": prod, "max": max, "min": min, "amax": amax, "amin": amin,
    "argmax": argmax, "argmin": argmin, "var": var, "std": std, "logsumexp": logsumexp, "all": all,
    "any": any, "cumsum": cumsum, "cumprod": cumprod, "sort": sort, "argsort": argsort,
    "topk": topk, "median": median,
}


def unbroadcast(grad: Tensor, shape) -> Tensor:
    """Sum ``grad`` down to ``shape``: the gradient of broadcasting an input of that shape."""
    shape = tuple(shape)
    gshape = tuple(grad._data.shape)
    if gshape == shape:
        return grad
    # Two sums and no reshape: Paddle's reshape reads a 0 in a shape as "keep this dim".
    lead = len(gshape) - len(shape)
    if lead:
        grad = sum(grad, axis=list(range(lead)))
    ones = [i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1]
    if ones:
        grad = sum(grad, axis=ones, keepdim=True)
    return grad
