"""Statistics, searching and counting: nan-aware reductions, quantiles, histograms, sorting-based
functions (unique, kthvalue, mode), cumulative extrema and integration.

Most functions are composed of ops, so their gradients come from the ops': the nan-aware
reductions mask with ``where``; ``nanmedian``, ``quantile``, ``nanquantile`` and ``kthvalue``
sort and gather (``take_along_axis``) at positions computed with ops from the count of valid
elements, so they trace into programs too; ``trapezoid``, ``renorm``, ``pdist`` and ``logspace``
are arithmetic. The ops defined here are those that need a kernel: ``cummax``/``cummin`` and
``mode`` (values and indices; the gradient goes to the index), ``logcumsumexp`` (a stable scan,
whose gradient is two scans of itself in log space), and the non-differentiable counting ops
``histogram``, ``histogram_bin_edges``, ``histogramdd``, ``bincount``, ``searchsorted``,
``unique``, ``unique_consecutive`` and ``isin``.

Where oar differs from Paddle:

- Among equal values, ``kthvalue`` and ``nanmedian(mode='min')`` return the index of the
  occurrence a stable sort puts at that rank; Paddle's (a selection algorithm's) may be another
  occurrence of the same value.
- ``quantile``/``nanquantile`` of an integer tensor with ``interpolation`` 'linear' or 'midpoint'
  compute in float32 (Paddle 3.3.1 fails: its ``lerp`` has no integer kernel); the positions
  ``q * (n - 1)`` are computed in float64 for every dtype (Paddle 3.3.1 computes them in the
  dtype of ``x``, so for an integer tensor ``q`` truncates to 0).
- ``renorm`` with ``p=inf`` scales by the largest ``|x|`` of a slice (the inf-norm); Paddle
  3.3.1's kernel evaluates ``sum(|x|^p)^(1/p)`` literally, which is 1 or 0 for ``p=inf``.
- ``cumsum_``/``cumprod_`` with ``axis=None`` on a tensor of more than one dimension raise a
  ``ShapeError``: Paddle flattens ``x`` in place, an in-place op of oar never changes a shape.
- The gradient of ``nanmedian``/``nanquantile`` over an all-NaN slice is zero (Paddle 3.3.1's
  ``nanmedian`` spreads it over the NaNs, or sends it to none in ``mode='min'``).
- ``isin`` compares an int tensor with a float one by value (Paddle 3.3.1 raises a TypeError).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.inplace import apply_inplace, check_target
from oar._engine.op import Op
from oar._ops._common import Tensor, TensorMeta, as_tensor, dispatch, fmt_shape, normalize_axis
from oar._ops.assign import assign
from oar._ops.creation import full_like, linspace, ones_like, zeros_like
from oar._ops.elementwise import abs as _abs
from oar._ops.elementwise import cast, ceil, exp, floor, isnan, log, logical_not, maximum, where
from oar._ops.elementwise import pow as _pow
from oar._ops.indexing import gather, nonzero, take_along_axis
from oar._ops.random import multinomial
from oar._ops.reduction import any as _any
from oar._ops.reduction import (
    cumprod,
    cumsum,
    k_along_axis,
    keep_reduced,
    p_norm_op,
    reduced_shape,
    scatter_add_along_axis,
    sort,
    sort_op,
)
from oar._ops.reduction import sum as _sum
from oar._ops.shape import _slice_axis, flatten, moveaxis, reshape, squeeze, stack
from oar.errors import ArgumentError, DTypeError, ShapeError

NONDIFF = ("nondiff",)
INDEX_DTYPES = ("int32", "int64")


# -- shared helpers -----------------------------------------------------------------------------
def _into(out, result):
    """``result`` written into ``out`` (Paddle's ``out=`` argument), which is returned."""
    if out is None:
        return result
    return assign(result, output=out)


def _index_dtype(dtype, op: str) -> str:
    try:
        name = _dt.get_dtype(dtype).name
    except DTypeError as exc:
        raise DTypeError(f"{op}: {exc}") from None
    if name not in INDEX_DTYPES:
        raise DTypeError(f"{op}: dtype must be 'int32' or 'int64', got {name!r}")
    return name


def _as_float(x: Tensor) -> Tensor:
    """Integer and bool tensors as the default float dtype, floats as they are."""
    return x if x.dtype.is_floating else x.astype(_dt.default_float().name)


def _require_nonempty(op: str, x: Tensor) -> None:
    if x._data.size == 0:
        raise ArgumentError(f"{op}: x must not be empty, got shape {fmt_shape(x._data.shape)}")


def _one_axis(x: Tensor, axis, op: str) -> tuple[Tensor, list, list]:
    """``x`` with the reduced axes (an int, a list, or None for all) moved last and flattened
    into one, with the keepdim shape of a result and the shape without them."""
    ndim = x._data.ndim
    if axis is None:
        return reshape(x, [-1]), [1] * ndim, []
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    listed = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if not listed:
        raise ArgumentError(f"{op}: axis must not be an empty list")
    axes = sorted({normalize_axis(a, ndim, op) for a in listed})
    if ndim == 0:
        return reshape(x, [1]), [], []
    keep_shape = [1 if i in axes else d for i, d in enumerate(x._data.shape)]
    kept = [d for i, d in enumerate(x._data.shape) if i not in axes]
    moved = moveaxis(x, axes, list(range(ndim - len(axes), ndim))) if axes != list(range(ndim - len(axes), ndim)) else x
    if len(axes) > 1:
        moved = flatten(moved, ndim - len(axes), ndim - 1)
    return moved, keep_shape, kept


def _valid_count(flat: Tensor) -> Tensor:
    """The number of non-NaN elements along the last axis (kept), int64."""
    if flat.dtype.is_floating:
        return _sum(logical_not(isnan(flat)), axis=-1, keepdim=True)
    return full_like(_slice_axis(flat, flat.ndim - 1, 0, 1), flat.shape[-1], dtype="int64")


def _norm_order(p, op: str):
    """Paddle's real ``p`` as the ``p_norm`` op's ``porder`` attribute."""
    if isinstance(p, Tensor):
        p = p.item()
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)) or math.isnan(p):
        raise ArgumentError(f"{op}: p must be a real number (inf included), got {p!r}")
    if math.isinf(p):
        return "inf" if p > 0 else "-inf"
    return int(p) if float(p).is_integer() else float(p)


# -- nan-aware reductions -----------------------------------------------------------------------
def _without_nan(x: Tensor) -> Tensor:
    return where(isnan(x), zeros_like(x), x) if x.dtype.is_floating else x


