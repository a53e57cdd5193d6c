"""Indexing ops: gather, scatter, take/put along an axis, masks, one_hot, and ``x[...]``.

Index tensors are op inputs (after the data tensor, which keys the kernel's dtype), never
attributes; they get no gradient. Gradients are written with ops of this family, which form
closed pairs: gather <-> index_add, gather_nd <-> scatter_nd_add, take_along_axis <->
put_along_axis, getitem <-> getitem_grad, so every gradient can be differentiated again. The
rules read only the index inputs (``ctx.input(i)``), never the data, so writing to the data in
place after the forward (``x.scatter_(...)``, ``x[i] = v``) does not invalidate them.

``Tensor.__getitem__`` is one ``getitem`` op whose ``items`` attribute encodes the index as
plain JSON data (``{"kind": "int", "value": 3}``, ``{"kind": "slice", ...}``,
``{"kind": "none"}``, ``{"kind": "ellipsis"}``, ``{"kind": "bool", "value": True}``,
``{"kind": "tensor", "input": j}`` for the j-th index tensor); indexing follows numpy's rules,
advanced and boolean indexing included. Basic indexing (ints, slices, None, Ellipsis) is a view
of ``x``, as in Paddle: ``x[0].add_(1)`` changes ``x`` (``oar._engine.inplace``); an index tensor,
list or mask copies.
"""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.inplace import apply_inplace, check_target
from oar._engine.inplace import inplace_variant as _inplace
from oar._engine.op import COMPLEX, Op
from oar._engine.registries import BACKENDS
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    broadcast_shapes,
    dispatch,
    fmt_shape,
    normalize_axis,
    scalar_like,
)
from oar._ops.reduction import unbroadcast
from oar._ops.shape import broadcast_to, reshape
from oar.errors import ArgumentError, DTypeError, GradientError, IndexOutOfRangeError, ShapeError

SHAPE = ("shape",)
NONDIFF = ("nondiff",)
MAX_INDEX_TENSORS = 64  # numpy's limit on the dims of one index; bounds ``nondiff_inputs``


# ------------------------------------------------------------------------------------------
# shared checks and helpers
# ------------------------------------------------------------------------------------------
def _check_index_dtype(op: str, name: str, dtype: _dt.DType, allow_bool: bool = False) -> None:
    if dtype.is_integer or (allow_bool and dtype.is_bool):
        return
    expected = "an integer or bool tensor" if allow_bool else "an integer tensor (int32 or int64)"
    raise DTypeError(f"{op}: {name} must be {expected}, got {dtype.name}")


def _check_mask_dtype(op: str, dtype: _dt.DType) -> None:
    if not dtype.is_bool:
        raise DTypeError(f"{op}: mask must be a bool tensor, got {dtype.name}")


def _out_of_range(op: str, bad, axis: int, size: int, name: str = "index") -> IndexOutOfRangeError:
    return IndexOutOfRangeError(
        f"{op}: {name} {int(bad)} is out of range for axis {axis} with size {size} "
        f"(expected {-size}..{size - 1})"
    )


def _check_range(op: str, index: np.ndarray, size: int, axis: int, name: str = "index") -> None:
    """Index values must lie in ``[-size, size)`` (negative values count from the end)."""
    if index.size == 0:
        return
    lo, hi = index.min(), index.max()
    if lo < -size:
        raise _out_of_range(op, lo, axis, size, name)
    if hi >= size:
        raise _out_of_range(op, hi, axis, size, name)


def _check_axis(op: str, axis: int, ndim: int) -> None:
    if not 0 <= axis < max(ndim, 1):
        raise ArgumentError(f"{op}: axis {axis} is out of range for a {ndim}-d tensor")


def _zeros(like: Tensor, shape) -> Tensor:
    """Zeros of ``shape`` with ``like``'s dtype and device, built from ops (so it can be traced)."""
    return broadcast_to(scalar_like(False, like), list(shape))  # a bool scalar takes like's dtype


def _value_tensor(value, like: Tensor, op: str, name: str = "value") -> Tensor:
    """``value`` (scalar, array or tensor) as a tensor of ``like``'s dtype on its device."""
    if isinstance(value, Tensor):
        return value.astype(like.dtype) if value._data.dtype != like._data.dtype else value
    try:
        array = np.asarray(value, dtype=like._data.dtype)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"{op}: {name} must be a number, an array or a Tensor, got {type(value).__name__}: {exc}") from None
    return _on_device(array, like)


def _on_device(array: np.ndarray, like: Tensor) -> Tensor:
    if like._backend != "cpu":
        array = BACKENDS.get(like._backend).from_numpy(array)
    return Tensor._wrap(array, like._backend, True, None, 0, None)


def _index_tensor(index, op: str, name: str = "index", allow_bool: bool = False, like: Tensor | None = None) -> Tensor:
    """An index argument (tensor, list or array) as a tensor with an integer (or bool) dtype; one
    given as a list or array is made on the device of ``like`` (the tensor it indexes)."""
    if not isinstance(index, Tensor):
        array = np.asarray(index)
        if array.size == 0 and array.dtype.kind == "f":  # [] is an empty integer index, as in numpy
            array = array.astype(np.int64)
        index = _on_device(array, like) if like is not None else as_tensor(array, name, op)
    _check_index_dtype(op, name, index.dtype, allow_bool)
    return index


def _saved_indices(ctx, start: int) -> tuple:
    """The index inputs of a node from ``start`` on, read one by one: the gradients that use this
    read no data values, and ``x[i] = v`` bumps the version of ``x`` after recording ``setitem``."""
    return tuple(ctx.input(i) for i in range(start, len(ctx.in_shapes)))


# ------------------------------------------------------------------------------------------
# gather <-> index_add
# ------------------------------------------------------------------------------------------
def _gather_kernel(x, index, axis):
    _check_range("gather", index, x.shape[axis], axis)
    return np.take(x, index, axis=axis)


def _gather_meta(x: TensorMeta, index: TensorMeta, axis) -> TensorMeta:
    _check_index_dtype("gather", "index", index.dtype)
    _check_axis("gather", axis, len(x.shape))
    return TensorMeta(tuple(x.shape[:axis]) + tuple(index.shape) + tuple(x.shape[axis + 1:]), x.dtype)


gather_op = Op("gather", reference=_gather_kernel, meta=_gather_meta, traits=SHAPE + COMPLEX, nondiff_inputs=(1,))


