"""Shape and indexing ops of oar-core: reshape, transpose, concat, split, slicing, padding,
gather/scatter, masks and ``x[...]`` (getitem, setitem).

A shape op that changes nothing (a transpose by the identity, a squeeze with no size-1 axis, a
single-part concat) writes no node. Indexing follows numpy's rules as oar's kernels do:
``getitem``'s ``items`` attribute (``{"kind": "int" | "slice" | "none" | "ellipsis" | "bool" |
"tensor", ...}``) is decoded into one ``Slice`` for the basic part and one ``Gather``,
``Compress`` or ``GatherND`` for the advanced part, with numpy's placement of the advanced
dims. Writes with repeated indices (``scatter``, ``put_along_axis``, ``x[i] = v``) keep numpy's
"the last write wins": ONNX leaves repeated writes undefined, so every repeated position is
first given the value of its last writer (``last_writer``), which makes the result the same
whatever order a runtime writes in.
"""

from __future__ import annotations

import numpy as np

from oar.onnx.lowerings import GRADIENT_OP, lowers, not_lowered
from oar.onnx.lowerings.elementwise import cast, fill, input_as, out_name

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


# -- helpers shared by the lowerings (reduction.py uses them too) ------------------------------------
def is_static(shape) -> bool:
    return None not in tuple(shape)


def numel(shape) -> int | None:
    return int(np.prod(shape, dtype=np.int64)) if is_static(shape) else None


def unsqueeze(ctx, x: str, axes, out=None) -> str:
    return ctx.emit("Unsqueeze", [x, ctx.int64s(axes)], out)


def squeeze(ctx, x: str, axes=None, out=None) -> str:
    return ctx.emit("Squeeze", [x] if axes is None else [x, ctx.int64s(axes)], out)


def reshape(ctx, x: str, shape, out=None, allowzero: bool = False) -> str:
    attrs = {"allowzero": 1} if allowzero else {}
    return ctx.emit("Reshape", [x, ctx.int64s(shape)], out, **attrs)


def reduce(ctx, op_type: str, x: str, axes, keepdims: bool, out=None) -> str:
    """``op_type`` (ReduceSum, ReduceMax, ...) over ``axes`` (None: every axis). The axes became
    an input at opset 13 for ReduceSum and at 18 for the others."""
    attrs = {"keepdims": int(bool(keepdims))}
    if axes is None:
        return ctx.emit(op_type, [x], out, **attrs)
    if ctx.opset >= (13 if op_type == "ReduceSum" else 18):
        return ctx.emit(op_type, [x, ctx.int64s(axes)], out, **attrs)
    return ctx.emit(op_type, [x], out, axes=[int(a) for a in axes], **attrs)


def shape_of(ctx, vid: int) -> str:
    """The shape of value ``vid`` as a 1-D int64 tensor: a constant when it is static."""
    shape = ctx.shape(vid)
    return ctx.int64s(shape) if is_static(shape) else ctx.emit("Shape", [ctx.name(vid)])


def dim_scalar(ctx, x: str, shape, axis: int) -> str:
    """Dim ``axis`` of the tensor ``x`` (of ``shape``) as a 0-d int64 tensor."""
    if shape[axis] is not None:
        return ctx.constant(np.int64(shape[axis]))
    return ctx.emit("Gather", [ctx.emit("Shape", [x]), ctx.constant(np.int64(axis))], axis=0)


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of shapes whose dims may be None (known at run time only)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-rank, 0):
        dims = [s[axis] for s in shapes if -axis <= len(s)]
        known = [d for d in dims if d is not None and d != 1]
        out.append(known[0] if known else (None if None in dims else 1))
    return tuple(out)


def last_writer(ctx, targets: str, shape, axis: int) -> str:
    """For each position ``i`` along ``axis`` of ``targets`` (write positions), the last position
    ``j`` of the same line that writes the same target: what numpy's repeated writes keep.

    ``max_j where(targets[.., j, ..] == targets[.., i, ..], j, -1)``, an n x n comparison per line
    (n: the number of writes along ``axis``)."""
    rank = len(shape)
    same = ctx.emit("Equal", [unsqueeze(ctx, targets, [axis + 1]), unsqueeze(ctx, targets, [axis])])
    layout = [1] * (axis + 1) + [-1] + [1] * (rank - axis - 1)
    if shape[axis] is not None:
        positions = ctx.constant(np.arange(shape[axis], dtype=np.int64).reshape([shape[axis] if d == -1 else d
                                                                                 for d in layout]))
    else:
        count = dim_scalar(ctx, targets, shape, axis)
        positions = reshape(ctx, ctx.emit("Range", [ctx.constant(np.int64(0)), count, ctx.constant(np.int64(1))]),
                            layout)
    candidates = ctx.emit("Where", [same, positions, ctx.constant(np.int64(-1))])
    return reduce(ctx, "ReduceMax", candidates, [axis + 1], False)


def static_last_writer(targets: np.ndarray, axis: int) -> np.ndarray | None:
    """``last_writer`` of constant targets, computed now; None when no target repeats."""
    same = np.expand_dims(targets, axis + 1) == np.expand_dims(targets, axis)
    n = targets.shape[axis]
    positions = np.arange(n).reshape([1] * (axis + 1) + [n] + [1] * (targets.ndim - axis - 1))
    last = np.where(same, positions, -1).max(axis=axis + 1) if n else np.zeros(targets.shape, np.int64)
    own = np.arange(n).reshape([n if d == axis else 1 for d in range(targets.ndim)])
    return None if np.array_equal(last, np.broadcast_to(own, last.shape)) else last.astype(np.int64)


def _require_opset(node, ctx, opset: int, what: str) -> None:
    if ctx.opset < opset:
        raise ctx.unsupported(node, f"{what} needs opset {opset} or newer (got {ctx.opset})")