def nansum(x, axis=None, dtype=None, keepdim=False, name=None) -> Tensor:
    """Sum over ``axis`` treating NaN as zero (an all-NaN slice sums to 0); as ``sum`` otherwise.

    >>> import oar
    >>> oar.nansum(oar.to_tensor([[1.0, float("nan")], [2.0, 3.0]]), axis=1).tolist()
    [1.0, 5.0]
    """
    x = as_tensor(x, "x", "nansum")
    return _sum(_without_nan(x), axis=axis, dtype=dtype, keepdim=keepdim)


def nanmean(x, axis=None, keepdim=False, name=None) -> Tensor:
    """Mean over ``axis`` of the non-NaN elements; NaN where a slice has none. Integers average
    as floats.

    >>> import oar
    >>> oar.nanmean(oar.to_tensor([[1.0, float("nan")], [2.0, 3.0]]), axis=1).tolist()
    [1.0, 2.5]
    """
    x = _as_float(as_tensor(x, "x", "nanmean"))
    total = _sum(_without_nan(x), axis=axis, keepdim=keepdim)
    count = _sum(logical_not(isnan(x)).astype(x.dtype.name), axis=axis, keepdim=keepdim)
    # an empty (or all-NaN) slice is NaN, without the 0 / 0 numpy warns about
    return where(count > 0.0, total / maximum(count, ones_like(count)), full_like(total, math.nan))


def count_nonzero(x, axis=None, keepdim=False, name=None) -> Tensor:
    """The number of nonzero elements over ``axis`` (all axes when None), int64.

    >>> import oar
    >>> oar.count_nonzero(oar.to_tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]), axis=1).tolist()
    [2, 1]
    """
    x = as_tensor(x, "x", "count_nonzero")
    return _sum(cast(x, "bool"), axis=axis, dtype="int64", keepdim=keepdim)


# -- medians and quantiles ------------------------------------------------------------------------
def _finish(t: Tensor, keep_shape, kept, keepdim: bool) -> Tensor:
    """A ``[..., 1]`` result of ``_one_axis``'s layout in the caller's shape."""
    return reshape(t, list(keep_shape) if keepdim else list(kept))


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median over ``axis`` (an int, a list of ints, or None for all) ignoring NaN; NaN for a
    slice of NaN only. The result has the dtype of ``x``.

    ``mode='avg'`` averages the two middle values of an even count; ``mode='min'`` takes the
    lower one and, when ``axis`` is an int, also returns its int64 index (-1 for an all-NaN slice).

    >>> import oar
    >>> x = oar.to_tensor([[3.0, float("nan"), 1.0, 2.0], [4.0, 1.0, 5.0, 2.0]])
    >>> oar.nanmedian(x, axis=1).tolist()
    [2.0, 3.0]
    >>> values, index = oar.nanmedian(x, axis=1, mode="min")
    >>> values.tolist(), index.tolist()
    ([2.0, 2.0], [3, 3])
    """
    x = as_tensor(x, "x", "nanmedian")
    if mode not in ("avg", "min"):
        raise ArgumentError(f"nanmedian: mode must be 'avg' or 'min', got {mode!r}")
    _require_nonempty("nanmedian", x)
    need_index = mode == "min" and isinstance(axis, (int, np.integer))
    flat, keep_shape, kept = _one_axis(x, axis, "nanmedian")
    values, order = dispatch(sort_op, (flat,), {"axis": flat.ndim - 1, "descending": False, "stable": True})
    valid = _valid_count(flat)
    low = maximum((valid - 1) // 2, zeros_like(valid))  # NaN sorts last: the first `valid` are the numbers
    out = take_along_axis(values, low, axis=-1)
    if mode == "avg":
        high = take_along_axis(values, valid // 2, axis=-1) if flat.shape[-1] > 1 else out
        out = (out + high) * 0.5 if x.dtype.is_floating else ((out + high).astype("float64") * 0.5).astype(x.dtype.name)
    if x.dtype.is_floating:  # NaN for an all-NaN slice, with no gradient (it points at a NaN)
        out = where(valid > 0, out, full_like(out, math.nan))
    out = _finish(out, keep_shape, kept, keepdim)
    if not need_index:
        return out
    index = where(valid > 0, take_along_axis(order, low, axis=-1), full_like(valid, -1))
    return out, _finish(index, keep_shape, kept, keepdim)


INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile_list(q, op: str) -> tuple[list, bool]:
    """``q`` as a list of floats in [0, 1], and whether the result stacks them (a list of more
    than one, as Paddle: a one-element list gives the result of its value)."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ArgumentError(f"{op}: q must be a number, a list or a 0-D/1-D tensor, got shape {q.shape}")
        q = q.tolist()
    listed = list(q) if isinstance(q, (list, tuple)) else [q]
    if not listed:
        raise ArgumentError(f"{op}: q must not be an empty list")
    for value in listed:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ArgumentError(f"{op}: q must hold numbers, got {value!r}")
        if not 0.0 <= float(value) <= 1.0:
            raise ArgumentError(f"{op}: q must be in [0, 1], got {value!r}")
    return [float(v) for v in listed], len(listed) > 1


def _quantile(x, q, axis, keepdim, interpolation, ignore_nan: bool, op: str) -> Tensor:
    x = as_tensor(x, "x", op)
    if interpolation not in INTERPOLATIONS:
        raise ArgumentError(f"{op}: interpolation must be one of {list(INTERPOLATIONS)}, got {interpolation!r}")
    qs, stacked = _quantile_list(q, op)
    _require_nonempty(op, x)
    if not x.dtype.is_floating and interpolation in ("linear", "midpoint"):
        x = _as_float(x)
    flat, keep_shape, kept = _one_axis(x, axis, op)
    size = flat.shape[-1]
    ordered = sort(flat, axis=-1)
    valid = _valid_count(flat).astype("float64")
    if not ignore_nan and flat.dtype.is_floating:
        # a slice with a NaN has quantile NaN: point at its last element, where NaN sorts
        has_nan = _any(isnan(flat), axis=-1, keepdim=True)
    outputs = []
    for value in qs:
        position = maximum(value * (valid - 1.0), zeros_like(valid))
        if not ignore_nan and flat.dtype.is_floating:
            position = where(has_nan, full_like(position, size - 1), position)
        if interpolation == "nearest":  # Paddle's round: half away from zero
            result = take_along_axis(ordered, floor(position + 0.5).astype("int64"), axis=-1)
        else:
            below_index = floor(position)
            below = take_along_axis(ordered, below_index.astype("int64"), axis=-1)
            above = take_along_axis(ordered, ceil(position).astype("int64"), axis=-1)
            if interpolation == "lower":
                result = below
            elif interpolation == "higher":
                result = above
            elif interpolation == "midpoint":
                result = (below + above) * 0.5
            else:
                result = below + (position - below_index).astype(flat.dtype.name) * (above - below)
        if ignore_nan and flat.dtype.is_floating:  # NaN for an all-NaN slice, with no gradient
            result = where(valid > 0.0, result, full_like(result, math.nan))
        outputs.append(_finish(result, keep_shape, kept, keepdim))
    return stack(outputs, axis=0) if stacked else outputs[0]


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None, *, out=None) -> Tensor:
    """The ``q``-th quantile over ``axis`` (an int, a list of ints, or None for all elements).

    ``q`` is a number in [0, 1] or a list/1-D tensor of them (the result then gains a first dim,
    one entry per q). Between two data points ``interpolation`` takes 'linear', 'lower',
    'higher', 'nearest' or 'midpoint'. A slice containing NaN has quantile NaN.

    >>> import oar
    >>> y = oar.arange(0, 8, dtype="float32").reshape([4, 2])
    >>> oar.quantile(y, q=0.5, axis=1).tolist()
    [0.5, 2.5, 4.5, 6.5]
    >>> [[round(v, 4) for v in row] for row in oar.quantile(y, q=[0.3, 0.5], axis=0).tolist()]
    [[1.8, 2.8], [3.0, 4.0]]
    """
    return _into(out, _quantile(x, q, axis, keepdim, interpolation, False, "quantile"))


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear") -> Tensor:
    """``quantile`` ignoring NaN: the quantile of the non-NaN elements of each slice (NaN for a
    slice of NaN only).

    >>> import oar
    >>> oar.nanquantile(oar.to_tensor([[1.0, float("nan"), 3.0]]), 0.5, axis=1).tolist()
    [2.0]
    """
    return _quantile(x, q, axis, keepdim, interpolation, True, "nanquantile")


