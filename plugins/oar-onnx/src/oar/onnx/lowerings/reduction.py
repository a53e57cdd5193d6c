"""Reductions, scans, sorting and contractions of oar-core: sum ... logsumexp, all/any, norms,
var/std, median, cumsum/cumprod, sort/topk, and matmul, dot, outer, einsum (sums of products).

The reduction attributes are oar's: ``axis`` a sorted list of non-negative axes or None (every
axis), ``keepdim``. A reduction of a 0-d tensor is the tensor itself and writes no node.
Where ONNX's op differs from numpy's on some input, the lowering says how it stays equal:
``ReduceMean`` of an empty slice is 0 in ONNX Runtime and nan in numpy, ``ReduceMax`` of an
empty bool slice fails, ``TopK`` breaks ties by the lower index as oar's stable sort does.
"""

from __future__ import annotations

import numpy as np

from oar.onnx.lowerings import lowers
from oar.onnx.lowerings.elementwise import cast, input_as, inputs_as_output, is_float, out_name
from oar.onnx.lowerings.shape import dim_scalar, numel, reduce, reshape, unsqueeze

SIMPLE = {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin", "amax": "ReduceMax",
          "amin": "ReduceMin", "logsumexp": "ReduceLogSumExp"}


def _axes(node):
    axis = node.attrs.get("axis")
    return None if axis is None else [int(a) for a in axis]


def _count(shape, axes) -> int | None:
    """How many elements each reduced slice holds (None when a reduced dim is dynamic)."""
    dims = range(len(shape)) if axes is None else axes
    return numel([shape[a] for a in dims])


@lowers(*SIMPLE)
def lower_reduction(node, ctx):
    # logsumexp: ONNX Runtime's ReduceLogSumExp shifts by the maximum as the kernel does (no
    # overflow) and gives -inf over an empty slice, as numpy.
    x, = inputs_as_output(node, ctx)
    if not ctx.shape(node.inputs[0]):
        ctx.bind(node.outputs[0], x)
        return
    op_type = SIMPLE[node.op]
    if ctx.dtype(node.inputs[0]) == "bool" and op_type in ("ReduceMax", "ReduceMin"):
        _bool_extreme(node, ctx, x, op_type)
        return
    reduce(ctx, op_type, x, _axes(node), node.attrs["keepdim"], out_name(node, ctx))


def _bool_extreme(node, ctx, x, op_type) -> None:
    if ctx.opset >= 20:  # bool joined ReduceMax/Min at opset 20 (oar refuses empty slices)
        reduce(ctx, op_type, x, _axes(node), node.attrs["keepdim"], out_name(node, ctx))
        return
    small = reduce(ctx, op_type, cast(ctx, x, "bool", "uint8"), _axes(node), node.attrs["keepdim"])
    cast(ctx, small, "uint8", "bool", out_name(node, ctx))


@lowers("mean")
def lower_mean(node, ctx):
    x, = inputs_as_output(node, ctx)
    if not ctx.shape(node.inputs[0]):
        ctx.bind(node.outputs[0], x)
        return
    axes, keepdim = _axes(node), node.attrs["keepdim"]
    if _count(ctx.shape(node.inputs[0]), axes) == 0:
        # numpy's mean of an empty slice is 0 / 0 = nan; ONNX Runtime's ReduceMean gives 0
        total = reduce(ctx, "ReduceSum", x, axes, keepdim)
        ctx.emit("Div", [total, ctx.constant(0, like=node.outputs[0])], out_name(node, ctx))
        return
    reduce(ctx, "ReduceMean", x, axes, keepdim, out_name(node, ctx))