@gather_op.defgrad
def _gather_grad(ctx, g):
    x_shape, index_shape = ctx.in_shapes
    index = ctx.input(1)
    axis = ctx.attrs["axis"]
    count = int(np.prod(index_shape))
    flat_g = reshape(g, list(x_shape[:axis]) + [count] + list(x_shape[axis + 1:]))
    flat_index = reshape(index, [count])
    return dispatch(index_add_op, (_zeros(g, x_shape), flat_index, flat_g), {"axis": axis}), None


def gather(x, index, axis=None, name=None) -> Tensor:
    """The entries of ``x`` at ``index`` (0-D or 1-D) along ``axis`` (0 when None).

    A 0-D index removes the axis, as in Paddle; negative indices count from the end.

    >>> import oar
    >>> x = oar.to_tensor([[1, 2], [3, 4], [5, 6]])
    >>> oar.gather(x, oar.to_tensor([2, 0])).tolist()
    [[5, 6], [1, 2]]
    """
    x = as_tensor(x, "x", "gather")
    index = _index_tensor(index, "gather", like=x)
    if index.ndim == 2 and index.shape[1] == 1:  # Paddle's legacy [N, 1] index
        index = reshape(index, [index.shape[0]])
    if index.ndim > 1:
        raise ShapeError(f"gather: index must be 0-D or 1-D, got shape {index.shape}")
    if x.ndim == 0:
        raise ShapeError("gather: x must have at least 1 dimension, got a 0-d tensor")
    axis = normalize_axis(0 if axis is None else axis, x.ndim, "gather")
    return dispatch(gather_op, (x, index), {"axis": axis})


def index_select(x, index, axis=0, name=None) -> Tensor:
    """The entries of ``x`` at the 1-D ``index`` along ``axis``.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> oar.index_select(x, oar.to_tensor([2, 0]), axis=1).tolist()
    [[3.0, 1.0], [6.0, 4.0]]
    """
    x = as_tensor(x, "x", "index_select")
    index = _index_tensor(index, "index_select", like=x)
    if index.ndim != 1:
        raise ShapeError(f"index_select: index must be 1-D, got shape {index.shape}")
    if x.ndim == 0:
        raise ShapeError("index_select: x must have at least 1 dimension, got a 0-d tensor")
    axis = normalize_axis(axis, x.ndim, "index_select")
    return dispatch(gather_op, (x, index), {"axis": axis})


def _index_add_kernel(x, index, value, axis):
    _check_range("index_add", index, x.shape[axis], axis)
    out = x.copy()
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return out


def _index_add_meta(x: TensorMeta, index: TensorMeta, value: TensorMeta, axis) -> TensorMeta:
    _check_index_dtype("index_add", "index", index.dtype)
    _check_axis("index_add", axis, len(x.shape))
    if len(index.shape) != 1:
        raise ShapeError(f"index_add: index must be 1-D, got shape {fmt_shape(index.shape)}")
    expected = tuple(x.shape[:axis]) + tuple(index.shape) + tuple(x.shape[axis + 1:])
    if not _shapes_match(value.shape, expected):
        raise ShapeError(
            f"index_add: value has shape {fmt_shape(value.shape)}, expected {fmt_shape(expected)} "
            f"(x {fmt_shape(x.shape)} with axis {axis} of size len(index)={index.shape[0]})"
        )
    return TensorMeta(tuple(x.shape), x.dtype)


index_add_op = Op("index_add", traits=COMPLEX, reference=_index_add_kernel, meta=_index_add_meta, nondiff_inputs=(1,))


@index_add_op.defgrad
def _index_add_grad(ctx, g):
    index = ctx.input(1)
    return g, None, dispatch(gather_op, (g, index), {"axis": ctx.attrs["axis"]})


