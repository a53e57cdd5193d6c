"""Shape and data-movement ops: reshape, transpose, concat, split, tile, flip, slice, pad, ...

Each op is defined in adjacent lines: the ``Op`` (numpy reference kernel, meta, traits), its
gradient rule written with oar ops, and the Paddle-named public function that normalises the
arguments into plain attributes. Some functions bind another op: ``moveaxis``, ``t`` and
``Tensor.T`` are ``transpose``, ``chunk`` is ``split``, ``unstack`` is ``unbind``, ``expand`` and
``expand_as`` are ``broadcast_to``. ``pad_axes`` (the ``pad`` op) is not top-level, as Paddle
has only ``paddle.nn.functional.pad``.
"""

from __future__ import annotations

import builtins
import math
import sys

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import registries as _registries
from oar._engine.op import COMPLEX, Op, same_samples
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    dispatch,
    fmt_shape,
    normalize_axis,
)
from oar.errors import ArgumentError, ShapeError

SHAPE = ("shape",)
VIEW = ("shape", "view")  # a view of its input, as in Paddle: in-place writes through it reach the input
ALIAS = ("shape", "alias")  # numpy's result may be the input's memory, but Paddle's is a tensor of its own
_FULL = {"kind": "slice", "start": None, "stop": None, "step": None}  # ``x[:]`` on one axis, as getitem writes it

_slice = builtins.slice  # this module defines Paddle's ``slice``


# -- argument helpers -------------------------------------------------------------------------
def _int_list(value, op: str, name: str) -> list[int]:
    """An int, a sequence of ints (or one-element tensors), or an int tensor -> a list of ints."""
    if isinstance(value, Tensor):
        value = value.tolist()
        value = value if isinstance(value, list) else [value]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)]
    if not isinstance(value, (list, tuple)):
        raise ArgumentError(f"{op}: {name} must be an int or a list of ints, got {type(value).__name__}")
    out = []
    for v in value:
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ArgumentError(f"{op}: {name} must hold ints, got {type(v).__name__} ({v!r}) in {list(value)}")
        out.append(int(v))
    return out


def _axes(axis, ndim: int, op: str, name: str = "axis") -> list[int]:
    """Normalised axes of an int or a list, rejecting duplicates."""
    axes = [normalize_axis(a, ndim, op, name) for a in _int_list(axis, op, name)]
    if len(set(axes)) != len(axes):
        raise ArgumentError(f"{op}: {name} {_int_list(axis, op, name)} names an axis twice")
    return axes


def _numel(dims) -> int | None:
    """The product of dims, or None when one is dynamic."""
    if any(d is None for d in dims):
        return None
    return int(math.prod(dims))  # not np.prod: a ufunc reduction costs microseconds per flatten


def _tensors(x, op: str) -> list[Tensor]:
    if isinstance(x, Tensor) or not isinstance(x, (list, tuple)):
        raise ArgumentError(f"{op}: x must be a list or tuple of tensors, got {type(x).__name__}")
    if not x:
        raise ArgumentError(f"{op}: x is an empty list; give at least one tensor")
    return [as_tensor(t, f"x[{i}]", op) for i, t in enumerate(x)]


def _promoted(xs):
    dtype = xs[0].dtype
    for m in xs[1:]:
        dtype = _dt.PROMOTION_TABLE[dtype, m.dtype]
    return dtype


# -- reshape ----------------------------------------------------------------------------------
def resolve_reshape(op: str, in_shape, shape, copy_zeros: bool = True) -> tuple:
    """The output shape of reshaping ``in_shape`` to ``shape``; checks the size.

    Paddle's rule: one -1 is inferred, and with ``copy_zeros`` a 0 copies the input dim at that
    position. The op's attribute is the resolved shape, where a 0 is a literal zero-size dim.
    """
    shape = [int(d) for d in shape]
    if copy_zeros:
        if any(d == 0 and i >= len(in_shape) for i, d in enumerate(shape)):
            raise ShapeError(f"{op}: shape {shape} has a 0 (copy the input dim) at a position the "
                             f"{len(in_shape)}-d input {fmt_shape(in_shape)} does not have")
        out = [in_shape[i] if d == 0 else d for i, d in enumerate(shape)]
    else:
        out = list(shape)
    if any(d is not None and d < -1 for d in out):
        raise ShapeError(f"{op}: shape {shape} has a negative dimension other than -1")
    if out.count(-1) > 1:
        raise ShapeError(f"{op}: at most one dimension of shape may be -1, got {shape}")
    if any(d is None for d in in_shape) or any(d is None for d in out):
        return tuple(out)
    total = math.prod(in_shape)  # Python ints: np.prod's int64 wraps, and [2**32, 2**32] would "fit" 0 elements
    if -1 in out:
        known = math.prod([d for d in out if d != -1])
        if known == 0 or total % known:
            raise ShapeError(f"{op}: cannot reshape a tensor of shape {fmt_shape(in_shape)} ({total} elements) to {shape}")
        out[out.index(-1)] = total // known
    elif math.prod(out) != total:
        raise ShapeError(f"{op}: cannot reshape a tensor of shape {fmt_shape(in_shape)} ({total} elements) to {shape}")
    if total == 0 and math.prod(d for d in out if d) > sys.maxsize:  # numpy refuses it, 0 elements or not
        raise ShapeError(f"{op}: shape {fmt_shape(out)} is more than an array can address: its non-zero dimensions "
                         f"multiply past {sys.maxsize:,}")
    return tuple(out)


def _reshape_kernel(x, shape):
    return np.reshape(x, shape)


def _reshape_meta(x: TensorMeta, shape) -> TensorMeta:
    out = resolve_reshape("reshape", x.shape, shape, copy_zeros=False)
    return TensorMeta(tuple(None if d == -1 else d for d in out), x.dtype)  # -1 of a dynamic input: dynamic


reshape_op = Op("reshape", reference=_reshape_kernel, meta=_reshape_meta, traits=VIEW + COMPLEX, per_sample=same_samples)


@reshape_op.defgrad
def _reshape_grad(ctx, g):
    return reshape_to(g, ctx.in_shapes[0])


@reshape_op.defview_inverse
def _reshape_back(base, value, attrs, index):
    """The reshapes view all of ``base``: written through, ``base`` becomes ``value`` reshaped back."""
    return reshape_to(value, base._data.shape)


def reshape_to(x: Tensor, shape) -> Tensor:
    """``x`` reshaped to exactly ``shape`` (a 0 is a zero-size dim, not Paddle's "copy this dim");
    what gradient rules use to restore a saved shape."""
    shape = [int(d) for d in shape]
    if tuple(shape) == tuple(x._data.shape):
        return x
    return dispatch(reshape_op, (x,), {"shape": shape})