# -- kthvalue, msort --------------------------------------------------------------------------------
def kthvalue(x, k, axis=None, keepdim=False, name=None) -> tuple[Tensor, Tensor]:
    """The ``k``-th smallest value along ``axis`` (the last when None) and its int64 index.

    >>> import oar
    >>> values, index = oar.kthvalue(oar.to_tensor([[3.0, 1.0, 2.0, 5.0], [4.0, 0.5, 0.0, 1.0]]), 2)
    >>> values.tolist(), index.tolist()
    ([2.0, 0.5], [2, 1])
    """
    x, k, axis = k_along_axis("kthvalue", x, k, axis)
    ndim = x._data.ndim
    values, order = dispatch(sort_op, (x,), {"axis": axis, "descending": False, "stable": True})
    if ndim == 0:
        return values, order
    values, order = _slice_axis(values, axis, k - 1, k), _slice_axis(order, axis, k - 1, k)
    if not keepdim:
        values, order = squeeze(values, axis), squeeze(order, axis)
    return values, order


def msort(input, *, out=None) -> Tensor:  # noqa: A002 - Paddle's name
    """``input`` sorted along its first axis.

    >>> import oar
    >>> oar.msort(oar.to_tensor([[3.0, 1.0], [2.0, 4.0]])).tolist()
    [[2.0, 1.0], [3.0, 4.0]]
    """
    return _into(out, sort(as_tensor(input, "input", "msort"), axis=0))


# -- cummax, cummin -----------------------------------------------------------------------------------
def _cum_extreme_kernel(largest: bool):
    def kernel(x, axis=0, dtype="int64"):
        index_dtype = _dt.get_dtype(dtype).np
        if x.ndim == 0:
            return x.copy(), np.zeros((), index_dtype)
        moved = np.moveaxis(x, axis, 0)
        values = np.empty_like(moved)
        index = np.zeros(moved.shape, np.int64)
        if moved.shape[0]:
            best, where_best = moved[0].copy(), np.zeros(moved.shape[1:], np.int64)
            values[0] = best
            with np.errstate(invalid="ignore"):
                for i in range(1, moved.shape[0]):
                    current = moved[i]
                    # Ties move to the later element; a NaN wins once and stays (Paddle).
                    take = (current >= best) if largest else (current <= best)
                    take = (take | (current != current)) & (best == best)
                    best = np.where(take, current, best)
                    where_best = np.where(take, i, where_best)
                    values[i], index[i] = best, where_best
        return np.moveaxis(values, 0, axis).copy(), np.moveaxis(index, 0, axis).astype(index_dtype)

    return kernel


def _cum_extreme_meta(op: str):
    def meta(x: TensorMeta, axis=0, dtype="int64"):
        if len(x.shape) and not 0 <= axis < len(x.shape):
            raise ArgumentError(f"{op}: axis {axis} is out of range for a {len(x.shape)}-d tensor")
        return TensorMeta(x.shape, x.dtype), TensorMeta(x.shape, _dt.get_dtype(dtype))

    return meta


def _cum_extreme_grad(ctx, g, _index):
    (shape,) = ctx.in_shapes
    index = ctx.outputs[1].detach()
    return scatter_add_along_axis(g, index, ctx.attrs["axis"], shape) if len(shape) else g


cummax_op = Op("cummax", paddle=("cummax", "Tensor.cummax"), reference=_cum_extreme_kernel(True),
               meta=_cum_extreme_meta("cummax"), num_outputs=2)
cummax_op.defgrad(_cum_extreme_grad)
cummin_op = Op("cummin", paddle=("cummin", "Tensor.cummin"), reference=_cum_extreme_kernel(False),
               meta=_cum_extreme_meta("cummin"), num_outputs=2)
cummin_op.defgrad(_cum_extreme_grad)


def _cum_extreme(op: Op, x, axis, dtype) -> tuple[Tensor, Tensor]:
    x = as_tensor(x, "x", op.name)
    dtype = _index_dtype(dtype, op.name)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    else:
        axis = normalize_axis(axis, x._data.ndim, op.name)
    return dispatch(op, (x,), {"axis": axis, "dtype": dtype})


def cummax(x, axis=None, dtype="int64", name=None) -> tuple[Tensor, Tensor]:
    """The running maximum along ``axis`` (of the flattened tensor when None) and the index where
    it was reached (``dtype`` int64 or int32); ties take the later index, and NaN propagates.

    >>> import oar
    >>> values, index = oar.cummax(oar.to_tensor([1.0, 3.0, 2.0, 3.0, 5.0]))
    >>> values.tolist(), index.tolist()
    ([1.0, 3.0, 3.0, 3.0, 5.0], [0, 1, 1, 3, 4])
    """
    return _cum_extreme(cummax_op, x, axis, dtype)


def cummin(x, axis=None, dtype="int64", name=None) -> tuple[Tensor, Tensor]:
    """The running minimum along ``axis`` and the index where it was reached (as ``cummax``).

    >>> import oar
    >>> values, index = oar.cummin(oar.to_tensor([3.0, 1.0, 2.0, 0.0]))
    >>> values.tolist(), index.tolist()
    ([3.0, 1.0, 1.0, 0.0], [0, 1, 1, 3])
    """
    return _cum_extreme(cummin_op, x, axis, dtype)