def index_add(x, index, axis, value, name=None) -> Tensor:
    """``x`` with ``value`` added at the 1-D ``index`` along ``axis`` (repeated indices accumulate).

    >>> import oar
    >>> out = oar.index_add(oar.zeros([3, 2]), oar.to_tensor([0, 0]), 0, oar.ones([2, 2]))
    >>> out.tolist()
    [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    x = as_tensor(x, "x", "index_add")
    index = _index_tensor(index, "index_add", like=x)
    value = _value_tensor(value, x, "index_add")
    if x.ndim == 0:
        raise ShapeError("index_add: x must have at least 1 dimension, got a 0-d tensor")
    axis = normalize_axis(axis, x.ndim, "index_add")
    return dispatch(index_add_op, (x, index, value), {"axis": axis})


def _shapes_match(got, expected) -> bool:
    """Equal shapes, where a ``None`` (dynamic) dim on either side matches anything."""
    return len(got) == len(expected) and all(a is None or b is None or a == b for a, b in zip(got, expected))


# ------------------------------------------------------------------------------------------
# gather_nd <-> scatter_nd_add (and scatter_nd)
# ------------------------------------------------------------------------------------------
def _nd_key(op: str, x_shape, index: np.ndarray) -> tuple:
    k = index.shape[-1]
    for i in range(k):
        _check_range(op, index[..., i], x_shape[i], i)
    return tuple(index[..., i] for i in range(k))


def _nd_meta_shape(op: str, x: TensorMeta, index: TensorMeta) -> tuple:
    _check_index_dtype(op, "index", index.dtype)
    if len(index.shape) == 0:
        raise ShapeError(f"{op}: index must have at least 1 dimension, got a 0-d tensor")
    k = index.shape[-1]
    if k is not None and k > len(x.shape):
        raise ShapeError(
            f"{op}: the last dimension of index ({k}) must not exceed the rank of x "
            f"({len(x.shape)}, shape {fmt_shape(x.shape)})"
        )
    return tuple(index.shape[:-1]) + tuple(x.shape[k:])


def _gather_nd_kernel(x, index):
    if index.shape[-1] == 0:
        return np.broadcast_to(x, index.shape[:-1] + x.shape).copy()
    return np.asarray(x[_nd_key("gather_nd", x.shape, index)])


def _gather_nd_meta(x: TensorMeta, index: TensorMeta) -> TensorMeta:
    return TensorMeta(_nd_meta_shape("gather_nd", x, index), x.dtype)


gather_nd_op = Op("gather_nd", reference=_gather_nd_kernel, meta=_gather_nd_meta, traits=SHAPE + COMPLEX, nondiff_inputs=(1,))


@gather_nd_op.defgrad
def _gather_nd_grad(ctx, g):
    x_shape, _ = ctx.in_shapes
    index = ctx.input(1)
    return dispatch(scatter_nd_add_op, (_zeros(g, x_shape), index, g), {}), None


def gather_nd(x, index, name=None) -> Tensor:
    """Slices of ``x`` at the coordinates in the last dimension of ``index``.

    The result has shape ``index.shape[:-1] + x.shape[index.shape[-1]:]``.

    >>> import oar
    >>> x = oar.to_tensor([[1, 2], [3, 4]])
    >>> oar.gather_nd(x, oar.to_tensor([[1, 0], [0, 1]])).tolist()
    [3, 2]
    """
    x = as_tensor(x, "x", "gather_nd")
    index = _index_tensor(index, "gather_nd", like=x)
    return dispatch(gather_nd_op, (x, index), {})


def _scatter_nd_add_kernel(x, index, updates):
    out = x.copy()
    if index.shape[-1] == 0:
        out += updates.reshape((-1,) + x.shape).sum(axis=0, dtype=x.dtype)
        return out
    np.add.at(out, _nd_key("scatter_nd_add", x.shape, index), updates)
    return out


def _scatter_nd_add_meta(x: TensorMeta, index: TensorMeta, updates: TensorMeta) -> TensorMeta:
    expected = _nd_meta_shape("scatter_nd_add", x, index)
    if not _shapes_match(updates.shape, expected):
        raise ShapeError(
            f"scatter_nd_add: updates has shape {fmt_shape(updates.shape)}, expected "
            f"index.shape[:-1] + x.shape[index.shape[-1]:] = {fmt_shape(expected)}"
        )
    return TensorMeta(tuple(x.shape), x.dtype)


scatter_nd_add_op = Op("scatter_nd_add", traits=COMPLEX, reference=_scatter_nd_add_kernel, meta=_scatter_nd_add_meta, nondiff_inputs=(1,))


@scatter_nd_add_op.defgrad
def _scatter_nd_add_grad(ctx, g):
    index = ctx.input(1)
    return g, None, dispatch(gather_nd_op, (g, index), {})


def scatter_nd_add(x, index, updates, name=None) -> Tensor:
    """``x`` with ``updates`` added at the coordinates in ``index`` (repeats accumulate).

    >>> import oar
    >>> out = oar.scatter_nd_add(oar.zeros([3]), oar.to_tensor([[1], [1]]), oar.ones([2]))
    >>> out.tolist()
    [0.0, 2.0, 0.0]
    """
    x = as_tensor(x, "x", "scatter_nd_add")
    index = _index_tensor(index, "scatter_nd_add", like=x)
    updates = _value_tensor(updates, x, "scatter_nd_add", "updates")
    return dispatch(scatter_nd_add_op, (x, index, updates), {})


def scatter_nd(index, updates, shape, name=None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at the coordinates in ``index``.

    >>> import oar
    >>> oar.scatter_nd(oar.to_tensor([[2], [0]]), oar.to_tensor([5.0, 7.0]), [3]).tolist()
    [7.0, 0.0, 5.0]
    """
    updates = as_tensor(updates, "updates", "scatter_nd")
    index = _index_tensor(index, "scatter_nd", like=updates)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    shape = [int(d) for d in ([shape] if isinstance(shape, (int, np.integer)) else shape)]
    if any(d < 0 for d in shape):
        raise ArgumentError(f"scatter_nd: shape must not have negative dims, got {shape}")
    return dispatch(scatter_nd_add_op, (_zeros(updates, shape), index, updates), {})


# ------------------------------------------------------------------------------------------
# scatter
# ------------------------------------------------------------------------------------------
def _scatter_kernel(x, index, updates, overwrite):
    _check_range("scatter", index, x.shape[0], 0)
    out = x.copy()
    if overwrite:
        # Repeated indices: the last update wins, deterministically (Paddle's CPU order).
        index = np.where(index < 0, index + x.shape[0], index)
        _, first_from_end = np.unique(index[::-1], return_index=True)
        last = len(index) - 1 - first_from_end
        out[index[last]] = updates[last]
    else:
        out[index] = 0
        np.add.at(out, index, updates)
    return out


def _scatter_meta(x: TensorMeta, index: TensorMeta, updates: TensorMeta, overwrite) -> TensorMeta:
    _check_index_dtype("scatter", "index", index.dtype)
    if len(x.shape) == 0:
        raise ShapeError("scatter: x must have at least 1 dimension, got a 0-d tensor")
    if len(index.shape) != 1:
        raise ShapeError(f"scatter: index must be 1-D, got shape {fmt_shape(index.shape)}")
    expected = tuple(index.shape) + tuple(x.shape[1:])
    if not _shapes_match(updates.shape, expected):
        raise ShapeError(
            f"scatter: updates has shape {fmt_shape(updates.shape)}, expected {fmt_shape(expected)} "
            f"([len(index)] + x.shape[1:])"
        )
    return TensorMeta(tuple(x.shape), x.dtype)


scatter_op = Op("scatter", traits=COMPLEX, reference=_scatter_kernel, meta=_scatter_meta, nondiff_inputs=(1,))


@scatter_op.defgrad
def _scatter_grad(ctx, g):
    # As Paddle: x's gradient is zero on the scattered rows; every update row gets the gradient
    # of the row it was scattered to (with overwrite=True and repeated indices, all of them).
    index = ctx.input(1)
    _, _, updates_shape = ctx.in_shapes
    gx = dispatch(scatter_op, (g, index, _zeros(g, updates_shape)), {"overwrite": True})
    return gx, None, dispatch(gather_op, (g, index), {"axis": 0})


def scatter(x, index, updates, overwrite=True, name=None) -> Tensor:
    """``x`` with the rows at ``index`` replaced by ``updates``.

    With ``overwrite=False`` the indexed rows are first zeroed and the updates then accumulate,
    as in Paddle. A 0-D index takes an update of shape ``x.shape[1:]``.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    >>> index = oar.to_tensor([2, 1, 0, 1])
    >>> updates = oar.to_tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    >>> oar.scatter(x, index, updates, overwrite=False).tolist()
    [[3.0, 3.0], [6.0, 6.0], [1.0, 1.0]]
    """
    x = as_tensor(x, "x", "scatter")
    index = _index_tensor(index, "scatter", like=x)
    updates = _value_tensor(updates, x, "scatter", "updates")
    if index.ndim == 0:
        index = reshape(index, [1])
        updates = reshape(updates, [1] + updates.shape)
    return dispatch(scatter_op, (x, index, updates), {"overwrite": bool(overwrite)})


# ------------------------------------------------------------------------------------------
# take_along_axis <-> put_along_axis
# ------------------------------------------------------------------------------------------
PUT_REDUCES = ("assign", "add", "mul", "multiply", "mean", "amin", "amax")