# -- reshape, flatten, squeeze, unsqueeze, transpose ---------------------------------------------------
@lowers("reshape")
def lower_reshape(node, ctx):
    # The attribute is the resolved shape: -1 is the one inferred dim and a 0 is a literal
    # zero-size dim (ONNX's allowzero=1), not Paddle's "copy the input dim" (resolved already).
    x, = ctx.inputs(node)
    shape = [int(d) for d in node.attrs["shape"]]
    in_shape, out_shape = ctx.shape(node.inputs[0]), ctx.shape(node.outputs[0])
    if is_static(in_shape) and tuple(in_shape) == tuple(out_shape):
        ctx.bind(node.outputs[0], x)
        return
    if 0 not in shape:
        reshape(ctx, x, shape, out_name(node, ctx))
        return
    if -1 in shape and is_static(out_shape):  # allowzero forbids -1 beside a 0: the static shape
        shape = list(out_shape)
    if ctx.opset >= 14 and -1 not in shape:
        reshape(ctx, x, shape, out_name(node, ctx), allowzero=True)
    elif is_static(out_shape):  # opset 13 has no allowzero, and the result has no element
        ctx.bind(node.outputs[0], ctx.constant(np.zeros(out_shape, np.dtype(ctx.dtype(node.outputs[0])))))
    else:
        raise ctx.unsupported(node, f"reshaping to {shape} (a zero-size dim beside a dynamic one)")


@lowers("flatten")
def lower_flatten(node, ctx):
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    rank = len(shape)
    if rank == 0:
        reshape(ctx, x, [1], out_name(node, ctx))
        return
    start, stop = node.attrs["start_axis"] % rank, node.attrs["stop_axis"] % rank
    if start == stop:  # one axis merged with itself
        ctx.bind(node.outputs[0], x)
        return
    if start == 1 and stop == rank - 1:  # ONNX's Flatten: [d0, prod(rest)]
        ctx.emit("Flatten", [x], out_name(node, ctx), axis=1)
        return
    # Reshape: 0 copies the dims before the span (same index), -1 is the span, the dims after it
    # must be static (a second -1 is not allowed).
    tail = shape[stop + 1:]
    if None in tail:
        raise ctx.unsupported(node, f"flattening axes {start}..{stop} of {list(shape)}: a dynamic dim after them")
    reshape(ctx, x, [0] * start + [-1] + list(tail), out_name(node, ctx))


@lowers("squeeze")
def lower_squeeze(node, ctx):
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    axis = node.attrs["axis"]
    if axis is None:
        if not is_static(shape):  # the kernel squeezes every size-1 dim at run time: so does Squeeze
            squeeze(ctx, x, None, out_name(node, ctx))
            return
        drop = [i for i, d in enumerate(shape) if d == 1]
    else:
        if any(shape[a] is None for a in axis):
            raise ctx.unsupported(node, f"squeezing axes {list(axis)} of {list(shape)}: whether a dynamic dim is 1 "
                                        f"is known at run time only")
        drop = [a for a in axis if shape[a] == 1]  # Paddle ignores named axes whose size is not 1
    if not drop:
        ctx.bind(node.outputs[0], x)
        return
    squeeze(ctx, x, drop, out_name(node, ctx))


@lowers("unsqueeze")
def lower_unsqueeze(node, ctx):
    x, = ctx.inputs(node)
    axes = list(node.attrs["axis"])  # positions in the output, ONNX's meaning too
    if not axes:
        ctx.bind(node.outputs[0], x)
        return
    unsqueeze(ctx, x, axes, out_name(node, ctx))


@lowers("transpose")
def lower_transpose(node, ctx):
    x, = ctx.inputs(node)
    perm = [int(p) for p in node.attrs["perm"]]
    if perm == sorted(perm):
        ctx.bind(node.outputs[0], x)
        return
    ctx.emit("Transpose", [x], out_name(node, ctx), perm=perm)


# -- concat, stack, split, unbind ---------------------------------------------------------------------
@lowers("concat")
def lower_concat(node, ctx):
    inputs = ctx.inputs(node)
    if len(inputs) == 1:
        ctx.bind(node.outputs[0], inputs[0])
        return
    ctx.emit("Concat", inputs, out_name(node, ctx), axis=int(node.attrs["axis"]))


@lowers("stack")
def lower_stack(node, ctx):
    inputs = ctx.inputs(node)
    axis = int(node.attrs["axis"])
    shape = ctx.shape(node.inputs[0])
    out = out_name(node, ctx)
    if len(inputs) == 1:
        unsqueeze(ctx, inputs[0], [axis], out)
        return
    after = shape[axis:]
    if axis < len(shape) and is_static(after) and 0 not in after:
        # Two nodes whatever the count: joined along the axis, [.., n * d, ..] is [.., n, d, ..]
        joined = ctx.emit("Concat", inputs, axis=axis)
        reshape(ctx, joined, [0] * axis + [len(inputs)] + list(after), out, allowzero=False)
        return
    ctx.emit("Concat", [unsqueeze(ctx, x, [axis]) for x in inputs], out, axis=axis)


@lowers("split")
def lower_split(node, ctx):
    x, = ctx.inputs(node)
    sections = [int(s) for s in node.attrs["sections"]]
    if len(sections) == 1:
        ctx.bind(node.outputs[0], x)
        return
    ctx.emit("Split", [x, ctx.int64s(sections)], ctx.outputs(node), axis=int(node.attrs["axis"]))


@lowers("unbind")
def lower_unbind(node, ctx):
    x, = ctx.inputs(node)
    axis = int(node.attrs["axis"])
    if len(node.outputs) == 1:
        squeeze(ctx, x, [axis], out_name(node, ctx))
        return
    for i, vid in enumerate(node.outputs):  # one Gather per slice that something reads
        if ctx.is_used(vid):
            ctx.emit("Gather", [x, ctx.constant(np.int64(i))], ctx.name(vid), axis=axis)
        else:
            ctx.bind(vid, ctx.fresh("unused_slice"))