def reshape(x, shape, name=None) -> Tensor:
    """``x`` with a new shape of the same size; 0 keeps a dim, -1 infers one (Paddle's rule).

    >>> import oar
    >>> oar.reshape(oar.arange(6), [2, -1]).shape
    [2, 3]
    >>> oar.reshape(oar.zeros([2, 3, 4]), [0, -1]).shape
    [2, 12]
    """
    x = as_tensor(x, "x", "reshape")
    shape = _int_list(shape, "reshape", "shape")
    resolved = resolve_reshape("reshape", x._data.shape, shape)
    if resolved == x._data.shape:
        return x
    attr = list(resolved)
    if -1 not in shape and 0 in shape:
        # The first copied dim is inferred when the op runs, so that a program captured with a
        # dynamic batch (reshape(x, [0, 0, heads, head_dim]) in attention) serves any batch size.
        attr[shape.index(0)] = -1
    elif -1 in shape:
        attr[shape.index(-1)] = -1
    return dispatch(reshape_op, (x,), {"shape": attr})


# -- flatten ----------------------------------------------------------------------------------
def _flat_shape(shape, start_axis: int, stop_axis: int) -> tuple:
    if len(shape) == 0:
        return (1,)
    return (*shape[:start_axis], _numel(shape[start_axis:stop_axis + 1]), *shape[stop_axis + 1:])


def _flatten_kernel(x, start_axis, stop_axis):
    return np.reshape(x, _flat_shape(x.shape, start_axis, stop_axis))


def _flatten_meta(x: TensorMeta, start_axis, stop_axis) -> TensorMeta:
    return TensorMeta(_flat_shape(x.shape, start_axis, stop_axis), x.dtype)


flatten_op = Op("flatten", reference=_flatten_kernel, meta=_flatten_meta, traits=VIEW + COMPLEX, per_sample=same_samples)


@flatten_op.defgrad
def _flatten_grad(ctx, g):
    return reshape_to(g, ctx.in_shapes[0])


flatten_op.defview_inverse(_reshape_back)


def flatten(x, start_axis=0, stop_axis=-1, name=None) -> Tensor:
    """Merge the axes ``start_axis..stop_axis`` (inclusive) into one; a 0-d tensor becomes shape [1].

    >>> import oar
    >>> oar.flatten(oar.zeros([2, 3, 4, 5]), start_axis=1, stop_axis=2).shape
    [2, 12, 5]
    """
    x = as_tensor(x, "x", "flatten")
    ndim = x._data.ndim
    start = normalize_axis(start_axis, ndim, "flatten", "start_axis")
    stop = normalize_axis(stop_axis, ndim, "flatten", "stop_axis")
    if start > stop:
        raise ArgumentError(f"flatten: start_axis={start_axis} comes after stop_axis={stop_axis} for a "
                            f"{ndim}-d tensor; start_axis must not be greater than stop_axis")
    return dispatch(flatten_op, (x,), {"start_axis": start, "stop_axis": stop})


# -- squeeze / unsqueeze ----------------------------------------------------------------------
def _squeeze_kernel(x, axis):
    if axis is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(a for a in axis if x.shape[a] == 1))


def _squeeze_meta(x: TensorMeta, axis) -> TensorMeta:
    ndim = len(x.shape)
    if axis is None:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        for a in axis:
            if not 0 <= a < ndim:
                raise ArgumentError(f"squeeze: axis {a} is out of range for a {ndim}-d tensor")
        # Paddle squeezes only the named axes whose size is 1 and ignores the others.
        drop = {a for a in axis if x.shape[a] == 1}
    return TensorMeta(tuple(d for i, d in enumerate(x.shape) if i not in drop), x.dtype)


squeeze_op = Op("squeeze", reference=_squeeze_kernel, meta=_squeeze_meta, traits=VIEW + COMPLEX, per_sample=same_samples)


@squeeze_op.defgrad
def _squeeze_grad(ctx, g):
    return reshape_to(g, ctx.in_shapes[0])


squeeze_op.defview_inverse(_reshape_back)


def squeeze(x, axis=None, name=None) -> Tensor:
    """Remove axes of size 1: all of them (``axis=None``) or those named; as in Paddle, a named
    axis whose size is not 1 is left alone.

    >>> import oar
    >>> oar.squeeze(oar.zeros([1, 3, 1]), axis=[0, 1]).shape
    [3, 1]
    """
    x = as_tensor(x, "x", "squeeze")
    if axis is not None:
        if x._data.ndim == 0:
            _axes(axis, 0, "squeeze")  # only validates: a 0-d tensor has nothing to squeeze
            axis = []
        else:
            axis = sorted(_axes(axis, x._data.ndim, "squeeze"))
    return dispatch(squeeze_op, (x,), {"axis": axis})


def _unsqueeze_kernel(x, axis):
    return np.expand_dims(x, tuple(axis))


def _unsqueeze_meta(x: TensorMeta, axis) -> TensorMeta:
    ndim = len(x.shape) + len(axis)
    if any(not 0 <= a < ndim for a in axis) or len(set(axis)) != len(axis):
        raise ArgumentError(f"unsqueeze: axis {axis} are not distinct positions of the {ndim}-d output")
    dims = iter(x.shape)
    return TensorMeta(tuple(1 if i in axis else next(dims) for i in range(ndim)), x.dtype)


unsqueeze_op = Op("unsqueeze", reference=_unsqueeze_kernel, meta=_unsqueeze_meta, traits=VIEW + COMPLEX, per_sample=same_samples)


@unsqueeze_op.defgrad
def _unsqueeze_grad(ctx, g):
    return reshape_to(g, ctx.in_shapes[0])


unsqueeze_op.defview_inverse(_reshape_back)


def unsqueeze(x, axis, name=None) -> Tensor:
    """Insert axes of size 1. With a list, the axes are inserted one after another, each
    counted in the shape produced so far (Paddle's rule): ``[0, 2]`` on ``[5, 10]`` gives
    ``[1, 5, 1, 10]``, and a negative axis ``a`` means ``a + rank_so_far + 1``.

    >>> import oar
    >>> oar.unsqueeze(oar.zeros([5, 10]), axis=[0, 2]).shape
    [1, 5, 1, 10]
    >>> oar.unsqueeze(oar.zeros([5, 10]), axis=-1).shape
    [5, 10, 1]
    """
    x = as_tensor(x, "x", "unsqueeze")
    layout = [False] * x._data.ndim  # True marks an inserted axis
    for a in _int_list(axis, "unsqueeze", "axis"):
        rank = len(layout)
        position = a + rank + 1 if a < 0 else a
        if not 0 <= position <= rank:
            raise ArgumentError(f"unsqueeze: axis {a} is out of range when inserting into a {rank}-d shape "
                                f"(expected {-rank - 1}..{rank})")
        layout.insert(position, True)
    return dispatch(unsqueeze_op, (x,), {"axis": [i for i, new in enumerate(layout) if new]})