@lowers("all", "any")
def lower_all_any(node, ctx):
    x = input_as(ctx, node, 0, "bool")  # a number is true where nonzero
    axes, keepdim = _axes(node), node.attrs["keepdim"]
    out = out_name(node, ctx)
    if not ctx.shape(node.inputs[0]):
        ctx.bind(node.outputs[0], x)
        return
    count = _count(ctx.shape(node.inputs[0]), axes)
    if ctx.opset >= 20 and count:  # bool ReduceMin/Max, which ONNX Runtime refuses over empty slices
        reduce(ctx, "ReduceMin" if node.op == "all" else "ReduceMax", x, axes, keepdim, out)
        return
    if node.op == "all":  # the minimum of 0/1, 1 (true) over an empty slice
        small = reduce(ctx, "ReduceMin", cast(ctx, x, "bool", "uint8"), axes, keepdim)
        cast(ctx, small, "uint8", "bool", out)
    else:  # a count of true elements: 0 (false) over an empty slice, where ReduceMax gives its lowest value
        total = reduce(ctx, "ReduceSum", cast(ctx, x, "bool", "int64"), axes, keepdim)
        cast(ctx, total, "int64", "bool", out)


@lowers("argmax", "argmin")
def lower_arg_extreme(node, ctx):
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    axis, keepdim = node.attrs.get("axis"), bool(node.attrs["keepdim"])
    dtype = ctx.dtype(node.outputs[0])
    if not shape:  # the index of the only element
        ctx.bind(node.outputs[0], ctx.constant(np.zeros((), np.dtype(dtype))))
        return
    if ctx.dtype(node.inputs[0]) == "bool":
        x = cast(ctx, x, "bool", "uint8")
    flattened = axis is None and len(shape) > 1  # the index into the flattened tensor
    if flattened:
        x = reshape(ctx, x, [-1])
    # ArgMax/ArgMin take the first extreme (select_last_index=0), as numpy
    index = ctx.emit("ArgMax" if node.op == "argmax" else "ArgMin", [x], axis=0 if axis is None else int(axis),
                     keepdims=int(keepdim and not flattened))
    if flattened and keepdim:
        index = reshape(ctx, index, [1] * len(shape))
    ctx.bind(node.outputs[0], cast(ctx, index, "int64", dtype))


@lowers("var", "std")
def lower_var_std(node, ctx):
    x, = inputs_as_output(node, ctx)
    axes, keepdim, unbiased = _axes(node), bool(node.attrs["keepdim"]), bool(node.attrs["unbiased"])
    count = _count(ctx.shape(node.inputs[0]), axes)
    if count is None and unbiased:
        raise ctx.unsupported(node, f"an unbiased variance over dynamic axes {axes} of {list(ctx.shape(node.inputs[0]))}")
    # The kernel's steps: the centered values, the sum of their squares, over N (or N - 1); with
    # no degree of freedom left (N - 1 <= 0, or an empty slice) the variance is nan, as numpy's.
    centered = ctx.emit("Sub", [x, reduce(ctx, "ReduceMean", x, axes, True)])
    squares = ctx.emit("Mul", [centered, centered])
    divisor = count - 1 if unbiased else count
    if divisor > 0 and not unbiased:
        variance = reduce(ctx, "ReduceMean", squares, axes, keepdim)
    elif divisor > 0:
        variance = ctx.emit("Div", [reduce(ctx, "ReduceSum", squares, axes, keepdim),
                                    ctx.constant(divisor, like=node.outputs[0])])
    else:
        variance = ctx.emit("Add", [reduce(ctx, "ReduceSum", squares, axes, keepdim),
                                    ctx.constant(float("nan"), like=node.outputs[0])])
    ctx.bind(node.outputs[0], ctx.emit("Sqrt", [variance]) if node.op == "std" else variance)


