"""Tensor manipulation beyond ``shape`` and ``indexing``: splits and stacks, views by other names,
scatters into slices, diagonals and masks, and index-building functions.

Almost everything here is composed from the ops of ``shape``, ``indexing``, ``reduction`` and
``elementwise``, so gradients (and static-graph capture) come with those ops. Positions that
depend only on shapes and attributes (a diagonal, a stride pattern, sliding windows) are computed
with numpy as a constant int64 index tensor, then read with ``gather`` or written with ``scatter``
on the flattened tensor. The one op of its own is ``view_dtype``: a bitcast needs a kernel.

Where oar differs from Paddle 3.3.1:

- ``as_strided`` and ``unfold`` return tensors of their own, not views: oar tensors are always
  contiguous, and a write through overlapping windows has no single meaning. ``stride`` and
  ``offset`` count elements of ``x`` laid out row-major, which is what Paddle's are for a
  contiguous ``x``.
- ``view`` with a shape is ``reshape`` (a view, as in Paddle); with a dtype it is ``view_dtype``,
  a view too, but with no gradient.
- The in-place shape changers ``reshape_``, ``flatten_``, ``squeeze_``, ``unsqueeze_``,
  ``transpose_`` and ``t_``, used on a view or on a tensor that has views (or a ``detach()``),
  give it a buffer of its own: in Paddle it keeps sharing memory with them. ``resize_`` (which
  changes the number of elements) is not provided.
- ``scatter_reduce`` has gradients for ``'sum'`` and ``'mean'`` only (those of ``put_along_axis``).
- Tensor methods whose first argument is a list or shapes in Paddle (``block_diag``,
  ``broadcast_shape``, ``broadcast_shapes``, ``broadcast_tensors``, ``multiplex``) are top-level
  only: as methods they cannot be called with a tensor ``self``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.dispatch import modes_above_eager
from oar._engine.inplace import _follow, apply_inplace, check_target
from oar._engine.inplace import inplace_variant as _inplace
from oar._engine.op import COMPLEX, Op
from oar._ops import assign as _assign
from oar._ops import creation
from oar._ops import elementwise as E
from oar._ops import indexing as I  # noqa: E741 - the family's short name, as E for elementwise
from oar._ops import reduction as R
from oar._ops import shape as S
from oar._ops._common import Tensor, TensorMeta, as_tensor, dispatch, fmt_shape, normalize_axis, scalar_like
from oar._ops._common import broadcast_shapes as _broadcast
from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError


# -- helpers ----------------------------------------------------------------------------------
def _tensor(x, op: str, name: str = "x") -> Tensor:
    return as_tensor(x, name, op)


def _axis(axis, ndim: int, op: str, name: str = "axis") -> int:
    if isinstance(axis, Tensor):
        axis = axis.item()
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"{op}: {name} must be an int, got {type(axis).__name__}")
    return normalize_axis(int(axis), max(ndim, 1), op, name)


def _const(positions: np.ndarray, like: Tensor) -> Tensor:
    """A constant int64 index tensor on ``like``'s device (positions depend on shapes only)."""
    return I._on_device(np.ascontiguousarray(positions, dtype=np.int64), like)


def _flat(x: Tensor) -> Tensor:
    return S.reshape_to(x, [math.prod(x.shape)])


def _gather_positions(x: Tensor, positions: np.ndarray) -> Tensor:
    """The elements of ``x`` at the row-major flat ``positions``, in the shape of ``positions``."""
    picked = I.gather(_flat(x), _const(positions.reshape(-1), x))
    return S.reshape_to(picked, list(positions.shape))


def _scatter_positions(x: Tensor, positions: np.ndarray, values: Tensor, op: str) -> Tensor:
    """``x`` with the elements at the (distinct) row-major flat ``positions`` replaced by ``values``."""
    values = I._value_tensor(values, x, op)
    out = I.scatter(_flat(x), _const(positions.reshape(-1), x), S.reshape_to(values, [positions.size]))
    return S.reshape_to(out, list(x.shape))


def _flat_positions(shape) -> np.ndarray:
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _tensor_list(x, op: str, name: str = "x") -> list[Tensor]:
    if isinstance(x, Tensor) or not isinstance(x, (list, tuple)):
        raise ArgumentError(f"{op}: {name} must be a list or tuple of tensors, got {type(x).__name__}")
    if not x:
        raise ArgumentError(f"{op}: {name} is an empty list; give at least one tensor")
    return [_tensor(t, op, f"{name}[{i}]") for i, t in enumerate(x)]


_int_list = S._int_list  # an int, a list of ints or an int tensor -> a list of ints


# -- at least n dims, stacks ------------------------------------------------------------------
def _at_least(inputs, ndim: int, op: str):
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])  # Paddle takes a list as the inputs too
    if not inputs:
        raise ArgumentError(f"{op}: give at least one tensor")
    outs = []
    for i, t in enumerate(inputs):
        t = _tensor(t, op, f"inputs[{i}]")
        shape = list(t.shape)
        if len(shape) < ndim:
            # numpy's rule: [] -> [1, ...], [n] -> [1, n] or [1, n, 1], [m, n] -> [m, n, 1]
            if len(shape) == 0:
                shape = [1] * ndim
            elif len(shape) == 1:
                shape = [1, *shape, 1][:ndim]
            else:
                shape = [*shape, 1]
            t = S.reshape_to(t, shape)
        outs.append(t)
    return outs[0] if len(outs) == 1 else outs


def atleast_1d(*inputs, name=None):
    """Each input with at least 1 dimension (a 0-d tensor becomes shape [1]); one tensor for one
    input, else a list.

    >>> import oar
    >>> oar.atleast_1d(oar.to_tensor(3.0)).shape
    [1]
    """
    return _at_least(inputs, 1, "atleast_1d")


def atleast_2d(*inputs, name=None):
    """Each input with at least 2 dimensions ([n] becomes [1, n]); one tensor for one input, else a list."""
    return _at_least(inputs, 2, "atleast_2d")


def atleast_3d(*inputs, name=None):
    """Each input with at least 3 dimensions ([n] becomes [1, n, 1], [m, n] becomes [m, n, 1])."""
    return _at_least(inputs, 3, "atleast_3d")