# -- transpose, moveaxis, t, Tensor.T ---------------------------------------------------------
def _transpose_kernel(x, perm):
    return np.transpose(x, perm)


def _transpose_meta(x: TensorMeta, perm) -> TensorMeta:
    if sorted(perm) != list(range(len(x.shape))):
        raise ArgumentError(f"transpose: perm {list(perm)} is not a permutation of the axes of a "
                            f"{len(x.shape)}-d tensor {fmt_shape(x.shape)}")
    return TensorMeta(tuple(x.shape[p] for p in perm), x.dtype)


transpose_op = Op("transpose", reference=_transpose_kernel, meta=_transpose_meta, traits=VIEW + COMPLEX,
                  per_sample=lambda attrs, ins, outs: attrs["perm"][0] == 0)  # the samples stay first


@transpose_op.defgrad
def _transpose_grad(ctx, g):
    perm = ctx.attrs["perm"]
    return transpose(g, [int(i) for i in np.argsort(perm)])


@transpose_op.defview_inverse
def _transpose_back(base, value, attrs, index):
    return dispatch(transpose_op, (value,), {"perm": [int(i) for i in np.argsort(attrs["perm"])]})


def transpose(x, perm, name=None) -> Tensor:
    """Permute the axes: axis ``i`` of the result is axis ``perm[i]`` of ``x``.

    >>> import oar
    >>> oar.transpose(oar.zeros([2, 3, 4]), perm=[1, 0, 2]).shape
    [3, 2, 4]
    """
    x = as_tensor(x, "x", "transpose")
    ndim = x._data.ndim
    given = _int_list(perm, "transpose", "perm")
    if len(given) != ndim:
        raise ArgumentError(f"transpose: perm {given} has {len(given)} entries, but x has {ndim} dimensions "
                            f"(shape {x.shape})")
    perm = [normalize_axis(p, ndim, "transpose", "perm") for p in given]
    if len(set(perm)) != ndim:
        raise ArgumentError(f"transpose: perm {given} is not a permutation of the axes of a {ndim}-d tensor")
    return dispatch(transpose_op, (x,), {"perm": perm})