def _along_axis_key(indices: np.ndarray, axis: int) -> tuple:
    """The numpy index picking, for each position of ``indices``, that element along ``axis``."""
    ndim = indices.ndim
    return tuple(
        indices if d == axis else np.arange(n).reshape([n if i == d else 1 for i in range(ndim)])
        for d, n in enumerate(indices.shape)
    )


def _along_axis_meta_checks(op: str, arr: TensorMeta, indices: TensorMeta, axis) -> None:
    _check_index_dtype(op, "indices", indices.dtype)
    if len(indices.shape) != len(arr.shape):
        raise ShapeError(
            f"{op}: indices must have as many dimensions as arr ({len(arr.shape)}), got shape "
            f"{fmt_shape(indices.shape)} for arr {fmt_shape(arr.shape)}"
        )
    _check_axis(op, axis, len(arr.shape))
    for d, (a, i) in enumerate(zip(arr.shape, indices.shape)):
        if d != axis and a is not None and i is not None and i > a:
            raise ShapeError(
                f"{op}: indices {fmt_shape(indices.shape)} is larger than arr {fmt_shape(arr.shape)} "
                f"in dimension {d} ({i} > {a})"
            )


def _take_along_axis_kernel(arr, indices, axis):
    _check_range("take_along_axis", indices, arr.shape[axis], axis, "indices value")
    return arr[_along_axis_key(indices, axis)]


def _take_along_axis_meta(arr: TensorMeta, indices: TensorMeta, axis) -> TensorMeta:
    _along_axis_meta_checks("take_along_axis", arr, indices, axis)
    return TensorMeta(tuple(indices.shape), arr.dtype)


take_along_axis_op = Op(
    "take_along_axis", reference=_take_along_axis_kernel, meta=_take_along_axis_meta, traits=SHAPE + COMPLEX, nondiff_inputs=(1,)
)


@take_along_axis_op.defgrad
def _take_along_axis_grad(ctx, g):
    arr_shape, _ = ctx.in_shapes
    indices = ctx.input(1)
    attrs = {"axis": ctx.attrs["axis"], "reduce": "add", "include_self": True}
    return dispatch(put_along_axis_op, (_zeros(g, arr_shape), indices, g), attrs), None


def _along_axis_broadcast_shape(arr_shape, indices_shape, axis):
    """Paddle's rule: arr's shape with indices' size on ``axis``, unless indices is larger somewhere."""
    if any(a < i for a, i in zip(arr_shape, indices_shape)):
        return None
    return arr_shape[:axis] + [indices_shape[axis]] + arr_shape[axis + 1:]


def _along_axis_args(op: str, arr, indices, axis):
    arr = as_tensor(arr, "arr", op)
    indices = _index_tensor(indices, op, "indices", like=arr)
    if indices.ndim != arr.ndim:
        raise ShapeError(
            f"{op}: indices must have as many dimensions as arr ({arr.ndim}), got shape "
            f"{indices.shape} for arr {arr.shape}"
        )
    return arr, indices, normalize_axis(axis, arr.ndim, op)


def _broadcast_checked(op: str, t: Tensor, shape, name: str) -> Tensor:
    out = broadcast_shapes(op, t.shape, shape, names=[name, "target"])
    if list(out) != list(shape):
        raise ShapeError(f"{op}: cannot broadcast {name} {t.shape} to {list(shape)}")
    return broadcast_to(t, list(shape))


def take_along_axis(arr, indices, axis, broadcast=True) -> Tensor:
    """The elements of ``arr`` at ``indices`` along ``axis`` (numpy's ``take_along_axis``).

    With ``broadcast=True`` ``indices`` and ``arr`` broadcast against each other outside ``axis``
    (Paddle's rule); with ``broadcast=False`` the result has the shape of ``indices``.

    >>> import oar
    >>> x = oar.to_tensor([[10, 30, 20], [60, 40, 50]])
    >>> oar.take_along_axis(x, oar.to_tensor([[1], [0]]), axis=1).tolist()
    [[30], [60]]
    """
    arr, indices, axis = _along_axis_args("take_along_axis", arr, indices, axis)
    if broadcast:
        shape = _along_axis_broadcast_shape(arr.shape, indices.shape, axis) or indices.shape
        indices = _broadcast_checked("take_along_axis", indices, shape, "indices")
        arr_shape = list(shape)
        arr_shape[axis] = arr.shape[axis]
        arr = _broadcast_checked("take_along_axis", arr, arr_shape, "arr")
    return dispatch(take_along_axis_op, (arr, indices), {"axis": axis})


def _put_along_axis_kernel(arr, indices, values, axis, reduce, include_self):
    _check_range("put_along_axis", indices, arr.shape[axis], axis, "indices value")
    key = _along_axis_key(indices, axis)
    out = arr.copy()
    if reduce == "assign":
        out[key] = values
    elif reduce == "add":
        if not include_self:
            out[key] = 0
        np.add.at(out, key, values)
    elif reduce in ("mul", "multiply"):
        if not include_self:
            out[key] = 1
        np.multiply.at(out, key, values)
    elif reduce in ("amin", "amax"):
        if not include_self:
            out[key] = values  # some value of each group: the reduction then covers the group only
        (np.minimum if reduce == "amin" else np.maximum).at(out, key, values)
    else:  # mean
        sums = np.zeros(arr.shape, np.float64)
        counts = np.zeros(arr.shape, np.float64)
        np.add.at(sums, key, values.astype(np.float64))
        np.add.at(counts, key, 1.0)
        if include_self:
            sums += arr
            counts += 1
        touched = np.zeros(arr.shape, bool)
        touched[key] = True
        means = sums / np.maximum(counts, 1)
        if arr.dtype.kind in "iu":
            means = np.trunc(means)
        out[touched] = means[touched].astype(arr.dtype)
    return out


def _put_along_axis_meta(arr: TensorMeta, indices: TensorMeta, values: TensorMeta, axis, reduce, include_self) -> TensorMeta:
    _along_axis_meta_checks("put_along_axis", arr, indices, axis)
    if reduce not in PUT_REDUCES:
        raise ArgumentError(f"put_along_axis: reduce must be one of {list(PUT_REDUCES)}, got {reduce!r}")
    if not _shapes_match(values.shape, indices.shape):
        raise ShapeError(
            f"put_along_axis: values has shape {fmt_shape(values.shape)}, expected the shape of "
            f"indices {fmt_shape(indices.shape)}"
        )
    return TensorMeta(tuple(arr.shape), arr.dtype)


put_along_axis_op = Op("put_along_axis", reference=_put_along_axis_kernel, meta=_put_along_axis_meta, nondiff_inputs=(1,))