# -- tile, broadcast_to, flip, roll ----------------------------------------------------------------------
@lowers("tile")
def lower_tile(node, ctx):
    x, = ctx.inputs(node)
    rank = len(ctx.shape(node.inputs[0]))
    reps = [int(r) for r in node.attrs["repeat_times"]]
    reps = [1] * (rank - len(reps)) + reps  # a short list applies to the last axes (np.tile)
    if len(reps) > rank:  # a long one adds leading axes
        x = unsqueeze(ctx, x, list(range(len(reps) - rank)))
    if all(r == 1 for r in reps):
        ctx.bind(node.outputs[0], x)
        return
    ctx.emit("Tile", [x, ctx.int64s(reps)], out_name(node, ctx))


@lowers("broadcast_to")
def lower_broadcast_to(node, ctx):
    x, = ctx.inputs(node)
    out_shape = ctx.shape(node.outputs[0])
    # Expand broadcasts both ways: a 1 keeps the input's dim, which a dynamic dim needs
    shape = [1 if d is None else int(d) for d in out_shape]
    ctx.emit("Expand", [x, ctx.int64s(shape)], out_name(node, ctx))


@lowers("flip")
def lower_flip(node, ctx):
    x, = ctx.inputs(node)
    axes = [int(a) for a in node.attrs["axis"]]
    if not axes:
        ctx.bind(node.outputs[0], x)
        return
    k = len(axes)  # a slice from the last element down past the first, on every axis at once
    ctx.emit("Slice", [x, ctx.int64s([-1] * k), ctx.int64s([INT64_MIN] * k), ctx.int64s(axes), ctx.int64s([-1] * k)],
             out_name(node, ctx))


def _roll_axis(ctx, x: str, n: int, shift: int, axis: int, out=None) -> str:
    s = shift % n
    tail = ctx.emit("Slice", [x, ctx.int64s([n - s]), ctx.int64s([n]), ctx.int64s([axis])])
    head = ctx.emit("Slice", [x, ctx.int64s([0]), ctx.int64s([n - s]), ctx.int64s([axis])])
    return ctx.emit("Concat", [tail, head], out, axis=axis)


@lowers("roll")
def lower_roll(node, ctx):
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    shifts, axes = [int(s) for s in node.attrs["shifts"]], node.attrs["axis"]
    if axes is None:  # the flattened tensor, rolled, in its shape again
        n = numel(shape)
        if n is None:
            raise ctx.unsupported(node, f"rolling the flattened tensor of dynamic shape {list(shape)}")
        if n == 0 or shifts[0] % n == 0:
            ctx.bind(node.outputs[0], x)
            return
        rolled = _roll_axis(ctx, reshape(ctx, x, [-1]), n, shifts[0], 0)
        reshape(ctx, rolled, list(shape), out_name(node, ctx))
        return
    total: dict[int, int] = {}
    for a, s in zip(axes, shifts):  # np.roll adds the shifts of an axis named twice
        total[int(a)] = total.get(int(a), 0) + s
    steps = []
    for a, s in total.items():
        if shape[a] is None:
            raise ctx.unsupported(node, f"rolling dynamic axis {a} of {list(shape)}")
        if shape[a] and s % shape[a]:
            steps.append((a, s))
    if not steps:
        ctx.bind(node.outputs[0], x)
        return
    for i, (a, s) in enumerate(steps):
        x = _roll_axis(ctx, x, shape[a], s, a, out_name(node, ctx) if i == len(steps) - 1 else None)


# -- slice, strided_slice, pad, tril/triu ---------------------------------------------------------------
def _slice(ctx, x: str, axes, starts, ends, steps=None, out=None) -> str:
    # ONNX's Slice clamps and counts negative bounds from the end exactly as Python's slices,
    # negative steps included, so the attributes go through unchanged.
    inputs = [x, ctx.int64s(starts), ctx.int64s(ends), ctx.int64s(axes)]
    if steps is not None and any(s != 1 for s in steps):
        inputs.append(ctx.int64s(steps))
    return ctx.emit("Slice", inputs, out)


def _is_full(shape, axes, starts, ends, steps) -> bool:
    """Whether the slices select every element in order (a copy of the input)."""
    for a, s, e, st in zip(axes, starts, ends, steps):
        d = shape[a]
        if d is None or st != 1 or slice(s, e, st).indices(d) != (0, d, 1):
            return False
    return True


@lowers("slice", "strided_slice")
def lower_slice(node, ctx):
    x, = ctx.inputs(node)
    a = node.attrs
    axes = [int(v) for v in a["axes"]]
    steps = [int(v) for v in a.get("strides", [1] * len(axes))]
    if _is_full(ctx.shape(node.inputs[0]), axes, a["starts"], a["ends"], steps):
        ctx.bind(node.outputs[0], x)
        return
    _slice(ctx, x, axes, a["starts"], a["ends"], steps, out_name(node, ctx))


def _circular_pad(ctx, x: str, shape, pads, out) -> str:
    """Wrap-around padding before opset 19's Pad(mode='wrap'): the last ``before`` and the first
    ``after`` elements of each axis concatenated around it."""
    axes = [i for i in range(len(shape)) if pads[2 * i] or pads[2 * i + 1]]
    for k, i in enumerate(axes):
        before, after, d = pads[2 * i], pads[2 * i + 1], shape[i]
        if d is None:
            raise ValueError(f"circular padding of dynamic axis {i}")
        parts = ([_slice(ctx, x, [i], [d - before], [d])] if before else []) + [x] + \
                ([_slice(ctx, x, [i], [0], [after])] if after else [])
        x = ctx.emit("Concat", parts, out if k == len(axes) - 1 else None, axis=i)
    return x