def moveaxis(x, source, destination, name=None) -> Tensor:
    """Move axes ``source`` to positions ``destination`` (ints or lists); the other axes keep
    their order. A ``transpose``.

    >>> import oar
    >>> oar.moveaxis(oar.zeros([3, 2, 4]), [0, 1], [1, 2]).shape
    [4, 3, 2]
    """
    x = as_tensor(x, "x", "moveaxis")
    ndim = x._data.ndim
    src = _axes(source, ndim, "moveaxis", "source")
    dst = _axes(destination, ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ArgumentError(f"moveaxis: source {source} and destination {destination} must have the same length")
    perm = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return dispatch(transpose_op, (x,), {"perm": perm})


def t(input, name=None) -> Tensor:  # noqa: A002 - Paddle's argument name
    """Transpose a 2-d tensor; 0-d and 1-d tensors are returned as they are (Paddle's ``t``).

    >>> import oar
    >>> oar.t(oar.zeros([2, 3])).shape
    [3, 2]
    """
    x = as_tensor(input, "input", "t")
    if x._data.ndim > 2:
        raise ArgumentError(f"t: input must have at most 2 dimensions, got shape {x.shape}; use "
                            f"oar.transpose(x, perm) for more")
    if x._data.ndim < 2:
        return x
    return dispatch(transpose_op, (x,), {"perm": [1, 0]})


def _reversed_axes(self) -> Tensor:
    """``x.T``: the axes in reverse order (0-d and 1-d tensors are returned as they are)."""
    if self._data.ndim < 2:
        return self
    return dispatch(transpose_op, (self,), {"perm": list(range(self._data.ndim))[::-1]})


# -- concat / stack ---------------------------------------------------------------------------
def _concat_kernel(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _concat_meta(*xs: TensorMeta, axis) -> TensorMeta:
    first = xs[0].shape
    ndim = len(first)
    if ndim == 0:
        raise ShapeError("concat: input 0 is a 0-d tensor; concat needs at least 1-d tensors (use oar.stack "
                         "to join 0-d tensors)")
    if not 0 <= axis < ndim:
        raise ArgumentError(f"concat: axis {axis} is out of range for {ndim}-d inputs")
    known = list(first)  # the dims off the axis, filled in as inputs reveal dynamic ones
    size = 0
    for i, m in enumerate(xs):
        fits = len(m.shape) == ndim and all(
            k == axis or a is None or b is None or a == b for k, (a, b) in enumerate(zip(m.shape, known))
        )
        if not fits:
            expected = "[" + ", ".join("?" if k == axis or d is None else str(d) for k, d in enumerate(known)) + "]"
            raise ShapeError(f"concat: input {i} has shape {fmt_shape(m.shape)}, expected {expected} "
                             f"(the shape of input 0 {fmt_shape(first)} except along axis {axis})")
        known = [b if a is None else a for a, b in zip(known, m.shape)]
        d = m.shape[axis]
        size = None if size is None or d is None else size + d
    known[axis] = size
    shape = tuple(known)
    return TensorMeta(shape, _promoted(xs))


concat_op = Op("concat", reference=_concat_kernel, meta=_concat_meta, traits=SHAPE + COMPLEX, promote=_dt.SAME_DTYPE)


@concat_op.defgrad
def _concat_grad(ctx, g):
    axis = ctx.attrs["axis"]
    sections = [s[axis] for s in ctx.in_shapes]
    return tuple(dispatch(split_op, (g,), {"sections": sections, "axis": axis}))


def concat(x, axis=0, name=None) -> Tensor:
    """Join tensors along an existing axis; mixed dtypes are promoted. As in Paddle's dygraph,
    zero-size inputs are skipped, so ``concat([empty, t])`` works whatever the empty shape.

    >>> import oar
    >>> oar.concat([oar.zeros([2, 3]), oar.ones([1, 3])]).shape
    [3, 3]
    >>> oar.concat([oar.zeros([2, 3]), oar.ones([2, 1])], axis=-1).shape
    [2, 4]
    """
    xs = _tensors(x, "concat")
    nonempty = [t for t in xs if t._data.size]
    if nonempty:
        xs = nonempty
    ndim = xs[0]._data.ndim
    if ndim == 0:
        raise ArgumentError("concat: the inputs are 0-d tensors; concat needs at least 1-d tensors "
                            "(use oar.stack to join 0-d tensors)")
    return dispatch(concat_op, tuple(xs), {"axis": normalize_axis(axis, ndim, "concat")})


def _stack_kernel(*xs, axis):
    return np.stack(xs, axis=axis)


def _stack_meta(*xs: TensorMeta, axis) -> TensorMeta:
    first = xs[0].shape
    for i, m in enumerate(xs):
        if len(m.shape) != len(first) or any(a is not None and b is not None and a != b for a, b in zip(m.shape, first)):
            raise ShapeError(f"stack: input {i} has shape {fmt_shape(m.shape)}, expected {fmt_shape(first)} "
                             f"(all inputs must have the same shape)")
    if not 0 <= axis <= len(first):
        raise ArgumentError(f"stack: axis {axis} is out of range for stacking {len(first)}-d inputs")
    shape = list(first)
    shape.insert(axis, len(xs))
    return TensorMeta(tuple(shape), _promoted(xs))


stack_op = Op("stack", reference=_stack_kernel, meta=_stack_meta, traits=SHAPE + COMPLEX, promote=_dt.SAME_DTYPE)


@stack_op.defgrad
def _stack_grad(ctx, g):
    return tuple(dispatch(unbind_op, (g,), {"axis": ctx.attrs["axis"]}))


def stack(x, axis=0, name=None) -> Tensor:
    """Join tensors of the same shape along a new axis; mixed dtypes are promoted.

    >>> import oar
    >>> oar.stack([oar.zeros([2, 3]), oar.ones([2, 3])], axis=1).shape
    [2, 2, 3]
    """
    xs = _tensors(x, "stack")
    axis = normalize_axis(axis, xs[0]._data.ndim + 1, "stack")
    return dispatch(stack_op, tuple(xs), {"axis": axis})


# -- split / chunk / unbind -------------------------------------------------------------------
def _split_kernel(x, sections, axis):
    return tuple(np.split(x, np.cumsum(sections)[:-1], axis=axis))


def _split_meta(x: TensorMeta, sections, axis) -> tuple:
    if not 0 <= axis < len(x.shape):
        raise ArgumentError(f"split: axis {axis} is out of range for a {len(x.shape)}-d tensor")
    dim = x.shape[axis]
    if dim is not None and builtins.sum(sections) != dim:
        raise ShapeError(f"split: sections {list(sections)} add up to {builtins.sum(sections)}, but axis {axis} "
                         f"of x {fmt_shape(x.shape)} has size {dim}")
    return tuple(TensorMeta(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype) for s in sections)


split_op = Op("split", reference=_split_kernel, meta=_split_meta, traits=VIEW + COMPLEX, num_outputs=None)


@split_op.defgrad
def _split_grad(ctx, *grads):
    return dispatch(concat_op, grads, {"axis": ctx.attrs["axis"]})


@split_op.defview_inverse
def _split_back(base, value, attrs, index):
    start = builtins.sum(attrs["sections"][:index])
    end = start + attrs["sections"][index]
    return _write_region(base, value, _slice_items(base._data.ndim, [attrs["axis"]], [start], [end], [1]))


def _split_sections(x: Tensor, num_or_sections, axis: int, op: str) -> list[int]:
    dim = x._data.shape[axis]
    if isinstance(num_or_sections, (int, np.integer)) and not isinstance(num_or_sections, bool):
        n = int(num_or_sections)
        if n <= 0 or dim % n:
            raise ArgumentError(f"{op}: axis {axis} of x (shape {x.shape}) has size {dim}, which cannot be split "
                                f"into {n} equal parts")
        return [dim // n] * n
    sections = _int_list(num_or_sections, op, "num_or_sections")
    if not sections:
        raise ArgumentError(f"{op}: num_or_sections is an empty list")
    if sections.count(-1) > 1 or any(s < -1 for s in sections):
        raise ArgumentError(f"{op}: num_or_sections {sections} may hold one -1 (inferred) and sizes >= 0 only")
    known = builtins.sum(s for s in sections if s != -1)
    if -1 in sections and known <= dim:
        sections[sections.index(-1)] = dim - known
    if builtins.sum(sections) != dim:
        raise ArgumentError(f"{op}: num_or_sections {list(num_or_sections)} does not add up to {dim}, the size "
                            f"of axis {axis} of x (shape {x.shape})")
    return sections


def split(x, num_or_sections, axis=0, name=None) -> list[Tensor]:
    """Split ``x`` along ``axis`` into ``num_or_sections`` equal parts, or into parts of the
    listed sizes (one of them may be -1, inferred). Returns a list.

    >>> import oar
    >>> [p.shape for p in oar.split(oar.zeros([3, 9]), [2, -1, 4], axis=1)]
    [[3, 2], [3, 3], [3, 4]]
    """
    x = as_tensor(x, "x", "split")
    if x._data.ndim == 0:
        raise ArgumentError("split: x is a 0-d tensor; there is no axis to split")
    axis = normalize_axis(axis, x._data.ndim, "split")
    sections = _split_sections(x, num_or_sections, axis, "split")
    return list(dispatch(split_op, (x,), {"sections": sections, "axis": axis}))


def chunk(x, chunks, axis=0, name=None) -> list[Tensor]:
    """Split ``x`` into ``chunks`` equal parts along ``axis`` (the size must divide); a ``split``.

    >>> import oar
    >>> [p.shape for p in oar.chunk(oar.zeros([4, 6]), 3, axis=1)]
    [[4, 2], [4, 2], [4, 2]]
    """
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)):
        raise ArgumentError(f"chunk: chunks must be an int, got {type(chunks).__name__}")
    x = as_tensor(x, "x", "chunk")
    if x._data.ndim == 0:
        raise ArgumentError("chunk: x is a 0-d tensor; there is no axis to split")
    axis = normalize_axis(axis, x._data.ndim, "chunk")
    sections = _split_sections(x, int(chunks), axis, "chunk")
    return list(dispatch(split_op, (x,), {"sections": sections, "axis": axis}))


def _unbind_kernel(x, axis):
    return tuple(np.moveaxis(x, axis, 0))


def _unbind_meta(x: TensorMeta, axis) -> tuple:
    if not 0 <= axis < len(x.shape):
        raise ArgumentError(f"unbind: axis {axis} is out of range for a {len(x.shape)}-d tensor")
    n = x.shape[axis]
    if n is None:
        raise ShapeError(f"unbind: axis {axis} of x {fmt_shape(x.shape)} has a dynamic size; the number of "
                         f"outputs must be known")
    return tuple(TensorMeta(x.shape[:axis] + x.shape[axis + 1:], x.dtype) for _ in range(n))


unbind_op = Op("unbind", reference=_unbind_kernel, meta=_unbind_meta, traits=VIEW + COMPLEX, num_outputs=None)


@unbind_op.defgrad
def _unbind_grad(ctx, *grads):
    return dispatch(stack_op, grads, {"axis": ctx.attrs["axis"]})


@unbind_op.defview_inverse
def _unbind_back(base, value, attrs, index):
    return _write_region(base, value, [_FULL] * attrs["axis"] + [{"kind": "int", "value": index}])


def unbind(input, axis=0) -> list[Tensor]:  # noqa: A002 - Paddle's argument name
    """The slices of ``input`` along ``axis``, that axis removed. Returns a list.

    >>> import oar
    >>> [p.shape for p in oar.unbind(oar.zeros([2, 3]), axis=1)]
    [[2], [2], [2]]
    """
    x = as_tensor(input, "input", "unbind")
    if x._data.ndim == 0:
        raise ArgumentError("unbind: input is a 0-d tensor; there is no axis to unbind")
    return list(dispatch(unbind_op, (x,), {"axis": normalize_axis(axis, x._data.ndim, "unbind")}))


def unstack(x, axis=0, num=None) -> list[Tensor]:
    """Paddle's ``unstack``: ``unbind``, where ``num`` (if given) must equal the size of ``axis``."""
    x = as_tensor(x, "x", "unstack")
    if x._data.ndim == 0:
        raise ArgumentError("unstack: x is a 0-d tensor; there is no axis to unstack")
    axis = normalize_axis(axis, x._data.ndim, "unstack")
    if num is not None and int(num) != x._data.shape[axis]:
        raise ArgumentError(f"unstack: num={num}, but axis {axis} of x (shape {x.shape}) has size "
                            f"{x._data.shape[axis]}")
    return list(dispatch(unbind_op, (x,), {"axis": axis}))


# -- tile / expand / broadcast_to -------------------------------------------------------------
def _tile_kernel(x, repeat_times):
    return np.tile(x, repeat_times)


def _tile_meta(x: TensorMeta, repeat_times) -> TensorMeta:
    ndim = max(len(x.shape), len(repeat_times))
    dims = (1,) * (ndim - len(x.shape)) + tuple(x.shape)
    reps = (1,) * (ndim - len(repeat_times)) + tuple(repeat_times)
    return TensorMeta(tuple(None if d is None else d * r for d, r in zip(dims, reps)), x.dtype)


tile_op = Op("tile", reference=_tile_kernel, meta=_tile_meta, traits=SHAPE + COMPLEX)


@tile_op.defgrad
def _tile_grad(ctx, g):
    from oar._ops.reduction import sum as _sum  # allowed cycle: shape and reduction are each other's gradients

    (shape,) = ctx.in_shapes
    reps = list(ctx.attrs["repeat_times"])
    ndim = max(len(shape), len(reps))
    dims = [1] * (ndim - len(shape)) + list(shape)
    reps = [1] * (ndim - len(reps)) + reps
    # Output axis i is (repeat r_i, original d_i) flattened: split it and sum the repeats away.
    interleaved = [n for r, d in zip(reps, dims) for n in (r, d)]
    g = _sum(reshape_to(g, interleaved), axis=list(range(0, 2 * ndim, 2)))
    return reshape_to(g, shape)


def tile(x, repeat_times, name=None) -> Tensor:
    """Repeat ``x`` ``repeat_times[i]`` times along axis ``i``; shorter lists apply to the last
    axes, longer ones add leading axes (as ``np.tile``).

    >>> import oar
    >>> oar.tile(oar.to_tensor([1, 2]), [2, 2]).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    x = as_tensor(x, "x", "tile")
    reps = _int_list(repeat_times, "tile", "repeat_times")
    if any(r < 0 for r in reps):
        raise ArgumentError(f"tile: repeat_times {reps} must not be negative")
    return dispatch(tile_op, (x,), {"repeat_times": reps})


def _broadcast_to_kernel(x, shape):
    return np.broadcast_to(x, shape)


def _check_broadcast(op: str, in_shape, shape) -> None:
    lead = len(shape) - len(in_shape)
    if lead < 0:
        raise ShapeError(f"{op}: cannot broadcast x {fmt_shape(in_shape)} to {list(shape)}, which has fewer dimensions")
    for i, d in enumerate(in_shape):
        target = shape[lead + i]
        if d is not None and target is not None and d not in (1, target):
            raise ShapeError(f"{op}: cannot broadcast x {fmt_shape(in_shape)} to {list(shape)} (axis {i} of x has "
                             f"size {d}; only a size-1 axis can grow, to {target} here)")


def _broadcast_to_meta(x: TensorMeta, shape) -> TensorMeta:
    _check_broadcast("broadcast_to", x.shape, shape)
    return TensorMeta(tuple(shape), x.dtype)


# A view without a view_inverse: read-only, as several of its elements are one element of x.
broadcast_to_op = Op("broadcast_to", reference=_broadcast_to_kernel, meta=_broadcast_to_meta, traits=VIEW + COMPLEX)


@broadcast_to_op.defgrad
def _broadcast_to_grad(ctx, g):
    from oar._ops.reduction import unbroadcast  # allowed cycle: shape and reduction are each other's gradients

    (shape,) = ctx.in_shapes
    return unbroadcast(g, shape)


def _target_shape(x: Tensor, shape, op: str) -> list[int]:
    """Paddle's expand/broadcast_to shape: -1 keeps the matching dim of ``x`` (not for new axes)."""
    shape = _int_list(shape, op, "shape")
    lead = len(shape) - x._data.ndim
    if lead < 0:
        raise ShapeError(f"{op}: shape {shape} has fewer dimensions than x {x.shape}")
    out = []
    for i, d in enumerate(shape):
        if d == -1:
            if i < lead:
                raise ShapeError(f"{op}: shape {shape} has -1 at new leading axis {i}; -1 only keeps an "
                                 f"existing dim of x {x.shape}")
            d = x._data.shape[i - lead]
        out.append(d)
    _check_broadcast(op, x._data.shape, out)  # numpy would error less clearly
    return out


def broadcast_to(x, shape, name=None) -> Tensor:
    """``x`` broadcast to ``shape`` (-1 keeps that dim of ``x``).

    >>> import oar
    >>> oar.broadcast_to(oar.zeros([3, 1]), [2, -1, 4]).shape
    [2, 3, 4]
    """
    x = as_tensor(x, "x", "broadcast_to")
    shape = _target_shape(x, shape, "broadcast_to")
    if tuple(shape) == x._data.shape:
        return x
    return dispatch(broadcast_to_op, (x,), {"shape": shape})


def expand(x, shape, name=None) -> Tensor:
    """``x`` expanded (broadcast) to ``shape``; -1 keeps that dim. A ``broadcast_to``.

    >>> import oar
    >>> oar.expand(oar.zeros([1, 3]), [2, -1]).shape
    [2, 3]
    """
    x = as_tensor(x, "x", "expand")
    shape = _target_shape(x, shape, "expand")
    if tuple(shape) == x._data.shape:
        return x
    return dispatch(broadcast_to_op, (x,), {"shape": shape})


def expand_as(x, y, name=None) -> Tensor:
    """``x`` expanded to the shape of ``y`` (only ``y``'s shape is used).

    >>> import oar
    >>> oar.expand_as(oar.zeros([3]), oar.ones([2, 3])).shape
    [2, 3]
    """
    y = as_tensor(y, "y", "expand_as")
    return expand(x, y.shape)


# -- flip / roll ------------------------------------------------------------------------------
def _flip_kernel(x, axis):
    return np.flip(x, axis=tuple(axis))


def _flip_meta(x: TensorMeta, axis) -> TensorMeta:
    if any(not 0 <= a < len(x.shape) for a in axis):
        raise ArgumentError(f"flip: axis {axis} is out of range for a {len(x.shape)}-d tensor")
    return x


flip_op = Op("flip", reference=_flip_kernel, meta=_flip_meta, traits=ALIAS + COMPLEX)


@flip_op.defgrad
def _flip_grad(ctx, g):
    return dispatch(flip_op, (g,), {"axis": ctx.attrs["axis"]})


def flip(x, axis, name=None) -> Tensor:
    """Reverse the order of elements along ``axis`` (an int or a list).

    >>> import oar
    >>> oar.flip(oar.to_tensor([[1, 2], [3, 4]]), axis=[0, 1]).tolist()
    [[4, 3], [2, 1]]
    """
    x = as_tensor(x, "x", "flip")
    if x._data.ndim == 0:
        _axes(axis, 0, "flip")  # validates; flipping a 0-d tensor changes nothing
        axes = []
    else:
        # Paddle flips each named axis once, however often it is named.
        axes = sorted({normalize_axis(a, x._data.ndim, "flip") for a in _int_list(axis, "flip", "axis")})
    return dispatch(flip_op, (x,), {"axis": axes})


def _roll_kernel(x, shifts, axis):
    if axis is None:
        return np.roll(x, shifts[0])
    return np.roll(x, shifts, axis=axis)


def _roll_meta(x: TensorMeta, shifts, axis) -> TensorMeta:
    if axis is not None and (len(axis) != len(shifts) or any(not 0 <= a < len(x.shape) for a in axis)):
        raise ArgumentError(f"roll: axis {axis} does not fit shifts {shifts} on a {len(x.shape)}-d tensor")
    return x


roll_op = Op("roll", reference=_roll_kernel, meta=_roll_meta, traits=SHAPE + COMPLEX)


@roll_op.defgrad
def _roll_grad(ctx, g):
    return dispatch(roll_op, (g,), {"shifts": [-s for s in ctx.attrs["shifts"]], "axis": ctx.attrs["axis"]})


def roll(x, shifts, axis=None, name=None) -> Tensor:
    """Shift elements cyclically by ``shifts`` along ``axis``; with ``axis=None`` the tensor is
    flattened, rolled and given its shape back.

    >>> import oar
    >>> oar.roll(oar.to_tensor([[1, 2, 3], [4, 5, 6]]), 1).tolist()
    [[6, 1, 2], [3, 4, 5]]
    >>> oar.roll(oar.to_tensor([[1, 2, 3], [4, 5, 6]]), shifts=-1, axis=1).tolist()
    [[2, 3, 1], [5, 6, 4]]
    """
    x = as_tensor(x, "x", "roll")
    shifts = _int_list(shifts, "roll", "shifts")
    if axis is None:
        if len(shifts) != 1:
            raise ArgumentError(f"roll: with axis=None (roll the flattened tensor) shifts must be one int, got {shifts}")
        return dispatch(roll_op, (x,), {"shifts": shifts, "axis": None})
    axes = [normalize_axis(a, x._data.ndim, "roll") for a in _int_list(axis, "roll", "axis")]
    if len(axes) != len(shifts):
        raise ArgumentError(f"roll: shifts {shifts} and axis {axes} must have the same length")
    return dispatch(roll_op, (x,), {"shifts": shifts, "axis": axes})


# -- slice / strided_slice --------------------------------------------------------------------
def _index(ndim: int, axes, starts, ends, strides) -> tuple:
    index = [_slice(None)] * ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[a] = _slice(s, e, st)
    return tuple(index)


def _sliced_meta(op: str, x: TensorMeta, axes, starts, ends, strides) -> TensorMeta:
    shape = list(x.shape)
    for a, s, e, st in zip(axes, starts, ends, strides):
        if not 0 <= a < len(shape):
            raise ArgumentError(f"{op}: axis {a} is out of range for a {len(shape)}-d tensor")
        if shape[a] is not None:
            shape[a] = len(range(*_slice(s, e, st).indices(shape[a])))
    return TensorMeta(tuple(shape), x.dtype)


def _slice_kernel(x, axes, starts, ends):
    return x[_index(x.ndim, axes, starts, ends, [1] * len(axes))]


def _slice_meta(x: TensorMeta, axes, starts, ends) -> TensorMeta:
    return _sliced_meta("slice", x, axes, starts, ends, [1] * len(axes))


slice_op = Op("slice", reference=_slice_kernel, meta=_slice_meta, traits=VIEW + COMPLEX)


@slice_op.defgrad
def _slice_grad(ctx, g):
    a = ctx.attrs
    return _scatter_strided(g, ctx.in_shapes[0], a["axes"], a["starts"], a["ends"], [1] * len(a["axes"]))


@slice_op.defview_inverse
def _slice_back(base, value, attrs, index):
    items = _slice_items(base._data.ndim, attrs["axes"], attrs["starts"], attrs["ends"], [1] * len(attrs["axes"]))
    return _write_region(base, value, items)


def _slice_items(ndim: int, axes, starts, ends, strides) -> list:
    """The getitem/setitem ``items`` of a (strided) slice: Python's slicing rules, as its kernel's."""
    items = [_FULL] * ndim
    for a, s, e, st in zip(axes, starts, ends, strides):
        items[a] = {"kind": "slice", "start": s, "stop": e, "step": st}
    return items


def _write_region(base, value, items) -> Tensor:
    """``base`` with ``base[items] = value``: the ``setitem`` op, looked up by name, as its module
    (indexing) imports this one."""
    return dispatch(_registries.OPS.get("setitem"), (base, value), {"items": items})


def _slice_args(op: str, x: Tensor, axes, starts, ends, strides=None):
    axes = _int_list(axes, op, "axes")
    starts = _int_list(starts, op, "starts")
    ends = _int_list(ends, op, "ends")
    lists = {"starts": starts, "ends": ends}
    if strides is not None:
        strides = _int_list(strides, op, "strides")
        lists["strides"] = strides
        if 0 in strides:
            raise ArgumentError(f"{op}: strides {strides} must not contain 0")
    for key, values in lists.items():
        if len(values) != len(axes):
            raise ArgumentError(f"{op}: {key} has {len(values)} entries but axes {axes} has {len(axes)}; "
                                f"give one per axis")
    norm = [normalize_axis(a, x._data.ndim, op, "axes") for a in axes]
    if len(set(norm)) != len(norm):
        raise ArgumentError(f"{op}: axes {axes} names an axis twice")
    return norm, starts, ends, strides


def slice(input, axes, starts, ends) -> Tensor:  # noqa: A001,A002 - Paddle's names
    """``input[starts[i]:ends[i]]`` along each of ``axes``; negative indices count from the end
    and out-of-range ones are clamped, as in Python.

    >>> import oar
    >>> x = oar.to_tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    >>> oar.slice(x, axes=[0, 1], starts=[0, 1], ends=[-1, 1000]).tolist()
    [[2, 3, 4]]
    """
    x = as_tensor(input, "input", "slice")
    axes, starts, ends, _ = _slice_args("slice", x, axes, starts, ends)
    return dispatch(slice_op, (x,), {"axes": axes, "starts": starts, "ends": ends})


def _strided_slice_kernel(x, axes, starts, ends, strides):
    return x[_index(x.ndim, axes, starts, ends, strides)]


def _strided_slice_meta(x: TensorMeta, axes, starts, ends, strides) -> TensorMeta:
    return _sliced_meta("strided_slice", x, axes, starts, ends, strides)


strided_slice_op = Op("strided_slice", reference=_strided_slice_kernel, meta=_strided_slice_meta, traits=VIEW + COMPLEX)


@strided_slice_op.defgrad
def _strided_slice_grad(ctx, g):
    a = ctx.attrs
    return _scatter_strided(g, ctx.in_shapes[0], a["axes"], a["starts"], a["ends"], a["strides"])


@strided_slice_op.defview_inverse
def _strided_slice_back(base, value, attrs, index):
    items = _slice_items(base._data.ndim, attrs["axes"], attrs["starts"], attrs["ends"], attrs["strides"])
    return _write_region(base, value, items)


def strided_slice(x, axes, starts, ends, strides, name=None) -> Tensor:
    """``x[starts[i]:ends[i]:strides[i]]`` along each of ``axes``, with Python's rules for
    negative indices, clamping and negative strides.

    >>> import oar
    >>> x = oar.to_tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    >>> oar.strided_slice(x, axes=[0, 1], starts=[1, 3], ends=[2, 0], strides=[1, -1]).tolist()
    [[8, 7, 6]]
    """
    x = as_tensor(x, "x", "strided_slice")
    axes, starts, ends, strides = _slice_args("strided_slice", x, axes, starts, ends, strides)
    return dispatch(strided_slice_op, (x,), {"axes": axes, "starts": starts, "ends": ends, "strides": strides})


def _scatter_strided(g: Tensor, in_shape, axes, starts, ends, strides) -> Tensor:
    """The gradient of a strided slice: ``g`` placed at the sliced positions of a zero tensor of
    ``in_shape``, built from reshape, flip, pad and slice so that it differentiates again."""
    pads = [0] * (2 * len(in_shape))
    for a, s, e, st in zip(axes, starts, ends, strides):
        dim = in_shape[a]
        start, _, step = _slice(s, e, st).indices(dim)
        n = g.shape[a]
        first, span = (0, 0) if n == 0 else (start, n)
        if n and step < 0:  # the same positions visited upwards: flip g, start from the last one
            g = dispatch(flip_op, (g,), {"axis": [a]})
            first, step = start + (n - 1) * step, -step
        if n and step > 1:  # interleave step-1 zeros after each element: [n] -> [n, step] -> [n*step]
            shape = g.shape
            g = reshape_to(g, shape[:a + 1] + [1] + shape[a + 1:])
            g = _pad_axis(g, a + 1, 0, step - 1)
            g = reshape_to(g, shape[:a] + [n * step] + shape[a + 1:])
            span = min(n * step, dim - first)  # drop trailing zeros that fall past the end
            if span < n * step:
                g = _slice_axis(g, a, 0, span)
        pads[2 * a], pads[2 * a + 1] = first, dim - first - span
    if any(pads):
        g = dispatch(pad_op, (g,), {"pads": pads, "mode": "constant", "value": 0.0})
    return g


def _slice_axis(x: Tensor, axis: int, start: int, end: int) -> Tensor:
    return dispatch(slice_op, (x,), {"axes": [axis], "starts": [start], "ends": [end]})


def _pad_axis(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    pads = [0] * (2 * x.ndim)
    pads[2 * axis], pads[2 * axis + 1] = before, after
    return dispatch(pad_op, (x,), {"pads": pads, "mode": "constant", "value": 0.0})


# -- pad --------------------------------------------------------------------------------------
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_kernel(x, pads, mode, value):
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(x.ndim)]
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, pairs, mode=PAD_MODES[mode])