@put_along_axis_op.defgrad
def _put_along_axis_grad(ctx, g):
    reduce, include_self, axis = ctx.attrs["reduce"], ctx.attrs["include_self"], ctx.attrs["axis"]
    if reduce not in ("assign", "add", "mean"):
        raise GradientError(
            f"put_along_axis: the gradient is defined for reduce='assign', 'add' and 'mean', not {reduce!r}"
        )
    indices = ctx.input(1)
    arr_shape, _, values_shape = ctx.in_shapes
    take = {"axis": axis}
    if reduce == "mean":
        # Each written position is (arr + sum of its values) / (count + 1), or sum / count without self.
        ones = broadcast_to(scalar_like(True, g), list(values_shape))
        add = {"axis": axis, "reduce": "add", "include_self": True}
        counts = dispatch(put_along_axis_op, (_zeros(g, arr_shape), indices, ones), add)
        denominator = counts + 1.0 if include_self else counts
        gv = dispatch(take_along_axis_op, (g, indices), take) / dispatch(take_along_axis_op, (denominator, indices), take)
        if include_self:
            return g / denominator, None, gv  # unwritten positions: count 0, so g / 1
    else:
        gv = dispatch(take_along_axis_op, (g, indices), take)
    if reduce == "add" and include_self:
        gx = g
    else:  # the written positions do not depend on arr
        attrs = {"axis": axis, "reduce": "assign", "include_self": True}
        gx = dispatch(put_along_axis_op, (g, indices, _zeros(g, values_shape)), attrs)
    return gx, None, gv


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True) -> Tensor:
    """``arr`` with ``values`` put at ``indices`` along ``axis``, combined by ``reduce``.

    ``reduce`` is 'assign' (default), 'add', 'mul'/'multiply', 'mean', 'amin' or 'amax';
    ``include_self=False`` leaves the old values of the written positions out of the reduction.
    Gradients are defined for 'assign', 'add' and 'mean'.

    >>> import oar
    >>> x = oar.to_tensor([[10, 30, 20], [60, 40, 50]])
    >>> oar.put_along_axis(x, oar.to_tensor([[0]]), 99, 0).tolist()
    [[99, 99, 99], [60, 40, 50]]
    """
    arr, indices, axis = _along_axis_args("put_along_axis", arr, indices, axis)
    if reduce not in PUT_REDUCES:
        raise ArgumentError(f"put_along_axis: reduce must be one of {list(PUT_REDUCES)}, got {reduce!r}")
    values = _value_tensor(values, arr, "put_along_axis", "values")
    if broadcast:
        shape = _along_axis_broadcast_shape(arr.shape, indices.shape, axis)
        if shape is not None:
            indices = _broadcast_checked("put_along_axis", indices, shape, "indices")
    elif values.ndim == indices.ndim and values.shape != indices.shape and all(
        v >= i for v, i in zip(values.shape, indices.shape)
    ):  # Paddle (as torch's scatter) uses the leading part of a larger values tensor
        values = getitem(values, tuple(slice(0, i) for i in indices.shape))
    values = _broadcast_checked("put_along_axis", values, indices.shape, "values")
    attrs = {"axis": axis, "reduce": reduce, "include_self": bool(include_self)}
    return dispatch(put_along_axis_op, (arr, indices, values), attrs)


# ------------------------------------------------------------------------------------------
# masks
# ------------------------------------------------------------------------------------------
def _masked_select_kernel(x, mask):
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def _masked_select_meta(x: TensorMeta, mask: TensorMeta) -> TensorMeta:
    _check_mask_dtype("masked_select", mask.dtype)
    broadcast_shapes("masked_select", x.shape, mask.shape, names=["x", "mask"])
    return TensorMeta((None,), x.dtype)


masked_select_op = Op("masked_select", reference=_masked_select_kernel, meta=_masked_select_meta, traits=SHAPE + COMPLEX, nondiff_inputs=(1,))


@masked_select_op.defgrad
def _masked_select_grad(ctx, g):
    x_shape, mask_shape = ctx.in_shapes
    mask = ctx.input(1)
    shape = list(broadcast_shapes("masked_select", x_shape, mask_shape))
    attrs = {"items": [{"kind": "tensor", "input": 0}], "shape": shape}
    gx = dispatch(getitem_grad_op, (g, broadcast_to(mask, shape)), attrs)
    return unbroadcast(gx, x_shape), None


def masked_select(x, mask, name=None) -> Tensor:
    """The elements of ``x`` where the bool ``mask`` is True, as a 1-D tensor (broadcasting).

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> oar.masked_select(x, x > 1.5).tolist()
    [2.0, 3.0, 4.0]
    """
    x = as_tensor(x, "x", "masked_select")
    mask = as_tensor(mask, "mask", "masked_select")
    _check_mask_dtype("masked_select", mask.dtype)
    return dispatch(masked_select_op, (x, mask), {})


def _masked_fill_kernel(x, mask, value):
    return np.where(mask, value, x)


def _masked_fill_meta(x: TensorMeta, mask: TensorMeta, value: TensorMeta) -> TensorMeta:
    _check_mask_dtype("masked_fill", mask.dtype)
    shape = broadcast_shapes("masked_fill", x.shape, mask.shape, value.shape, names=["x", "mask", "value"])
    return TensorMeta(shape, x.dtype)


masked_fill_op = Op("masked_fill", reference=_masked_fill_kernel, meta=_masked_fill_meta, traits=("elementwise",) + COMPLEX, nondiff_inputs=(1,))


@masked_fill_op.defgrad
def _masked_fill_grad(ctx, g):
    x_shape, _, value_shape = ctx.in_shapes
    mask = ctx.input(1)
    zero = scalar_like(0, g)
    gx = unbroadcast(dispatch(masked_fill_op, (g, mask, zero), {}), x_shape) if ctx.needs_input_grad[0] else None
    gv = None
    if ctx.needs_input_grad[2]:
        unmasked = mask == False  # noqa: E712 - an elementwise comparison, not a truth test
        gv = unbroadcast(dispatch(masked_fill_op, (g, unmasked, zero), {}), value_shape)
    return gx, None, gv


def masked_fill(x, mask, value, name=None) -> Tensor:
    """``x`` with ``value`` (a scalar or 0-D tensor) where the bool ``mask`` is True (broadcasting).

    >>> import oar
    >>> x = oar.ones([2, 2])
    >>> oar.masked_fill(x, oar.to_tensor([[True, False]]), 3.0).tolist()
    [[3.0, 1.0], [3.0, 1.0]]
    """
    x = as_tensor(x, "x", "masked_fill")
    mask = as_tensor(mask, "mask", "masked_fill")
    _check_mask_dtype("masked_fill", mask.dtype)
    value = _value_tensor(value, x, "masked_fill")
    return dispatch(masked_fill_op, (x, mask, value), {})