@lowers("p_norm")
def lower_p_norm(node, ctx):
    x, = inputs_as_output(node, ctx)
    axes, keepdim, p = _axes(node), node.attrs["keepdim"], node.attrs["porder"]
    out = out_name(node, ctx)
    like = node.outputs[0]
    if not ctx.shape(node.inputs[0]):  # the norm of one number
        if p == 0:
            cast(ctx, ctx.emit("Not", [ctx.emit("Equal", [x, ctx.constant(0, like=like)])]), "bool",
                 ctx.dtype(like), out)
        else:
            ctx.emit("Abs", [x], out)
        return
    if p == 2:
        reduce(ctx, "ReduceL2", x, axes, keepdim, out)
    elif p == 1:
        reduce(ctx, "ReduceL1", x, axes, keepdim, out)
    elif p in ("inf", "-inf"):  # the kernel's initial values make an empty slice 0 (inf) and inf (-inf)
        reduce(ctx, "ReduceMax" if p == "inf" else "ReduceMin", ctx.emit("Abs", [x]), axes, keepdim, out)
    elif p == 0:  # the count of nonzero elements
        nonzero = cast(ctx, ctx.emit("Not", [ctx.emit("Equal", [x, ctx.constant(0, like=like)])]), "bool",
                       ctx.dtype(like))
        reduce(ctx, "ReduceSum", nonzero, axes, keepdim, out)
    else:
        powered = ctx.emit("Pow", [ctx.emit("Abs", [x]), ctx.constant(p, like=like)])
        total = reduce(ctx, "ReduceSum", powered, axes, keepdim)
        ctx.emit("Pow", [total, ctx.constant(1.0 / p, like=like)], out)


# -- scans ------------------------------------------------------------------------------------------
@lowers("cumsum")
def lower_cumsum(node, ctx):
    x, = ctx.inputs(node)
    if not ctx.shape(node.inputs[0]):
        ctx.bind(node.outputs[0], x)
        return
    ctx.emit("CumSum", [x, ctx.constant(np.int64(node.attrs["axis"]))], out_name(node, ctx),
             reverse=int(bool(node.attrs["reverse"])))


@lowers("cumprod")
def lower_cumprod(node, ctx):
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    axis, reverse = int(node.attrs["axis"]), bool(node.attrs["reverse"])
    out = out_name(node, ctx)
    if not shape or shape[axis] == 0:
        ctx.bind(node.outputs[0], x)
        return
    if ctx.opset >= 26:
        ctx.emit("CumProd", [x, ctx.constant(np.int64(axis))], out, reverse=int(reverse))
        return
    # Before CumProd (opset 26): out[i] = prod_j where(j <= i, x[j], 1), one ReduceProd over an
    # [n, n] mask (n: the scanned dim, which must be static).
    n = shape[axis]
    if n is None:
        raise ctx.unsupported(node, f"a cumulative product over dynamic axis {axis} needs CumProd (opset 26)")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = (j >= i) if reverse else (j <= i)
    mask = mask.reshape([n, n] + [1] * (len(shape) - axis - 1))
    spread = ctx.emit("Where", [ctx.constant(mask), unsqueeze(ctx, x, [axis]), ctx.constant(1, like=node.inputs[0])])
    reduce(ctx, "ReduceProd", spread, [axis + 1], False, out)


# -- sorting -----------------------------------------------------------------------------------------
def _whole_axis(ctx, x: str, shape, axis: int) -> str:
    """TopK's K input (1-D) for all of ``axis``: read at run time where the dim is dynamic."""
    return unsqueeze(ctx, dim_scalar(ctx, x, shape, axis), [0]) if shape[axis] is None else ctx.int64s([shape[axis]])


def _outputs_or_unused(node, ctx) -> list[str]:
    return [ctx.name(v) if ctx.is_used(v) else ctx.fresh("unused") for v in node.outputs]


def _zero_d_sort(node, ctx) -> bool:
    """A sort or top-k of a 0-d tensor: the value itself, at index 0."""
    if ctx.shape(node.inputs[0]):
        return False
    ctx.bind(node.outputs[0], ctx.name(node.inputs[0]))
    ctx.bind(node.outputs[1], ctx.constant(np.zeros((), np.int64)))
    return True


