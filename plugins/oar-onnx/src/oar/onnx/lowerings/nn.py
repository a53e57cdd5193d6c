"""oar-nn's layer ops as ONNX: convolution, pooling, normalisation, linear, embedding, softmax,
activations, interpolation and losses.

Each lowering writes what the op's reference kernel computes (``packages/nn/src/oar/nn/functional``).
Where ONNX's op agrees with the kernel, one node; where it differs in a corner, an exact
decomposition for that corner only, else a refusal naming it:

- pooling: ONNX Runtime drops a ceil-mode window that lies in the padding only (oar keeps it:
  -inf for max, 0 for avg) and refuses padding as large as the kernel; both go through an
  explicit Pad and a pool without padding (avg then rescaled by oar's divisors). Max pooling's
  mask is MaxPool's Indices taken per plane (oar's ``h * W + w``, int32, -1 in the padding).
- adaptive pools: GlobalAveragePool/GlobalMaxPool for an output of 1, AveragePool/MaxPool when
  the output divides the input, else oar's own windows (averaging matrices by MatMul; a Gather
  of every window and ReduceMax/ArgMax for the maximum).
- layer_norm: LayerNormalization from opset 17, the kernel's formula below (and wherever the
  mean or variance output is read). group_norm: always the formula. GroupNormalization-18
  scales per group (oar per channel) and onnx's checker refuses it as deprecated; onnx's shape
  inference gives the 21 form's output no type, so a strict check fails on the node reading it.
- interpolate: Resize where ONNX Runtime samples where oar does (the nearest index is checked
  per position: Resize's float32 ``k / scale`` and oar's float64 ``k * in / out`` can floor
  apart), else oar's own taps (a Gather per tap, weighted and summed).
- losses: their kernels' formulas (GatherElements at the label, the -100 clamp of bce).

>>> from oar.onnx.lowerings import all_lowerings
>>> "conv" in all_lowerings() and "interpolate" in all_lowerings()
True
"""

from __future__ import annotations

import math

import numpy as np

from oar.onnx.lowerings import GRADIENT_OP, lowers, not_lowered


# -- helpers shared with the fused and quant lowerings ------------------------------------------
def onnx_pads(padding: list) -> list:
    """oar's ``[before_0, after_0, before_1, after_1, ...]`` -> ONNX's ``[begins..., ends...]``."""
    return list(padding[0::2]) + list(padding[1::2])


def reduce_over(ctx, op_type: str, x: str, axes, out=None, keepdims: int = 1) -> str:
    """A ``Reduce*`` node over ``axes``: an input from opset 18 (ReduceSum's from 13), an attribute before."""
    if op_type == "ReduceSum" or ctx.opset >= 18:
        return ctx.emit(op_type, [x, ctx.int64s(axes)], out, keepdims=keepdims)
    return ctx.emit(op_type, [x], out, axes=[int(a) for a in axes], keepdims=keepdims)


def unsqueeze(ctx, x: str, axes, out=None) -> str:
    return ctx.emit("Unsqueeze", [x, ctx.int64s(axes)], out)


def scalar(ctx, value, dtype: str) -> str:
    """A 0-d initializer of ``value`` in the oar dtype ``dtype``."""
    return ctx.constant(np.asarray(value, dtype=np.dtype(dtype)))


def static_array(ctx, vid: int) -> np.ndarray | None:
    """The array of a constant or of a parameter (what the exporter writes as its initializer)."""
    value = ctx.static_value(vid)
    if value is None and ctx.is_static(vid):
        for name, pvid in ctx.program.params.items():
            if pvid == vid:
                return np.asarray(ctx.program.param_tensors[name].numpy())
    return value


def bind_unused(ctx, vids) -> None:
    """Name outputs that nothing reads (a node's statistics at inference) without writing them."""
    for vid in vids:
        if not ctx.is_used(vid):
            ctx.bind(vid, ctx.fresh("unused"))


def _available(ctx, vid: int) -> bool:
    """Whether value ``vid`` is defined before the current node (an initializer, a feed or an
    output of a node written already): what may become an input of the node being written."""
    producer = ctx.producer(vid)
    return ctx.is_static(vid) or producer is None or ctx.lowered(producer)


def following_bias(node, ctx, channel_axis: int = 1):
    """``(bias value, add node, reshape node or None)`` where ``node``'s only reader adds a
    per-channel bias (oar's conv layers write ``conv(x, w) + bias.reshape([C, 1, 1])``; conv +
    batch-norm folding writes a computed shift the same way), else None: that bias belongs in the
    ONNX node itself (Conv's B), as other exporters write it."""
    out = node.outputs[0]
    add = ctx.sole_reader(out)
    if add is None or add.op != "add" or len(set(add.inputs)) != 2:
        return None
    other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
    shape, channels = ctx.shape(out), ctx.shape(out)[channel_axis]
    if ctx.shape(add.outputs[0]) != shape or channels is None or ctx.dtype(other) != ctx.dtype(out):
        return None
    reshape = ctx.producer(other)
    if ctx.is_static(other) and ctx.shape(other) == (channels,) and len(shape) == 2:
        return other, add, None
    trailing = (1,) * (len(shape) - 2)
    if reshape is not None and reshape.op == "reshape" and ctx.shape(reshape.inputs[0]) == (channels,) and \
            ctx.shape(other) in ((channels,) + trailing, (1, channels) + trailing) and \
            _available(ctx, reshape.inputs[0]):
        return reshape.inputs[0], add, reshape
    return None