def _nonzero_kernel(x):
    return np.argwhere(x).astype(np.int64)


def _nonzero_meta(x: TensorMeta) -> TensorMeta:
    return TensorMeta((None, len(x.shape)), _dt.int64)


nonzero_op = Op("nonzero", reference=_nonzero_kernel, meta=_nonzero_meta, traits=NONDIFF + COMPLEX)


def nonzero(x, as_tuple=False) -> Tensor | tuple:
    """The coordinates of the non-zero elements of ``x``: int64 of shape ``[N, x.ndim]``.

    With ``as_tuple=True``, one ``[N, 1]`` tensor per dimension, as in Paddle.

    >>> import oar
    >>> oar.nonzero(oar.to_tensor([[1.0, 0.0], [0.0, 2.0]])).tolist()
    [[0, 0], [1, 1]]
    """
    x = as_tensor(x, "x", "nonzero")
    if not as_tuple:
        return dispatch(nonzero_op, (x,), {})
    if x.ndim == 0:
        x = reshape(x, [1])
    coords = dispatch(nonzero_op, (x,), {})
    return tuple(
        getitem(coords, (slice(None), slice(d, d + 1))) for d in range(x.ndim)
    )


def _one_hot_kernel(x, num_classes):
    n = int(x.max()) + 1 if num_classes == -1 and x.size else max(num_classes, 0)
    if x.size and (x.min() < 0 or x.max() >= n):
        bad = x.min() if x.min() < 0 else x.max()
        raise IndexOutOfRangeError(
            f"one_hot: x contains {int(bad)}, out of range for num_classes={n} (expected 0..{n - 1})"
        )
    out = np.zeros(x.shape + (n,), np.float32)
    if x.size:
        np.put_along_axis(out, x[..., None].astype(np.int64), 1.0, axis=-1)
    return out


def _one_hot_meta(x: TensorMeta, num_classes) -> TensorMeta:
    _check_index_dtype("one_hot", "x", x.dtype)
    return TensorMeta(tuple(x.shape) + (None if num_classes == -1 else num_classes,), _dt.float32)


one_hot_op = Op("one_hot", reference=_one_hot_kernel, meta=_one_hot_meta, traits=NONDIFF)


def one_hot(x, num_classes=-1, name=None) -> Tensor:
    """Each integer of ``x`` as a float32 one-hot vector of length ``num_classes`` (a new last axis).

    ``num_classes=-1`` uses ``x.max() + 1``. (``paddle.nn.functional.one_hot``.)

    >>> import oar
    >>> oar.one_hot(oar.to_tensor([1, 0]), 3).tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    x = as_tensor(x, "x", "one_hot")
    _check_index_dtype("one_hot", "x", x.dtype)
    num_classes = int(num_classes)
    if num_classes < -1 or num_classes == 0:
        raise ArgumentError(f"one_hot: num_classes must be positive (or -1 to infer it), got {num_classes}")
    return dispatch(one_hot_op, (x,), {"num_classes": num_classes})


# ------------------------------------------------------------------------------------------
# x[index]: getitem <-> getitem_grad, and setitem
# ------------------------------------------------------------------------------------------
_FULL = {"kind": "slice", "start": None, "stop": None, "step": None}


def _slice_bound(v, what: str):
    if v is None:
        return None
    if isinstance(v, Tensor):
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ArgumentError(f"getitem: slice {what} must be an int or None, got {type(v).__name__}")
    return int(v)


def parse_index(index, like: Tensor | None = None) -> tuple[list, list]:
    """An index expression as (JSON-able items, index tensors), the attrs and inputs of getitem;
    lists and arrays in it become tensors on the device of ``like``, the tensor indexed."""
    if not isinstance(index, tuple):
        index = (index,)
    items, tensors = [], []
    for v in index:
        if v is None:
            items.append({"kind": "none"})
        elif v is Ellipsis:
            items.append({"kind": "ellipsis"})
        elif isinstance(v, (bool, np.bool_)):
            items.append({"kind": "bool", "value": bool(v)})
        elif isinstance(v, (int, np.integer)):
            items.append({"kind": "int", "value": int(v)})
        elif isinstance(v, slice):
            step = _slice_bound(v.step, "step")
            if step == 0:
                raise ArgumentError("getitem: slice step cannot be zero")
            items.append({"kind": "slice", "start": _slice_bound(v.start, "start"),
                          "stop": _slice_bound(v.stop, "stop"), "step": step})
        elif isinstance(v, (Tensor, np.ndarray, list, tuple)):
            if not isinstance(v, Tensor):
                try:
                    v = np.asarray(v)
                except ValueError as exc:
                    raise ArgumentError(f"getitem: cannot use {v!r} as an index: {exc}") from None
            t = _index_tensor(v, "getitem", "index", allow_bool=True, like=like)
            items.append({"kind": "tensor", "input": len(tensors)})
            tensors.append(t)
        else:
            raise ArgumentError(
                f"getitem: unsupported index {v!r} of type {type(v).__name__}; use ints, slices, None, "
                f"Ellipsis, integer or bool tensors/lists/arrays"
            )
    return items, tensors


def _consumed(item, index_metas) -> int:
    kind = item["kind"]
    if kind in ("int", "slice"):
        return 1
    if kind == "tensor":
        meta = index_metas[item["input"]]
        return len(meta.shape) if meta.dtype.is_bool else 1
    return 0


def _expand(op: str, x_shape, items, index_metas) -> list:
    """The items with the Ellipsis (or the implicit trailing one) replaced by full slices."""
    ndim = len(x_shape)
    ellipses = sum(1 for it in items if it["kind"] == "ellipsis")
    if ellipses > 1:
        raise ArgumentError(f"{op}: an index can only have a single ellipsis ('...'), got {ellipses}")
    used = sum(_consumed(it, index_metas) for it in items)
    if used > ndim:
        raise ArgumentError(f"{op}: too many indices for a {ndim}-d tensor of shape {fmt_shape(x_shape)}: {used} were indexed")
    fill = [_FULL] * (ndim - used)
    if not ellipses:
        return list(items) + fill
    out = []
    for it in items:
        out.extend(fill if it["kind"] == "ellipsis" else [it])
    return out


def _is_fancy(item, index_metas) -> bool:
    kind = item["kind"]
    if kind == "bool":
        return True
    if kind == "tensor":
        meta = index_metas[item["input"]]
        return meta.dtype.is_bool or len(meta.shape) > 0
    return False


def _slice_length(item, size):
    if size is None:
        return None
    return len(range(*slice(item["start"], item["stop"], item["step"]).indices(size)))


def indexed_shape(op: str, x_shape, items, index_metas) -> tuple:
    """The shape of ``x[index]`` by numpy's rules (``None`` where it depends on a bool mask)."""
    for meta in index_metas:
        _check_index_dtype(op, "index", meta.dtype, allow_bool=True)
    expanded = _expand(op, x_shape, items, index_metas)
    fancy = any(_is_fancy(it, index_metas) for it in expanded)
    out, adv_shapes, adv_positions, insert_at = [], [], [], None
    dim = 0
    for pos, it in enumerate(expanded):
        kind = it["kind"]
        if kind == "none":
            out.append(1)
            continue
        if kind == "slice":
            out.append(_slice_length(it, x_shape[dim]))
            dim += 1
            continue
        size = x_shape[dim] if dim < len(x_shape) else None
        if kind == "int" and size is not None and not -size <= it["value"] < size:
            raise _out_of_range(op, it["value"], dim, size)
        if not fancy:  # plain integers (and 0-d integer tensors) drop their dim
            dim += 1
            continue
        if insert_at is None:
            insert_at = len(out)
        adv_positions.append(pos)
        if kind == "int":
            adv_shapes.append(())
            dim += 1
        elif kind == "bool":
            adv_shapes.append((1 if it["value"] else 0,))
        else:
            meta = index_metas[it["input"]]
            if meta.dtype.is_bool:
                k = len(meta.shape)
                covered = tuple(x_shape[dim:dim + k])
                if not _shapes_match(tuple(meta.shape), covered):
                    raise ShapeError(
                        f"{op}: bool mask of shape {fmt_shape(meta.shape)} does not match the indexed "
                        f"dims {fmt_shape(covered)} of x {fmt_shape(x_shape)} (starting at axis {dim})"
                    )
                adv_shapes.append((None,))
                dim += k
            else:
                adv_shapes.append(tuple(meta.shape))
                dim += 1
    if not adv_shapes:
        return tuple(out)
    names = [f"index {i}" for i in range(len(adv_shapes))]
    adv = broadcast_shapes(op, *adv_shapes, names=names)
    if adv_positions[-1] - adv_positions[0] + 1 == len(adv_positions):
        return tuple(out[:insert_at]) + tuple(adv) + tuple(out[insert_at:])
    return tuple(adv) + tuple(out)  # separated advanced indices go first (numpy)