@lowers("sort")
def lower_sort(node, ctx):
    # TopK over the whole axis: it breaks ties by the lower index, oar's stable order both ways,
    # and puts nan last ascending and first descending, as the kernel's argsort does.
    if _zero_d_sort(node, ctx):
        return
    x, = ctx.inputs(node)
    axis = int(node.attrs["axis"])
    k = _whole_axis(ctx, x, ctx.shape(node.inputs[0]), axis)
    names = _outputs_or_unused(node, ctx)
    ctx.emit("TopK", [x, k], names, axis=axis, largest=int(bool(node.attrs["descending"])), sorted=1)
    for vid, name in zip(node.outputs, names):
        ctx.bind(vid, name)


@lowers("topk")
def lower_topk(node, ctx):
    if _zero_d_sort(node, ctx):
        return
    x, = ctx.inputs(node)
    a = node.attrs
    names = _outputs_or_unused(node, ctx)
    # sorted=1 whatever the attribute: the kernel always returns its values in order
    ctx.emit("TopK", [x, ctx.int64s([int(a["k"])])], names, axis=int(a["axis"]), largest=int(bool(a["largest"])),
             sorted=1)
    for vid, name in zip(node.outputs, names):
        ctx.bind(vid, name)


@lowers("median")
def lower_median(node, ctx):
    """The two middle values of the sorted slice (TopK of the smallest half + 1), averaged for
    mode='avg'; a slice holding nan has median nan and the first nan's index, as the kernel."""
    x, = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    axis, keepdim, mode = int(node.attrs["axis"]), bool(node.attrs["keepdim"]), node.attrs["mode"]
    n = shape[axis]
    if n is None:
        raise ctx.unsupported(node, f"the median over dynamic axis {axis} (the middle positions must be known)")
    dtype, out_dtype = ctx.dtype(node.inputs[0]), ctx.dtype(node.outputs[0])
    half = n // 2
    low_pos, high_pos = (half - 1, half) if n % 2 == 0 else (half, half)
    values, indices = ctx.emit("TopK", [x, ctx.int64s([half + 1])], 2, axis=axis, largest=0, sorted=1)

    def at(t, pos):  # the element at sorted position pos, the axis kept or dropped
        if keepdim:
            return ctx.emit("Slice", [t, ctx.int64s([pos]), ctx.int64s([pos + 1]), ctx.int64s([axis])])
        return ctx.emit("Gather", [t, ctx.constant(np.int64(pos))], axis=axis)

    low = at(values, low_pos)
    if mode == "min":
        result = low
    elif low_pos == high_pos:
        result = cast(ctx, low, dtype, out_dtype)
    else:
        # (a + b) / 2: halving is exact, so one rounding, as the kernel's float64 average cast back;
        # integers add in their own dtype first, as numpy does.
        pair = ctx.emit("Add", [low, at(values, high_pos)])
        result = ctx.emit("Mul", [cast(ctx, pair, dtype, out_dtype), ctx.constant(0.5, like=node.outputs[0])])
    # the outputs' indices: of the lower middle value, and of the upper one (the lower for 'min')
    index_pos = (low_pos, low_pos if mode == "min" else high_pos)
    index_out = [at(indices, p) if ctx.is_used(v) else None for p, v in zip(index_pos, node.outputs[1:])]
    if is_float(dtype):
        nan = ctx.emit("IsNaN", [x])
        has_nan = cast(ctx, reduce(ctx, "ReduceMax", cast(ctx, nan, "bool", "uint8"), [axis], keepdim),
                       "uint8", "bool")
        result = ctx.emit("Where", [has_nan, ctx.constant(np.nan, like=node.outputs[0]), result])
        if any(i is not None for i in index_out):
            first_nan = ctx.emit("ArgMax", [cast(ctx, nan, "bool", "uint8")], axis=axis, keepdims=int(keepdim))
            index_out = [None if i is None else ctx.emit("Where", [has_nan, first_nan, i]) for i in index_out]
    ctx.bind(node.outputs[0], result)
    for vid, name in zip(node.outputs[1:], index_out):
        ctx.bind(vid, name if name is not None else ctx.fresh("unused_index"))