def fold_bias(node, ctx, inputs: list, outputs: list) -> list:
    """Append the following per-channel bias of ``node`` to ``inputs`` (Conv's and ConvTranspose's
    B), absorbing its add (and reshape); returns the outputs the node then writes."""
    bias = following_bias(node, ctx)
    if bias is None:
        return outputs
    bias_vid, add, reshape = bias
    inputs.append(ctx.name(bias_vid))
    ctx.absorb(add)
    if reshape is not None and not ctx.lowered(reshape) and ctx.sole_reader(reshape.outputs[0]) is add:
        ctx.absorb(reshape)
    outputs = [ctx.name(add.outputs[0])]
    ctx.bind(node.outputs[0], outputs[0])
    return outputs


# -- convolution ----------------------------------------------------------------------------------
def conv_input(ctx, x: str, padding) -> tuple[str, list]:
    """``x`` and ONNX-ready padding: a negative ``after`` (gradient rules crop the input there) is a
    Slice of ``x`` ending that far from its end."""
    crop = [(2 + i, p) for i, p in enumerate(padding[1::2]) if p < 0]
    if not crop:
        return x, list(padding)
    axes = [a for a, _ in crop]
    x = ctx.emit("Slice", [x, ctx.int64s([0] * len(crop)), ctx.int64s([p for _, p in crop]), ctx.int64s(axes)])
    return x, [max(p, 0) if i % 2 else p for i, p in enumerate(padding)]


@lowers("conv")
def lower_conv(node, ctx):
    a = node.attrs
    if any(p < 0 for p in a["padding"][0::2]):
        raise ctx.unsupported(node, f"negative padding before a dim {a['padding']}")
    x, w = ctx.inputs(node)
    x, pads = conv_input(ctx, x, a["padding"])
    inputs = [x, w]
    outputs = fold_bias(node, ctx, inputs, ctx.outputs(node))
    ctx.emit("Conv", inputs, outputs, strides=list(a["stride"]), pads=onnx_pads(pads),
             dilations=list(a["dilation"]), group=int(a["groups"]))


@lowers("conv_transpose")
def lower_conv_transpose(node, ctx):
    # oar crops [before, before + out) of the full col2im canvas, out growing by output_padding and
    # shrinking by the after padding: only their difference matters. ONNX Runtime takes an
    # output_padding below the stride; a larger excess (oar allows up to the dilation) lies past
    # every kernel's reach, zeros, written by a Pad (the bias, not folded then, comes after).
    a = node.attrs
    stride, padding = list(a["stride"]), list(a["padding"])
    if any(p < 0 for p in padding[0::2]):
        raise ctx.unsupported(node, f"negative padding before a dim {padding}")
    output_padding, extra = [], []
    for i, (op, s) in enumerate(zip(a["output_padding"], stride)):
        excess = op - padding[2 * i + 1]
        padding[2 * i + 1] = max(-excess, 0)
        output_padding.append(excess if 0 < excess < s else 0)
        extra.append(excess if excess >= s else 0)
    inputs = ctx.inputs(node)
    outputs = ctx.outputs(node) if any(extra) else fold_bias(node, ctx, inputs, ctx.outputs(node))
    attrs = dict(strides=stride, pads=onnx_pads(padding), dilations=list(a["dilation"]), group=int(a["groups"]),
                 output_padding=output_padding if any(output_padding) else None)
    if not any(extra):
        ctx.emit("ConvTranspose", inputs, outputs, **attrs)
        return
    y = ctx.emit("ConvTranspose", inputs, **attrs)
    pads = [0] * (2 + len(extra)) + [0, 0] + extra
    ctx.emit("Pad", [y, ctx.int64s(pads), scalar(ctx, 0, ctx.dtype(node.inputs[0]))], outputs)


# -- pooling --------------------------------------------------------------------------------------
def _pool_out(size, k, s, before, after, ceil_mode):
    return (size + before + after - k + (s - 1 if ceil_mode else 0)) // s + 1


def _padding_only_window(size, k, s, before, after, ceil_mode) -> bool | None:
    """Whether the last window lies in the padding only (None: it may, the size is dynamic)."""
    if size is None:
        return None if ceil_mode and after + s > k else False
    out = _pool_out(size, k, s, before, after, ceil_mode)
    return (out - 1) * s - before >= size


def _pool_divisors(sizes, kernel, stride, padding, out, exclusive) -> np.ndarray:
    """oar's divisor of every window (the avg_pool kernel's): the input elements it covers, or
    with ``exclusive=False`` also its padding, never past the padding; at least 1."""
    counts = np.ones((), np.float64)
    for i, (size, k, s, o) in enumerate(zip(sizes, kernel, stride, out)):
        start = np.arange(o) * s - padding[2 * i]
        end = np.minimum(start + k, size + padding[2 * i + 1])
        if exclusive:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        counts = np.multiply.outer(counts, np.maximum(end - start, 1))
    return counts