@lowers("pad")
def lower_pad(node, ctx):
    x, = ctx.inputs(node)
    vid = node.inputs[0]
    pads, mode = [int(p) for p in node.attrs["pads"]], node.attrs["mode"]
    if not any(pads):
        ctx.bind(node.outputs[0], x)
        return
    out = out_name(node, ctx)
    if mode == "circular" and ctx.opset < 19:
        try:
            _circular_pad(ctx, x, ctx.shape(vid), pads, out)
        except ValueError as exc:
            raise ctx.unsupported(node, f"{exc} (Pad's mode='wrap' needs opset 19)") from None
        return
    onnx_pads = ctx.int64s(pads[0::2] + pads[1::2])  # oar: before/after per axis; ONNX: begins, then ends
    inputs = [x, onnx_pads]
    if mode == "constant" and node.attrs["value"] != 0:
        inputs.append(ctx.constant(np.asarray(node.attrs["value"]).astype(np.dtype(ctx.dtype(vid)))))
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    ctx.emit("Pad", inputs, out, mode=onnx_mode)


@lowers("tril", "triu")
def lower_triangle(node, ctx):
    x, = ctx.inputs(node)
    k = int(node.attrs["diagonal"])
    upper = node.op == "triu"
    if ctx.opset >= 14:
        inputs = [x] if k == 0 else [x, ctx.constant(np.int64(k))]
        ctx.emit("Trilu", inputs, out_name(node, ctx), upper=int(upper))
        return
    rows, cols = ctx.shape(node.inputs[0])[-2:]
    if rows is None or cols is None:
        raise ctx.unsupported(node, "a triangle of dynamic matrix dims needs Trilu (opset 14)")
    mask = ctx.constant((np.triu if upper else np.tril)(np.ones((rows, cols), bool), k))
    if ctx.dtype(node.inputs[0]) == "bool":
        ctx.emit("And", [mask, x], out_name(node, ctx))
    else:
        ctx.emit("Where", [mask, x, ctx.constant(0, like=node.inputs[0])], out_name(node, ctx))


# -- gather, gather_nd, take_along_axis ------------------------------------------------------------------
@lowers("gather")
def lower_gather(node, ctx):
    # Gather counts negative indices from the end, as the kernel's np.take
    ctx.emit("Gather", ctx.inputs(node), out_name(node, ctx), axis=int(node.attrs["axis"]))


@lowers("gather_nd")
def lower_gather_nd(node, ctx):
    x, _ = ctx.inputs(node)
    index_shape = ctx.shape(node.inputs[1])
    if index_shape[-1] == 0:  # no coordinates: every slice is the whole of x
        shape = tuple(index_shape[:-1]) + tuple(ctx.shape(node.inputs[0]))
        if not is_static(shape):
            raise ctx.unsupported(node, f"an empty coordinate axis with dynamic shape {list(shape)}")
        ctx.emit("Expand", [x, ctx.int64s(shape)], out_name(node, ctx))
        return
    ctx.emit("GatherND", [x, input_as(ctx, node, 1, "int64")], out_name(node, ctx))


@lowers("take_along_axis", "_take_along_axis")
def lower_take_along_axis(node, ctx):
    arr, index = ctx.inputs(node)
    if not ctx.shape(node.inputs[0]):  # the kernel returns a 0-d arr as it is
        ctx.bind(node.outputs[0], arr)
        return
    # GatherElements: indices of any size up to arr's, negative ones from the end, as the kernel
    ctx.emit("GatherElements", [arr, index], out_name(node, ctx), axis=int(node.attrs["axis"]))


# -- scatter, put_along_axis, index_add, scatter_nd_add ----------------------------------------------------
def _filled_like(ctx, value, vid: int) -> str:
    return fill(ctx, value, ctx.dtype(vid), vid)


@lowers("scatter")
def lower_scatter(node, ctx):
    x, index, updates = ctx.inputs(node)
    x_vid, index_vid, updates_vid = node.inputs
    rows = ctx.shape(x_vid)[0]
    known = ctx.static_value(index_vid)
    out = out_name(node, ctx)
    if not node.attrs["overwrite"]:
        # The kernel zeroes the indexed rows, then adds every update (repeats accumulate).
        _require_opset(node, ctx, 16, "scatter with overwrite=False (ScatterND's reduction='add')")
        coords = unsqueeze(ctx, input_as(ctx, node, 1, "int64"), [1])
        zeroed = ctx.emit("ScatterND", [x, coords, _filled_like(ctx, 0, updates_vid)])
        ctx.emit("ScatterND", [zeroed, coords, updates], out, reduction="add")
        return
    if known is not None and rows is not None:
        targets = np.where(known < 0, known + rows, known).astype(np.int64)
        last = static_last_writer(targets, 0)
        if last is not None:  # keep each target's last update only
            keep = np.flatnonzero(last == np.arange(len(targets)))
            targets, updates = targets[keep], ctx.emit("Gather", [updates, ctx.int64s(keep)], axis=0)
        ctx.emit("ScatterND", [x, ctx.constant(targets[:, None]), updates], out)
        return
    targets = ctx.emit("Mod", [input_as(ctx, node, 1, "int64"), dim_scalar(ctx, x, ctx.shape(x_vid), 0)])
    writer = last_writer(ctx, targets, ctx.shape(index_vid), 0)
    kept = ctx.emit("Gather", [updates, writer], axis=0)  # each repeated row takes its last update
    ctx.emit("ScatterND", [x, unsqueeze(ctx, targets, [1]), kept], out)


REDUCTIONS = {"add": ("add", 0, 16), "mul": ("mul", 1, 16), "multiply": ("mul", 1, 16),
              "amin": ("min", None, 18), "amax": ("max", None, 18)}