# -- contractions ---------------------------------------------------------------------------------------
def _swap_last(ctx, x: str, rank: int) -> str:
    return ctx.emit("Transpose", [x], perm=list(range(rank - 2)) + [rank - 1, rank - 2])


@lowers("matmul")
def lower_matmul(node, ctx):
    # MatMul follows numpy's matmul: batch dims broadcast, a 1-d operand is a row or a column.
    x, y = ctx.inputs(node)
    rx, ry = len(ctx.shape(node.inputs[0])), len(ctx.shape(node.inputs[1]))
    tx = bool(node.attrs["transpose_x"]) and rx >= 2  # transposing a 1-d operand does nothing
    ty = bool(node.attrs["transpose_y"]) and ry >= 2
    out = out_name(node, ctx)
    if (tx and ry == 1) or (ty and rx == 1):
        # x^T @ v is v @ x (and v @ y^T is y @ v): no transpose (ONNX Runtime 1.32 also fuses
        # Transpose + MatMul of a 1-d operand into a wrong FusedMatMul)
        ctx.emit("MatMul", [y, x], out)
        return
    if (tx or ty) and rx == ry == 2 and ctx.dtype(node.outputs[0]) in ("float32", "float64"):
        ctx.emit("Gemm", [x, y], out, transA=int(tx), transB=int(ty))
        return
    ctx.emit("MatMul", [_swap_last(ctx, x, rx) if tx else x, _swap_last(ctx, y, ry) if ty else y], out)


@lowers("dot")
def lower_dot(node, ctx):
    x, y = ctx.inputs(node)
    if len(ctx.shape(node.inputs[0])) == 1:
        ctx.emit("MatMul", [x, y], out_name(node, ctx))
        return
    reduce(ctx, "ReduceSum", ctx.emit("Mul", [x, y]), [1], False, out_name(node, ctx))  # row by row


@lowers("outer")
def lower_outer(node, ctx):
    x, y = ctx.inputs(node)
    rx, ry = len(ctx.shape(node.inputs[0])), len(ctx.shape(node.inputs[1]))
    column = unsqueeze(ctx, x, [1]) if rx == 1 else reshape(ctx, x, [-1, 1])  # both operands flattened
    row = y if ry == 1 else reshape(ctx, y, [-1])
    ctx.emit("Mul", [column, row], out_name(node, ctx))


@lowers("einsum")
def lower_einsum(node, ctx):
    # The equation is explicit, without '...' (oar normalises it): ONNX's Einsum reads it as is.
    equation = node.attrs["equation"]
    terms, output = equation.split("->")
    terms = terms.split(",")
    inputs = ctx.inputs(node)
    if len(terms) == 1 and len(set(terms[0])) == len(terms[0]) and sorted(terms[0]) == sorted(output):
        perm = [terms[0].index(c) for c in output]  # a permutation of one operand
        if perm == sorted(perm):
            ctx.bind(node.outputs[0], inputs[0])
        else:
            ctx.emit("Transpose", inputs, out_name(node, ctx), perm=perm)
        return
    # numpy broadcasts a label of size 1 against the same label's size elsewhere; ONNX's Einsum
    # wants equal sizes: such an operand is expanded first.
    shapes = [ctx.shape(v) for v in node.inputs]
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        for label, d in zip(term, shape):
            if d is not None and d != 1:
                sizes[label] = d
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        grown = [sizes.get(label, 1) if d == 1 else 1 for label, d in zip(term, shape)]
        if any(g != 1 for g in grown):  # Expand keeps a dim where the target says 1
            inputs[i] = ctx.emit("Expand", [inputs[i], ctx.int64s(grown)])
    ctx.emit("Einsum", inputs, out_name(node, ctx), equation=equation)