def _numpy_key(op: str, x_shape, items, indices) -> tuple[tuple, bool]:
    """The numpy index of ``items`` over ``indices`` (arrays), checking integer ranges.

    Returns the key and whether it has advanced (array or bool) parts.
    """
    metas = [TensorMeta(a.shape, _dt.NP_TO_DTYPE.get(a.dtype, _dt.int64)) for a in indices]
    expanded = _expand(op, x_shape, items, metas)
    key, fancy, dim = [], False, 0
    for it in expanded:
        kind = it["kind"]
        if kind == "none":
            key.append(None)
        elif kind == "slice":
            key.append(slice(it["start"], it["stop"], it["step"]))
            dim += 1
        elif kind == "int":
            size = x_shape[dim]
            if not -size <= it["value"] < size:
                raise _out_of_range(op, it["value"], dim, size)
            key.append(it["value"])
            dim += 1
        elif kind == "bool":
            key.append(it["value"])
            fancy = True
        else:
            a = indices[it["input"]]
            if a.dtype == np.bool_:
                dim += a.ndim
            else:
                _check_range(op, a, x_shape[dim], dim)
                dim += 1
            key.append(a)
            fancy = True
    return tuple(key), fancy


def _basic_key(items) -> tuple | None:
    """The numpy index of basic items (ints, slices, None, Ellipsis), or None if there are others.

    The fast path of ``x[i]``: numpy checks it, and the meta explains numpy's errors."""
    key = []
    for it in items:
        kind = it["kind"]
        if kind == "int":
            key.append(it["value"])
        elif kind == "slice":
            key.append(slice(it["start"], it["stop"], it["step"]))
        elif kind == "none":
            key.append(None)
        elif kind == "ellipsis":
            key.append(Ellipsis)
        else:
            return None
    return tuple(key)


def _getitem_kernel(x, *indices, items):
    key = None if indices else _basic_key(items)
    if key is not None:  # basic indexing: a view of x, as Paddle's
        out = x[key]
        if type(out) is not np.ndarray:  # every axis taken by an int: a 0-d view, not numpy's scalar
            out = x[(*key, Ellipsis)]
        return out
    key, _ = _numpy_key("getitem", x.shape, items, indices)
    out = np.asarray(x[key])
    return out.copy() if np.may_share_memory(out, x) else out  # an index tensor copies, as in Paddle


def _getitem_meta(x: TensorMeta, *indices: TensorMeta, items) -> TensorMeta:
    return TensorMeta(indexed_shape("getitem", x.shape, items, indices), x.dtype)


getitem_op = Op(
    "getitem", paddle=("Tensor.__getitem__",), reference=_getitem_kernel, meta=_getitem_meta,
    traits=("shape", "view") + COMPLEX, nondiff_inputs=range(1, MAX_INDEX_TENSORS + 1),
)


@getitem_op.defgrad
def _getitem_grad(ctx, g):
    indices = _saved_indices(ctx, 1)
    attrs = {"items": ctx.attrs["items"], "shape": list(ctx.in_shapes[0])}
    return (dispatch(getitem_grad_op, (g, *indices), attrs),) + (None,) * len(indices)


@getitem_op.defview_inverse
def _getitem_back(base, value, attrs, index):
    return dispatch(setitem_op, (base, value), {"items": attrs["items"]})


def _getitem_grad_kernel(g, *indices, items, shape):
    out = np.zeros(shape, g.dtype)
    key, fancy = _numpy_key("getitem_grad", tuple(shape), items, indices)
    if fancy:
        np.add.at(out, key, g)  # repeated indices accumulate
    else:
        out[key] = g
    return out


def _getitem_grad_meta(g: TensorMeta, *indices: TensorMeta, items, shape) -> TensorMeta:
    expected = indexed_shape("getitem_grad", tuple(shape), items, indices)
    if not _shapes_match(tuple(g.shape), expected):
        raise ShapeError(f"getitem_grad: grad has shape {fmt_shape(g.shape)}, expected {fmt_shape(expected)}")
    return TensorMeta(tuple(shape), g.dtype)