def _pad_meta(x: TensorMeta, pads, mode, value) -> TensorMeta:
    ndim = len(x.shape)
    if mode not in PAD_MODES:
        raise ArgumentError(f"pad: mode {mode!r} is not one of {sorted(PAD_MODES)}")
    if len(pads) != 2 * ndim:
        raise ArgumentError(f"pad: pads has {len(pads)} entries, expected 2 * {ndim} (before and after for "
                            f"each axis of x {fmt_shape(x.shape)})")
    if any(p < 0 for p in pads):
        raise ArgumentError(f"pad: pads {list(pads)} must not be negative")
    shape = []
    for i, d in enumerate(x.shape):
        before, after = pads[2 * i], pads[2 * i + 1]
        if d is not None and (before or after):
            limit = {"reflect": d - 1, "circular": d, "replicate": float("inf") if d else 0}.get(mode)
            if limit is not None and builtins.max(before, after) > limit:
                raise ArgumentError(f"pad: {mode} padding of ({before}, {after}) on axis {i} of x "
                                    f"{fmt_shape(x.shape)} needs at most {limit} on each side (the size of "
                                    f"that axis{' minus 1' if mode == 'reflect' else ''})")
        shape.append(None if d is None else d + before + after)
    return TensorMeta(tuple(shape), x.dtype)


