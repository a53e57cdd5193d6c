"""Convolutions of oar.nn.functional: conv1d/2d/3d and conv1d/2d/3d_transpose, Paddle's API.

Three N-d ops (1-d, 2-d and 3-d share them), each written in channel-first layout
``[N, C, *spatial]``; ``NHWC``-style inputs are transposed around them:

- ``conv``: grouped, strided, dilated convolution: im2col (a strided window view of the padded
  input) and one batched matmul over the groups.
- ``conv_transpose``: its adjoint in the input (Paddle's transposed convolution): one batched
  matmul, then col2im, a loop over the kernel offsets (never over pixels) adding into the output.
- ``conv_weight_grad``: its adjoint in the weight: the same im2col and one batched matmul.

Each op's gradient rule is written with the other two, so derivatives of any order stay within
these three ops::

    conv(x, w)             -> dx = conv_transpose(g, w)   dw = conv_weight_grad(x, g)
    conv_transpose(x, w)   -> dx = conv(g, w)             dw = conv_weight_grad(g, x)
    conv_weight_grad(x, g) -> dx = conv_transpose(g, gw)  dg = conv(x, gw)

The ``padding`` attribute is ``[before_0, after_0, before_1, after_1, ...]``. Gradient rules may
pass a negative ``after`` (the input is cropped there); the public functions accept only
Paddle's non-negative forms. The argument helpers here (padding forms, int lists, data formats)
are shared with ``pooling``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import oar
from oar import reshape, transpose
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import AMP_LOW_PRECISION, Op, Tensor, TensorMeta, as_tensor, current_mode, dispatch, fmt_shape

NATIVE_FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32
CHANNEL_FIRST = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
CHANNEL_LAST = {1: "NLC", 2: "NHWC", 3: "NDHWC"}


# -- argument helpers (shared with pooling) ---------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def int_list(fn: str, name: str, value, n: int, minimum: int | None = None) -> list[int]:
    """An int (repeated ``n`` times) or a list/tuple of ``n`` ints, each ``>= minimum``."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if _is_int(value):
        values = [int(value)] * n
    elif isinstance(value, (list, tuple)) and len(value) == n and all(_is_int(v) for v in value):
        values = [int(v) for v in value]
    else:
        raise ArgumentError(f"{fn}: {name} must be an int or a list of {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in values):
        raise ArgumentError(f"{fn}: every {name} must be >= {minimum}, got {value!r}")
    return values


def channel_last(fn: str, data_format, nd: int) -> bool:
    """Whether ``data_format`` puts channels last; an ArgumentError names the valid formats."""
    if data_format == CHANNEL_FIRST[nd]:
        return False
    if data_format == CHANNEL_LAST[nd]:
        return True
    raise ArgumentError(f"{fn}: data_format must be {CHANNEL_FIRST[nd]!r} or {CHANNEL_LAST[nd]!r}, "
                        f"got {data_format!r}")


def parse_padding(fn: str, padding, nd: int, last: bool) -> tuple[str | None, list[int]]:
    """Paddle's padding forms -> (``"SAME"``, ``"VALID"`` or None, ``[before_0, after_0, ...]``).

    Accepted: ``'same'``/``'valid'`` (any case); an int; ``nd`` ints (one per spatial dim);
    ``2 * nd`` ints (before and after each); ``nd + 2`` pairs including the batch and channel
    dims, which must be ``[0, 0]``.
    """
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ArgumentError(f"{fn}: padding {padding!r} must be 'SAME', 'VALID', an int or a list")
        return algorithm, [0] * (2 * nd)
    if isinstance(padding, Tensor):
        padding = padding.tolist()
    if _is_int(padding):
        pads = [int(padding)] * (2 * nd)
    elif isinstance(padding, (list, tuple)):
        items = list(padding)
        if len(items) == nd + 2 and all(isinstance(p, (list, tuple)) for p in items):
            if not all(len(p) == 2 and all(_is_int(v) for v in p) for p in items):
                raise ArgumentError(f"{fn}: padding {padding!r}: each of the {nd + 2} entries must be a "
                                    f"[before, after] pair of ints")
            outer = (items[0], items[-1]) if last else (items[0], items[1])
            if any(list(p) != [0, 0] for p in outer):
                raise ArgumentError(f"{fn}: padding {padding!r} pads the batch or channel dimension; only "
                                    f"the spatial dimensions can be padded (give [0, 0] for the others)")
            spatial = items[1:-1] if last else items[2:]
            pads = [int(v) for pair in spatial for v in pair]
        elif len(items) == 2 * nd and all(_is_int(p) for p in items):
            pads = [int(p) for p in items]
        elif len(items) == nd and all(_is_int(p) for p in items):
            pads = [int(p) for p in items for _ in range(2)]
        else:
            raise ArgumentError(
                f"{fn}: padding {padding!r} must be 'SAME', 'VALID', an int, a list of {nd} ints (one per "
                f"spatial dim), of {2 * nd} ints (before and after each), or of {nd + 2} [before, after] "
                f"pairs including the batch and channel dims")
    else:
        raise ArgumentError(f"{fn}: padding must be a string, an int or a list, got {type(padding).__name__}")
    if any(p < 0 for p in pads):
        raise ArgumentError(f"{fn}: padding must not be negative, got {padding!r}")
    return None, pads


def same_padding(fn: str, sizes, kernel, stride) -> list[int]:
    """Paddle's 'SAME' padding: the output has ``ceil(size / stride)`` elements per dim and the
    padding is split evenly, the extra element after."""
    pads = []
    for size, k, s in zip(sizes, kernel, stride):
        if size is None:
            raise ShapeError(f"{fn}: padding='SAME' needs static spatial sizes, got a dynamic one")
        out = -(-size // s)
        total = max((out - 1) * s + k - size, 0)
        pads += [total // 2, total - total // 2]
    return pads


def to_channel_first(x: Tensor, nd: int) -> Tensor:
    return transpose(x, [0, nd + 1, *range(1, nd + 1)])


def to_channel_last(x: Tensor, nd: int) -> Tensor:
    return transpose(x, [0, *range(2, nd + 2), 1])


def check_float(fn: str, **tensors) -> None:
    """Convolution and pooling compute on floating tensors only (as in Paddle)."""
    for name, t in tensors.items():
        if t is not None and not t.dtype.is_floating:
            raise DTypeError(f"{fn}: {name} must be a floating tensor (float16, bfloat16, float32 or "
                             f"float64), got {t.dtype.name}")


# -- shapes -----------------------------------------------------------------------------------
def _span(k: int, d: int) -> int:
    return d * (k - 1) + 1


def conv_sizes(op: str, sizes, kernel, stride, padding, dilation) -> tuple:
    """Output spatial sizes of a convolution; a ShapeError when the kernel does not fit."""
    out = []
    for i, (size, k) in enumerate(zip(sizes, kernel)):
        if size is None or k is None:
            out.append(None)
            continue
        padded = size + padding[2 * i] + padding[2 * i + 1]
        n = (padded - _span(k, dilation[i])) // stride[i] + 1
        if padded < _span(k, dilation[i]) or n < 1:
            raise ShapeError(f"{op}: spatial dim {i} of size {size} (padded by {padding[2 * i]} and "
                             f"{padding[2 * i + 1]}: {padded}) is smaller than the kernel {k} dilated by "
                             f"{dilation[i]} ({_span(k, dilation[i])})")
        out.append(n)
    return tuple(out)


def conv_transpose_sizes(op: str, sizes, kernel, stride, padding, output_padding, dilation) -> tuple:
    out = []
    for i, (size, k) in enumerate(zip(sizes, kernel)):
        if size is None or k is None:
            out.append(None)
            continue
        n = (size - 1) * stride[i] - padding[2 * i] - padding[2 * i + 1] + _span(k, dilation[i]) + output_padding[i]
        if n < 1:
            raise ShapeError(f"{op}: spatial dim {i} of the output would have size {n} (input {size}, kernel "
                             f"{k}, stride {stride[i]}, padding {padding[2 * i]}+{padding[2 * i + 1]}, dilation "
                             f"{dilation[i]}); reduce the padding")
        out.append(n)
    return tuple(out)


def _check_attrs(op: str, nd: int, stride, padding, dilation, groups) -> None:
    if len(stride) != nd or len(dilation) != nd or len(padding) != 2 * nd:
        raise ArgumentError(f"{op}: stride {stride}, dilation {dilation} and padding {padding} must have {nd}, "
                            f"{nd} and {2 * nd} entries for {nd} spatial dims")
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or groups < 1:
        raise ArgumentError(f"{op}: stride {stride}, dilation {dilation} and groups {groups} must be >= 1")
    if any(p < 0 for p in padding[0::2]):
        raise ArgumentError(f"{op}: padding {padding} must not be negative before a spatial dim")


def _check_pair(op: str, x: TensorMeta, w: TensorMeta, names=("x", "weight")) -> int:
    """Same rank (3 to 5) and same floating dtype; returns the number of spatial dims."""
    if len(x.shape) not in (3, 4, 5) or len(w.shape) != len(x.shape):
        raise ShapeError(f"{op}: {names[0]} {fmt_shape(x.shape)} and {names[1]} {fmt_shape(w.shape)} must "
                         f"both be 3-d, 4-d or 5-d")
    if not x.dtype.is_floating or x.dtype is not w.dtype:
        raise DTypeError(f"{op}: {names[0]} and {names[1]} must have the same floating dtype, got "
                         f"{x.dtype.name} and {w.dtype.name}")
    return len(x.shape) - 2


def _check_channels(op: str, have, expected, what: str) -> None:
    if have is not None and expected is not None and have != expected:
        raise ShapeError(f"{op}: {what}: {have} vs {expected}")


def _times(a, b):
    return None if a is None or b is None else a * b


def _conv_meta(x: TensorMeta, w: TensorMeta, stride, padding, dilation, groups) -> TensorMeta:
    nd = _check_pair("conv", x, w)
    _check_attrs("conv", nd, stride, padding, dilation, groups)
    _check_channels("conv", x.shape[1], _times(w.shape[1], groups),
                    f"x {fmt_shape(x.shape)} has a channel count other than weight.shape[1] * groups "
                    f"(weight {fmt_shape(w.shape)}, groups {groups})")
    if w.shape[0] is not None and w.shape[0] % groups:
        raise ShapeError(f"conv: weight {fmt_shape(w.shape)} has {w.shape[0]} output channels, not divisible "
                         f"by groups {groups}")
    sizes = conv_sizes("conv", x.shape[2:], w.shape[2:], stride, padding, dilation)
    return TensorMeta((x.shape[0], w.shape[0], *sizes), x.dtype)


def _conv_transpose_meta(x: TensorMeta, w: TensorMeta, stride, padding, output_padding, dilation, groups) -> TensorMeta:
    nd = _check_pair("conv_transpose", x, w)
    _check_attrs("conv_transpose", nd, stride, padding, dilation, groups)
    if len(output_padding) != nd or any(p < 0 for p in output_padding):
        raise ArgumentError(f"conv_transpose: output_padding {output_padding} must be {nd} non-negative ints")
    _check_channels("conv_transpose", x.shape[1], w.shape[0],
                    f"x {fmt_shape(x.shape)} must have weight.shape[0] channels (weight {fmt_shape(w.shape)})")
    if x.shape[1] is not None and x.shape[1] % groups:
        raise ShapeError(f"conv_transpose: x {fmt_shape(x.shape)} has {x.shape[1]} channels, not divisible by "
                         f"groups {groups}")
    sizes = conv_transpose_sizes("conv_transpose", x.shape[2:], w.shape[2:], stride, padding, output_padding, dilation)
    return TensorMeta((x.shape[0], _times(w.shape[1], groups), *sizes), x.dtype)


def _conv_weight_grad_meta(x: TensorMeta, g: TensorMeta, kernel_size, stride, padding, dilation, groups) -> TensorMeta:
    nd = _check_pair("conv_weight_grad", x, g, ("x", "grad"))
    _check_attrs("conv_weight_grad", nd, stride, padding, dilation, groups)
    _check_channels("conv_weight_grad", x.shape[0], g.shape[0], f"x {fmt_shape(x.shape)} and grad "
                    f"{fmt_shape(g.shape)} have different batch sizes")
    for name, c in (("x", x.shape[1]), ("grad", g.shape[1])):
        if c is not None and c % groups:
            raise ShapeError(f"conv_weight_grad: {name} has {c} channels, not divisible by groups {groups}")
    sizes = conv_sizes("conv_weight_grad", x.shape[2:], kernel_size, stride, padding, dilation)
    for i, (a, b) in enumerate(zip(sizes, g.shape[2:])):
        _check_channels("conv_weight_grad", b, a, f"grad {fmt_shape(g.shape)} does not have the convolution's "
                        f"output size in spatial dim {i}")
    c = None if x.shape[1] is None else x.shape[1] // groups
    return TensorMeta((g.shape[1], c, *kernel_size), x.dtype)


# -- kernels ----------------------------------------------------------------------------------
def _pad_spatial(x: np.ndarray, padding) -> np.ndarray:
    """``x`` [N, C, *S] zero-padded on the spatial dims; a negative ``after`` crops instead."""
    nd = x.ndim - 2
    widths = [(0, 0), (0, 0)] + [(padding[2 * i], max(padding[2 * i + 1], 0)) for i in range(nd)]
    if any(widths[2:]):
        x = np.pad(x, widths)
    if any(padding[2 * i + 1] < 0 for i in range(nd)):
        x = x[(slice(None), slice(None)) + tuple(slice(0, x.shape[2 + i] + min(padding[2 * i + 1], 0)) for i in range(nd))]
    return x


def _im2col(x, kernel, stride, padding, dilation, groups):
    """The patches of ``x`` [N, C, *S] as ``[groups, N * P, C / groups * K]`` (P output positions,
    K kernel elements), and the output sizes."""
    n, c, nd = x.shape[0], x.shape[1], x.ndim - 2
    out = conv_sizes("conv", x.shape[2:], kernel, stride, padding, dilation)
    xp = _pad_spatial(x, padding)
    spans = [_span(k, d) for k, d in zip(kernel, dilation)]
    view = sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))  # [N, C, *windows, *spans]
    index = (slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride))
    view = view[index + tuple(slice(None, None, d) for d in dilation)]  # [N, C, *out, *kernel]
    view = view.reshape(n, groups, c // groups, *out, *kernel)
    # -> [groups, N, *out, C/groups, *kernel]: the copy this makes is the im2col buffer
    perm = (1, 0, *range(3, 3 + nd), 2, *range(3 + nd, 3 + 2 * nd))
    # explicit sizes, not -1: an empty batch (N = 0) leaves -1 undetermined
    cols = view.transpose(perm).reshape(groups, n * int(np.prod(out)), c // groups * int(np.prod(kernel)))
    return cols, out


def _channels_by_group(a: np.ndarray, groups: int) -> np.ndarray:
    """``a`` [N, C, *S] as ``[groups, N * prod(S), C / groups]``."""
    n, c = a.shape[:2]
    positions = int(np.prod(a.shape[2:]))  # not -1: an empty batch leaves it undetermined
    a = a.reshape(n, groups, c // groups, positions).transpose(1, 0, 3, 2)
    return a.reshape(groups, n * positions, c // groups)


def _conv_kernel(x, w, stride, padding, dilation, groups):
    n, o, nd = x.shape[0], w.shape[0], x.ndim - 2
    cols, out = _im2col(x, w.shape[2:], stride, padding, dilation, groups)
    weights = w.reshape(groups, o // groups, -1)
    y = np.matmul(cols, weights.transpose(0, 2, 1))  # [groups, N * P, O / groups]
    y = y.reshape(groups, n, *out, o // groups)
    y = y.transpose(1, 0, nd + 2, *range(2, nd + 2))  # [N, groups, O / groups, *out]
    return np.ascontiguousarray(y).reshape(n, o, *out)


def _conv_transpose_kernel(x, w, stride, padding, output_padding, dilation, groups):
    n, nd = x.shape[0], x.ndim - 2
    sizes, kernel = x.shape[2:], w.shape[2:]
    c_out = w.shape[1]  # per group
    out = conv_transpose_sizes("conv_transpose", sizes, kernel, stride, padding, output_padding, dilation)
    cols = np.matmul(_channels_by_group(x, groups), w.reshape(groups, w.shape[0] // groups, -1))
    cols = cols.reshape(groups, n, *sizes, c_out, *kernel)
    cols = cols.transpose(1, 0, nd + 2, *range(nd + 3, 2 * nd + 3), *range(2, nd + 2))  # [N, g, C, *K, *S]
    # col2im on a canvas holding every position a kernel element reaches, before the padding
    # is cut away; it is extended with zeros when output_padding reaches past it.
    canvas_sizes = [max((s - 1) * st + _span(k, d), padding[2 * i] + o)
                    for i, (s, k, st, d, o) in enumerate(zip(sizes, kernel, stride, dilation, out))]
    canvas = np.zeros((n, groups, c_out, *canvas_sizes), dtype=cols.dtype)
    for offset in np.ndindex(*kernel):
        region = tuple(slice(k * d, k * d + (s - 1) * st + 1, st)
                       for k, d, s, st in zip(offset, dilation, sizes, stride))
        canvas[(Ellipsis, *region)] += cols[(slice(None),) * 3 + offset]
    crop = tuple(slice(padding[2 * i], padding[2 * i] + o) for i, o in enumerate(out))
    return np.ascontiguousarray(canvas[(Ellipsis, *crop)]).reshape(n, groups * c_out, *out)


def _conv_weight_grad_kernel(x, g, kernel_size, stride, padding, dilation, groups):
    c, o = x.shape[1], g.shape[1]
    cols, _ = _im2col(x, kernel_size, stride, padding, dilation, groups)
    grads = _channels_by_group(g, groups)  # [groups, N * P, O / groups]
    gw = np.matmul(grads.transpose(0, 2, 1), cols)  # [groups, O / groups, C / groups * K]
    return gw.reshape(o, c // groups, *kernel_size)


conv_op = Op("conv", paddle=("nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d"), reference=_conv_kernel, meta=_conv_meta, amp=AMP_LOW_PRECISION, dtypes=NATIVE_FLOATS,
             per_sample=True)
conv_transpose_op = Op("conv_transpose", paddle=("nn.functional.conv1d_transpose", "nn.functional.conv2d_transpose", "nn.functional.conv3d_transpose"), reference=_conv_transpose_kernel, meta=_conv_transpose_meta,
                       amp=AMP_LOW_PRECISION, dtypes=NATIVE_FLOATS, per_sample=True)
conv_weight_grad_op = Op("conv_weight_grad", paddle=(), reference=_conv_weight_grad_kernel, meta=_conv_weight_grad_meta,
                         amp=AMP_LOW_PRECISION, dtypes=NATIVE_FLOATS)


# -- gradient rules: each written with the other two ops ----------------------------------------
def _fitting_output_padding(size, out, kernel, stride, padding, dilation) -> list[int]:
    """The output_padding that makes conv_transpose of ``out`` come back to ``size`` (the
    positions a strided convolution skipped at the end)."""
    return [s - ((o - 1) * st - padding[2 * i] - padding[2 * i + 1] + _span(k, d))
            for i, (s, o, k, st, d) in enumerate(zip(size, out, kernel, stride, dilation))]


def _cropped_padding(padding, output_padding) -> list[int]:
    """The convolution padding that reads a conv_transpose output: its ``after`` loses the
    output_padding (and may go negative: a crop)."""
    return [p - output_padding[i // 2] if i % 2 else p for i, p in enumerate(padding)]


def _attrs(ctx, *names) -> dict:
    return {k: ctx.attrs[k] for k in ("stride", "padding", "dilation", "groups") + names}


@conv_op.defgrad
def _conv_grad(ctx, g):
    x_shape, w_shape = ctx.in_shapes
    attrs = _attrs(ctx)
    gx = gw = None
    if ctx.needs_input_grad[0]:
        output_padding = _fitting_output_padding(x_shape[2:], g.shape[2:], w_shape[2:], attrs["stride"],
                                                 attrs["padding"], attrs["dilation"])
        gx = dispatch(conv_transpose_op, (g, ctx.input(1)), {**attrs, "output_padding": output_padding})
    if ctx.needs_input_grad[1]:
        gw = dispatch(conv_weight_grad_op, (ctx.input(0), g), {**attrs, "kernel_size": list(w_shape[2:])})
    return gx, gw


@conv_transpose_op.defgrad
def _conv_transpose_grad(ctx, g):
    _, w_shape = ctx.in_shapes
    attrs = _attrs(ctx)
    attrs["padding"] = _cropped_padding(attrs["padding"], ctx.attrs["output_padding"])
    gx = gw = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(conv_op, (g, ctx.input(1)), attrs)
    if ctx.needs_input_grad[1]:
        gw = dispatch(conv_weight_grad_op, (g, ctx.input(0)), {**attrs, "kernel_size": list(w_shape[2:])})
    return gx, gw


@conv_weight_grad_op.defgrad
def _conv_weight_grad_grad(ctx, gw):
    x_shape, g_shape = ctx.in_shapes
    attrs = _attrs(ctx)
    gx = gg = None
    if ctx.needs_input_grad[0]:
        output_padding = _fitting_output_padding(x_shape[2:], g_shape[2:], ctx.attrs["kernel_size"],
                                                 attrs["stride"], attrs["padding"], attrs["dilation"])
        gx = dispatch(conv_transpose_op, (ctx.input(1), gw), {**attrs, "output_padding": output_padding})
    if ctx.needs_input_grad[1]:
        gg = dispatch(conv_op, (ctx.input(0), gw), attrs)
    return gx, gg


OPS = [conv_op, conv_transpose_op, conv_weight_grad_op]


# -- public functions ---------------------------------------------------------------------------
def _prepare(fn: str, nd: int, x, weight, bias, data_format):
    """Tensors checked for rank, dtype and layout; returns (x, weight, bias, channels_last)."""
    x = as_tensor(x, "x", fn)
    weight = as_tensor(weight, "weight", fn)
    bias = None if bias is None else as_tensor(bias, "bias", fn)
    last = channel_last(fn, data_format, nd)
    layout = CHANNEL_LAST[nd] if last else CHANNEL_FIRST[nd]
    if x.ndim != nd + 2:
        raise ShapeError(f"{fn}: x must be a {nd + 2}-d tensor in {layout} layout, got shape {x.shape}")
    if weight.ndim != nd + 2:
        raise ShapeError(f"{fn}: weight must be a {nd + 2}-d tensor, got shape {weight.shape}")
    check_float(fn, x=x, weight=weight, bias=bias)
    # Under a mode that rewrites op calls (oar.amp's autocast casts x and weight to one dtype) the
    # dtypes here are not the ones the op will get.
    for name, t in (("weight", weight), ("bias", bias)) if not current_mode().outermost else ():
        if t is not None and t.dtype is not x.dtype:
            raise DTypeError(f"{fn}: {name} has dtype {t.dtype.name} but x has {x.dtype.name}; they must match")
    return x, weight, bias, last


def _add_bias(fn: str, out: Tensor, bias: Tensor | None, nd: int) -> Tensor:
    if bias is None:
        return out
    channels = out.shape[1]
    if bias.shape != [channels]:
        raise ShapeError(f"{fn}: bias must have shape [{channels}] (one value per output channel), got {bias.shape}")
    return out + reshape(bias, [channels] + [1] * nd)


def _conv_nd(fn: str, nd: int, x, weight, bias, stride, padding, dilation, groups, data_format) -> Tensor:
    x, weight, bias, last = _prepare(fn, nd, x, weight, bias, data_format)
    stride = int_list(fn, "stride", stride, nd, minimum=1)
    dilation = int_list(fn, "dilation", dilation, nd, minimum=1)
    if not _is_int(groups) or groups < 1:
        raise ArgumentError(f"{fn}: groups must be a positive int, got {groups!r}")
    groups = int(groups)
    channels = x.shape[-1 if last else 1]
    out_channels, per_group = weight.shape[0], weight.shape[1]
    if channels != per_group * groups:
        raise ShapeError(f"{fn}: x {x.shape} ({data_format}) has {channels} channels, but weight {weight.shape} "
                         f"with groups={groups} expects weight.shape[1] * groups = {per_group * groups}")
    if out_channels % groups:
        raise ShapeError(f"{fn}: weight {weight.shape} has {out_channels} output channels, which groups={groups} "
                         f"does not divide")
    algorithm, pads = parse_padding(fn, padding, nd, last)
    if last:
        x = to_channel_first(x, nd)
    if algorithm == "SAME":  # Paddle computes 'SAME' padding without dilation
        dilation = [1] * nd
        pads = same_padding(fn, x.shape[2:], weight.shape[2:], stride)
    attrs = {"stride": stride, "padding": pads, "dilation": dilation, "groups": groups}
    conv_sizes(fn, x.shape[2:], weight.shape[2:], stride, pads, dilation)
    out = _add_bias(fn, dispatch(conv_op, (x, weight), attrs), bias, nd)
    return to_channel_last(out, nd) if last else out


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None) -> Tensor:
    """1-d convolution of ``x`` [N, C, L] with ``weight`` [out_channels, C / groups, k].

    ``padding`` is 'SAME', 'VALID', an int, ``[pad]``, ``[before, after]`` or 3 pairs.

    >>> import oar
    >>> x = oar.to_tensor([[[4., 8, 1, 9], [7, 2, 0, 9], [6, 9, 2, 6]]])
    >>> w = oar.to_tensor([[[9., 3, 4], [0, 0, 7], [2, 5, 6]], [[0., 3, 4], [2, 9, 7], [5, 6, 8]]])
    >>> oar.nn.functional.conv1d(x, w).tolist()
    [[[133.0, 238.0], [160.0, 211.0]]]
    """
    return _conv_nd("conv1d", 1, x, weight, bias, stride, padding, dilation, groups, data_format)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None) -> Tensor:
    """2-d convolution of ``x`` [N, C, H, W] (or NHWC) with ``weight`` [out_channels, C / groups, kh, kw].

    ``padding`` is 'SAME', 'VALID', an int, ``[ph, pw]``, ``[top, bottom, left, right]`` or 4 pairs.
    With 'SAME' the dilation is taken as 1, as in Paddle.

    >>> import oar
    >>> x = oar.ones([1, 3, 8, 8])
    >>> w = oar.ones([6, 3, 3, 3])
    >>> oar.nn.functional.conv2d(x, w, stride=2, padding=1).shape
    [1, 6, 4, 4]
    """
    return _conv_nd("conv2d", 2, x, weight, bias, stride, padding, dilation, groups, data_format)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None) -> Tensor:
    """3-d convolution of ``x`` [N, C, D, H, W] (or NDHWC) with ``weight`` [out_channels, C / groups, kd, kh, kw].

    >>> import oar
    >>> oar.nn.functional.conv3d(oar.ones([1, 2, 4, 4, 4]), oar.ones([3, 2, 3, 3, 3])).shape
    [1, 3, 2, 2, 2]
    """
    return _conv_nd("conv3d", 3, x, weight, bias, stride, padding, dilation, groups, data_format)


def _conv_transpose_nd(fn: str, nd: int, x, weight, bias, stride, padding, output_padding, dilation, groups,
                       output_size, data_format) -> Tensor:
    x, weight, bias, last = _prepare(fn, nd, x, weight, bias, data_format)
    stride = int_list(fn, "stride", stride, nd, minimum=1)
    dilation = int_list(fn, "dilation", dilation, nd, minimum=1)
    if not _is_int(groups) or groups < 1:
        raise ArgumentError(f"{fn}: groups must be a positive int, got {groups!r}")
    groups = int(groups)
    channels = x.shape[-1 if last else 1]
    if channels != weight.shape[0]:
        raise ShapeError(f"{fn}: x {x.shape} ({data_format}) has {channels} channels, but weight {weight.shape} "
                         f"(layout [in_channels, out_channels / groups, *kernel]) expects {weight.shape[0]}")
    if channels % groups:
        raise ShapeError(f"{fn}: x has {channels} channels, which groups={groups} does not divide")
    if output_size is not None and not (_is_int(output_padding) and output_padding == 0):
        raise ArgumentError(f"{fn}: output_padding ({output_padding!r}) and output_size ({output_size!r}) are "
                            f"mutually exclusive; give one of them")
    output_padding = int_list(fn, "output_padding", output_padding, nd, minimum=0)
    algorithm, pads = parse_padding(fn, padding, nd, last)
    if last:
        x = to_channel_first(x, nd)
    kernel = weight.shape[2:]
    if algorithm == "SAME":
        dilation = [1] * nd
        pads = same_padding(fn, x.shape[2:], kernel, stride)
    base = conv_transpose_sizes(fn, x.shape[2:], kernel, stride, pads, [0] * nd, dilation)
    if output_size is not None:
        wanted = int_list(fn, "output_size", output_size, nd, minimum=1)
        for i, (b, o, s) in enumerate(zip(base, wanted, stride)):
            if not b <= o < b + s:
                raise ArgumentError(f"{fn}: output_size {wanted}: spatial dim {i} must be in [{b}, {b + s}) for "
                                    f"input {x.shape[2:]}, kernel {kernel}, stride {stride} and padding {pads}")
        output_padding = [o - b for o, b in zip(wanted, base)]
    else:
        for i, (p, s, d) in enumerate(zip(output_padding, stride, dilation)):
            if p >= max(s, d):
                raise ArgumentError(f"{fn}: output_padding {output_padding} must be smaller than max(stride, "
                                    f"dilation) = {max(s, d)} in spatial dim {i}")
    attrs = {"stride": stride, "padding": pads, "output_padding": output_padding, "dilation": dilation,
             "groups": groups}
    out = _add_bias(fn, dispatch(conv_transpose_op, (x, weight), attrs), bias, nd)
    return to_channel_last(out, nd) if last else out


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCL", name=None) -> Tensor:
    """Transposed 1-d convolution of ``x`` [N, C, L] with ``weight`` [C, out_channels / groups, k].

    The output length is ``(L - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1``
    plus ``output_padding``, or ``output_size`` (in ``[that, that + stride)``) when given.

    >>> import oar
    >>> x = oar.to_tensor([[[4., 0, 9, 7], [8., 0, 9, 2]]])
    >>> w = oar.to_tensor([[[7., 0]], [[4., 2]]])
    >>> oar.nn.functional.conv1d_transpose(x, w).tolist()
    [[[60.0, 16.0, 99.0, 75.0, 4.0]]]
    """
    return _conv_transpose_nd("conv1d_transpose", 1, x, weight, bias, stride, padding, output_padding, dilation,
                              groups, output_size, data_format)


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None) -> Tensor:
    """Transposed 2-d convolution of ``x`` [N, C, H, W] with ``weight`` [C, out_channels / groups, kh, kw]:
    the gradient of ``conv2d`` with respect to its input.

    >>> import oar
    >>> x = oar.ones([2, 4, 8, 8])
    >>> oar.nn.functional.conv2d_transpose(x, oar.ones([4, 6, 3, 3])).shape
    [2, 6, 10, 10]
    >>> oar.nn.functional.conv2d_transpose(x, oar.ones([4, 6, 3, 3]), stride=2, padding=1, output_size=[16, 16]).shape
    [2, 6, 16, 16]
    """
    return _conv_transpose_nd("conv2d_transpose", 2, x, weight, bias, stride, padding, output_padding, dilation,
                              groups, output_size, data_format)


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCDHW", name=None) -> Tensor:
    """Transposed 3-d convolution of ``x`` [N, C, D, H, W] with ``weight`` [C, out_channels / groups, kd, kh, kw].

    >>> import oar
    >>> oar.nn.functional.conv3d_transpose(oar.ones([1, 2, 2, 2, 2]), oar.ones([2, 3, 2, 2, 2]), stride=2).shape
    [1, 3, 4, 4, 4]
    """
    return _conv_transpose_nd("conv3d_transpose", 3, x, weight, bias, stride, padding, output_padding, dilation,
                              groups, output_size, data_format)


__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]