@lowers("put_along_axis")
def lower_put_along_axis(node, ctx):
    arr, index, values = ctx.inputs(node)
    arr_vid, index_vid, values_vid = node.inputs
    axis, mode, include_self = int(node.attrs["axis"]), node.attrs["reduce"], node.attrs["include_self"]
    out = out_name(node, ctx)
    if mode == "assign":
        dim = ctx.shape(arr_vid)[axis]
        known = ctx.static_value(index_vid)
        if known is not None and dim is not None:
            last = static_last_writer(np.mod(known, dim) if dim else known, axis)
            writer = None if last is None else ctx.constant(last)
        else:
            targets = ctx.emit("Mod", [input_as(ctx, node, 1, "int64"), dim_scalar(ctx, arr, ctx.shape(arr_vid), axis)])
            writer = last_writer(ctx, targets, ctx.shape(index_vid), axis)
        if writer is not None:  # every repeated position carries its last value
            values = ctx.emit("GatherElements", [values, writer], axis=axis)
        ctx.emit("ScatterElements", [arr, index, values], out, axis=axis)
        return
    if mode == "mean":
        _put_mean(node, ctx, out)
        return
    reduction, identity, opset = REDUCTIONS[mode]
    _require_opset(node, ctx, opset, f"put_along_axis with reduce={mode!r} (ScatterElements' reduction)")
    base = arr
    if not include_self:
        # The written positions start from the reduction's identity; for amin/amax from any of
        # their own values, which the reduction then covers (what the kernel does).
        start = values if identity is None else _filled_like(ctx, identity, values_vid)
        base = ctx.emit("ScatterElements", [arr, index, start], axis=axis)
    ctx.emit("ScatterElements", [base, index, values], out, axis=axis, reduction=reduction)


def _put_mean(node, ctx, out: str) -> None:
    """put_along_axis(reduce='mean'): sums and counts in float64, as the kernel, then the mean
    (truncated for integers) where something was written."""
    _require_opset(node, ctx, 16, "put_along_axis with reduce='mean' (ScatterElements' reduction='add')")
    arr, index, _ = ctx.inputs(node)
    arr_vid, index_vid, _ = node.inputs
    axis, include_self = int(node.attrs["axis"]), node.attrs["include_self"]
    dtype = ctx.dtype(arr_vid)
    values = input_as(ctx, node, 2, "float64")
    base = cast(ctx, arr, dtype, "float64") if include_self else fill(ctx, 0.0, "float64", arr_vid)
    sums = ctx.emit("ScatterElements", [base, index, values], axis=axis, reduction="add")
    # including self, every position counts itself once: the counts start at 1
    counts = ctx.emit("ScatterElements", [fill(ctx, float(include_self), "float64", arr_vid), index,
                                          fill(ctx, 1.0, "float64", index_vid)], axis=axis, reduction="add")
    written = ctx.emit("Greater", [counts, ctx.constant(float(include_self), "float64")])
    if not include_self:
        counts = ctx.emit("Max", [counts, ctx.constant(1.0, "float64")])
    means = cast(ctx, ctx.emit("Div", [sums, counts]), "float64", dtype)  # Cast truncates toward zero
    ctx.emit("Where", [written, means, arr], out)


@lowers("index_add")
def lower_index_add(node, ctx):
    _require_opset(node, ctx, 16, "index_add (ScatterElements' reduction='add')")
    x, index, value = ctx.inputs(node)
    axis = int(node.attrs["axis"])
    known = ctx.static_value(node.inputs[1])
    if known is not None and known.size == 0:
        ctx.bind(node.outputs[0], x)
        return
    rank = len(ctx.shape(node.inputs[0]))
    if rank > 1:  # the 1-D index along axis, broadcast over the value's other dims
        index = reshape(ctx, index, [1] * axis + [-1] + [1] * (rank - axis - 1))
        index = ctx.emit("Expand", [index, shape_of(ctx, node.inputs[2])])
    ctx.emit("ScatterElements", [x, index, value], out_name(node, ctx), axis=axis, reduction="add")


@lowers("scatter_nd_add")
def lower_scatter_nd_add(node, ctx):
    x, _, updates = ctx.inputs(node)
    index_shape = ctx.shape(node.inputs[1])
    out = out_name(node, ctx)
    if index_shape[-1] == 0:  # every update adds to the whole of x
        lead = len(index_shape) - 1
        total = reduce(ctx, "ReduceSum", updates, list(range(lead)), False) if lead else updates
        ctx.emit("Add", [x, total], out)
        return
    _require_opset(node, ctx, 16, "scatter_nd_add (ScatterND's reduction='add')")
    ctx.emit("ScatterND", [x, input_as(ctx, node, 1, "int64"), updates], out, reduction="add")


# -- masks, nonzero, one_hot ----------------------------------------------------------------------------
@lowers("masked_select")
def lower_masked_select(node, ctx):
    x, mask = ctx.inputs(node)
    x_shape, mask_shape = ctx.shape(node.inputs[0]), ctx.shape(node.inputs[1])
    common = broadcast_shape(x_shape, mask_shape)
    if tuple(x_shape) != common or tuple(mask_shape) != common:
        if is_static(common):
            target = ctx.int64s(common)
        else:  # Where broadcasts its three inputs: its shape is the common one
            target = ctx.emit("Shape", [ctx.emit("Where", [mask, x, x])])
        x = x if tuple(x_shape) == common else ctx.emit("Expand", [x, target])
        mask = mask if tuple(mask_shape) == common else ctx.emit("Expand", [mask, target])
    if not common:  # Compress wants an input of rank >= 1
        x = reshape(ctx, x, [1])
    # Compress without an axis reads its input flattened, in row-major order as numpy does
    ctx.emit("Compress", [x, reshape(ctx, mask, [-1])], out_name(node, ctx))


@lowers("nonzero")
def lower_nonzero(node, ctx):
    x, = ctx.inputs(node)
    if not ctx.shape(node.inputs[0]):  # a 0-d x: [N, 0], N being 1 where x is nonzero
        coords = ctx.emit("Transpose", [ctx.emit("NonZero", [reshape(ctx, x, [1])])], perm=[1, 0])
        _slice(ctx, coords, [1], [0], [0], out=out_name(node, ctx))
        return
    # NonZero lists the coordinates as [rank, N]; oar (np.argwhere) as [N, rank]
    ctx.emit("Transpose", [ctx.emit("NonZero", [x])], out_name(node, ctx), perm=[1, 0])