getitem_grad_op = Op(
    "getitem_grad", traits=COMPLEX, reference=_getitem_grad_kernel, meta=_getitem_grad_meta,
    nondiff_inputs=range(1, MAX_INDEX_TENSORS + 1),
)


@getitem_grad_op.defgrad
def _getitem_grad_grad(ctx, gg):
    indices = _saved_indices(ctx, 1)
    return (dispatch(getitem_op, (gg, *indices), {"items": ctx.attrs["items"]}),) + (None,) * len(indices)


def getitem(x, index) -> Tensor:
    """``x[index]`` with numpy's indexing rules: ints, slices, None, Ellipsis, integer and bool
    tensors/lists/arrays (advanced indexing), differentiable in ``x``. Basic indexing gives a view
    of ``x`` (in-place ops on it write into ``x``); advanced indexing a copy.

    >>> import oar
    >>> x = oar.arange(12).reshape([3, 4])
    >>> x[1:, ::-2].tolist()
    [[7, 5], [11, 9]]
    >>> x[[0, 2], [1, 3]].tolist()
    [1, 11]
    >>> _ = x[0].zero_()  # a view: x changes
    >>> x[0].tolist()
    [0, 0, 0, 0]
    """
    x = as_tensor(x, "x", "getitem")
    items, tensors = parse_index(index, x)
    return dispatch(getitem_op, (x, *tensors), {"items": items})


def getitem_backward(g, indices, items, shape) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at the index (``items`` over ``indices``): the
    gradient of ``getitem``, exposed for tests and graph passes."""
    return dispatch(getitem_grad_op, (g, *indices), {"items": list(items), "shape": list(shape)})


def _setitem_kernel(x, value, *indices, items):
    key = None if indices else _basic_key(items)
    if key is None:
        key, _ = _numpy_key("setitem", x.shape, items, indices)
    out = x.copy()
    out[key] = value
    return out


def _setitem_meta(x: TensorMeta, value: TensorMeta, *indices: TensorMeta, items) -> TensorMeta:
    target = indexed_shape("setitem", x.shape, items, indices)
    v = tuple(value.shape)
    while len(v) > len(target) and v[0] == 1:  # numpy drops leading 1s of the value
        v = v[1:]
    ok = len(v) <= len(target) and all(
        a is None or b is None or a == 1 or a == b for a, b in zip(v[::-1], target[::-1])
    )
    if not ok:
        raise ShapeError(
            f"setitem: cannot assign a value of shape {fmt_shape(value.shape)} to the indexed part "
            f"of shape {fmt_shape(target)} (x has shape {fmt_shape(x.shape)})"
        )
    return TensorMeta(tuple(x.shape), x.dtype)


setitem_op = Op(
    "setitem", traits=COMPLEX, paddle=("Tensor.__setitem__",), reference=_setitem_kernel, meta=_setitem_meta,
    nondiff_inputs=range(2, MAX_INDEX_TENSORS + 2),
)


@setitem_op.defgrad
def _setitem_grad(ctx, g):
    indices = _saved_indices(ctx, 2)
    items = ctx.attrs["items"]
    _, value_shape = ctx.in_shapes[:2]
    gx = gv = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(setitem_op, (g, scalar_like(0, g), *indices), {"items": items})
    if ctx.needs_input_grad[1]:
        gv = dispatch(getitem_op, (g, *indices), {"items": items})
        extra = len(value_shape) - gv.ndim
        if gv.size == 0:
            gv = _zeros(g, value_shape)  # nothing was written (and reshape reads a 0 as "keep")
        elif extra > 0:  # the value had leading 1s, which numpy drops
            gv = unbroadcast(reshape(gv, [1] * extra + gv.shape), value_shape)
        else:
            gv = unbroadcast(gv, value_shape)
    return (gx, gv) + (None,) * len(indices)


def setitem(x, index, value) -> Tensor:
    """A copy of ``x`` with ``x[index] = value`` (``value`` broadcast, cast to ``x``'s dtype).

    The out-of-place form of ``Tensor.__setitem__``; differentiable in ``x`` and ``value``.

    >>> import oar
    >>> setitem(oar.zeros([2, 3]), (slice(None), 1), 5.0).tolist()
    [[0.0, 5.0, 0.0], [0.0, 5.0, 0.0]]
    """
    x = as_tensor(x, "x", "setitem")
    items, tensors = parse_index(index, x)
    value = _value_tensor(value, x, "setitem")
    return dispatch(setitem_op, (x, value, *tensors), {"items": items})


scatter_ = _inplace(scatter, "scatter_")
index_add_ = _inplace(index_add, "index_add_")
put_along_axis_ = _inplace(put_along_axis, "put_along_axis_")
masked_fill_ = _inplace(masked_fill, "masked_fill_")


def _tensor_getitem(self, index) -> Tensor:
    items, tensors = parse_index(index, self)
    return dispatch(getitem_op, (self, *tensors), {"items": items})


def _tensor_setitem(self, index, value) -> None:
    """``x[index] = value`` in place, recorded on the tape as a ``setitem`` op."""
    check_target(self, "setitem")
    items, tensors = parse_index(index, self)
    value = _value_tensor(value, self, "setitem")
    result = dispatch(setitem_op, (self, value, *tensors), {"items": items})
    apply_inplace(self, result, "setitem")


OPS = [
    gather_op, index_add_op, gather_nd_op, scatter_nd_add_op, scatter_op, take_along_axis_op,
    put_along_axis_op, masked_select_op, masked_fill_op, nonzero_op, one_hot_op, getitem_op,
    getitem_grad_op, setitem_op,
]
__all__ = [
    "gather", "index_select", "index_add", "gather_nd", "scatter_nd_add", "scatter_nd", "scatter",
    "take_along_axis", "put_along_axis", "masked_select", "masked_fill", "nonzero", "one_hot",
    "scatter_", "index_add_", "put_along_axis_", "masked_fill_",
]

METHODS = {
    "__getitem__": _tensor_getitem, "__setitem__": _tensor_setitem, "gather": gather,
    "index_select": index_select, "index_add": index_add, "gather_nd": gather_nd,
    "scatter_nd_add": scatter_nd_add, "scatter": scatter, "take_along_axis": take_along_axis,
    "put_along_axis": put_along_axis, "masked_select": masked_select, "masked_fill": masked_fill,
    "nonzero": nonzero, "scatter_": scatter_, "index_add_": index_add_,
    "put_along_axis_": put_along_axis_, "masked_fill_": masked_fill_,
}