# -- logcumsumexp ---------------------------------------------------------------------------------
def _logcumsumexp_kernel(x, axis=0, reverse=False):
    if x.ndim == 0:
        return x.copy()
    with np.errstate(invalid="ignore"):  # -inf + inf inside logaddexp: NaN, as the math says
        if reverse:
            return np.flip(np.logaddexp.accumulate(np.flip(x, axis), axis=axis), axis).copy()
        return np.logaddexp.accumulate(x, axis=axis)


def _logcumsumexp_meta(x: TensorMeta, axis=0, reverse=False) -> TensorMeta:
    if len(x.shape) and not 0 <= axis < len(x.shape):
        raise ArgumentError(f"logcumsumexp: axis {axis} is out of range for a {len(x.shape)}-d tensor")
    return x


logcumsumexp_op = Op("logcumsumexp", paddle=("logcumsumexp", "Tensor.logcumsumexp"), reference=_logcumsumexp_kernel,
                     meta=_logcumsumexp_meta, float_only=True, dtypes=(_dt.float32, _dt.float64))


def _log_of_positive_part(t: Tensor) -> Tensor:
    """``log(t)`` where ``t > 0``, -inf elsewhere (without taking the log of zero)."""
    positive = t > 0.0
    return where(positive, log(where(positive, t, ones_like(t))), full_like(t, -math.inf))


@logcumsumexp_op.defgrad
def _logcumsumexp_grad(ctx, g):
    # dx_j = sum_{i >= j} g_i exp(x_j - out_i): a reversed scan. Kept in log space (it would
    # overflow as exp(-out)) by scanning the positive and the negative parts of g apart.
    (x,) = ctx.inputs
    attrs = {"axis": ctx.attrs["axis"], "reverse": not ctx.attrs["reverse"]}
    out = ctx.out

    def part(sign_g: Tensor) -> Tensor:
        scanned = dispatch(logcumsumexp_op, (_log_of_positive_part(sign_g) - out,), attrs)
        return exp(x + scanned)

    return part(g) - part(-g)