pad_op = Op("pad", reference=_pad_kernel, meta=_pad_meta, traits=SHAPE + COMPLEX)


@pad_op.defgrad
def _pad_grad(ctx, g):
    from oar._ops.reduction import sum as _sum  # allowed cycle: shape and reduction are each other's gradients

    (shape,) = ctx.in_shapes
    pads, mode = ctx.attrs["pads"], ctx.attrs["mode"]
    if mode == "constant":
        axes = [i for i in range(len(shape)) if pads[2 * i] or pads[2 * i + 1]]
        starts = [pads[2 * i] for i in axes]
        return dispatch(slice_op, (g,), {"axes": axes, "starts": starts, "ends": [s + shape[i] for s, i in zip(starts, axes)]})
    # The other modes copy edge values: each padded element's gradient goes back to its source.
    for a, d in enumerate(shape):
        before, after = pads[2 * a], pads[2 * a + 1]
        if not (before or after):
            continue
        left = _slice_axis(g, a, 0, before)
        right = _slice_axis(g, a, before + d, before + d + after)
        g = _slice_axis(g, a, before, before + d)
        if mode == "reflect":  # out[before-1-k] = x[1+k], out[before+d+k] = x[d-2-k]
            parts = [(dispatch(flip_op, (left,), {"axis": [a]}), 1, d - 1 - before),
                     (dispatch(flip_op, (right,), {"axis": [a]}), d - 1 - after, 1)]
        elif mode == "replicate":  # every left pad is x[0], every right pad x[d-1]
            parts = [(_sum(left, axis=a, keepdim=True), 0, d - 1), (_sum(right, axis=a, keepdim=True), d - 1, 0)]
        else:  # circular: out[k] = x[d-before+k], out[before+d+k] = x[k]
            parts = [(left, d - before, 0), (right, 0, d - after)]
        for part, lo, hi in parts:
            if part.shape[a]:
                g = g + _pad_axis(part, a, lo, hi)
    return g