@lowers("one_hot")
def lower_one_hot(node, ctx):
    x = input_as(ctx, node, 0, "int64")  # ONNX Runtime's OneHot takes int64 indices with an int64 depth
    classes = int(node.attrs["num_classes"])
    if classes == -1:  # the kernel's x.max() + 1, read at run time
        depth = ctx.emit("Add", [reduce(ctx, "ReduceMax", x, None, False), ctx.constant(np.int64(1))])
    else:
        depth = ctx.constant(np.int64(classes))
    out = out_name(node, ctx)
    if not ctx.shape(node.inputs[0]):  # OneHot wants indices of rank >= 1: compare with 0..depth-1
        if classes == -1:
            raise ctx.unsupported(node, "num_classes=-1 of a 0-d tensor")
        hot = ctx.emit("Equal", [x, ctx.constant(np.arange(classes, dtype=np.int64))])
        cast(ctx, hot, "bool", "float32", out)
        return
    ctx.emit("OneHot", [x, depth, ctx.constant(np.array([0.0, 1.0], np.float32))], out, axis=-1)


# -- x[index]: getitem and setitem ------------------------------------------------------------------------
FULL = {"kind": "slice", "start": None, "stop": None, "step": None}


class _Index:
    """One index tensor of a getitem/setitem node: its ONNX name, shape and dtype."""

    def __init__(self, name: str, shape, dtype: str):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype


def _expanded(items, rank: int, indices) -> list:
    """The items with the Ellipsis (or the implicit trailing one) replaced by full slices."""
    def consumed(it):
        if it["kind"] in ("int", "slice"):
            return 1
        if it["kind"] == "tensor":
            t = indices[it["input"]]
            return len(t.shape) if t.dtype == "bool" else 1
        return 0

    fill_in = [FULL] * (rank - sum(consumed(it) for it in items))
    if not any(it["kind"] == "ellipsis" for it in items):
        return list(items) + fill_in
    out = []
    for it in items:
        out.extend(fill_in if it["kind"] == "ellipsis" else [it])
    return out


def _slice_bounds(it):
    step = it["step"] if it["step"] is not None else 1
    start = it["start"] if it["start"] is not None else (0 if step > 0 else INT64_MAX)
    stop = it["stop"] if it["stop"] is not None else (INT64_MAX if step > 0 else INT64_MIN)
    return start, stop, step


def _sliced_shape(shape, cuts) -> list:
    out = list(shape)
    for a, s, e, st in cuts:
        out[a] = None if out[a] is None else len(range(*slice(s, e, st).indices(out[a])))
    return out


def index(ctx, x: str, shape, items, indices: list[_Index]) -> tuple[str, int]:
    """``x[items]`` by numpy's rules, as ONNX nodes: (the result's name, its rank).

    Slices (and plain ints) become one Slice; a single advanced index a Gather (integers) or a
    Compress (a bool mask); several advanced indices a GatherND of the broadcast coordinates,
    its dims placed where numpy places them (at the first advanced position when the advanced
    items are adjacent, else first). None and Python-bool items become Unsqueezes."""
    items = _expanded(items, len(shape), indices)

    def advanced(it):
        if it["kind"] == "bool":
            return True
        return it["kind"] == "tensor" and (indices[it["input"]].dtype == "bool" or len(indices[it["input"]].shape) > 0)

    fancy = any(advanced(it) for it in items)
    cuts, plan, dim = [], [], 0  # plan: (kind, x dims, payload) per item
    for it in items:
        kind = it["kind"]
        if kind == "slice":
            start, stop, step = _slice_bounds(it)
            if (it["start"], it["stop"], step) != (None, None, 1):
                cuts.append((dim, start, stop, step))
            plan.append(("slice", [dim], None))
            dim += 1
        elif kind == "int":
            v = int(it["value"])
            if fancy:  # beside advanced indices an int is one too (a 0-d one)
                plan.append(("adv", [dim], _Index(ctx.constant(np.int64(v)), (), "int64")))
            else:
                cuts.append((dim, v, v + 1 if v != -1 else INT64_MAX, 1))
                plan.append(("drop", [dim], None))
            dim += 1
        elif kind == "none":
            plan.append(("none", [], None))
        elif kind == "bool":
            plan.append(("pybool", [], bool(it["value"])))
        else:
            t = indices[it["input"]]
            if t.dtype == "bool":
                plan.append(("mask", list(range(dim, dim + len(t.shape))), t))
                dim += len(t.shape)
            else:
                plan.append(("adv" if fancy else "take", [dim], t))
                dim += 1
    y = _slice(ctx, x, [c[0] for c in cuts], [c[1] for c in cuts], [c[2] for c in cuts], [c[3] for c in cuts]) \
        if cuts else x
    y_shape = _sliced_shape(shape, cuts)
    if not fancy:
        return _basic_rest(ctx, y, plan)
    return _advanced_rest(ctx, y, y_shape, plan)


def _basic_rest(ctx, y: str, plan) -> tuple[str, int]:
    takes = [(dims[0], t) for kind, dims, t in plan if kind == "take"]
    for d, t in sorted(takes, key=lambda e: -e[0]):  # 0-d index tensors: Gather drops the dim
        y = ctx.emit("Gather", [y, t.name], axis=d)
    taken = {d for d, _ in takes}
    drops = [dims[0] - sum(1 for t in taken if t < dims[0]) for kind, dims, _ in plan if kind == "drop"]
    if drops:
        y = squeeze(ctx, y, drops)
    nones, rank = [], 0
    for kind, _, _ in plan:
        if kind == "slice":
            rank += 1
        elif kind == "none":
            nones.append(rank)
            rank += 1
    if nones:
        y = unsqueeze(ctx, y, nones)
    return y, rank