def _pool_plan(ctx, node, vid, kernel, stride, padding, ceil_mode):
    """``(direct, padded_after, out)``: whether ONNX's pool with oar's attributes computes oar's
    windows, else the after-padding that an explicit Pad needs for a pool without padding (the
    reach of the last window), and the output sizes (static sizes only)."""
    sizes = ctx.shape(vid)[2:]
    nd = len(sizes)
    small = all(padding[j] < kernel[j // 2] for j in range(2 * nd))
    lone = [_padding_only_window(sizes[i], kernel[i], stride[i], padding[2 * i], padding[2 * i + 1], ceil_mode)
            for i in range(nd)]
    if small and not any(v is None or v for v in lone):
        return True, None, None
    if None in sizes:
        raise ctx.unsupported(node, f"pooling of dynamic spatial sizes {list(sizes)} with padding {padding} "
                                    f"(kernel {kernel}, ceil_mode {ceil_mode}): a window may lie in the padding only, "
                                    f"which ONNX pools drop or refuse")
    out = [_pool_out(sizes[i], kernel[i], stride[i], padding[2 * i], padding[2 * i + 1], ceil_mode) for i in range(nd)]
    after = [max((o - 1) * s + k - size - padding[2 * i], 0)
             for i, (o, s, k, size) in enumerate(zip(out, stride, kernel, sizes))]
    return False, after, out


def _explicit_pad(ctx, x, padding, after, value, dtype) -> str:
    pads = [0, 0] + list(padding[0::2]) + [0, 0] + list(after)
    return ctx.emit("Pad", [x, ctx.int64s(pads), scalar(ctx, value, dtype)]) if any(pads) else x


def _plane_mask(ctx, indices: str, sizes, out=None) -> str:
    """MaxPool's Indices (flat over the whole input) -> oar's mask: the flat position in the
    sample's channel plane, int32."""
    plane = ctx.emit("Mod", [indices, ctx.constant(np.asarray(int(np.prod(sizes)), np.int64))])
    return ctx.emit("Cast", [plane], out, to=ctx.onnx_dtype("int32"))


def _padded_mask(ctx, indices: str, sizes, padding, padded, out=None) -> str:
    """Indices into the explicitly padded input -> oar's mask over the unpadded plane, -1 where
    the maximum is padding (a window of padding only)."""
    i64 = lambda v: ctx.constant(np.asarray(v, np.int64))  # noqa: E731
    plane = ctx.emit("Mod", [indices, i64(int(np.prod(padded)))])
    flat = valid = None
    for i, (size, p) in enumerate(zip(sizes, padded)):
        inner = int(np.prod(padded[i + 1:]))
        coord = ctx.emit("Div", [plane, i64(inner)]) if inner > 1 else plane
        coord = ctx.emit("Mod", [coord, i64(p)]) if i else coord
        coord = ctx.emit("Sub", [coord, i64(padding[2 * i])]) if padding[2 * i] else coord
        inside = ctx.emit("And", [ctx.emit("GreaterOrEqual", [coord, i64(0)]), ctx.emit("Less", [coord, i64(size)])])
        valid = inside if valid is None else ctx.emit("And", [valid, inside])
        flat = coord if flat is None else ctx.emit("Add", [ctx.emit("Mul", [flat, i64(size)]), coord])
    mask = ctx.emit("Where", [valid, flat, i64(-1)])
    return ctx.emit("Cast", [mask], out, to=ctx.onnx_dtype("int32"))


@lowers("max_pool", "max_pool_infer")
def lower_max_pool(node, ctx):
    a = node.attrs
    kernel, stride, padding, ceil_mode = list(a["kernel_size"]), list(a["stride"]), list(a["padding"]), bool(a["ceil_mode"])
    vid = node.inputs[0]
    x, = ctx.inputs(node)
    mask = node.outputs[1] if len(node.outputs) > 1 and ctx.is_used(node.outputs[1]) else None
    sizes = ctx.shape(vid)[2:]
    if mask is not None and None in sizes:
        raise ctx.unsupported(node, f"max pooling's mask over dynamic spatial sizes {list(sizes)}")
    direct, after, out = _pool_plan(ctx, node, vid, kernel, stride, padding, ceil_mode)
    outputs = [ctx.name(node.outputs[0])] + ([ctx.fresh("indices")] if mask is not None else [])
    if direct:
        ctx.emit("MaxPool", [x], outputs, kernel_shape=kernel, strides=stride, pads=onnx_pads(padding),
                 ceil_mode=int(ceil_mode))
        if mask is not None:
            _plane_mask(ctx, outputs[1], sizes, ctx.name(mask))
    else:
        # oar's -inf padding: a window of padding only is -inf (and mask -1)
        xp = _explicit_pad(ctx, x, padding, after, -np.inf, ctx.dtype(vid))
        ctx.emit("MaxPool", [xp], outputs, kernel_shape=kernel, strides=stride)
        if mask is not None:
            padded = [s + padding[2 * i] + p for i, (s, p) in enumerate(zip(sizes, after))]
            _padded_mask(ctx, outputs[1], sizes, padding, padded, ctx.name(mask))
    bind_unused(ctx, node.outputs[1:])


@lowers("avg_pool")
def lower_avg_pool(node, ctx):
    a = node.attrs
    kernel, stride, padding, ceil_mode = list(a["kernel_size"]), list(a["stride"]), list(a["padding"]), bool(a["ceil_mode"])
    exclusive = bool(a["exclusive"])
    vid = node.inputs[0]
    x, = ctx.inputs(node)
    direct, after, out = _pool_plan(ctx, node, vid, kernel, stride, padding, ceil_mode)
    if direct:
        ctx.emit("AveragePool", [x], ctx.outputs(node), kernel_shape=kernel, strides=stride,
                 pads=onnx_pads(padding), ceil_mode=int(ceil_mode), count_include_pad=int(not exclusive))
        return
    # the mean of k zero-padded elements, rescaled by k / oar's divisor where they differ
    dtype = ctx.dtype(vid)
    xp = _explicit_pad(ctx, x, padding, after, 0.0, dtype)
    divisors = _pool_divisors(ctx.shape(vid)[2:], kernel, stride, padding, out, exclusive)
    size = float(np.prod(kernel))
    if np.all(divisors == size):
        ctx.emit("AveragePool", [xp], ctx.outputs(node), kernel_shape=kernel, strides=stride)
        return
    mean = ctx.emit("AveragePool", [xp], kernel_shape=kernel, strides=stride)
    ctx.emit("Mul", [mean, ctx.constant((size / divisors).astype(dtype))], ctx.outputs(node))


def adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """oar's (Paddle's) adaptive windows: ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_sizes(ctx, node) -> list:
    sizes = list(ctx.shape(node.inputs[0])[2:])
    if None in sizes:
        raise ctx.unsupported(node, f"adaptive pooling of dynamic spatial sizes {sizes}: its windows depend on them")
    return sizes


def average_along(ctx, node, x: str, vid_shape, axes, matrices, out) -> str:
    """``x`` with each axis ``axes[i]`` contracted by ``matrices[i]`` ([new, old]): MatMul by the
    matrix (transposed for the last axis), through a Reshape for an axis further in."""
    shape = list(vid_shape)
    rank = len(shape)
    order = sorted(range(len(axes)), key=lambda i: -axes[i])  # the last axis first: no reshapes there
    for n, i in enumerate(order):
        axis, m = axes[i], matrices[i]
        name = out if n == len(order) - 1 else None
        const = ctx.constant(m.T if axis == rank - 1 else m)
        if axis == rank - 1:
            x = ctx.emit("MatMul", [x, const], name)
        elif axis == rank - 2:
            x = ctx.emit("MatMul", [const, x], name)
        else:
            tail = shape[axis + 1:]
            if None in tail:
                raise ctx.unsupported(node, f"averaging axis {axis} of {shape}: a dynamic dim after it")
            flat = ctx.emit("Reshape", [x, ctx.int64s([0] * axis + [shape[axis], -1])])
            x = ctx.emit("Reshape", [ctx.emit("MatMul", [const, flat]), ctx.int64s([0] * axis + [m.shape[0]] + tail)],
                         name)
        shape[axis] = m.shape[0]
    return x


def averaging_matrix(size: int, out: int, dtype) -> np.ndarray:
    """``[out, size]``: row i averages adaptive window i (the adaptive_avg_pool kernel's matrix)."""
    start, end = adaptive_bounds(size, out)
    positions = np.arange(size)
    inside = (positions >= start[:, None]) & (positions < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


@lowers("adaptive_avg_pool")
def lower_adaptive_avg_pool(node, ctx):
    output_size = list(node.attrs["output_size"])
    sizes = _adaptive_sizes(ctx, node)
    x, = ctx.inputs(node)
    out = ctx.name(node.outputs[0])
    if all(o == 1 for o in output_size):
        ctx.emit("GlobalAveragePool", [x], out)
    elif all(s % o == 0 for s, o in zip(sizes, output_size)):
        kernel = [s // o for s, o in zip(sizes, output_size)]
        ctx.emit("AveragePool", [x], out, kernel_shape=kernel, strides=kernel)
    else:
        changed = [i for i, (s, o) in enumerate(zip(sizes, output_size)) if s != o]
        dtype = ctx.dtype(node.inputs[0])
        average_along(ctx, node, x, ctx.shape(node.inputs[0]), [2 + i for i in changed],
                      [averaging_matrix(sizes[i], output_size[i], dtype) for i in changed], out)


@lowers("adaptive_max_pool")
def lower_adaptive_max_pool(node, ctx):
    output_size = list(node.attrs["output_size"])
    sizes = _adaptive_sizes(ctx, node)
    x, = ctx.inputs(node)
    mask = node.outputs[1] if ctx.is_used(node.outputs[1]) else None
    out = ctx.name(node.outputs[0])
    if mask is None and all(o == 1 for o in output_size):
        ctx.emit("GlobalMaxPool", [x], out)
    elif all(s % o == 0 for s, o in zip(sizes, output_size)):
        kernel = [s // o for s, o in zip(sizes, output_size)]
        outputs = [out] + ([ctx.fresh("indices")] if mask is not None else [])
        ctx.emit("MaxPool", [x], outputs, kernel_shape=kernel, strides=kernel)
        if mask is not None:
            _plane_mask(ctx, outputs[1], sizes, ctx.name(mask))
    else:
        _adaptive_max_by_windows(ctx, x, sizes, output_size, out, mask)
    bind_unused(ctx, node.outputs[1:])


def _adaptive_max_by_windows(ctx, x, sizes, output_size, out, mask):
    # Every window's flat plane positions, shorter windows repeating their last element (the
    # kernel's own rule: the maximum and its first position stay): [*out, width].
    nd = len(sizes)
    per_dim = []
    for size, o in zip(sizes, output_size):
        start, end = adaptive_bounds(size, o)
        width = int((end - start).max())
        per_dim.append(np.minimum(start[:, None] + np.arange(width), end[:, None] - 1))  # [o, width]
    flat = np.zeros([1] * (2 * nd), np.int64)
    for i, (size, idx) in enumerate(zip(sizes, per_dim)):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = idx.shape
        flat = flat * size + idx.reshape(shape)
    table = flat.reshape(*output_size, -1)  # [*out, window]
    planes = ctx.emit("Reshape", [x, ctx.int64s([0, 0, int(np.prod(sizes))])])  # not -1: a batch of 0 has none
    windows = ctx.emit("Gather", [planes, ctx.constant(table)], axis=2)  # [N, C, *out, window]
    reduce_over(ctx, "ReduceMax", windows, [-1], out, keepdims=0)
    if mask is None:
        return
    arg = ctx.emit("ArgMax", [windows], axis=-1, keepdims=0)  # the first maximum, as np.argmax
    width = table.shape[-1]
    base = ctx.constant(np.arange(int(np.prod(output_size)), dtype=np.int64).reshape(output_size) * width)
    position = ctx.emit("Gather", [ctx.constant(table.reshape(-1)), ctx.emit("Add", [arg, base])], axis=0)
    ctx.emit("Cast", [position], ctx.name(mask), to=ctx.onnx_dtype("int32"))


# -- linear and embedding -------------------------------------------------------------------------
@lowers("linear")
def lower_linear(node, ctx):
    x, w, b = ctx.inputs(node)
    dtype = ctx.dtype(node.outputs[0])
    x, w, b = [name if ctx.dtype(v) == dtype else ctx.emit("Cast", [name], to=ctx.onnx_dtype(dtype))
               for name, v in zip((x, w, b), node.inputs)]  # oar's linear promotes mixed dtypes
    # oar's weight is [in, out] (Paddle's); Gemm for a 2-D input, MatMul + Add above.
    if len(ctx.shape(node.inputs[0])) == 2:
        ctx.emit("Gemm", [x, w, b], ctx.outputs(node))
    else:
        ctx.emit("Add", [ctx.emit("MatMul", [x, w]), b], ctx.outputs(node))


@lowers("embedding")
def lower_embedding(node, ctx):
    # oar's kernel (as Paddle's) writes zeros at the ids equal to padding_idx; a static table
    # whose padding row is zero already needs no mask.
    w, ids = ctx.inputs(node)
    padding_idx = int(node.attrs["padding_idx"])
    table = static_array(ctx, node.inputs[0])
    if padding_idx < 0 or (table is not None and not np.any(table[padding_idx])):
        ctx.emit("Gather", [w, ids], ctx.outputs(node), axis=0)
        return
    rows = ctx.emit("Gather", [w, ids], axis=0)
    hit = ctx.emit("Equal", [ids, ctx.constant(np.asarray(padding_idx, np.dtype(ctx.dtype(node.inputs[1]))))])
    zero = scalar(ctx, 0, ctx.dtype(node.outputs[0]))
    ctx.emit("Where", [unsqueeze(ctx, hit, [-1]), zero, rows], ctx.outputs(node))


# -- normalisation --------------------------------------------------------------------------------
def normalize_over(ctx, x: str, axes, eps: float, dtype: str) -> tuple[str, str, str, str]:
    """The normalisation kernels' statistics over ``axes`` (kept as size-1 dims):
    ``(x - mean, mean, biased variance, sqrt(variance + eps))``."""
    mean = reduce_over(ctx, "ReduceMean", x, axes)
    centred = ctx.emit("Sub", [x, mean])
    var = reduce_over(ctx, "ReduceMean", ctx.emit("Mul", [centred, centred]), axes)
    root = ctx.emit("Sqrt", [ctx.emit("Add", [var, scalar(ctx, eps, dtype)])])
    return centred, mean, var, root


def _affine(ctx, centred, root, w, b, out) -> str:
    """``centred * (w / root) + b``: the kernels' order of operations."""
    return ctx.emit("Add", [ctx.emit("Mul", [centred, ctx.emit("Div", [w, root])]), b], out)


def _stat_output(ctx, stat, vid, shape) -> None:
    if ctx.is_used(vid):
        ctx.emit("Reshape", [stat, ctx.int64s(shape)], ctx.name(vid))
    else:
        ctx.bind(vid, ctx.fresh("unused"))


@lowers("batch_norm_infer")
def lower_batch_norm_infer(node, ctx):
    axis = node.attrs["channel_axis"]
    eps = float(node.attrs["epsilon"])
    x, w, b, mean, var = ctx.inputs(node)
    rank = len(ctx.shape(node.inputs[0]))
    if axis == 1:
        ctx.emit("BatchNormalization", [x, w, b, mean, var], ctx.outputs(node), epsilon=eps)
        return
    # channels last ([N, ..., C]): the kernel's scale and shift, the per-channel vectors broadcasting
    # as they are (on parameters, ONNX Runtime folds all but the Mul and Add with x)
    if axis != rank - 1:
        raise ctx.unsupported(node, f"channel axis {axis} of a {rank}-d input (1 or the last axis)")
    root = ctx.emit("Sqrt", [ctx.emit("Add", [var, scalar(ctx, eps, ctx.dtype(node.inputs[4]))])])
    scale = ctx.emit("Div", [w, root])
    shift = ctx.emit("Sub", [b, ctx.emit("Mul", [mean, scale])])
    ctx.emit("Add", [ctx.emit("Mul", [x, scale]), shift], ctx.outputs(node))


@lowers("batch_norm")
def lower_batch_norm(node, ctx):
    # batch statistics (training=True or use_global_stats=False in a saved program): the kernel's
    # formula over every axis but the channels
    axis = node.attrs["channel_axis"]
    x, w, b = ctx.inputs(node)
    shape = ctx.shape(node.inputs[0])
    rank, channels = len(shape), shape[axis]
    dtype = ctx.dtype(node.inputs[0])
    axes = [i for i in range(rank) if i != axis]
    centred, mean, var, root = normalize_over(ctx, x, axes, float(node.attrs["epsilon"]), dtype)
    if axis != rank - 1:
        view = ctx.int64s([channels if i == axis else 1 for i in range(axis, rank)])
        w, b = ctx.emit("Reshape", [w, view]), ctx.emit("Reshape", [b, view])
    _affine(ctx, centred, root, w, b, ctx.name(node.outputs[0]))
    _stat_output(ctx, mean, node.outputs[1], [-1])
    _stat_output(ctx, var, node.outputs[2], [-1])


@lowers("layer_norm")
def lower_layer_norm(node, ctx):
    begin = int(node.attrs["begin_norm_axis"])
    eps = float(node.attrs["epsilon"])
    x, w, b = ctx.inputs(node)
    shape = list(ctx.shape(node.inputs[0]))
    dtype = ctx.dtype(node.inputs[0])
    normalized = shape[begin:]
    if len(normalized) > 1:  # oar's weight and bias are flat: ONNX broadcasts them over the normalized dims
        if None in normalized:
            raise ctx.unsupported(node, f"normalizing dynamic dims {normalized} with a flat weight")
        w, b = (ctx.emit("Reshape", [t, ctx.int64s(normalized)]) for t in (w, b))
    stats = [v for v in node.outputs[1:] if ctx.is_used(v)]
    # LayerNormalization computes in float32 (its stash_type): float64 keeps the formula
    if ctx.opset >= 17 and not stats and dtype != "float64":
        ctx.emit("LayerNormalization", [x, w, b], ctx.name(node.outputs[0]), axis=begin, epsilon=eps)
        bind_unused(ctx, node.outputs[1:])
        return
    centred, mean, var, root = normalize_over(ctx, x, list(range(begin, len(shape))), eps, dtype)
    _affine(ctx, centred, root, w, b, ctx.name(node.outputs[0]))
    _stat_output(ctx, mean, node.outputs[1], [-1])
    _stat_output(ctx, var, node.outputs[2], [-1])


@lowers("group_norm")
def lower_group_norm(node, ctx):
    groups = int(node.attrs["num_groups"])
    eps = float(node.attrs["epsilon"])
    x, w, b = ctx.inputs(node)
    shape = list(ctx.shape(node.inputs[0]))
    channels = shape[1]
    dtype = ctx.dtype(node.inputs[0])
    y = ctx.name(node.outputs[0])
    if channels is None:
        raise ctx.unsupported(node, f"group normalization of x {shape} with a dynamic channel count")
    # the kernel's view [N, G, C / G, HW], statistics over its last two axes
    per = channels // groups
    spatial = shape[2:]
    plane = int(np.prod(spatial)) if None not in spatial else -1  # explicit where known: a batch of 0 has no -1
    view = ctx.emit("Reshape", [x, ctx.int64s([0, groups, per, plane])])
    centred, mean, var, root = normalize_over(ctx, view, [2, 3], eps, dtype)
    affine_view = ctx.int64s([1, groups, per, 1])
    wv, bv = ctx.emit("Reshape", [w, affine_view]), ctx.emit("Reshape", [b, affine_view])
    back = ctx.int64s([0, channels] + spatial) if None not in spatial else ctx.emit("Shape", [x])
    ctx.emit("Reshape", [_affine(ctx, centred, root, wv, bv, None), back], y)
    _stat_output(ctx, mean, node.outputs[1], [0, groups])
    _stat_output(ctx, var, node.outputs[2], [0, groups])


# -- softmax and activations ----------------------------------------------------------------------
def _softmax_like(op_type: str):
    def lower(node, ctx):
        x, = ctx.inputs(node)
        if not ctx.shape(node.inputs[0]):  # a 0-d input: the softmax over its one element
            one = ctx.emit(op_type, [ctx.emit("Reshape", [x, ctx.int64s([1])])], axis=0)
            ctx.emit("Reshape", [one, ctx.int64s([])], ctx.outputs(node))
            return
        ctx.emit(op_type, [x], ctx.outputs(node), axis=int(node.attrs["axis"]))

    return lower


lowers("softmax")(_softmax_like("Softmax"))
lowers("log_softmax")(_softmax_like("LogSoftmax"))

_SQRT_HALF = math.sqrt(0.5)
_TANH_K = math.sqrt(2.0 / math.pi)
_TANH_C = 0.044715


@lowers("gelu")
def lower_gelu(node, ctx):
    x, = ctx.inputs(node)
    approximate = bool(node.attrs["approximate"])
    if ctx.opset >= 20:
        ctx.emit("Gelu", [x], ctx.outputs(node), approximate="tanh" if approximate else "none")
        return
    dtype = ctx.dtype(node.inputs[0])
    c = lambda v: scalar(ctx, v, dtype)  # noqa: E731
    if approximate:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.emit("Mul", [ctx.emit("Mul", [x, x]), x])
        inner = ctx.emit("Mul", [ctx.emit("Add", [x, ctx.emit("Mul", [cube, c(_TANH_C)])]), c(_TANH_K)])
        phi = ctx.emit("Tanh", [inner])
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        phi = ctx.emit("Erf", [ctx.emit("Mul", [x, c(_SQRT_HALF)])])
    ctx.emit("Mul", [ctx.emit("Mul", [x, c(0.5)]), ctx.emit("Add", [phi, c(1.0)])], ctx.outputs(node))


@lowers("silu")
def lower_silu(node, ctx):
    x, = ctx.inputs(node)
    ctx.emit("Mul", [x, ctx.emit("Sigmoid", [x])], ctx.outputs(node))


@lowers("hardswish")
def lower_hardswish(node, ctx):
    x, = ctx.inputs(node)
    if ctx.opset >= 14:
        ctx.emit("HardSwish", [x], ctx.outputs(node))
    else:  # HardSwish's own definition: x * HardSigmoid(x; 1/6, 1/2)
        ctx.emit("Mul", [x, ctx.emit("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)], ctx.outputs(node))


@lowers("hardsigmoid")
def lower_hardsigmoid(node, ctx):
    ctx.emit("HardSigmoid", ctx.inputs(node), ctx.outputs(node), alpha=float(node.attrs["slope"]),
             beta=float(node.attrs["offset"]))


@lowers("mish")
def lower_mish(node, ctx):
    x, = ctx.inputs(node)
    if ctx.opset >= 18:
        ctx.emit("Mish", [x], ctx.outputs(node))
    else:  # oar's softplus threshold (20) changes nothing after tanh
        ctx.emit("Mul", [x, ctx.emit("Tanh", [ctx.emit("Softplus", [x])])], ctx.outputs(node))


@lowers("elu")
def lower_elu(node, ctx):
    ctx.emit("Elu", ctx.inputs(node), ctx.outputs(node), alpha=float(node.attrs["alpha"]))


@lowers("selu")
def lower_selu(node, ctx):
    ctx.emit("Selu", ctx.inputs(node), ctx.outputs(node), alpha=float(node.attrs["alpha"]),
             gamma=float(node.attrs["scale"]))


@lowers("leaky_relu")
def lower_leaky_relu(node, ctx):
    ctx.emit("LeakyRelu", ctx.inputs(node), ctx.outputs(node), alpha=float(node.attrs["negative_slope"]))


@lowers("softsign")
def lower_softsign(node, ctx):
    ctx.emit("Softsign", ctx.inputs(node), ctx.outputs(node))


# Above these, log(1 + exp(-x)) is below half an ulp of x: Softplus(x) is x, the threshold's own value.
_SOFTPLUS_EXACT_ABOVE = {"float32": 15.0, "float64": 37.0}


@lowers("softplus")
def lower_softplus(node, ctx):
    # log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
    x, = ctx.inputs(node)
    beta, threshold = float(node.attrs["beta"]), float(node.attrs["threshold"])
    dtype = ctx.dtype(node.inputs[0])
    out = ctx.name(node.outputs[0])
    if beta == 1.0 and threshold >= _SOFTPLUS_EXACT_ABOVE.get(dtype, math.inf):
        ctx.emit("Softplus", [x], out)
        return
    bx = x if beta == 1.0 else ctx.emit("Mul", [x, scalar(ctx, beta, dtype)])
    soft = ctx.emit("Softplus", [bx])
    soft = soft if beta == 1.0 else ctx.emit("Div", [soft, scalar(ctx, beta, dtype)])
    ctx.emit("Where", [ctx.emit("Greater", [bx, scalar(ctx, threshold, dtype)]), x, soft], out)


# -- interpolate ----------------------------------------------------------------------------------
_RESIZE_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                 "bicubic": "cubic"}


def _ort_nearest(n_in: int, n_out: int, scale) -> np.ndarray:
    """The nearest index Resize (asymmetric, floor) reads for each output position: ONNX Runtime's
    float32 ``k / scale``, the scale ``out / in`` when sizes are given."""
    s = np.float32(scale) if scale is not None else np.float32(n_out) / np.float32(n_in)
    return np.clip(np.floor(np.arange(n_out, dtype=np.float32) / s), 0, n_in - 1).astype(np.int64)


@lowers("interpolate")
def lower_interpolate(node, ctx):
    # import cost: oar-nn's functional modules load only when a program resizes
    from oar.nn.functional.common import resample_taps

    a = node.attrs
    mode, axes, ins, outs = a["mode"], list(a["axes"]), list(a["in_sizes"]), list(a["out_sizes"])
    scales = list(a["scales"]) if a["scales"] is not None else [None] * len(axes)
    align_corners, align_mode = bool(a["align_corners"]), int(a["align_mode"])
    taps = [resample_taps(mode, i, o, s, align_corners, align_mode) for i, o, s in zip(ins, outs, scales)]
    x, = ctx.inputs(node)
    vid = node.inputs[0]
    out = ctx.name(node.outputs[0])
    # Resize samples at k / scale: the user's scale (oar's ratio 1 / scale) where it is not out / in,
    # which ONNX Runtime's output size floor(in * scale) must then reproduce
    by_scale = not align_corners and any(s is not None and s * i != o for s, i, o in zip(scales, ins, outs))
    fits = mode in _RESIZE_MODES
    if fits and by_scale:
        fits = all(s is not None and int(np.floor(np.float32(s) * np.float32(i))) == o
                   for s, i, o in zip(scales, ins, outs))
    if fits and mode == "nearest":
        fits = all(np.array_equal(_ort_nearest(i, o, s if by_scale else None), t[0][0])
                   for i, o, s, t in zip(ins, outs, scales, taps))
    if not fits:
        _resample_by_taps(ctx, x, len(ctx.shape(vid)), ctx.dtype(vid), axes, taps, out)
        return
    if align_corners:
        transform = "align_corners"
    elif mode == "nearest" or (align_mode == 1 and mode != "bicubic"):
        transform = "asymmetric"
    else:
        transform = "half_pixel"  # oar's linear modes clamp the source at 0 as Resize does
    attrs = {"mode": _RESIZE_MODES[mode], "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    if mode == "bicubic":
        attrs["cubic_coeff_a"] = -0.75
    shape = list(ctx.shape(vid))
    if by_scale:
        values = [float(s) for s in scales]
        if ctx.opset < 18:
            full = [1.0] * len(shape)
            for axis, s in zip(axes, values):
                full[axis] = s
            values = full
        ctx.emit("Resize", [x, "", ctx.constant(np.asarray(values, np.float32))], out,
                 axes=axes if ctx.opset >= 18 else None, **attrs)
        return
    if ctx.opset >= 18:
        sizes = ctx.int64s(outs)
    else:
        full = list(shape)
        for axis, o in zip(axes, outs):
            full[axis] = o
        if None in full:  # the other dims at run time
            keep = np.asarray([d is None for d in full])
            sizes = ctx.emit("Where", [ctx.constant(keep), ctx.emit("Shape", [x]),
                                       ctx.int64s([0 if d is None else d for d in full])])
        else:
            sizes = ctx.int64s(full)
    ctx.emit("Resize", [x, "", "", sizes], out, axes=axes if ctx.opset >= 18 else None, **attrs)


def _resample_by_taps(ctx, x, rank, dtype, axes, taps, out) -> None:
    """oar's kernel itself: along each axis the sum over taps of ``x[index] * weight``."""
    for n, (axis, axis_taps) in enumerate(zip(axes, taps)):
        last_axis = n == len(axes) - 1
        total = None
        for j, (index, weight) in enumerate(axis_taps):
            last = last_axis and j == len(axis_taps) - 1
            weighted = not np.all(weight == 1.0)
            term = ctx.emit("Gather", [x, ctx.constant(np.asarray(index, np.int64))],
                            out if last and total is None and not weighted else None, axis=axis)
            if weighted:
                shape = [1] * rank
                shape[axis] = len(weight)
                term = ctx.emit("Mul", [term, ctx.constant(np.asarray(weight).astype(dtype).reshape(shape))],
                                out if last and total is None else None)
            total = term if total is None else ctx.emit("Add", [total, term], out if last else None)
        x = total


# -- losses ---------------------------------------------------------------------------------------
def _label_dtype_constant(ctx, value, vid):
    return ctx.constant(np.asarray(value, np.dtype(ctx.dtype(vid))))


@lowers("nll_loss")
def lower_nll_loss(node, ctx):
    # -input[n, label[n, ...], ...], 0 where the label is ignore_index: ONNX's own op (no reduction)
    x, label = ctx.inputs(node)
    ctx.emit("NegativeLogLikelihoodLoss", [x, label], ctx.outputs(node), reduction="none",
             ignore_index=int(node.attrs["ignore_index"]))


@lowers("softmax_with_cross_entropy")
def lower_softmax_with_cross_entropy(node, ctx):
    a = node.attrs
    logits, label = ctx.inputs(node)
    axis = int(a["axis"])
    dtype = ctx.dtype(node.inputs[0])
    loss_vid, prob_vid = node.outputs
    if a["use_softmax"]:
        log_prob = ctx.emit("LogSoftmax", [logits], axis=axis)
        if ctx.is_used(prob_vid):
            ctx.emit("Exp", [log_prob], ctx.name(prob_vid))  # the kernel's prob: exp(log_prob)
        bind_unused(ctx, [prob_vid])
    else:  # the input holds probabilities already
        log_prob = ctx.emit("Log", [logits])
        ctx.bind(prob_vid, logits)
    zero = scalar(ctx, 0, dtype)
    if a["soft_label"]:
        # 0 * log(0) counts 0, not NaN: a class without target mass contributes nothing
        terms = ctx.emit("Where", [ctx.emit("Not", [ctx.emit("Equal", [label, zero])]),
                                   ctx.emit("Mul", [label, log_prob]), zero])
        ctx.emit("Neg", [reduce_over(ctx, "ReduceSum", terms, [axis])], ctx.name(loss_vid))
    else:
        valid = ctx.emit("Not", [ctx.emit("Equal", [label, _label_dtype_constant(ctx, a["ignore_index"], node.inputs[1])])])
        index = ctx.emit("Where", [valid, label, _label_dtype_constant(ctx, 0, node.inputs[1])])
        picked = ctx.emit("GatherElements", [log_prob, index], axis=axis)
        ctx.emit("Where", [valid, ctx.emit("Neg", [picked]), zero], ctx.name(loss_vid))


_LOG_CLAMP = -100.0  # Paddle's bce clamps each log term here


@lowers("bce_loss")
def lower_bce_loss(node, ctx):
    # -(y * max(log(x), -100) + (1 - y) * max(log(1 - x), -100))
    x, y = ctx.inputs(node)
    dtype = ctx.dtype(node.inputs[0])
    clamp, one = scalar(ctx, _LOG_CLAMP, dtype), scalar(ctx, 1.0, dtype)
    log_p = ctx.emit("Max", [ctx.emit("Log", [x]), clamp])
    log_q = ctx.emit("Max", [ctx.emit("Log", [ctx.emit("Sub", [one, x])]), clamp])
    total = ctx.emit("Add", [ctx.emit("Mul", [y, log_p]), ctx.emit("Mul", [ctx.emit("Sub", [one, y]), log_q])])
    ctx.emit("Neg", [total], ctx.outputs(node))


@lowers("sigmoid_cross_entropy_with_logits")
def lower_sigmoid_cross_entropy_with_logits(node, ctx):
    # (1 - y) x + w softplus(-x), w = 1 + (pos_weight - 1) y; Softplus is stable for large |x|
    names = ctx.inputs(node)
    x, y = names[:2]
    dtype = ctx.dtype(node.inputs[0])
    one = scalar(ctx, 1.0, dtype)
    softplus_neg = ctx.emit("Softplus", [ctx.emit("Neg", [x])])
    if len(names) == 3:
        weight = ctx.emit("Add", [one, ctx.emit("Mul", [ctx.emit("Sub", [names[2], one]), y])])
        softplus_neg = ctx.emit("Mul", [weight, softplus_neg])
    linear = ctx.emit("Mul", [ctx.emit("Sub", [one, y]), x])
    ctx.emit("Add", [linear, softplus_neg], ctx.outputs(node))


# -- what has no lowering, and why --------------------------------------------------------------
not_lowered(GRADIENT_OP, "adaptive_avg_pool_grad", "avg_pool_grad", "batch_norm_grad", "conv_weight_grad", "embedding_grad",
            "gelu_grad", "group_norm_grad", "interpolate_grad", "layer_norm_grad", "linear_grad",
            "log_softmax_grad", "max_pool_grad", "relu_grad", "softmax_grad", "softmax_with_cross_entropy_grad")
not_lowered("CTC loss is a dynamic programme over the label alignments, which ONNX has no op for; export the "
            "model's logits and compute the loss outside", "warpctc")


not_lowered("not lowered yet: ONNX could write the sliding windows of unfold and fold with Gather and "
            "ScatterND nodes", "im2col", "col2im")
not_lowered("dynamic programmes over a sequence (the RNN-T lattice, beam search's backtracking) that ONNX has no "
            "op for: export the model without its loss or decoder", "warprnnt", "gather_tree")