def pad_axes(x, pads, mode="constant", value=0.0) -> Tensor:
    """Pad every axis of ``x``: ``pads = [before_0, after_0, before_1, after_1, ...]`` in axis
    order. ``mode`` is ``'constant'`` (fill with ``value``), ``'reflect'`` (mirror without the
    edge), ``'replicate'`` (repeat the edge) or ``'circular'`` (wrap around).

    This is the op behind ``oar.nn.functional.pad``, which maps Paddle's ``pad`` list and
    ``data_format`` onto it; Paddle has no top-level ``paddle.pad``.

    >>> import oar
    >>> from oar._ops.shape import pad_axes
    >>> pad_axes(oar.to_tensor([1, 2, 3]), [2, 1], mode="reflect").tolist()
    [3, 2, 1, 2, 3, 2]
    """
    x = as_tensor(x, "x", "pad")
    if not isinstance(mode, str):
        raise ArgumentError(f"pad: mode must be a string, got {type(mode).__name__}")
    attrs = {"pads": _int_list(pads, "pad", "pads"), "mode": mode, "value": float(value)}
    _pad_meta(TensorMeta(x._data.shape, x.dtype), **attrs)  # numpy accepts reflect pads past the edge
    return dispatch(pad_op, (x,), attrs)


# -- tril / triu ------------------------------------------------------------------------------
def _triangle_meta(op: str):
    def meta(x: TensorMeta, diagonal) -> TensorMeta:
        if len(x.shape) < 2:
            raise ArgumentError(f"{op}: x must have at least 2 dimensions, got shape {fmt_shape(x.shape)}")
        return x

    return meta