def _advanced_rest(ctx, y: str, y_shape, plan) -> tuple[str, int]:
    adv_positions = [i for i, (kind, _, _) in enumerate(plan) if kind in ("adv", "mask", "pybool")]
    adjacent = adv_positions[-1] - adv_positions[0] + 1 == len(adv_positions)
    scalars = [(dims[0], t) for kind, dims, t in plan if kind == "adv" and not t.shape]
    arrays = [(i, kind, dims, t) for i, (kind, dims, t) in enumerate(plan)
              if kind == "mask" or (kind == "adv" and t.shape)]
    pybools = [t for kind, _, t in plan if kind == "pybool"]
    if not all(pybools):
        raise ValueError("an index of False (an empty selection)")
    # Scalar advanced indices (ints, 0-d tensors) first, a Gather each: they drop their dim and
    # add nothing to the broadcast index shape but its place (numpy's rule below).
    for d, t in sorted(scalars, key=lambda e: -e[0]):
        y = ctx.emit("Gather", [y, t.name], axis=d)
    removed = {d for d, _ in scalars}
    labels = {}  # x dim -> plan index, for the dims that remain
    for i, (_, dims, _) in enumerate(plan):
        for d in dims:
            if d not in removed:
                labels[d] = i
    layout = [labels[d] for d in sorted(labels)]  # what each dim of y is, by plan index
    shape_now = [y_shape[d] for d in sorted(labels)]
    block = "B"  # the dims of the broadcast advanced index
    if not arrays:  # Python bools (and scalars): the broadcast index shape is [1], no dim of y
        nb, virtual = (1 if pybools else 0), bool(pybools)
    elif len(arrays) == 1:
        i, kind, dims, t = arrays[0]
        at = layout.index(i)
        if kind == "mask":
            y, nb = _compress(ctx, y, shape_now, list(range(at, at + len(dims))), t), 1
        else:
            y, nb = ctx.emit("Gather", [y, t.name], axis=at), len(t.shape)
        layout = layout[:at] + [block] + layout[at + len(dims):]
        virtual = False
    else:
        indexed = [layout.index(i) + k for i, _, dims, _ in arrays for k in range(len(dims))]
        y, nb = _gather_nd(ctx, y, shape_now, [a[1:] for a in arrays], indexed, pybools)
        layout = [block] + [e for k, e in enumerate(layout) if k not in indexed]
        virtual = False
    slices = [i for i, (kind, _, _) in enumerate(plan) if kind == "slice"]
    # numpy: the index dims stand where the advanced items stand when they are adjacent, else first
    place = sum(1 for i in slices if i < adv_positions[0]) if adjacent else 0
    wanted = slices[:place] + [block] + slices[place:]
    if not virtual:
        def expand(order):
            out = []
            for e in order:
                out.extend([(block, k) for k in range(nb)] if e == block else [(e, 0)])
            return out

        now, goal = expand(layout), expand(wanted)
        if now != goal:
            y = ctx.emit("Transpose", [y], perm=[now.index(g) for g in goal])
    # the None items (and a Python-bool index of no dim: a new dim of 1) become Unsqueezes
    nones, rank = [], 0
    if not adjacent:
        if virtual:
            nones.append(0)
        rank = nb
    for i, (kind, _, _) in enumerate(plan):
        if kind == "slice":
            rank += 1
        elif kind == "none":
            nones.append(rank)
            rank += 1
        elif adjacent and i == adv_positions[0]:
            if virtual:
                nones.append(rank)
            rank += nb
    if nones:
        y = unsqueeze(ctx, y, nones)
    return y, rank


def _compress(ctx, y: str, y_shape, dims, mask: _Index) -> str:
    """``y`` selected by a bool mask over its dims ``dims``: Compress along them (merged into one)."""
    d, k = dims[0], len(dims)
    if k == 1:
        return ctx.emit("Compress", [y, mask.name], axis=d)
    flat_mask = reshape(ctx, mask.name, [-1])
    if d == 0 and k == len(y_shape):  # the whole tensor: Compress flattens it
        return ctx.emit("Compress", [y, flat_mask])
    tail = y_shape[d + k:]
    if not is_static(tail):
        raise ValueError(f"a bool mask over dims {dims} followed by dynamic dims {list(tail)}")
    merged = reshape(ctx, y, [0] * d + [-1] + list(tail))
    return ctx.emit("Compress", [merged, flat_mask], axis=d)


def _gather_nd(ctx, y: str, y_shape, arrays, indexed, pybools) -> tuple[str, int]:
    """Several advanced index arrays: the coordinates broadcast together and stacked, the
    indexed dims of ``y`` (positions ``indexed``) moved first, one GatherND. Returns the result
    and the rank of the broadcast index shape."""
    coords = []  # (name, shape) per indexed dim
    for kind, dims, t in arrays:
        if kind == "mask":  # numpy reads a mask as its nonzero coordinates
            found = ctx.emit("NonZero", [t.name])
            coords.extend((ctx.emit("Gather", [found, ctx.constant(np.int64(i))], axis=0), (None,))
                          for i in range(len(dims)))
        else:
            coords.append((cast(ctx, t.name, t.dtype, "int64"), t.shape))
    common = broadcast_shape(*[s for _, s in coords], *[(1,) for _ in pybools])
    if len({s for _, s in coords}) > 1:  # broadcast the coordinates to one shape
        if is_static(common):
            target = ctx.int64s(common)
        else:
            total = coords[0][0]
            for name, _ in coords[1:]:
                total = ctx.emit("Add", [total, name])
            target = ctx.emit("Shape", [total])
        coords = [(name if s == common else ctx.emit("Expand", [name, target]), common) for name, s in coords]
    rest = [d for d in range(len(y_shape)) if d not in indexed]
    if indexed + rest != list(range(len(y_shape))):
        y = ctx.emit("Transpose", [y], perm=indexed + rest)
    names = [name for name, _ in coords]
    stacked = unsqueeze(ctx, names[0], [-1]) if len(names) == 1 else \
        ctx.emit("Concat", [unsqueeze(ctx, n, [-1]) for n in names], axis=-1)
    return ctx.emit("GatherND", [y, stacked]), len(common)