def hstack(x, name=None) -> Tensor:
    """Concatenate along axis 1 (axis 0 for 1-d inputs), 0-d inputs as [1].

    >>> import oar
    >>> oar.hstack([oar.to_tensor([1, 2]), oar.to_tensor([3])]).tolist()
    [1, 2, 3]
    """
    xs = [atleast_1d(t) for t in _tensor_list(x, "hstack")]
    return S.concat(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(x, name=None) -> Tensor:
    """Concatenate along axis 0, 0-d and 1-d inputs made 2-d first ([n] is a row [1, n]).

    >>> import oar
    >>> oar.vstack([oar.to_tensor([1, 2]), oar.to_tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    return S.concat([atleast_2d(t) for t in _tensor_list(x, "vstack")], axis=0)


def row_stack(x, name=None) -> Tensor:
    """``vstack``."""
    return S.concat([atleast_2d(t) for t in _tensor_list(x, "row_stack")], axis=0)


def dstack(x, name=None) -> Tensor:
    """Concatenate along axis 2, inputs made 3-d first (``atleast_3d``)."""
    return S.concat([atleast_3d(t) for t in _tensor_list(x, "dstack")], axis=2)


def column_stack(x, name=None) -> Tensor:
    """Stack 1-d inputs as the columns of a 2-d tensor; 2-d inputs are concatenated along axis 1.

    >>> import oar
    >>> oar.column_stack([oar.to_tensor([1, 2]), oar.to_tensor([3, 4])]).tolist()
    [[1, 3], [2, 4]]
    """
    xs = [S.reshape_to(t, [t.size, 1]) if t.ndim < 2 else t for t in _tensor_list(x, "column_stack")]
    return S.concat(xs, axis=1)


def block_diag(inputs, name=None) -> Tensor:
    """A block-diagonal matrix of the inputs (0-d, 1-d as a row, or 2-d), zeros elsewhere.

    >>> import oar
    >>> oar.block_diag([oar.to_tensor([[1, 2]]), oar.to_tensor(3)]).tolist()
    [[1, 2, 0], [0, 0, 3]]
    """
    mats = []
    for i, t in enumerate(_tensor_list(inputs, "block_diag", "inputs")):
        if t.ndim > 2:
            raise ShapeError(f"block_diag: inputs[{i}] has shape {fmt_shape(t.shape)}; each input must be 0-, 1- or 2-d")
        mats.append(atleast_2d(t))
    total = sum(m.shape[1] for m in mats)
    rows, before = [], 0
    for m in mats:
        rows.append(S._pad_axis(m, 1, before, total - before - m.shape[1]))
        before += m.shape[1]
    return S.concat(rows, axis=0)


# -- broadcasting -----------------------------------------------------------------------------
def _shape_list(shape, op: str, name: str) -> list[int]:
    return _int_list(list(shape) if isinstance(shape, tuple) else shape, op, name)


def broadcast_shape(x_shape, y_shape) -> list[int]:
    """The shape two shapes broadcast to.

    >>> import oar
    >>> oar.broadcast_shape([2, 1, 3], [4, 1])
    [2, 4, 3]
    """
    shapes = [_shape_list(x_shape, "broadcast_shape", "x_shape"), _shape_list(y_shape, "broadcast_shape", "y_shape")]
    return list(_broadcast("broadcast_shape", *shapes, names=["x_shape", "y_shape"]))


def broadcast_shapes(*shapes) -> list[int]:
    """The shape all the given shapes broadcast to."""
    lists = [_shape_list(s, "broadcast_shapes", f"shapes[{i}]") for i, s in enumerate(shapes)]
    return list(_broadcast("broadcast_shapes", *lists))


def broadcast_tensors(input, name=None) -> list[Tensor]:  # noqa: A002 - Paddle's argument name
    """The inputs broadcast to their common shape (read-only views, as ``broadcast_to``).

    >>> import oar
    >>> [t.shape for t in oar.broadcast_tensors([oar.ones([2, 1]), oar.ones([3])])]
    [[2, 3], [2, 3]]
    """
    xs = _tensor_list(input, "broadcast_tensors", "input")
    shape = list(_broadcast("broadcast_tensors", *[t.shape for t in xs]))
    return [S.broadcast_to(t, shape) for t in xs]


def reduce_as(x, target, name=None) -> Tensor:
    """``x`` summed down to the shape of ``target`` (the inverse of broadcasting ``target`` to ``x``).

    >>> import oar
    >>> oar.reduce_as(oar.ones([2, 3]), oar.ones([3])).tolist()
    [2.0, 2.0, 2.0]
    """
    x, target = _tensor(x, "reduce_as"), _tensor(target, "reduce_as", "target")
    if list(_broadcast("reduce_as", x.shape, target.shape, names=["x", "target"])) != list(x.shape):
        raise ShapeError(f"reduce_as: target {fmt_shape(target.shape)} does not broadcast to x {fmt_shape(x.shape)}")
    out = R.unbroadcast(x, target.shape)
    return S.reshape_to(out, target.shape) if list(out.shape) != list(target.shape) else out


# -- splits -----------------------------------------------------------------------------------
def tensor_split(x, num_or_indices, axis=0, name=None) -> list[Tensor]:
    """Split ``x`` along ``axis`` into ``num_or_indices`` parts (the first ``n % k`` one longer),
    or before each index of a list (numpy's ``array_split``); the parts are views.

    >>> import oar
    >>> [t.tolist() for t in oar.tensor_split(oar.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    >>> [t.tolist() for t in oar.tensor_split(oar.arange(5), [1, 3])]
    [[0], [1, 2], [3, 4]]
    """
    x = _tensor(x, "tensor_split")
    if x.ndim == 0:
        raise ShapeError("tensor_split: x must have at least 1 dimension, got a 0-d tensor")
    axis = _axis(axis, x.ndim, "tensor_split")
    n = x.shape[axis]
    if isinstance(num_or_indices, (int, np.integer)) and not isinstance(num_or_indices, bool):
        k = int(num_or_indices)
        if k <= 0:
            raise ArgumentError(f"tensor_split: num_or_indices must be a positive int, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = list(itertools.accumulate([0, *sizes]))
        pairs = list(zip(bounds[:-1], bounds[1:]))
    else:
        indices = _int_list(num_or_indices, "tensor_split", "num_or_indices")
        cuts = [0, *indices, n]
        pairs = []
        for start, end in zip(cuts[:-1], cuts[1:]):
            start, end, _ = slice(start, end).indices(n)  # numpy's slicing: negative from the end, clamped
            pairs.append((start, max(start, end)))
    return [S._slice_axis(x, axis, start, end) for start, end in pairs]


def _split_at(op: str, x, num_or_indices, min_ndim: int, axis) -> list[Tensor]:
    x = _tensor(x, op)
    if x.ndim < min_ndim:
        raise ShapeError(f"{op}: x must have at least {min_ndim} dimensions, got shape {fmt_shape(x.shape)}")
    return tensor_split(x, num_or_indices, axis=axis(x) if callable(axis) else axis)


def hsplit(x, num_or_indices, name=None) -> list[Tensor]:
    """``tensor_split`` along axis 1 (axis 0 for a 1-d ``x``)."""
    return _split_at("hsplit", x, num_or_indices, 1, lambda t: 1 if t.ndim > 1 else 0)


def vsplit(x, num_or_indices, name=None) -> list[Tensor]:
    """``tensor_split`` along axis 0 of an ``x`` with at least 2 dimensions."""
    return _split_at("vsplit", x, num_or_indices, 2, 0)


def dsplit(x, num_or_indices, name=None) -> list[Tensor]:
    """``tensor_split`` along axis 2 of an ``x`` with at least 3 dimensions."""
    return _split_at("dsplit", x, num_or_indices, 3, 2)


def split_with_sizes(self, split_sizes, dim=0) -> list[Tensor]:
    """``Tensor.split_with_sizes``: split along ``dim`` into parts of ``split_sizes`` (which must
    add up to the dim's size)."""
    x = _tensor(self, "split_with_sizes", "self")
    sizes = _int_list(split_sizes, "split_with_sizes", "split_sizes")
    axis = _axis(dim, x.ndim, "split_with_sizes", "dim")
    if sum(sizes) != x.shape[axis] or any(s < 0 for s in sizes):
        raise ShapeError(f"split_with_sizes: split_sizes {sizes} must be non-negative and add up to "
                         f"{x.shape[axis]}, the size of dim {axis} of x {fmt_shape(x.shape)}")
    return S.split(x, sizes, axis)


# -- slicing by other names -------------------------------------------------------------------
def narrow(input, dim, start, length) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``length`` elements of ``input`` along ``dim`` from ``start`` (negative counts from the end); a view.

    >>> import oar
    >>> oar.narrow(oar.arange(6).reshape([2, 3]), 1, 1, 2).tolist()
    [[1, 2], [4, 5]]
    """
    x = _tensor(input, "narrow", "input")
    axis = _axis(dim, x.ndim, "narrow", "dim")
    start = int(start.item() if isinstance(start, Tensor) else start)
    length = int(length.item() if isinstance(length, Tensor) else length)
    n = x.shape[axis]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise ArgumentError(f"narrow: start {start} and length {length} leave dim {axis} of size {n} "
                            f"(input {fmt_shape(x.shape)})")
    return S._slice_axis(x, axis, start, start + length)


def crop(x, shape=None, offsets=None, name=None) -> Tensor:
    """The block of ``x`` of ``shape`` (a -1 takes the rest of that dim) starting at ``offsets``.

    >>> import oar
    >>> oar.crop(oar.arange(9).reshape([3, 3]), shape=[2, -1], offsets=[1, 1]).tolist()
    [[4, 5], [7, 8]]
    """
    x = _tensor(x, "crop")
    shape = list(x.shape) if shape is None else _int_list(shape, "crop", "shape")
    offsets = [0] * x.ndim if offsets is None else _int_list(offsets, "crop", "offsets")
    if len(shape) != x.ndim or len(offsets) != x.ndim:
        raise ShapeError(f"crop: shape {shape} and offsets {offsets} must each have one entry per dim of x {fmt_shape(x.shape)}")
    ends = []
    for axis, (size, off, n) in enumerate(zip(shape, offsets, x.shape)):
        size = n - off if size == -1 else size
        if off < 0 or size < 0 or off + size > n:
            raise ShapeError(f"crop: offset {off} and size {size} do not fit dim {axis} of x {fmt_shape(x.shape)}")
        ends.append(off + size)
    return S.slice(x, list(range(x.ndim)), offsets, ends)


def unflatten(x, axis, shape, name=None) -> Tensor:
    """``x`` with dim ``axis`` split into ``shape`` (one -1 inferred); a view.

    >>> import oar
    >>> oar.unflatten(oar.ones([2, 6]), 1, [2, -1]).shape
    [2, 2, 3]
    """
    x = _tensor(x, "unflatten")
    axis = _axis(axis, x.ndim, "unflatten")
    sizes = _int_list(list(shape) if isinstance(shape, tuple) else shape, "unflatten", "shape")
    if not sizes:
        raise ArgumentError("unflatten: shape must not be empty")
    inner = S.resolve_reshape("unflatten", [x.shape[axis]], sizes, copy_zeros=False)
    return S.reshape_to(x, [*x.shape[:axis], *inner, *x.shape[axis + 1:]])


def ravel(input) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``input`` flattened to 1-d (a view)."""
    return S.flatten(_tensor(input, "ravel", "input"))


def reverse(x, axis, name=None) -> Tensor:
    """``flip``: ``x`` reversed along ``axis`` (an int or a list)."""
    return S.flip(x, axis)


def view_as(x, other, name=None) -> Tensor:
    """``x`` viewed with the shape of ``other`` (``reshape``)."""
    return S.reshape(_tensor(x, "view_as"), list(_tensor(other, "view_as", "other").shape))


def _view_dtype_kernel(x, dtype):
    return np.ascontiguousarray(x).view(_dt.get_dtype(dtype).np)


def _view_dtype_meta(x: TensorMeta, dtype) -> TensorMeta:
    target = _dt.get_dtype(dtype)
    old, new = x.dtype.np.itemsize, target.np.itemsize
    shape = list(x.shape)
    if old != new:
        if not shape:
            raise ShapeError(f"view: cannot view a 0-d {x.dtype.name} tensor as {target.name} (another item size)")
        last = shape[-1]
        if last is not None and (last * old) % new:
            raise ShapeError(f"view: the last dim of x {fmt_shape(x.shape)} ({last} x {old} bytes) is not a multiple "
                             f"of {new} bytes, the size of {target.name}")
        shape[-1] = None if last is None else last * old // new
    return TensorMeta(tuple(shape), target)


view_dtype_op = Op("view_dtype", paddle=("view", "Tensor.view"), reference=_view_dtype_kernel, meta=_view_dtype_meta,
                   traits=("shape", "view", "nondiff") + COMPLEX)


@view_dtype_op.defview_inverse
def _view_dtype_back(base, value, attrs, index):
    """Written through, ``base`` becomes ``value``'s bytes read as ``base``'s dtype."""
    return dispatch(view_dtype_op, (value,), {"dtype": base.dtype.name})


def view(x, shape_or_dtype, name=None) -> Tensor:
    """``x`` viewed with another shape (``reshape``) or its bytes read as another dtype (the last
    dim scaled by the ratio of item sizes); both share ``x``'s memory.

    >>> import oar
    >>> oar.view(oar.arange(6), [2, 3]).shape
    [2, 3]
    >>> oar.view(oar.to_tensor([1.0], dtype="float32"), "int32").tolist()
    [1065353216]
    """
    x = _tensor(x, "view")
    if isinstance(shape_or_dtype, (list, tuple, Tensor)):
        return S.reshape(x, shape_or_dtype)
    try:
        target = _dt.get_dtype(shape_or_dtype)
    except DTypeError as exc:
        raise ArgumentError(f"view: shape_or_dtype must be a shape (list) or a dtype, got {shape_or_dtype!r}: {exc}") from None
    return dispatch(view_dtype_op, (x,), {"dtype": target.name})


def as_strided(x, shape, stride, offset=0, name=None) -> Tensor:
    """The elements of ``x`` at ``offset + sum(i_k * stride[k])`` for each index ``i`` of ``shape``,
    ``x`` read row-major; a tensor of its own (not a view, see the module docstring).

    >>> import oar
    >>> oar.as_strided(oar.arange(6), [2, 2], [1, 2]).tolist()
    [[0, 2], [1, 3]]
    """
    x = _tensor(x, "as_strided")
    shape, stride = _int_list(shape, "as_strided", "shape"), _int_list(stride, "as_strided", "stride")
    offset = int(offset)
    if len(shape) != len(stride) or any(d < 0 for d in shape) or any(s < 0 for s in stride) or offset < 0:
        raise ArgumentError(f"as_strided: shape {shape} and stride {stride} need one non-negative entry each per "
                            f"dim, and offset ({offset}) must be non-negative")
    positions = np.full(shape, offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(shape, stride)):
        positions += (np.arange(n, dtype=np.int64) * s).reshape([n if a == axis else 1 for a in range(len(shape))])
    if positions.size and positions.max() >= x.size:
        raise ShapeError(f"as_strided: shape {shape}, stride {stride} and offset {offset} reach element "
                         f"{int(positions.max())}, but x {fmt_shape(x.shape)} has {x.size}")
    return _gather_positions(x, positions)


def unfold(x, axis, size, step, name=None) -> Tensor:
    """Windows of ``size`` elements along ``axis``, ``step`` apart: dim ``axis`` becomes the window
    count and a last dim of ``size`` is added (a tensor of its own, not a view).

    >>> import oar
    >>> oar.unfold(oar.arange(5), 0, 2, 2).tolist()
    [[0, 1], [2, 3]]
    """
    x = _tensor(x, "unfold")
    ax = _axis(axis, x.ndim, "unfold")
    size, step = int(size), int(step)
    n = x.shape[ax] if x.ndim else 1
    if step <= 0 or size < 0 or size > n:
        raise ArgumentError(f"unfold: size {size} must be in [0, {n}] (dim {ax} of x {fmt_shape(x.shape)}) and "
                            f"step {step} positive")
    count = (n - size) // step + 1
    windows = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    if x.ndim == 0:
        return _gather_positions(x, np.zeros_like(windows))
    picked = I.index_select(x, _const(windows.reshape(-1), x), axis=ax)
    picked = S.reshape_to(picked, [*x.shape[:ax], count, size, *x.shape[ax + 1:]])
    return S.moveaxis(picked, ax + 1, -1)


def rot90(x, k=1, axes=[0, 1], name=None) -> Tensor:  # noqa: B006 - Paddle's default
    """``x`` rotated by ``k`` quarter turns in the plane of ``axes``, from the first toward the second.

    >>> import oar
    >>> oar.rot90(oar.to_tensor([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """
    x = _tensor(x, "rot90")
    pair = _int_list(axes, "rot90", "axes")
    if len(pair) != 2 or x.ndim < 2:
        raise ArgumentError(f"rot90: axes must name 2 axes of an x with at least 2 dims, got {pair} for x {fmt_shape(x.shape)}")
    a0, a1 = (normalize_axis(a, x.ndim, "rot90", "axes") for a in pair)
    if a0 == a1:
        raise ArgumentError(f"rot90: axes {pair} name one axis twice")
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return S.flip(x, [a0, a1])
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = a1, a0
    return S.transpose(S.flip(x, a1), perm) if k == 1 else S.flip(S.transpose(x, perm), a1)


def repeat(input, repeats) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``Tensor.repeat``: ``tile`` (Paddle 3.3's torch-like repeat: whole copies along each dim).

    >>> import oar
    >>> oar.to_tensor([[1, 2]]).repeat([2, 2]).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    if isinstance(repeats, (int, np.integer)):
        repeats = [int(repeats)]
    return S.tile(input, repeats)


# -- diff, vander, combinations ---------------------------------------------------------------
def diff(x, n=1, axis=-1, prepend=None, append=None, name=None, *, out=None) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (bool: "not equal"), after concatenating
    ``prepend`` and ``append``.

    >>> import oar
    >>> oar.diff(oar.to_tensor([1, 4, 9, 16])).tolist()
    [3, 5, 7]
    """
    x = _tensor(x, "diff")
    if x.ndim == 0:
        raise ShapeError("diff: x must have at least 1 dimension, got a 0-d tensor")
    if int(n) < 1:
        raise ArgumentError(f"diff: n must be a positive int, got {n}")
    ax = _axis(axis, x.ndim, "diff")
    parts = [_tensor(t, "diff", nm) for t, nm in ((prepend, "prepend"), (x, "x"), (append, "append")) if t is not None]
    result = S.concat(parts, axis=ax) if len(parts) > 1 else x
    for _ in range(int(n)):
        length = result.shape[ax]
        later, earlier = S._slice_axis(result, ax, 1, max(length, 1)), S._slice_axis(result, ax, 0, max(length - 1, 0))
        result = E.not_equal(later, earlier) if result.dtype.is_bool else E.subtract(later, earlier)
    return _assign.assign(result, output=out) if out is not None else result


def vander(x, n=None, increasing=False, name=None) -> Tensor:
    """The Vandermonde matrix of the 1-d ``x``: columns ``x**(n-1), ..., x, 1`` (reversed with
    ``increasing``), built by repeated products so the gradient is exact at 0.

    >>> import oar
    >>> oar.vander(oar.to_tensor([1, 2, 3]), 3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    x = _tensor(x, "vander")
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-d, got shape {fmt_shape(x.shape)}")
    n = x.shape[0] if n is None else int(n)
    if n < 0:
        raise ArgumentError(f"vander: n must be non-negative, got {n}")
    if n == 0:
        return I._zeros(x, [x.shape[0], 0])
    columns = [creation.ones_like(x)]
    for _ in range(n - 1):
        columns.append(E.multiply(columns[-1], x))
    out = S.stack(columns, axis=1)
    return out if increasing else S.flip(out, 1)


def combinations(x, r=2, with_replacement=False, name=None) -> Tensor:
    """The length-``r`` combinations of the elements of the 1-d ``x``, one per row (itertools' order).

    >>> import oar
    >>> oar.combinations(oar.to_tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    x = _tensor(x, "combinations")
    if x.ndim != 1:
        raise ShapeError(f"combinations: x must be 1-d, got shape {fmt_shape(x.shape)}")
    r = int(r)
    if r < 0:
        raise ArgumentError(f"combinations: r must be non-negative, got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if r == 0:
        return I._zeros(x, [0])
    return _gather_positions(x, rows)


def cartesian_prod(x, name=None) -> Tensor:
    """The cartesian product of 1-d tensors, one combination per row (one input: itself).

    >>> import oar
    >>> oar.cartesian_prod([oar.to_tensor([1, 2]), oar.to_tensor([3, 4])]).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    xs = _tensor_list(x, "cartesian_prod")
    for i, t in enumerate(xs):
        if t.ndim != 1:
            raise ShapeError(f"cartesian_prod: x[{i}] must be 1-d, got shape {fmt_shape(t.shape)}")
    if len(xs) == 1:
        return xs[0]
    sizes = [t.shape[0] for t in xs]
    columns = []
    for i, t in enumerate(xs):
        grid = S.broadcast_to(S.reshape_to(t, [n if j == i else 1 for j, n in enumerate(sizes)]), sizes)
        columns.append(S.reshape_to(grid, [math.prod(sizes)]))
    return S.stack(columns, axis=1)


def tril_indices(row, col, offset=0, dtype="int64") -> Tensor:
    """The [2, N] row and column indices of the lower triangle of a ``row`` x ``col`` matrix.

    >>> import oar
    >>> oar.tril_indices(3, 3).tolist()
    [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    """
    target = _dt.get_dtype(dtype)
    if not target.is_integer:
        raise DTypeError(f"tril_indices: dtype must be an integer dtype, got {target.name}")
    return as_tensor(np.array(np.tril_indices(int(row), int(offset), int(col)), dtype=target.np).reshape(2, -1))


def triu_indices(row, col=None, offset=0, dtype="int64") -> Tensor:
    """The [2, N] row and column indices of the upper triangle of a ``row`` x ``col`` matrix (``col`` defaults to ``row``)."""
    target = _dt.get_dtype(dtype)
    if not target.is_integer:
        raise DTypeError(f"triu_indices: dtype must be an integer dtype, got {target.name}")
    col = int(row) if col is None else int(col)
    return as_tensor(np.array(np.triu_indices(int(row), int(offset), col), dtype=target.np).reshape(2, -1))


# -- scatters into slices, diagonals, masks ---------------------------------------------------
def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None) -> Tensor:
    """``x`` with its diagonal (``offset``, in the plane ``axis1``, ``axis2``; the shape of
    ``x.diagonal(...)``) replaced by ``y``.

    >>> import oar
    >>> oar.diagonal_scatter(oar.zeros([2, 2]), oar.ones([2])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    x, y = _tensor(x, "diagonal_scatter"), _tensor(y, "diagonal_scatter", "y")
    if x.ndim < 2:
        raise ShapeError(f"diagonal_scatter: x must have at least 2 dims, got shape {fmt_shape(x.shape)}")
    a1, a2 = _axis(axis1, x.ndim, "diagonal_scatter", "axis1"), _axis(axis2, x.ndim, "diagonal_scatter", "axis2")
    if a1 == a2:
        raise ArgumentError(f"diagonal_scatter: axis1 and axis2 must differ, got {axis1} and {axis2}")
    positions = np.diagonal(_flat_positions(x.shape), int(offset), a1, a2)
    if list(y.shape) != list(positions.shape):
        raise ShapeError(f"diagonal_scatter: y has shape {fmt_shape(y.shape)}, but the diagonal (offset {offset}) of "
                         f"x {fmt_shape(x.shape)} has shape {fmt_shape(positions.shape)}")
    return _scatter_positions(x, positions, y, "diagonal_scatter")


def fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, name=None) -> Tensor:
    """``diagonal_scatter`` with Paddle's ``dim1``/``dim2`` names (``Tensor.fill_diagonal_tensor``)."""
    return diagonal_scatter(x, y, offset, dim1, dim2)


def fill_diagonal_(x, value, offset=0, wrap=False, name=None) -> Tensor:
    """Fill the main diagonal of ``x`` (2-d, or every dim equal) with ``value`` in place, shifted
    ``offset`` columns; with ``wrap`` a tall matrix's diagonal starts again below (numpy's rule).

    >>> import oar
    >>> oar.zeros([2, 3]).fill_diagonal_(1.0, offset=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    check_target(x, "fill_diagonal_")
    if x.ndim < 2 or (x.ndim > 2 and len(set(x.shape)) != 1):
        raise ShapeError(f"fill_diagonal_: x must be 2-d or have all dims equal, got shape {fmt_shape(x.shape)}")
    cols = x.shape[-1]
    strides = np.cumprod([1, *x.shape[:0:-1]])  # row-major strides, innermost first
    step = int(strides.sum())
    end = x.size if wrap and x.ndim == 2 else min(x.shape) * (x.size // x.shape[0])
    base = np.arange(0, end, step, dtype=np.int64)[:min(x.shape) if not wrap else None]
    shifted = base % cols + int(offset)
    positions = (base + int(offset))[(shifted >= 0) & (shifted < cols)]
    values = S.broadcast_to(I._value_tensor(value, x, "fill_diagonal_"), [positions.size])
    return apply_inplace(x, _scatter_positions(x, positions, values, "fill_diagonal_"), "fill_diagonal_")


def select_scatter(x, values, axis, index, name=None) -> Tensor:
    """``x`` with its slice at ``index`` along ``axis`` replaced by ``values``.

    >>> import oar
    >>> oar.select_scatter(oar.zeros([2, 2]), oar.ones([2]), 1, 0).tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """
    x = _tensor(x, "select_scatter")
    ax = _axis(axis, x.ndim, "select_scatter")
    index = int(index.item() if isinstance(index, Tensor) else index)
    n = x.shape[ax]
    if not -n <= index < n:
        raise ArgumentError(f"select_scatter: index {index} is out of range for axis {ax} of size {n}")
    values = I._value_tensor(values, x, "select_scatter", "values")
    expected = [d for i, d in enumerate(x.shape) if i != ax]
    if list(values.shape) != expected:
        raise ShapeError(f"select_scatter: values has shape {fmt_shape(values.shape)}, expected {fmt_shape(expected)} "
                         f"(x {fmt_shape(x.shape)} without axis {ax})")
    return I.setitem(x, (slice(None),) * ax + (index % n,), values)


def slice_scatter(x, value, axes, starts, ends, strides, name=None) -> Tensor:
    """``x`` with the strided slice (``axes``, ``starts``, ``ends``, ``strides``) replaced by ``value``.

    >>> import oar
    >>> oar.slice_scatter(oar.zeros([4]), oar.ones([2]), [0], [0], [4], [2]).tolist()
    [1.0, 0.0, 1.0, 0.0]
    """
    x = _tensor(x, "slice_scatter")
    lists = [_int_list(v, "slice_scatter", nm) for v, nm in ((axes, "axes"), (starts, "starts"), (ends, "ends"), (strides, "strides"))]
    if len({len(v) for v in lists}) != 1:
        raise ArgumentError(f"slice_scatter: axes, starts, ends and strides must have one length, got {lists}")
    key = [slice(None)] * x.ndim
    for a, start, end, step in zip(*lists):
        key[_axis(a, x.ndim, "slice_scatter", "axes")] = slice(start, end, step)
    value = I._value_tensor(value, x, "slice_scatter")
    expected = list(np.empty(x.shape, dtype=np.bool_)[tuple(key)].shape)
    if list(value.shape) != expected:
        raise ShapeError(f"slice_scatter: value has shape {fmt_shape(value.shape)}, but the slice of x "
                         f"{fmt_shape(x.shape)} has shape {fmt_shape(expected)}")
    return I.setitem(x, tuple(key), value)


def masked_scatter(x, mask, value, name=None) -> Tensor:
    """``x`` with the positions where ``mask`` (broadcast to ``x``) is True filled, in row-major
    order, with the leading elements of ``value``.

    >>> import oar
    >>> m = oar.to_tensor([True, False, True])
    >>> oar.masked_scatter(oar.zeros([3]), m, oar.to_tensor([5.0, 6.0])).tolist()
    [5.0, 0.0, 6.0]
    """
    x, mask = _tensor(x, "masked_scatter"), _tensor(mask, "masked_scatter", "mask")
    I._check_mask_dtype("masked_scatter", mask.dtype)
    value = I._value_tensor(value, x, "masked_scatter")
    shape = list(_broadcast("masked_scatter", x.shape, mask.shape, names=["x", "mask"]))
    x, mask = S.broadcast_to(x, shape), S.broadcast_to(mask, shape)
    if value.size == 0:  # nothing to gather from: only an all-False mask fits
        if np.count_nonzero(mask.numpy()):
            raise ShapeError(f"masked_scatter: mask has True elements but value {fmt_shape(value.shape)} is empty")
        return x
    # The k-th True takes value's k-th element; a False before the first True reads index -1, unused.
    order = R.cumsum(_flat(E.cast(mask, "int64"))) - 1
    try:
        picked = S.reshape_to(I.gather(_flat(value), order), shape)
    except IndexOutOfRangeError:
        raise ShapeError(f"masked_scatter: mask {fmt_shape(mask.shape)} has more True elements than value "
                         f"{fmt_shape(value.shape)} has elements ({value.size})") from None
    return E.where(mask, picked, x)


def index_fill(x, index, axis, value, name=None) -> Tensor:
    """``x`` with the slices at ``index`` along ``axis`` filled with ``value`` (a number or 0-d tensor).

    >>> import oar
    >>> oar.index_fill(oar.zeros([2, 3]), oar.to_tensor([0, 2]), 1, 7.0).tolist()
    [[7.0, 0.0, 7.0], [7.0, 0.0, 7.0]]
    """
    x = _tensor(x, "index_fill")
    ax = _axis(axis, x.ndim, "index_fill")
    index = I._index_tensor(index, "index_fill")
    if index.ndim > 1:
        raise ShapeError(f"index_fill: index must be 1-d, got shape {fmt_shape(index.shape)}")
    n = x.shape[ax] if x.ndim else 1
    ones = I._on_device(np.ones(index.size, np.float32), x)
    hits = I.index_add(I._on_device(np.zeros(n, np.float32), x), index, 0, ones)  # >0 where index names a slice
    hits = S.reshape_to(E.greater_than(hits, scalar_like(0.0, hits)), [n if i == ax else 1 for i in range(x.ndim)])
    if isinstance(value, Tensor) and value.size != 1:
        raise ShapeError(f"index_fill: value must be a number or a 1-element tensor, got shape {fmt_shape(value.shape)}")
    value = I._value_tensor(S.reshape_to(value, []) if isinstance(value, Tensor) else value, x, "index_fill")
    return E.where(hits, S.broadcast_to(value, list(x.shape)), x)


def index_put(x, indices, value, accumulate=False, name=None) -> Tensor:
    """``x`` with ``x[indices] = value`` (a tuple of index or bool tensors, numpy's advanced
    indexing), or ``+= value`` with ``accumulate`` (repeated positions add up).

    >>> import oar
    >>> i = (oar.to_tensor([0, 0]), oar.to_tensor([1, 1]))
    >>> oar.index_put(oar.zeros([2, 2]), i, oar.to_tensor([1.0, 2.0]), accumulate=True).tolist()
    [[0.0, 3.0], [0.0, 0.0]]
    """
    x = _tensor(x, "index_put")
    if isinstance(indices, Tensor) or not isinstance(indices, (list, tuple)):
        raise ArgumentError(f"index_put: indices must be a tuple of tensors, got {type(indices).__name__}")
    key = tuple(I._index_tensor(t, "index_put", f"indices[{i}]", allow_bool=True, like=x)
                for i, t in enumerate(indices))
    value = I._value_tensor(value, x, "index_put")
    if not accumulate:
        return I.setitem(x, key, value)
    items, tensors = I.parse_index(key, x)
    target = I.getitem(x, key).shape  # the shape value broadcasts to
    value = I._broadcast_checked("index_put", value, target, "value")
    return E.add(x, I.getitem_backward(value, tensors, items, x.shape))


def index_sample(x, index) -> Tensor:
    """Per row ``i`` of the 2-d ``x``, the elements at ``index[i]`` (``index`` is [rows, k]).

    >>> import oar
    >>> oar.index_sample(oar.to_tensor([[1, 2, 3], [4, 5, 6]]), oar.to_tensor([[2, 0], [1, 1]])).tolist()
    [[3, 1], [5, 5]]
    """
    x, index = _tensor(x, "index_sample"), I._index_tensor(index, "index_sample")
    if x.ndim != 2 or index.ndim != 2 or index.shape[0] != x.shape[0]:
        raise ShapeError(f"index_sample: x and index must be 2-d with the same number of rows, got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(index.shape)}")
    return I.take_along_axis(x, index, 1, broadcast=False)


def scatter_add(input, dim, index, src) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``input`` with ``src`` added at ``index`` along ``dim`` (torch's ``scatter_add``: ``index``
    may be smaller than ``src``, whose leading part is used).

    >>> import oar
    >>> oar.scatter_add(oar.zeros([3]), 0, oar.to_tensor([0, 0, 2]), oar.ones([3])).tolist()
    [2.0, 0.0, 1.0]
    """
    return I.put_along_axis(input, index, src, dim, "add", include_self=True, broadcast=False)


_SCATTER_REDUCES = {"sum": "add", "prod": "mul", "mean": "mean", "amax": "amax", "amin": "amin"}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True) -> Tensor:  # noqa: A002
    """``input`` with ``src`` combined into it at ``index`` along ``dim`` by ``reduce`` ('sum',
    'prod', 'mean', 'amax', 'amin'); ``include_self=False`` leaves the old values out.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0])
    >>> oar.scatter_reduce(x, 0, oar.to_tensor([0, 0]), oar.to_tensor([5.0, 3.0]), "amax").tolist()
    [5.0, 2.0]
    """
    if reduce not in _SCATTER_REDUCES:
        raise ArgumentError(f"scatter_reduce: reduce must be one of {list(_SCATTER_REDUCES)}, got {reduce!r}")
    return I.put_along_axis(input, index, src, dim, _SCATTER_REDUCES[reduce], include_self=include_self, broadcast=False)


def take(x, index, mode="raise", name=None) -> Tensor:
    """The elements of ``x`` read as 1-d at ``index`` (shaped like ``index``); out-of-range
    indices raise (``'raise'``, negatives count from the end), wrap or are clipped.

    >>> import oar
    >>> oar.take(oar.to_tensor([[1, 2], [3, 4]]), oar.to_tensor([0, -1, 5]), mode="wrap").tolist()
    [1, 4, 2]
    """
    x, index = _tensor(x, "take"), I._index_tensor(index, "take")
    if mode not in ("raise", "wrap", "clip"):
        raise ArgumentError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    n = x.size
    if mode == "wrap":
        index = E.remainder(index, scalar_like(n, index))
    elif mode == "clip":
        index = E.clip(index, 0, n - 1)
    try:
        picked = I.gather(_flat(x), _flat(index))
    except IndexOutOfRangeError as exc:
        raise IndexOutOfRangeError(f"take (mode='raise', x of {n} elements): {exc}") from None
    return S.reshape_to(picked, list(index.shape))


def take_along_dim(arr, indices, axis, broadcast=True, *, out=None) -> Tensor:
    """``take_along_axis`` under torch's name (``axis=None``: of the flattened ``arr``).

    >>> import oar
    >>> oar.take_along_dim(oar.to_tensor([[1, 2], [3, 4]]), oar.to_tensor([[1], [0]]), 1).tolist()
    [[2], [3]]
    """
    arr, indices = _tensor(arr, "take_along_dim", "arr"), I._index_tensor(indices, "take_along_dim", "indices")
    if axis is None:
        arr, indices, axis = _flat(arr), _flat(indices), 0
    result = I.take_along_axis(arr, indices, axis, broadcast=broadcast)
    return _assign.assign(result, output=out) if out is not None else result


def multiplex(inputs, index, name=None) -> Tensor:
    """Row ``i`` of the output is row ``i`` of ``inputs[index[i]]`` (``index`` is [rows, 1]).

    >>> import oar
    >>> a, b = oar.to_tensor([[1, 2], [3, 4]]), oar.to_tensor([[5, 6], [7, 8]])
    >>> oar.multiplex([a, b], oar.to_tensor([[1], [0]])).tolist()
    [[5, 6], [3, 4]]
    """
    xs = _tensor_list(inputs, "multiplex", "inputs")
    index = I._index_tensor(index, "multiplex")
    rows = xs[0].shape[0] if xs[0].ndim else 0
    if index.ndim != 2 or index.shape[1] != 1 or index.shape[0] != rows:
        raise ShapeError(f"multiplex: index must have shape [{rows}, 1] (one row of inputs each), got {fmt_shape(index.shape)}")
    row_ids = S.reshape_to(creation.arange(0, rows, dtype=index.dtype.name), [rows, 1])
    return I.gather_nd(S.stack(xs, axis=0), S.concat([index, row_ids], axis=1))


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1) -> Tensor:  # noqa: A002
    """Indices of shard ``shard_id`` (of ``nshards`` of ``ceil(index_num / nshards)`` each) made
    local to it; indices of other shards become ``ignore_value``.

    >>> import oar
    >>> oar.shard_index(oar.to_tensor([[1], [6], [12]]), 20, 2, 0).tolist()
    [[1], [6], [-1]]
    """
    x = _tensor(input, "shard_index", "input")
    if not x.dtype.is_integer:
        raise DTypeError(f"shard_index: input must be an int32 or int64 tensor, got {x.dtype.name}")
    if nshards <= 0 or not 0 <= shard_id < nshards:
        raise ArgumentError(f"shard_index: shard_id must be in [0, nshards) with nshards > 0, got {shard_id} and {nshards}")
    shard_size = (int(index_num) + nshards - 1) // nshards
    size = scalar_like(shard_size, x)
    mine = E.equal(E.floor_divide(x, size), scalar_like(int(shard_id), x))
    return E.where(mine, E.remainder(x, size), creation.full_like(x, ignore_value))


def _reshaping_in_place(fn, name: str):
    """The in-place variant of a view op that changes the shape (``reshape_``, ``squeeze_``, ...):
    ``x`` takes the view's shape and history and keeps its memory; returns ``x``.

    ``apply_inplace`` keeps shapes, so this is its own small path: the version is bumped (a node
    that saved ``x`` then refuses to read it), and the tape and a trace follow ``x`` to the view
    (``_follow``). A view, or a tensor with views or a ``detach()``, gets a buffer of its own and
    stops sharing memory with them: their view chains are written for its old shape.
    """

    def in_place(x, *args, **kwargs):
        check_target(x, name)
        tied = x._view is not None  # read before fn: the view fn makes ties x too
        result = fn(x, *args, **kwargs)
        x._set_buffer(result._data.copy() if tied else result._data)  # also unties result from x
        x._bump_version()
        _follow(x, result, modes_above_eager())
        return x

    in_place.__name__ = in_place.__qualname__ = name
    in_place.__doc__ = f"In-place ``{fn.__name__}``: ``x`` takes the shape of ``{fn.__name__}(x, ...)``; returns ``x``."
    return in_place


reshape_ = _reshaping_in_place(S.reshape, "reshape_")
flatten_ = _reshaping_in_place(S.flatten, "flatten_")
squeeze_ = _reshaping_in_place(S.squeeze, "squeeze_")
unsqueeze_ = _reshaping_in_place(S.unsqueeze, "unsqueeze_")
transpose_ = _reshaping_in_place(S.transpose, "transpose_")
t_ = _reshaping_in_place(S.t, "t_")


scatter_nd = I.scatter_nd
masked_scatter_ = _inplace(masked_scatter, "masked_scatter_")
index_fill_ = _inplace(index_fill, "index_fill_")
index_put_ = _inplace(index_put, "index_put_")
scatter_add_ = _inplace(scatter_add, "scatter_add_")
fill_diagonal_tensor_ = _inplace(fill_diagonal_tensor, "fill_diagonal_tensor_")
tril_ = _inplace(S.tril, "tril_")
triu_ = _inplace(S.triu, "triu_")


OPS = [view_dtype_op]

# -- meshgrid, repeat_interleave ------------------------------------------------------------------
def meshgrid(*args, **kwargs) -> list[Tensor]:
    """Coordinate grids of 1-D tensors, as ``paddle.meshgrid``: ``meshgrid(x, y)`` or
    ``meshgrid([x, y])``; ``indexing='ij'`` (the default: output ``i`` varies along dim ``i``) or
    ``'xy'`` (the first two dims swapped). Each grid is a broadcast, so gradients flow back.

    >>> import oar
    >>> gx, gy = oar.meshgrid(oar.to_tensor([1, 2, 3]), oar.to_tensor([4, 5]))
    >>> gx.shape, gy.tolist()
    ([3, 2], [[4, 5], [4, 5], [4, 5]])
    """
    indexing = kwargs.pop("indexing", "ij")
    kwargs.pop("name", None)
    if kwargs:
        raise ArgumentError(f"meshgrid: unexpected arguments {sorted(kwargs)}")
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    tensors = [as_tensor(t, f"args[{i}]", "meshgrid") for i, t in enumerate(tensors)]
    for i, t in enumerate(tensors):
        if len(t.shape) > 1:
            raise ShapeError(f"meshgrid: args[{i}] must be 0-d or 1-d, got shape {fmt_shape(t.shape)}")
    sizes = [math.prod(t.shape) for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, t in enumerate(tensors):
        axis = i if indexing == "ij" or len(tensors) < 2 or i > 1 else 1 - i
        view = [1] * len(tensors)
        view[axis] = sizes[axis]
        grids.append(S.broadcast_to(S.reshape(t, view), sizes))
    return grids


def repeat_interleave(x, repeats, axis=None, name=None, *, output_size=None) -> Tensor:
    """Each element (or slice along ``axis``) repeated ``repeats`` times in place, as
    ``paddle.repeat_interleave``: ``repeats`` is an int or a 1-D int tensor of one count per
    element; ``axis=None`` repeats the flattened ``x``. A gather of the input, so differentiable.

    >>> import oar
    >>> oar.repeat_interleave(oar.to_tensor([[1, 2], [3, 4]]), 2, axis=1).tolist()
    [[1, 1, 2, 2], [3, 3, 4, 4]]
    """
    x = as_tensor(x, "x", "repeat_interleave")
    if axis is None:
        x, axis = S.flatten(x), 0
    axis = normalize_axis(axis, len(x.shape), "repeat_interleave")
    size = x.shape[axis]
    if isinstance(repeats, Tensor):
        if not repeats.dtype.is_integer or len(repeats.shape) > 1:
            raise ArgumentError(f"repeat_interleave: repeats must be an int or a 1-D int tensor, got "
                                f"{repeats.dtype.name}{fmt_shape(repeats.shape)}")
        counts = repeats.numpy().reshape(-1)
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.array([int(repeats)])
    else:
        raise ArgumentError(f"repeat_interleave: repeats must be an int or a 1-D int tensor, got {type(repeats).__name__}")
    if counts.size not in (1, size):
        raise ShapeError(f"repeat_interleave: repeats has {counts.size} counts for {size} elements along axis {axis}")
    if (counts < 0).any():
        raise ArgumentError("repeat_interleave: repeats must not be negative")
    index = np.repeat(np.arange(size, dtype=np.int64), np.broadcast_to(counts, (size,)))
    if output_size is not None and int(output_size) != index.size:
        raise ShapeError(f"repeat_interleave: output_size={output_size} but the repeats give {index.size}")
    return I.index_select(x, _const(index, x), axis)


__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "as_strided", "block_diag", "broadcast_shape",
    "broadcast_shapes", "broadcast_tensors", "cartesian_prod", "column_stack", "row_stack", "hstack",
    "vstack", "dstack", "hsplit", "vsplit", "dsplit", "tensor_split", "combinations", "crop",
    "diagonal_scatter", "select_scatter", "slice_scatter", "masked_scatter", "masked_scatter_",
    "index_fill", "index_fill_", "index_put", "index_put_", "index_sample", "scatter_add", "scatter_add_",
    "scatter_reduce", "take", "take_along_dim", "narrow", "unflatten", "unfold", "view", "view_as", "ravel",
    "reverse", "tril_indices", "triu_indices", "vander", "multiplex", "shard_index", "diff", "rot90",
    "reduce_as", "tril_", "triu_", "reshape_", "flatten_", "squeeze_", "unsqueeze_", "transpose_", "t_",
    "meshgrid", "repeat_interleave",
]

# Paddle 3.3.1's Tensor methods of this family.
METHODS: dict = {
    name: globals()[name] for name in __all__
    if name not in ("block_diag", "broadcast_shape", "broadcast_shapes", "broadcast_tensors", "multiplex",
                    "cartesian_prod", "column_stack", "row_stack", "hstack", "vstack", "dstack", "crop",
                    "tril_indices", "triu_indices", "meshgrid")
} | {
    "split_with_sizes": split_with_sizes, "scatter_nd": scatter_nd, "repeat": repeat,
    "fill_diagonal_": fill_diagonal_, "fill_diagonal_tensor": fill_diagonal_tensor,
    "fill_diagonal_tensor_": fill_diagonal_tensor_,
}