def logcumsumexp(x, axis=None, dtype=None, name=None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``axis`` (of the flattened tensor when None), computed
    without overflow or underflow; integers compute in float32 (``dtype`` casts first).

    >>> import oar
    >>> [round(v, 4) for v in oar.logcumsumexp(oar.to_tensor([-1000.0, 0.0, 1.0])).tolist()]
    [-1000.0, 0.0, 1.3133]
    """
    x = as_tensor(x, "x", "logcumsumexp")
    if dtype is not None:
        x = x.astype(_dt.get_dtype(dtype).name)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    else:
        axis = normalize_axis(axis, x._data.ndim, "logcumsumexp")
    return dispatch(logcumsumexp_op, (x,), {"axis": axis, "reverse": False})


# -- in-place scans ---------------------------------------------------------------------------------
def cumsum_(x, axis=None, dtype=None, name=None) -> Tensor:
    """In-place ``cumsum``: ``x`` becomes its cumulative sum along ``axis``; returns ``x``.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x.cumsum_(axis=1).tolist()
    [[1.0, 3.0], [3.0, 7.0]]
    """
    check_target(x, "cumsum_")
    return apply_inplace(x, cumsum(x, axis=axis, dtype=dtype), "cumsum_")


def cumprod_(x, dim=None, dtype=None, name=None) -> Tensor:
    """In-place ``cumprod``: ``x`` becomes its cumulative product along ``dim``; returns ``x``."""
    check_target(x, "cumprod_")
    return apply_inplace(x, cumprod(x, dim=dim, dtype=dtype), "cumprod_")


# -- mode -------------------------------------------------------------------------------------------
def _mode_kernel(x, axis=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    values = np.empty(len(rows), x.dtype)
    index = np.empty(len(rows), np.int64)
    for r, row in enumerate(rows):
        found, counts = np.unique(row, return_counts=True, equal_nan=False)
        # the most frequent value (the smallest of a tie) and its last occurrence, as Paddle
        values[r] = found[np.argmax(counts)]
        index[r] = np.flatnonzero(row == values[r])[-1] if values[r] == values[r] else np.flatnonzero(row != row)[-1]
    shape = reduced_shape(x.shape, (axis,), keepdim)
    return values.reshape(shape), index.reshape(shape)


def _mode_meta(x: TensorMeta, axis=-1, keepdim=False):
    if len(x.shape) and not 0 <= axis < len(x.shape):
        raise ArgumentError(f"mode: axis {axis} is out of range for a {len(x.shape)}-d tensor")
    shape = reduced_shape(x.shape, (axis,), keepdim) if len(x.shape) else ()
    return TensorMeta(shape, x.dtype), TensorMeta(shape, _dt.int64)


mode_op = Op("mode", paddle=("mode", "Tensor.mode"), reference=_mode_kernel, meta=_mode_meta, num_outputs=2)


@mode_op.defgrad
def _mode_grad(ctx, g, _index):
    (shape,) = ctx.in_shapes
    if not len(shape):
        return g
    axis, keepdim = ctx.attrs["axis"], ctx.attrs["keepdim"]
    index = keep_reduced(ctx.outputs[1].detach(), shape, (axis,), keepdim)
    return scatter_add_along_axis(keep_reduced(g, shape, (axis,), keepdim), index, axis, shape)


def mode(x, axis=-1, keepdim=False, name=None) -> tuple[Tensor, Tensor]:
    """The most frequent value along ``axis`` (the smallest among equally frequent ones) and the
    int64 index of its last occurrence.

    >>> import oar
    >>> values, index = oar.mode(oar.to_tensor([[1.0, 2.0, 2.0, 3.0], [5.0, 4.0, 5.0, 0.0]]))
    >>> values.tolist(), index.tolist()
    ([2.0, 5.0], [2, 2])
    """
    x = as_tensor(x, "x", "mode")
    _require_nonempty("mode", x)
    axis = normalize_axis(axis, x._data.ndim, "mode")
    return dispatch(mode_op, (x,), {"axis": axis, "keepdim": bool(keepdim)})


# -- histograms -------------------------------------------------------------------------------------
def _histogram_range(data: np.ndarray, low: float, high: float, widen: float, data_when=None) -> tuple[float, float]:
    """Paddle's range: the data's when ``min == max`` (``histogram``) or both are 0
    (``histogram_bin_edges``: ``data_when=0.0``), then widened where it is one point."""
    if low == high and (data_when is None or low == data_when) and data.size:
        low, high = float(data.min()), float(data.max())
    if low == high:
        low, high = low - widen, high + widen
    return low, high


def _histogram_kernel(x, *weight, bins=100, min=0.0, max=0.0, density=False):
    data = x.reshape(-1).astype(np.float64)
    low, high = _histogram_range(data, min, max, 1.0)
    weights = weight[0].reshape(-1).astype(np.float64) if weight else None
    counts, _ = np.histogram(data, bins=bins, range=(low, high), weights=weights)
    if density:
        total = counts.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            return (counts / (total * (high - low) / bins)).astype(np.float32)
    return counts.astype(weight[0].dtype if weight else np.int64)


def _histogram_meta(x: TensorMeta, *weight, bins=100, min=0.0, max=0.0, density=False) -> TensorMeta:
    if weight and tuple(weight[0].shape) != tuple(x.shape):
        raise ShapeError(f"histogram: weight {fmt_shape(weight[0].shape)} must have the shape of input "
                         f"{fmt_shape(x.shape)}")
    dtype = _dt.float32 if density else (weight[0].dtype if weight else _dt.int64)
    return TensorMeta((bins,), dtype)


histogram_op = Op("histogram", paddle=("histogram", "Tensor.histogram"), reference=_histogram_kernel,
                  meta=_histogram_meta, traits=NONDIFF)


def _histogram_args(op: str, bins, min, max) -> tuple[int, float, float]:
    if isinstance(bins, (bool, np.bool_)) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ArgumentError(f"{op}: bins must be a positive int, got {bins!r}")
    min, max = float(min), float(max)
    if max < min:
        raise ArgumentError(f"{op}: max must be larger than or equal to min, got min={min}, max={max}")
    return int(bins), min, max


def histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, name=None) -> Tensor:  # noqa: A002
    """Counts of the elements of ``input`` in ``bins`` equal-width bins over ``[min, max]`` (the
    data's range when ``min == max``); int64, or the dtype of ``weight`` when weighted, float32
    for ``density`` (normalised so that the histogram integrates to 1). Elements outside the
    range are not counted; the last bin includes ``max``.

    >>> import oar
    >>> oar.histogram(oar.to_tensor([1.0, 2.0, 1.0, 4.0]), bins=3).tolist()
    [2, 1, 1]
    """
    x = as_tensor(input, "input", "histogram")
    bins, min, max = _histogram_args("histogram", bins, min, max)
    inputs = (x,) if weight is None else (x, as_tensor(weight, "weight", "histogram"))
    return dispatch(histogram_op, inputs, {"bins": bins, "min": min, "max": max, "density": bool(density)})


def _bin_edges_kernel(x, bins=100, min=0.0, max=0.0):
    low, high = _histogram_range(x.reshape(-1).astype(np.float64), min, max, 0.5, data_when=0.0)
    return np.linspace(low, high, bins + 1).astype(np.float32)


def _bin_edges_meta(x: TensorMeta, bins=100, min=0.0, max=0.0) -> TensorMeta:
    return TensorMeta((bins + 1,), _dt.float32)


histogram_bin_edges_op = Op("histogram_bin_edges", paddle=("histogram_bin_edges", "Tensor.histogram_bin_edges"),
                            reference=_bin_edges_kernel, meta=_bin_edges_meta, traits=NONDIFF)


def histogram_bin_edges(input, bins=100, min=0.0, max=0.0, name=None) -> Tensor:  # noqa: A002
    """The ``bins + 1`` edges (float32) over ``[min, max]``, the data's range when both are 0; a
    one-point range widens by 0.5 each side (Paddle's rules here, which differ from
    ``histogram``'s for ``min == max != 0``).

    >>> import oar
    >>> oar.histogram_bin_edges(oar.to_tensor([1.0, 2.0, 5.0]), bins=4).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    """
    x = as_tensor(input, "input", "histogram_bin_edges")
    bins, min, max = _histogram_args("histogram_bin_edges", bins, min, max)
    return dispatch(histogram_bin_edges_op, (x,), {"bins": bins, "min": min, "max": max})


def _histogramdd_kernel(x, *weights, bins=(), ranges=None, density=False):
    d = x.shape[-1]
    points = x.reshape(-1, d).astype(np.float64)
    weight = weights[0].reshape(-1).astype(np.float64) if weights else None
    if ranges is None:
        low = points.min(axis=0) if len(points) else np.zeros(d)
        high = points.max(axis=0) if len(points) else np.zeros(d)
        ranges = [(lo, hi) for lo, hi in zip(low, high)]
    else:
        ranges = [(ranges[2 * i], ranges[2 * i + 1]) for i in range(d)]
    ranges = [(lo - 0.5, hi + 0.5) if lo == hi else (lo, hi) for lo, hi in ranges]
    edges = [np.linspace(lo, hi, n + 1).astype(x.dtype).astype(np.float64) for n, (lo, hi) in zip(bins, ranges)]
    hist, _ = np.histogramdd(points, bins=edges, weights=weight, density=density)
    return (hist.astype(x.dtype),) + tuple(e.astype(x.dtype) for e in edges)


def _histogramdd_meta(x: TensorMeta, *weights, bins=(), ranges=None, density=False):
    return (TensorMeta(tuple(bins), x.dtype),) + tuple(TensorMeta((n + 1,), x.dtype) for n in bins)


histogramdd_op = Op("histogramdd", reference=_histogramdd_kernel, meta=_histogramdd_meta, traits=NONDIFF,
                    num_outputs=None, dtypes=(_dt.float32, _dt.float64))


def histogramdd(x, bins=10, ranges=None, density=False, weights=None, name=None) -> tuple[Tensor, list]:
    """The D-dimensional histogram of the points ``x [..., D]``: ``bins`` an int or one int per
    dimension, ``ranges`` ``[low_0, high_0, low_1, high_1, ...]`` (the data's when None),
    ``weights`` one per point (``x``'s shape without its last dim). Returns the histogram and
    the list of each dimension's edges, in the dtype of ``x``.

    >>> import oar
    >>> hist, edges = oar.histogramdd(oar.to_tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0]]), bins=2)
    >>> hist.tolist(), edges[0].tolist()
    ([[0.0, 1.0], [2.0, 0.0]], [0.0, 1.0, 2.0])
    """
    x = as_tensor(x, "x", "histogramdd")
    if x.ndim < 2 or not x.dtype.is_floating:
        raise ArgumentError(f"histogramdd: x must be a float tensor of at least 2 dims [..., D], got "
                            f"{x.dtype.name}{fmt_shape(x.shape)}")
    d = x.shape[-1]
    listed = [bins] * d if isinstance(bins, (int, np.integer)) else list(bins)
    if len(listed) != d or not builtins.all(isinstance(b, (int, np.integer)) and b >= 1 for b in listed):
        raise ArgumentError(f"histogramdd: bins must be a positive int or {d} of them, got {bins!r} "
                            "(bin edges given as tensors are not supported)")
    if ranges is not None:
        ranges = [float(r) for r in ranges]
        if len(ranges) != 2 * d:
            raise ArgumentError(f"histogramdd: ranges must hold {2 * d} numbers (low, high per dim), got {len(ranges)}")
    inputs = (x,)
    if weights is not None:
        weights = as_tensor(weights, "weights", "histogramdd")
        if list(weights.shape) != list(x.shape[:-1]):
            raise ShapeError(f"histogramdd: weights {fmt_shape(weights.shape)} must be x's shape without its last "
                             f"dim, {fmt_shape(x.shape[:-1])}")
        inputs = (x, weights.astype(x.dtype.name))
    attrs = {"bins": [int(b) for b in listed], "ranges": ranges, "density": bool(density)}
    hist, *edges = dispatch(histogramdd_op, inputs, attrs)
    return hist, edges


# -- bincount -----------------------------------------------------------------------------------------
def _bincount_kernel(x, *weights, minlength=0):
    if x.size and x.min() < 0:
        raise ArgumentError(f"bincount: the elements of x must be non-negative, got {int(x.min())}")
    if weights:
        dtype = weights[0].dtype if weights[0].dtype.kind == "f" else np.float64
        return np.bincount(x.reshape(-1), weights[0].reshape(-1).astype(np.float64), minlength=minlength).astype(dtype)
    return np.bincount(x.reshape(-1), minlength=minlength).astype(np.int64)


def _bincount_meta(x: TensorMeta, *weights, minlength=0) -> TensorMeta:
    if not x.dtype.is_integer:
        raise DTypeError(f"bincount: x must be an int32 or int64 tensor, got {x.dtype.name}")
    if weights and tuple(weights[0].shape) != tuple(x.shape):
        raise ShapeError(f"bincount: weights {fmt_shape(weights[0].shape)} must have the shape of x {fmt_shape(x.shape)}")
    dtype = (weights[0].dtype if weights[0].dtype.is_floating else _dt.float64) if weights else _dt.int64
    return TensorMeta((None,), dtype)


bincount_op = Op("bincount", paddle=("bincount", "Tensor.bincount"), reference=_bincount_kernel, meta=_bincount_meta,
                 traits=NONDIFF)


def bincount(x, weights=None, minlength=0, name=None) -> Tensor:
    """How often each value ``0..max(x)`` occurs in the non-negative 1-D int tensor ``x`` (at
    least ``minlength`` entries): int64, or the sum of ``weights`` per value (float weights keep
    their dtype, int weights give float64).

    >>> import oar
    >>> oar.bincount(oar.to_tensor([1, 1, 3])).tolist()
    [0, 2, 0, 1]
    """
    x = as_tensor(x, "x", "bincount")
    if x.ndim != 1:
        raise ShapeError(f"bincount: x must be 1-D, got shape {fmt_shape(x.shape)}")
    if isinstance(minlength, Tensor):
        minlength = minlength.item()
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise ArgumentError(f"bincount: minlength must be a non-negative int, got {minlength!r}")
    inputs = (x,) if weights is None else (x, as_tensor(weights, "weights", "bincount"))
    return dispatch(bincount_op, inputs, {"minlength": int(minlength)})


# -- searchsorted, bucketize ------------------------------------------------------------------------
def _searchsorted_kernel(sorted_sequence, values, right=False, out_int32=False):
    side = "right" if right else "left"
    dtype = np.int32 if out_int32 else np.int64
    if sorted_sequence.ndim == 1:
        return np.asarray(np.searchsorted(sorted_sequence, values, side=side)).astype(dtype)
    rows = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
    queries = values.reshape(len(rows), -1)
    found = np.stack([np.searchsorted(r, q, side=side) for r, q in zip(rows, queries)]) if len(rows) else queries
    return found.reshape(values.shape).astype(dtype)


def _searchsorted_meta(sorted_sequence: TensorMeta, values: TensorMeta, right=False, out_int32=False) -> TensorMeta:
    seq, vals = tuple(sorted_sequence.shape), tuple(values.shape)
    if len(seq) == 0 or (len(seq) > 1 and seq[:-1] != vals[:-1]):
        raise ShapeError(f"searchsorted: sorted_sequence {fmt_shape(seq)} must be 1-D or match values "
                         f"{fmt_shape(vals)} on every dim but the last")
    return TensorMeta(vals, _dt.int32 if out_int32 else _dt.int64)


searchsorted_op = Op("searchsorted", paddle=("searchsorted", "bucketize", "Tensor.bucketize"),
                     reference=_searchsorted_kernel, meta=_searchsorted_meta, traits=NONDIFF)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None, *, side=None, out=None,
                 sorter=None) -> Tensor:
    """For each of ``values``, the index in ``sorted_sequence`` (sorted along its last dim; 1-D,
    or with the leading dims of ``values``) where inserting it keeps the order: before equal
    elements, or after them with ``right=True`` (``side='right'``). ``sorter`` gives the indices
    that sort an unsorted sequence. int64, or int32 with ``out_int32``.

    >>> import oar
    >>> oar.searchsorted(oar.to_tensor([1, 3, 5, 7]), oar.to_tensor([3, 6])).tolist()
    [1, 3]
    """
    seq = as_tensor(sorted_sequence, "sorted_sequence", "searchsorted")
    values = as_tensor(values, "values", "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    if sorter is not None:
        seq = take_along_axis(seq, as_tensor(sorter, "sorter", "searchsorted"), axis=-1)
    attrs = {"right": bool(right), "out_int32": bool(out_int32)}
    return _into(out, dispatch(searchsorted_op, (seq, values), attrs))


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None, *, out=None) -> Tensor:
    """The bucket of each element of ``x`` among the boundaries of the 1-D ``sorted_sequence``
    (``searchsorted(sorted_sequence, x)``).

    >>> import oar
    >>> oar.bucketize(oar.to_tensor([[3, 6, 9]]), oar.to_tensor([1, 3, 5, 7, 9]), right=True).tolist()
    [[2, 3, 5]]
    """
    seq = as_tensor(sorted_sequence, "sorted_sequence", "bucketize")
    if seq.ndim != 1:
        raise ShapeError(f"bucketize: sorted_sequence must be 1-D, got shape {fmt_shape(seq.shape)}")
    x = as_tensor(x, "x", "bucketize")
    return _into(out, dispatch(searchsorted_op, (seq, x), {"right": bool(right), "out_int32": bool(out_int32)}))


# -- unique, unique_consecutive -----------------------------------------------------------------------
def _unique_kernel(x, axis=None, dtype="int64"):
    index_dtype = _dt.get_dtype(dtype).np
    if axis is None:
        flat = x.reshape(-1)
        out, index, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                                equal_nan=False)
    else:
        out, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                                axis=axis)
    return out, index.astype(index_dtype), inverse.reshape(-1).astype(index_dtype), counts.astype(index_dtype)


def _unique_meta(x: TensorMeta, axis=None, dtype="int64"):
    index_dtype = _dt.get_dtype(dtype)
    if axis is None:
        size = None if None in x.shape else int(np.prod(x.shape, dtype=np.int64))
        out = TensorMeta((None,), x.dtype)
    else:
        size = x.shape[axis]
        out = TensorMeta(tuple(None if i == axis else d for i, d in enumerate(x.shape)), x.dtype)
    return out, TensorMeta((None,), index_dtype), TensorMeta((size,), index_dtype), TensorMeta((None,), index_dtype)


unique_op = Op("unique", paddle=("unique", "Tensor.unique"), reference=_unique_kernel, meta=_unique_meta,
               traits=NONDIFF, num_outputs=4)


def _unique_axis(x: Tensor, axis, op: str):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise ArgumentError(f"{op}: axis must be an int (or a list of one), got {axis!r}")
        axis = axis[0]
    if x.ndim == 0:
        raise ArgumentError(f"{op}: axis must be None for a 0-D tensor, got {axis!r}")
    return normalize_axis(axis, x.ndim, op)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64", sorted=True,
           name=None):
    """The sorted unique elements of ``x`` (flattened when ``axis`` is None, else the unique
    slices along ``axis``), and as asked: the index of each one's first occurrence, the index of
    each element's unique value (``return_inverse``) and the counts, in ``dtype``. NaNs are
    not equal to each other. ``sorted`` is accepted; the result is always sorted, as Paddle's.

    >>> import oar
    >>> out, counts = oar.unique(oar.to_tensor([2, 3, 3, 1, 5, 3]), return_counts=True)
    >>> out.tolist(), counts.tolist()
    ([1, 2, 3, 5], [1, 1, 3, 1])
    """
    x = as_tensor(x, "x", "unique")
    attrs = {"axis": _unique_axis(x, axis, "unique"), "dtype": _index_dtype(dtype, "unique")}
    out, index, inverse, counts = dispatch(unique_op, (x,), attrs)
    extra = [t for t, asked in ((index, return_index), (inverse, return_inverse), (counts, return_counts)) if asked]
    return (out, *extra) if extra else out


def _unique_consecutive_kernel(x, axis=None, dtype="int64"):
    index_dtype = _dt.get_dtype(dtype).np
    data = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0)
    n = data.shape[0]
    if n == 0:
        return data.copy() if axis is None else x.copy(), np.zeros(0, index_dtype), np.zeros(0, index_dtype)
    rows = data.reshape(n, -1)
    starts = np.ones(n, bool)
    starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    out = data[starts] if axis is None else np.moveaxis(data[starts], 0, axis)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), n))
    return np.ascontiguousarray(out), inverse.astype(index_dtype), counts.astype(index_dtype)


def _unique_consecutive_meta(x: TensorMeta, axis=None, dtype="int64"):
    out, _, inverse, counts = _unique_meta(x, axis, dtype)
    return out, inverse, counts


unique_consecutive_op = Op("unique_consecutive", paddle=("unique_consecutive", "Tensor.unique_consecutive"),
                           reference=_unique_consecutive_kernel, meta=_unique_consecutive_meta, traits=NONDIFF,
                           num_outputs=3)


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """``x`` (flattened when ``axis`` is None) with each run of equal consecutive elements (or
    slices along ``axis``) made one, and as asked the index of each element's run
    (``return_inverse``) and the length of each run, in ``dtype``.

    >>> import oar
    >>> out, counts = oar.unique_consecutive(oar.to_tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    >>> out.tolist(), counts.tolist()
    ([1, 2, 3, 1], [2, 2, 1, 2])
    """
    x = as_tensor(x, "x", "unique_consecutive")
    attrs = {"axis": _unique_axis(x, axis, "unique_consecutive"), "dtype": _index_dtype(dtype, "unique_consecutive")}
    out, inverse, counts = dispatch(unique_consecutive_op, (x,), attrs)
    extra = [t for t, asked in ((inverse, return_inverse), (counts, return_counts)) if asked]
    return (out, *extra) if extra else out


# -- isin, argwhere -----------------------------------------------------------------------------------
def _isin_kernel(x, test_x, assume_unique=False, invert=False):
    return np.isin(x, test_x, assume_unique=assume_unique, invert=invert)


def _isin_meta(x: TensorMeta, test_x: TensorMeta, assume_unique=False, invert=False) -> TensorMeta:
    return TensorMeta(x.shape, _dt.bool_)


isin_op = Op("isin", paddle=("isin", "Tensor.isin"), reference=_isin_kernel, meta=_isin_meta, traits=NONDIFF)


def isin(x, test_x, assume_unique=False, invert=False, name=None) -> Tensor:
    """Whether each element of ``x`` is among the elements of ``test_x`` (bool, the shape of
    ``x``); ``invert`` negates it.

    >>> import oar
    >>> oar.isin(oar.to_tensor([[1, 2], [3, 4]]), oar.to_tensor([2, 4, 7])).tolist()
    [[False, True], [False, True]]
    """
    x = as_tensor(x, "x", "isin")
    test_x = as_tensor(test_x, "test_x", "isin")
    return dispatch(isin_op, (x, test_x), {"assume_unique": bool(assume_unique), "invert": bool(invert)})


def argwhere(input) -> Tensor:  # noqa: A002 - Paddle's name
    """The int64 coordinates ``[N, ndim]`` of the nonzero elements of ``input`` (``nonzero``).

    >>> import oar
    >>> oar.argwhere(oar.to_tensor([[1, 0], [0, 3]])).tolist()
    [[0, 0], [1, 1]]
    """
    return nonzero(as_tensor(input, "input", "argwhere"))


# -- integration ----------------------------------------------------------------------------------------
def _trapezoid(y, x, dx, axis, op: str, scan: bool) -> Tensor:
    y = as_tensor(y, "y", op)
    if not y.dtype.is_floating:
        raise DTypeError(f"{op}: y must be a float tensor, got {y.dtype.name}")
    if x is not None and dx is not None:
        raise ArgumentError(f"{op}: give x or dx, not both")
    axis = normalize_axis(axis, y.ndim, op)
    n = y.shape[axis]
    heights = _slice_axis(y, axis, 1, n) + _slice_axis(y, axis, 0, builtins.max(n - 1, 0))
    if x is None:
        widths = 1.0 if dx is None else dx
    else:
        x = as_tensor(x, "x", op)
        if not x.dtype.is_floating:
            raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
        if x.ndim == 1:
            if x.shape[0] != n:
                raise ShapeError(f"{op}: x {fmt_shape(x.shape)} must have the length of y's axis {axis} ({n})")
            widths = x[1:] - x[:-1]
            widths = reshape(widths, [n - 1 if i == axis else 1 for i in range(y.ndim)])
        else:
            if list(x.shape) != list(y.shape):
                raise ShapeError(f"{op}: x {fmt_shape(x.shape)} must be 1-D or have the shape of y {fmt_shape(y.shape)}")
            widths = _slice_axis(x, axis, 1, n) - _slice_axis(x, axis, 0, n - 1)
    areas = heights * widths
    return (cumsum(areas, axis=axis) if scan else _sum(areas, axis=axis)) * 0.5


def trapezoid(y, x=None, dx=None, axis=-1, name=None) -> Tensor:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x`` (1-D,
    or the shape of ``y``) or spaced ``dx`` apart (1 when neither is given).

    >>> import oar
    >>> float(oar.trapezoid(oar.to_tensor([1.0, 2.0, 4.0]), x=oar.to_tensor([0.0, 1.0, 3.0])))
    7.5
    """
    return _trapezoid(y, x, dx, axis, "trapezoid", scan=False)


def cumulative_trapezoid(y, x=None, dx=None, axis=-1, name=None) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``axis`` (one element shorter than ``y``
    there), as ``trapezoid``.

    >>> import oar
    >>> oar.cumulative_trapezoid(oar.to_tensor([1.0, 2.0, 4.0])).tolist()
    [1.5, 4.5]
    """
    return _trapezoid(y, x, dx, axis, "cumulative_trapezoid", scan=True)


# -- renorm, pdist, logspace ------------------------------------------------------------------------------
def renorm(x, p, axis, max_norm) -> Tensor:
    """``x`` with each slice along ``axis`` whose ``p``-norm exceeds ``max_norm`` scaled down
    to norm ``max_norm`` (by ``max_norm / (norm + 1e-7)``); other slices unchanged.

    >>> import oar
    >>> oar.renorm(oar.to_tensor([[3.0, 4.0], [0.3, 0.4]]), p=2, axis=0, max_norm=1.0).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.30000001192092896, 0.4000000059604645]]
    """
    x = as_tensor(x, "x", "renorm")
    if not x.dtype.is_floating:
        raise DTypeError(f"renorm: x must be a float tensor (float32 or float64), got {x.dtype.name}")
    axis = normalize_axis(axis, x.ndim, "renorm")
    others = tuple(i for i in range(x.ndim) if i != axis)
    porder = _norm_order(p, "renorm")
    if others:
        norms = dispatch(p_norm_op, (x,), {"porder": porder, "axis": others, "keepdim": True})
    else:  # a 1-D tensor: each element is its own slice
        norms = _abs(x) if porder != 0 else cast(cast(x, "bool"), x.dtype.name)
    max_norm = float(max_norm)
    scale = where(norms > max_norm, max_norm / (norms + 1e-7), ones_like(norms))
    return x * scale


def renorm_(x, p, axis, max_norm) -> Tensor:
    """In-place ``renorm``: ``x`` becomes ``renorm(x, p, axis, max_norm)``; returns ``x``."""
    check_target(x, "renorm_")
    return apply_inplace(x, renorm(x, p, axis, max_norm), "renorm_")


def pdist(x, p=2.0, name=None) -> Tensor:
    """The ``p``-norm distances between every pair of rows of ``x [N, M]``, in the order of the
    upper triangle (row 0 to 1, 2, ..., then 1 to 2, ...): ``[N * (N - 1) / 2]``.

    >>> import oar
    >>> oar.pdist(oar.to_tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 0.0]])).tolist()
    [5.0, 1.0, 4.4721360206604]
    """
    x = as_tensor(x, "x", "pdist")
    if x.ndim != 2:
        raise ShapeError(f"pdist: x must be 2-D [N, M], got shape {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"pdist: x must be a float tensor, got {x.dtype.name}")
    porder = _norm_order(p, "pdist")
    rows = x.shape[0]
    if rows < 2:  # no pair: an empty result that still depends on x
        return _sum(_slice_axis(x, 0, 0, 0), axis=1)
    first, second = np.triu_indices(rows, 1)
    difference = gather(x, first.astype(np.int64)) - gather(x, second.astype(np.int64))
    return dispatch(p_norm_op, (difference,), {"porder": porder, "axis": (1,), "keepdim": False})


def logspace(start, stop, num, base=10.0, dtype=None, name=None) -> Tensor:
    """``num`` numbers ``base ** e`` for ``e`` evenly spaced from ``start`` to ``stop``, in
    ``dtype`` (the default float dtype when None; integer dtypes truncate).

    >>> import oar
    >>> oar.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    start, stop, base = (float(v.item()) if isinstance(v, Tensor) else v for v in (start, stop, base))
    if isinstance(num, Tensor):
        num = num.item()
    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)) or num < 1:
        raise ArgumentError(f"logspace: num must be a positive int, got {num!r}")
    name_of_dtype = _dt.default_float().name if dtype is None else _dt.get_dtype(dtype).name
    exponents = linspace(float(start), float(stop), int(num), dtype="float64")
    return _pow(full_like(exponents, float(base)), exponents).astype(name_of_dtype)