def _indices(node, ctx, first: int) -> list[_Index]:
    return [_Index(ctx.name(v), ctx.shape(v), ctx.dtype(v)) for v in node.inputs[first:]]


@lowers("getitem")
def lower_getitem(node, ctx):
    x_vid = node.inputs[0]
    try:
        result, _ = index(ctx, ctx.name(x_vid), ctx.shape(x_vid), node.attrs["items"], _indices(node, ctx, 1))
    except ValueError as exc:
        raise ctx.unsupported(node, str(exc)) from None
    ctx.bind(node.outputs[0], result)


def _numpy_key(items, arrays) -> tuple:
    """The numpy index of ``items`` over the constant index ``arrays``."""
    key = []
    for it in items:
        kind = it["kind"]
        key.append(None if kind == "none" else Ellipsis if kind == "ellipsis" else
                   slice(it["start"], it["stop"], it["step"]) if kind == "slice" else
                   arrays[it["input"]] if kind == "tensor" else it["value"])
    return tuple(key)


@lowers("setitem")
def lower_setitem(node, ctx):
    """``x[index] = value`` as one ScatterND into the flattened ``x``: the flat positions of the
    indexed elements (computed now when the index is constant, else by indexing a tensor of
    positions with the same lowering as getitem), the value broadcast to them."""
    x, value = ctx.inputs(node)[:2]
    x_vid, value_vid, *index_vids = node.inputs
    shape, items = ctx.shape(x_vid), node.attrs["items"]
    arrays = [ctx.static_value(v) for v in index_vids]
    value_rank = len(ctx.shape(value_vid))
    out = out_name(node, ctx)
    if is_static(shape) and all(a is not None for a in arrays):
        positions = np.arange(numel(shape), dtype=np.int64).reshape(shape)[_numpy_key(items, arrays)]
        target_rank, flat = positions.ndim, positions.reshape(-1)
        if not flat.size:  # nothing is written
            ctx.bind(node.outputs[0], x)
            return
        value = _broadcast_value(ctx, value, ctx.shape(value_vid), value_rank, target_rank,
                                 ctx.int64s(positions.shape), tuple(positions.shape))
        if np.array_equal(flat, np.arange(numel(shape))):  # every element, in order: the value itself
            if tuple(positions.shape) == tuple(shape):
                ctx.bind(node.outputs[0], value)
            else:
                reshape(ctx, value, list(shape), out)
            return
        flat_value = value if target_rank == 1 else reshape(ctx, value, [-1])
        last = static_last_writer(flat, 0)
        if last is not None:  # numpy keeps the last of repeated writes
            keep = np.flatnonzero(last == np.arange(len(flat)))
            flat, flat_value = flat[keep], ctx.emit("Gather", [flat_value, ctx.int64s(keep)], axis=0)
        if len(shape) == 1:
            ctx.emit("ScatterND", [x, ctx.constant(flat[:, None]), flat_value], out)
            return
        scattered = ctx.emit("ScatterND", [reshape(ctx, x, [-1]), ctx.constant(flat[:, None]), flat_value])
        reshape(ctx, scattered, list(shape), out)
        return
    count = ctx.emit("Range", [ctx.constant(np.int64(0)), _numel_scalar(ctx, x, shape), ctx.constant(np.int64(1))])
    grid = ctx.emit("Reshape", [count, shape_of(ctx, x_vid)])
    try:
        positions, target_rank = index(ctx, grid, shape, items, _indices(node, ctx, 2))
    except ValueError as exc:
        raise ctx.unsupported(node, str(exc)) from None
    target_shape = _static_indexed_shape(ctx, shape, items, index_vids)
    target = ctx.int64s(target_shape) if target_shape is not None else ctx.emit("Shape", [positions])
    value = _broadcast_value(ctx, value, ctx.shape(value_vid), value_rank, target_rank, target, target_shape)
    flat = reshape(ctx, positions, [-1])
    flat_value = reshape(ctx, value, [-1])
    if any(ctx.dtype(v) != "bool" and ctx.shape(v) for v in index_vids):  # integer arrays may repeat a position
        count = (None,) if target_shape is None else (numel(target_shape),)
        flat_value = ctx.emit("Gather", [flat_value, last_writer(ctx, flat, count, 0)], axis=0)
    scattered = ctx.emit("ScatterND", [reshape(ctx, x, [-1]), unsqueeze(ctx, flat, [1]), flat_value])
    ctx.emit("Reshape", [scattered, shape_of(ctx, x_vid)], out)


def _static_indexed_shape(ctx, shape, items, index_vids) -> tuple | None:
    """The shape of ``x[items]`` where it does not depend on the values (no bool mask, static
    shapes): numpy's own answer on stand-in arrays."""
    metas = [(ctx.shape(v), ctx.dtype(v)) for v in index_vids]
    if not is_static(shape) or any(d == "bool" or not is_static(s) for s, d in metas):
        return None
    arrays = [np.zeros(s, np.int64) for s, _ in metas]
    return np.empty(shape, np.int8)[_numpy_key(items, arrays)].shape


def _numel_scalar(ctx, x: str, shape) -> str:
    if is_static(shape):
        return ctx.constant(np.int64(numel(shape)))
    return ctx.emit("ReduceProd", [ctx.emit("Shape", [x])], keepdims=0)


def _broadcast_value(ctx, value: str, value_shape, value_rank: int, target_rank: int, target: str,
                     target_shape) -> str:
    """The value of an assignment broadcast to the indexed part: numpy drops its leading 1s."""
    extra = value_rank - target_rank
    if extra > 0:
        value = squeeze(ctx, value, list(range(extra)))
        value_shape = tuple(value_shape)[extra:]
    if target_shape is not None and tuple(value_shape) == tuple(target_shape):
        return value
    return ctx.emit("Expand", [value, target])


not_lowered(GRADIENT_OP, "_scatter_add_along_axis", "getitem_grad")