def _tril_kernel(x, diagonal):
    return np.tril(x, diagonal)


tril_op = Op("tril", reference=_tril_kernel, meta=_triangle_meta("tril"), traits=SHAPE + COMPLEX)


@tril_op.defgrad
def _tril_grad(ctx, g):
    return dispatch(tril_op, (g,), {"diagonal": ctx.attrs["diagonal"]})


def _triangle(op: Op, x, diagonal) -> Tensor:
    x = as_tensor(x, "x", op.name)
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise ArgumentError(f"{op.name}: diagonal must be an int, got {type(diagonal).__name__}")
    attrs = {"diagonal": int(diagonal)}
    op.meta(TensorMeta(x._data.shape, x.dtype), **attrs)  # numpy treats a 1-d x as a row
    return dispatch(op, (x,), attrs)


def tril(x, diagonal=0, name=None) -> Tensor:
    """The lower triangle of the last two axes of ``x`` (``diagonal`` > 0 keeps more above it).

    >>> import oar
    >>> oar.tril(oar.ones([3, 3], dtype="int64")).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    return _triangle(tril_op, x, diagonal)


def _triu_kernel(x, diagonal):
    return np.triu(x, diagonal)


triu_op = Op("triu", reference=_triu_kernel, meta=_triangle_meta("triu"), traits=SHAPE + COMPLEX)


@triu_op.defgrad
def _triu_grad(ctx, g):
    return dispatch(triu_op, (g,), {"diagonal": ctx.attrs["diagonal"]})


def triu(x, diagonal=0, name=None) -> Tensor:
    """The upper triangle of the last two axes of ``x`` (``diagonal`` > 0 drops more).

    >>> import oar
    >>> oar.triu(oar.ones([3, 3], dtype="int64"), diagonal=1).tolist()
    [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    """
    return _triangle(triu_op, x, diagonal)


OPS = [
    reshape_op, flatten_op, squeeze_op, unsqueeze_op, transpose_op, concat_op, stack_op, split_op,
    unbind_op, tile_op, broadcast_to_op, flip_op, roll_op, slice_op, strided_slice_op, pad_op, tril_op,
    triu_op,
]
__all__ = [
    "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "moveaxis", "t", "concat", "stack",
    "split", "chunk", "unbind", "unstack", "tile", "expand", "expand_as", "broadcast_to", "flip", "roll",
    "slice", "strided_slice", "tril", "triu",
]

METHODS = {
    "reshape": reshape, "flatten": flatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
    "transpose": transpose, "moveaxis": moveaxis, "t": t, "T": property(_reversed_axes),
    "split": split, "chunk": chunk, "unbind": unbind, "unstack": unstack, "tile": tile,
    "expand": expand, "expand_as": expand_as, "broadcast_to": broadcast_to, "flip": flip,
    "roll": roll, "slice": slice, "strided_slice": strided_slice, "tril": tril, "triu": triu,
}