OPS = [cummax_op, cummin_op, logcumsumexp_op, mode_op, histogram_op, histogram_bin_edges_op, histogramdd_op,
       bincount_op, searchsorted_op, unique_op, unique_consecutive_op, isin_op]

__all__ = [
    "nanmean", "nansum", "nanmedian", "nanquantile", "quantile", "count_nonzero", "cummax", "cummin",
    "logcumsumexp", "cumsum_", "cumprod_", "kthvalue", "mode", "msort", "histogram", "histogram_bin_edges",
    "histogramdd", "bincount", "bucketize", "searchsorted", "unique", "unique_consecutive", "isin", "argwhere",
    "trapezoid", "cumulative_trapezoid", "renorm", "renorm_", "pdist", "logspace",
]

# Paddle 3.3.1's Tensor methods of this family (searchsorted, pdist and logspace are not methods).
METHODS: dict = {
    "nanmean": nanmean, "nansum": nansum, "nanmedian": nanmedian, "nanquantile": nanquantile, "quantile": quantile,
    "count_nonzero": count_nonzero, "cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp,
    "cumsum_": cumsum_, "cumprod_": cumprod_, "kthvalue": kthvalue, "mode": mode, "msort": msort,
    "histogram": histogram, "histogram_bin_edges": histogram_bin_edges, "histogramdd": histogramdd,
    "bincount": bincount, "bucketize": bucketize, "unique": unique, "unique_consecutive": unique_consecutive,
    "isin": isin, "argwhere": argwhere, "trapezoid": trapezoid, "cumulative_trapezoid": cumulative_trapezoid,
    "renorm": renorm, "renorm_": renorm_, "multinomial": multinomial,
}
