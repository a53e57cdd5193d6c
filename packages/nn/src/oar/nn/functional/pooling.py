"""Pooling of oar.nn.functional: max/avg pooling and adaptive pooling (1-d, 2-d, 3-d), lp pooling,
max unpooling and fractional max pooling, Paddle's API.

The ops are N-d and channel-first (``[N, C, *spatial]``); channel-last inputs are transposed
around them. Every gradient is an op with its own gradient rule, so pooling differentiates to
any order:

- ``max_pool`` -> (out, mask): the mask is Paddle's, the flat index of each maximum in its
  ``[N, C]`` plane of the input (int32). A window of padding only (possible with ceil_mode or a
  padding as large as the kernel) gives -inf and mask -1, and no gradient. Its gradient is
  ``max_pool_grad``, which adds each output gradient at its mask position; the gradient of that
  gathers at the mask again. ``adaptive_max_pool`` shares ``max_pool_grad``.
- ``avg_pool`` and ``avg_pool_grad`` are each other's adjoint, and so are ``adaptive_avg_pool``
  and ``adaptive_avg_pool_grad``.

Kernels loop over the kernel offsets (never over pixels): each offset is one strided view of the
padded input. Adaptive windows (Paddle's ``floor(i * in / out)`` to ``ceil((i + 1) * in / out)``)
are one averaging matrix per dim, or a gather of the largest window for the maximum.

The rest compose ops: ``lp_pool`` is ``avg_pool`` of ``x ** p`` times the window sizes, to the
``1 / p``; ``max_unpool`` is a ``put_along_axis`` (assign: where two windows chose one position
the later value stays, and both get a gradient, as in Paddle); ``fractional_max_pool`` gathers
Paddle's pseudo-random windows and takes the first maximum of each. Differences from Paddle:
with ``random_u=None`` fractional pooling draws ``u`` from oar's generator (``oar.seed``), so
the windows differ from Paddle's draw; the windows for a given ``u`` are Paddle's.
"""

from __future__ import annotations

import numpy as np

import oar
from oar import cast, reshape, take_along_axis, where
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.functional.conv import (
    CHANNEL_FIRST,
    CHANNEL_LAST,
    NATIVE_FLOATS,
    channel_last,
    check_float,
    int_list,
    parse_padding,
    same_padding,
    to_channel_first,
    to_channel_last,
)
from oar.ops import Op, Tensor, TensorMeta, as_tensor, dispatch, fmt_shape, pad_axes


# -- shapes -----------------------------------------------------------------------------------
def pool_sizes(op: str, sizes, kernel, stride, padding, ceil_mode) -> tuple:
    """Paddle's pooling output sizes: ``(size + before + after - k [+ stride - 1]) // stride + 1``."""
    out = []
    for i, (size, k, s) in enumerate(zip(sizes, kernel, stride)):
        if size is None:
            out.append(None)
            continue
        padded = size + padding[2 * i] + padding[2 * i + 1]
        n = (padded - k + (s - 1 if ceil_mode else 0)) // s + 1
        if padded < k or n < 1:
            raise ShapeError(f"{op}: spatial dim {i} of size {size} (padded by {padding[2 * i]} and "
                             f"{padding[2 * i + 1]}: {padded}) is smaller than the kernel {k}")
        out.append(n)
    return tuple(out)


def _pool_input_meta(op: str, x: TensorMeta, kernel_size, stride, padding) -> int:
    nd = len(x.shape) - 2
    if nd < 1:
        raise ShapeError(f"{op}: x must have a batch, a channel and at least one spatial dim, got {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"{op}: x must be a floating tensor, got {x.dtype.name}")
    if len(kernel_size) != nd or len(stride) != nd or len(padding) != 2 * nd:
        raise ArgumentError(f"{op}: kernel_size {kernel_size}, stride {stride} and padding {padding} must have "
                            f"{nd}, {nd} and {2 * nd} entries for x {fmt_shape(x.shape)}")
    if any(k < 1 for k in kernel_size) or any(s < 1 for s in stride) or any(p < 0 for p in padding):
        raise ArgumentError(f"{op}: kernel_size {kernel_size} and stride {stride} must be >= 1, padding "
                            f"{padding} >= 0")
    return nd


def _max_pool_meta(x: TensorMeta, kernel_size, stride, padding, ceil_mode):
    _pool_input_meta("max_pool", x, kernel_size, stride, padding)
    shape = (*x.shape[:2], *pool_sizes("max_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode))
    return TensorMeta(shape, x.dtype), TensorMeta(shape, oar.int32)


def _avg_pool_meta(x: TensorMeta, kernel_size, stride, padding, ceil_mode, exclusive) -> TensorMeta:
    _pool_input_meta("avg_pool", x, kernel_size, stride, padding)
    sizes = pool_sizes("avg_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode)
    return TensorMeta((*x.shape[:2], *sizes), x.dtype)


def _check_grad_meta(op: str, g: TensorMeta, out_sizes) -> None:
    if not g.dtype.is_floating:
        raise DTypeError(f"{op}: grad must be a floating tensor, got {g.dtype.name}")
    if len(g.shape) != len(out_sizes) + 2 or any(
            a is not None and b is not None and a != b for a, b in zip(g.shape[2:], out_sizes)):
        raise ShapeError(f"{op}: grad {fmt_shape(g.shape)} does not have the pooling output's spatial "
                         f"sizes {list(out_sizes)}")


def _avg_pool_grad_meta(g: TensorMeta, input_size, kernel_size, stride, padding, ceil_mode, exclusive) -> TensorMeta:
    x = TensorMeta((*g.shape[:2], *input_size), g.dtype)
    _check_grad_meta("avg_pool_grad", g, _avg_pool_meta(x, kernel_size, stride, padding, ceil_mode, exclusive).shape[2:])
    return x


def _max_pool_grad_meta(g: TensorMeta, mask: TensorMeta, input_size) -> TensorMeta:
    if mask.dtype is not oar.int32 or tuple(mask.shape) != tuple(g.shape):
        raise ShapeError(f"max_pool_grad: mask must be an int32 tensor of grad's shape {fmt_shape(g.shape)}, got "
                         f"{mask.dtype.name}{fmt_shape(mask.shape)}")
    _check_grad_meta("max_pool_grad", g, g.shape[2:])
    return TensorMeta((*g.shape[:2], *input_size), g.dtype)


def _adaptive_meta(op: str, x: TensorMeta, output_size) -> tuple:
    if len(x.shape) < 3 or len(output_size) != len(x.shape) - 2:
        raise ShapeError(f"{op}: output_size {output_size} must have one entry per spatial dim of x {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"{op}: x must be a floating tensor, got {x.dtype.name}")
    if any(o is not None and o < 1 for o in output_size):
        raise ArgumentError(f"{op}: output_size {output_size} must be >= 1")
    return (*x.shape[:2], *output_size)


def _adaptive_avg_pool_meta(x: TensorMeta, output_size) -> TensorMeta:
    return TensorMeta(_adaptive_meta("adaptive_avg_pool", x, output_size), x.dtype)


def _adaptive_avg_pool_grad_meta(g: TensorMeta, input_size) -> TensorMeta:
    x = TensorMeta((*g.shape[:2], *input_size), g.dtype)
    _check_grad_meta("adaptive_avg_pool_grad", g, g.shape[2:])
    _adaptive_meta("adaptive_avg_pool_grad", x, list(g.shape[2:]))
    return x


def _adaptive_max_pool_meta(x: TensorMeta, output_size):
    shape = _adaptive_meta("adaptive_max_pool", x, output_size)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, oar.int32)


# -- kernels ----------------------------------------------------------------------------------
def _padded(x: np.ndarray, kernel, stride, padding, out, value) -> np.ndarray:
    """``x`` padded with ``value``, and further after each dim as far as ceil_mode's last window reaches."""
    nd = x.ndim - 2
    widths = [(0, 0), (0, 0)]
    for i in range(nd):
        reach = (out[i] - 1) * stride[i] + kernel[i]  # padded length the windows read
        before = padding[2 * i]
        widths.append((before, max(reach - before - x.shape[2 + i], 0)))
    return np.pad(x, widths, constant_values=value) if any(widths[2:]) else x


def _window(offset, stride, out) -> tuple:
    """The strided view, in padded coordinates, of kernel element ``offset`` in every window."""
    return (Ellipsis, *(slice(k, k + (o - 1) * s + 1, s) for k, s, o in zip(offset, stride, out)))


def _window_counts(sizes, kernel, stride, padding, out, exclusive, dtype) -> np.ndarray:
    """The divisor of every window (broadcastable to the output's spatial dims): the elements of
    the input it covers, or with ``exclusive=False`` also its padding (not past the padding)."""
    counts = np.ones((), dtype)
    for i, (size, k, s, o) in enumerate(zip(sizes, kernel, stride, out)):
        start = np.arange(o) * s - padding[2 * i]
        end = np.minimum(start + k, size + padding[2 * i + 1])
        if exclusive:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        count = np.maximum(end - start, 1).astype(dtype)  # a window in the padding only averages to 0
        counts = np.multiply.outer(counts, count)
    return counts


def _max_pool_kernel(x, kernel_size, stride, padding, ceil_mode):
    sizes = x.shape[2:]
    out = pool_sizes("max_pool", sizes, kernel_size, stride, padding, ceil_mode)
    xp = _padded(x, kernel_size, stride, padding, out, -np.inf)
    best = np.full((*x.shape[:2], *out), -np.inf, dtype=x.dtype)
    arg = np.zeros(best.shape, dtype=np.int64)
    for j, offset in enumerate(np.ndindex(*kernel_size)):
        values = xp[_window(offset, stride, out)]
        # the first maximum wins (as in Paddle); a NaN beats everything and propagates
        better = (values > best) | (np.isnan(values) & ~np.isnan(best))
        best = np.where(better, values, best)
        arg = np.where(better, j, arg)
    # the window offset of each maximum -> its position in the input's plane (-1: padding)
    offsets = np.unravel_index(arg, kernel_size)
    flat = np.zeros(best.shape, dtype=np.int64)
    inside = np.ones(best.shape, dtype=bool)
    for i, (size, s) in enumerate(zip(sizes, stride)):
        shape = [1] * len(sizes)
        shape[i] = out[i]
        pos = (np.arange(out[i]) * s - padding[2 * i]).reshape(shape) + offsets[i]
        inside &= (pos >= 0) & (pos < size)
        flat = flat * size + pos
    mask = np.where(inside, flat, -1).astype(np.int32)
    return best, mask


def _max_pool_grad_kernel(g, mask, input_size):
    planes, positions = g.shape[0] * g.shape[1], int(np.prod(input_size))
    # one extra slot per plane collects the windows whose mask is -1
    windows = int(np.prod(g.shape[2:]))  # not -1: an empty batch leaves it undetermined
    index = np.where(mask < 0, positions, mask).reshape(planes, windows).astype(np.int64)
    index += np.arange(planes)[:, None] * (positions + 1)
    summed = np.bincount(index.ravel(), weights=g.reshape(-1), minlength=planes * (positions + 1))
    summed = summed.reshape(planes, positions + 1)[:, :positions]
    return summed.astype(g.dtype).reshape(*g.shape[:2], *input_size)


def _avg_pool_kernel(x, kernel_size, stride, padding, ceil_mode, exclusive):
    sizes = x.shape[2:]
    out = pool_sizes("avg_pool", sizes, kernel_size, stride, padding, ceil_mode)
    xp = _padded(x, kernel_size, stride, padding, out, 0.0)
    total = np.zeros((*x.shape[:2], *out), dtype=x.dtype)
    for offset in np.ndindex(*kernel_size):
        total += xp[_window(offset, stride, out)]
    return total / _window_counts(sizes, kernel_size, stride, padding, out, exclusive, x.dtype)


def _avg_pool_grad_kernel(g, input_size, kernel_size, stride, padding, ceil_mode, exclusive):
    out = g.shape[2:]
    share = g / _window_counts(input_size, kernel_size, stride, padding, out, exclusive, g.dtype)
    canvas = _padded(np.zeros((*g.shape[:2], *input_size), g.dtype), kernel_size, stride, padding, out, 0.0)
    for offset in np.ndindex(*kernel_size):
        canvas[_window(offset, stride, out)] += share
    crop = tuple(slice(padding[2 * i], padding[2 * i] + n) for i, n in enumerate(input_size))
    return np.ascontiguousarray(canvas[(Ellipsis, *crop)])


def adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Paddle's adaptive windows: ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _averaging_matrix(size: int, out: int, dtype) -> np.ndarray:
    """``[out, size]``: row i averages adaptive window i."""
    start, end = adaptive_bounds(size, out)
    positions = np.arange(size)
    inside = (positions >= start[:, None]) & (positions < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _contract(a: np.ndarray, matrices) -> np.ndarray:
    """``a`` [N, C, *S] with each spatial dim i multiplied by ``matrices[i]`` ([new, old])."""
    for i, m in enumerate(matrices):
        a = np.moveaxis(np.moveaxis(a, 2 + i, -1) @ m.T, -1, 2 + i)
    return np.ascontiguousarray(a)


def _adaptive_avg_pool_kernel(x, output_size):
    return _contract(x, [_averaging_matrix(s, o, x.dtype) for s, o in zip(x.shape[2:], output_size)])


def _adaptive_avg_pool_grad_kernel(g, input_size):
    return _contract(g, [_averaging_matrix(s, o, g.dtype).T for s, o in zip(input_size, g.shape[2:])])


def _adaptive_max_pool_kernel(x, output_size):
    nd, sizes = x.ndim - 2, x.shape[2:]
    index, widths = [], []
    for i, (size, o) in enumerate(zip(sizes, output_size)):
        start, end = adaptive_bounds(size, o)
        width = int((end - start).max())
        # shorter windows repeat their last element: the maximum and its first position stay
        idx = np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)
        shape = [1] * (2 * nd)
        shape[2 * i], shape[2 * i + 1] = o, width
        index.append(idx.reshape(shape))
        widths.append(width)
    windows = x[(slice(None), slice(None), *index)]  # [N, C, o_0, w_0, o_1, w_1, ...]
    windows = windows.transpose(0, 1, *range(2, 2 + 2 * nd, 2), *range(3, 3 + 2 * nd, 2))
    windows = windows.reshape(*x.shape[:2], *output_size, int(np.prod(widths)))  # not -1: N may be 0
    arg = np.argmax(windows, axis=-1)  # the first maximum, or the first NaN
    best = np.take_along_axis(windows, arg[..., None], axis=-1)[..., 0]
    offsets = np.unravel_index(arg, widths)
    flat = np.zeros(arg.shape, dtype=np.int64)
    for i, size in enumerate(sizes):
        pos = index[i].reshape(output_size[i], widths[i])
        shape = [1] * nd
        shape[i] = output_size[i]
        rows = np.arange(output_size[i]).reshape(shape)
        flat = flat * size + pos[rows, offsets[i]]
    return np.ascontiguousarray(best), flat.astype(np.int32)


max_pool_op = Op("max_pool", paddle=("nn.functional.max_pool1d", "nn.functional.max_pool2d", "nn.functional.max_pool3d"), reference=_max_pool_kernel, meta=_max_pool_meta, dtypes=NATIVE_FLOATS, num_outputs=2,
                 per_sample=True)
max_pool_grad_op = Op("max_pool_grad", reference=_max_pool_grad_kernel, meta=_max_pool_grad_meta,
                      dtypes=NATIVE_FLOATS, nondiff_inputs=(1,))
avg_pool_op = Op("avg_pool", paddle=("nn.functional.avg_pool1d", "nn.functional.avg_pool2d", "nn.functional.avg_pool3d"), reference=_avg_pool_kernel, meta=_avg_pool_meta, dtypes=NATIVE_FLOATS, per_sample=True)
avg_pool_grad_op = Op("avg_pool_grad", reference=_avg_pool_grad_kernel, meta=_avg_pool_grad_meta,
                      dtypes=NATIVE_FLOATS)
adaptive_avg_pool_op = Op("adaptive_avg_pool", paddle=("nn.functional.adaptive_avg_pool1d", "nn.functional.adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool3d"), reference=_adaptive_avg_pool_kernel, meta=_adaptive_avg_pool_meta,
                          dtypes=NATIVE_FLOATS, per_sample=True)
adaptive_avg_pool_grad_op = Op("adaptive_avg_pool_grad", reference=_adaptive_avg_pool_grad_kernel,
                               meta=_adaptive_avg_pool_grad_meta, dtypes=NATIVE_FLOATS)
adaptive_max_pool_op = Op("adaptive_max_pool", paddle=("nn.functional.adaptive_max_pool1d", "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d"), reference=_adaptive_max_pool_kernel, meta=_adaptive_max_pool_meta,
                          dtypes=NATIVE_FLOATS, num_outputs=2, per_sample=True)


# -- gradient rules -----------------------------------------------------------------------------
def _max_grad(ctx, g, _mask_grad=None):
    mask = ctx.output(1)  # the pooled output itself is not needed
    return dispatch(max_pool_grad_op, (g, mask), {"input_size": list(ctx.in_shapes[0][2:])})


max_pool_op.defgrad(_max_grad)
adaptive_max_pool_op.defgrad(_max_grad)


@max_pool_grad_op.defgrad
def _max_pool_grad_grad(ctx, gg):
    # gather gg at the mask; a -1 (a window of padding only) reads an appended zero
    g_shape, _ = ctx.in_shapes
    mask = ctx.input(1)
    planes = list(g_shape[:2])
    positions = int(np.prod(ctx.attrs["input_size"]))
    flat = pad_axes(reshape(gg, planes + [positions]), [0, 0, 0, 0, 0, 1])
    index = where(mask < 0, positions, cast(mask, "int64"))
    windows = int(np.prod(g_shape[2:]))  # not -1: an empty batch leaves it undetermined
    picked = take_along_axis(flat, reshape(index, planes + [windows]), axis=2, broadcast=False)
    return reshape(picked, list(g_shape)), None


@avg_pool_op.defgrad
def _avg_pool_grad(ctx, g):
    return dispatch(avg_pool_grad_op, (g,), {"input_size": list(ctx.in_shapes[0][2:]), **ctx.attrs})


@avg_pool_grad_op.defgrad
def _avg_pool_grad_grad(ctx, gg):
    attrs = {k: v for k, v in ctx.attrs.items() if k != "input_size"}
    return dispatch(avg_pool_op, (gg,), attrs)


@adaptive_avg_pool_op.defgrad
def _adaptive_avg_pool_grad(ctx, g):
    return dispatch(adaptive_avg_pool_grad_op, (g,), {"input_size": list(ctx.in_shapes[0][2:])})


@adaptive_avg_pool_grad_op.defgrad
def _adaptive_avg_pool_grad_grad(ctx, gg):
    return dispatch(adaptive_avg_pool_op, (gg,), {"output_size": list(ctx.in_shapes[0][2:])})


OPS = [max_pool_op, max_pool_grad_op, avg_pool_op, avg_pool_grad_op, adaptive_avg_pool_op,
       adaptive_avg_pool_grad_op, adaptive_max_pool_op]


# -- public functions ---------------------------------------------------------------------------
def _input(fn: str, x, nd: int, data_format) -> tuple[Tensor, bool]:
    x = as_tensor(x, "x", fn)
    last = channel_last(fn, data_format, nd)
    if x.ndim != nd + 2:
        layout = CHANNEL_LAST[nd] if last else CHANNEL_FIRST[nd]
        raise ShapeError(f"{fn}: x must be a {nd + 2}-d tensor in {layout} layout, got shape {x.shape}")
    check_float(fn, x=x)
    return x, last


def _window_args(fn: str, nd: int, x: Tensor, kernel_size, stride, padding, ceil_mode, last: bool) -> dict:
    """The op attributes of a pooling call, in channel-first terms, from Paddle's arguments."""
    kernel = int_list(fn, "kernel_size", kernel_size, nd, minimum=1)
    stride = kernel if stride is None else int_list(fn, "stride", stride, nd, minimum=1)
    algorithm, pads = parse_padding(fn, padding, nd, last)
    sizes = x.shape[1:-1] if last else x.shape[2:]
    if algorithm == "VALID" and ceil_mode:
        raise ArgumentError(f"{fn}: padding='VALID' needs ceil_mode=False")
    if algorithm == "SAME":
        pads = same_padding(fn, sizes, kernel, stride)
    pool_sizes(fn, sizes, kernel, stride, pads, bool(ceil_mode))
    return {"kernel_size": kernel, "stride": stride, "padding": pads, "ceil_mode": bool(ceil_mode)}


def _max_pool_nd(fn, nd, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format):
    x, last = _input(fn, x, nd, data_format)
    if return_mask and last:
        raise ArgumentError(f"{fn}: return_mask=True needs data_format {CHANNEL_FIRST[nd]!r}, got {data_format!r}")
    attrs = _window_args(fn, nd, x, kernel_size, stride, padding, ceil_mode, last)
    out, mask = dispatch(max_pool_op, (to_channel_first(x, nd) if last else x,), attrs)
    if last:
        return to_channel_last(out, nd)
    return (out, mask) if return_mask else out


def _avg_pool_nd(fn, nd, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format):
    x, last = _input(fn, x, nd, data_format)
    attrs = _window_args(fn, nd, x, kernel_size, stride, padding, ceil_mode, last)
    attrs["exclusive"] = bool(exclusive)
    if divisor_override is not None and (not isinstance(divisor_override, (int, float)) or isinstance(divisor_override, bool)
                                         or divisor_override == 0):
        raise ArgumentError(f"{fn}: divisor_override must be a non-zero int or float, got {divisor_override!r}")
    out = dispatch(avg_pool_op, (to_channel_first(x, nd) if last else x,), attrs)
    if divisor_override is not None:
        # Paddle rescales the pooled average: average * prod(kernel_size) / divisor_override
        out = out * (float(np.prod(attrs["kernel_size"])) / divisor_override)
    return to_channel_last(out, nd) if last else out


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    """Max pooling over ``x`` [N, C, L]; ``stride`` defaults to ``kernel_size``. With
    ``return_mask=True`` it also returns the int32 position of each maximum in L.

    >>> import oar
    >>> x = oar.to_tensor([[[1., 3, 2, 5, 4]]])
    >>> oar.nn.functional.max_pool1d(x, 2).tolist()
    [[[3.0, 5.0]]]
    >>> oar.nn.functional.max_pool1d(x, 2, ceil_mode=True, return_mask=True)[1].tolist()
    [[[1, 3, 4]]]
    """
    return _max_pool_nd("max_pool1d", 1, x, kernel_size, stride, padding, return_mask, ceil_mode, "NCL")


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    """Max pooling over ``x`` [N, C, H, W] (or NHWC); ``stride`` defaults to ``kernel_size``.
    With ``return_mask=True`` (NCHW only) it also returns the int32 index ``h * W + w`` of each maximum.

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> oar.nn.functional.max_pool2d(x, kernel_size=2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool_nd("max_pool2d", 2, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    """Average pooling over ``x`` [N, C, L]. ``exclusive=True`` (Paddle's default) divides by
    the input elements in each window, ``False`` also counts the padding.

    >>> import oar
    >>> x = oar.to_tensor([[[1., 2, 3, 4]]])
    >>> oar.nn.functional.avg_pool1d(x, 2, padding=1).tolist()
    [[[1.0, 2.5, 4.0]]]
    >>> oar.nn.functional.avg_pool1d(x, 2, padding=1, exclusive=False).tolist()
    [[[0.5, 2.5, 2.0]]]
    """
    return _avg_pool_nd("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode, exclusive, None, "NCL")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    """Average pooling over ``x`` [N, C, H, W] (or NHWC). With ``divisor_override`` the result is
    Paddle's: the average times ``kh * kw / divisor_override``.

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> oar.nn.functional.avg_pool2d(x, kernel_size=2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool_nd("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                        data_format)


def _output_size(fn: str, output_size, sizes) -> list[int]:
    """An int or one entry per spatial dim; ``None`` keeps that input size (Paddle)."""
    nd = len(sizes)
    if isinstance(output_size, (list, tuple)) and len(output_size) == nd:
        output_size = [s if o is None else o for o, s in zip(output_size, sizes)]
    return int_list(fn, "output_size", output_size, nd, minimum=1)


def _adaptive_avg_nd(fn, nd, x, output_size, data_format):
    x, last = _input(fn, x, nd, data_format)
    sizes = x.shape[1:-1] if last else x.shape[2:]
    attrs = {"output_size": _output_size(fn, output_size, sizes)}
    out = dispatch(adaptive_avg_pool_op, (to_channel_first(x, nd) if last else x,), attrs)
    return to_channel_last(out, nd) if last else out


def _adaptive_max_nd(fn, nd, x, output_size, return_mask):
    x, _ = _input(fn, x, nd, CHANNEL_FIRST[nd])
    out, mask = dispatch(adaptive_max_pool_op, (x,), {"output_size": _output_size(fn, output_size, x.shape[2:])})
    return (out, mask) if return_mask else out


def adaptive_avg_pool1d(x, output_size, name=None):
    """Average pooling of ``x`` [N, C, L] into ``output_size`` windows, window i covering
    ``[floor(i * L / out), ceil((i + 1) * L / out))``.

    >>> import oar
    >>> oar.nn.functional.adaptive_avg_pool1d(oar.to_tensor([[[1., 2, 3, 4, 5]]]), 2).tolist()
    [[[2.0, 4.0]]]
    """
    return _adaptive_avg_nd("adaptive_avg_pool1d", 1, x, output_size, "NCL")


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average pooling of ``x`` [N, C, H, W] (or NHWC) into an ``output_size`` grid of adaptive
    windows; ``None`` in ``output_size`` keeps that input size.

    >>> import oar
    >>> oar.nn.functional.adaptive_avg_pool2d(oar.ones([2, 3, 7, 5]), output_size=[3, None]).shape
    [2, 3, 3, 5]
    """
    return _adaptive_avg_nd("adaptive_avg_pool2d", 2, x, output_size, data_format)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """Max pooling of ``x`` [N, C, L] into ``output_size`` adaptive windows (and the int32
    positions of the maxima with ``return_mask=True``).

    >>> import oar
    >>> oar.nn.functional.adaptive_max_pool1d(oar.to_tensor([[[1., 5, 3, 4, 2]]]), 2).tolist()
    [[[5.0, 4.0]]]
    """
    return _adaptive_max_nd("adaptive_max_pool1d", 1, x, output_size, return_mask)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max pooling of ``x`` [N, C, H, W] into an ``output_size`` grid of adaptive windows (and
    the int32 indices ``h * W + w`` of the maxima with ``return_mask=True``).

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> out, mask = oar.nn.functional.adaptive_max_pool2d(x, 3, return_mask=True)
    >>> out.tolist(), mask.tolist()
    ([[[[5.0, 6.0, 7.0], [9.0, 10.0, 11.0], [13.0, 14.0, 15.0]]]], [[[[5, 6, 7], [9, 10, 11], [13, 14, 15]]]])
    """
    return _adaptive_max_nd("adaptive_max_pool2d", 2, x, output_size, return_mask)


def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
               name=None):
    """Max pooling over ``x`` [N, C, D, H, W] (or NDHWC); ``stride`` defaults to ``kernel_size``.
    With ``return_mask=True`` (NCDHW only) it also returns the int32 index ``(d * H + h) * W + w``
    of each maximum.

    >>> import oar
    >>> x = oar.arange(64, dtype="float32").reshape([1, 1, 4, 4, 4])
    >>> oar.nn.functional.max_pool3d(x, kernel_size=2)[0, 0, 0].tolist()
    [[21.0, 23.0], [29.0, 31.0]]
    """
    return _max_pool_nd("max_pool3d", 3, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    """Average pooling over ``x`` [N, C, D, H, W] (or NDHWC), with Paddle's ``exclusive`` and
    ``divisor_override`` (the average times ``kd * kh * kw / divisor_override``).

    >>> import oar
    >>> x = oar.arange(8, dtype="float32").reshape([1, 1, 2, 2, 2])
    >>> oar.nn.functional.avg_pool3d(x, kernel_size=2).tolist()
    [[[[[3.5]]]]]
    """
    return _avg_pool_nd("avg_pool3d", 3, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                        data_format)


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    """Average pooling of ``x`` [N, C, D, H, W] (or NDHWC) into an ``output_size`` grid of
    adaptive windows; ``None`` in ``output_size`` keeps that input size.

    >>> import oar
    >>> oar.nn.functional.adaptive_avg_pool3d(oar.ones([2, 3, 5, 7, 4]), output_size=[2, 3, None]).shape
    [2, 3, 2, 3, 4]
    """
    return _adaptive_avg_nd("adaptive_avg_pool3d", 3, x, output_size, data_format)


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    """Max pooling of ``x`` [N, C, D, H, W] into an ``output_size`` grid of adaptive windows (and
    the int32 flat indices of the maxima in each ``[D, H, W]`` volume with ``return_mask=True``).

    >>> import oar
    >>> x = oar.arange(27, dtype="float32").reshape([1, 1, 3, 3, 3])
    >>> oar.nn.functional.adaptive_max_pool3d(x, 1).tolist()
    [[[[[26.0]]]]]
    """
    return _adaptive_max_nd("adaptive_max_pool3d", 3, x, output_size, return_mask)


# -- composed pools: lp pooling, unpooling, fractional max pooling ------------------------------
def _lp_pool_nd(fn, nd, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format):
    x, last = _input(fn, x, nd, data_format)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type == 0:
        raise ArgumentError(f"{fn}: norm_type must be a non-zero number (or inf), got {norm_type!r}")
    attrs = _window_args(fn, nd, x, kernel_size, stride, padding, ceil_mode, last)
    x = to_channel_first(x, nd) if last else x
    if norm_type == float("inf"):
        out = dispatch(max_pool_op, (x,), attrs)[0]
    else:
        # Paddle sums x ** p over the input elements of each window (the padding adds nothing) and
        # takes the 1/p-th power; a negative sum with an odd p is NaN, as in Paddle
        mean = dispatch(avg_pool_op, (x ** float(norm_type),), {**attrs, "exclusive": True})
        out_sizes = mean.shape[2:]
        counts = _window_counts(x.shape[2:], attrs["kernel_size"], attrs["stride"], attrs["padding"], out_sizes,
                                True, np.float64)
        out = (mean * oar.to_tensor(counts, dtype=x.dtype, place=x.place)) ** (1.0 / float(norm_type))
    return to_channel_last(out, nd) if last else out


def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL", name=None):
    """Power-average pooling over ``x`` [N, C, L] (or NLC): ``(sum of x ** p over each window) ** (1 / p)``
    with ``p = norm_type``; ``norm_type=inf`` is max pooling.

    >>> import oar
    >>> x = oar.to_tensor([[[3., 4, 1, 1]]])
    >>> oar.nn.functional.lp_pool1d(x, 2, kernel_size=2).tolist()
    [[[5.0, 1.4142135381698608]]]
    """
    return _lp_pool_nd("lp_pool1d", 1, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format)


def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW", name=None):
    """Power-average pooling over ``x`` [N, C, H, W] (or NHWC): ``(sum of x ** p over each window) ** (1 / p)``
    with ``p = norm_type``; ``norm_type=inf`` is max pooling.

    >>> import oar
    >>> oar.nn.functional.lp_pool2d(oar.ones([1, 1, 4, 4]), 2, kernel_size=2).tolist()
    [[[[2.0, 2.0], [2.0, 2.0]]]]
    """
    return _lp_pool_nd("lp_pool2d", 2, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format)


def _unpool_size(fn, nd, in_sizes, kernel, stride, pads, output_size) -> list[int]:
    """Paddle's default ``(in - 1) * stride - before - after + kernel``, or ``output_size`` (its
    spatial entries, or all of them) when it lies within one stride of that."""
    default = [(n - 1) * s - pads[2 * i] - pads[2 * i + 1] + k
               for i, (n, k, s) in enumerate(zip(in_sizes, kernel, stride))]
    if output_size is None:
        return default
    sizes = output_size.tolist() if isinstance(output_size, Tensor) else list(output_size)
    sizes = sizes[-nd:] if len(sizes) == nd + 2 else sizes
    sizes = int_list(fn, "output_size", sizes, nd, minimum=1)
    for i, (size, low, s) in enumerate(zip(sizes, default, stride)):
        if not low - s < size < low + s:
            raise ArgumentError(f"{fn}: output_size {sizes} must be within one stride of {default} in dim {i}")
    return sizes


def _max_unpool_nd(fn, nd, x, indices, kernel_size, stride, padding, data_format, output_size):
    if data_format != CHANNEL_FIRST[nd]:
        raise ArgumentError(f"{fn}: data_format must be {CHANNEL_FIRST[nd]!r}, got {data_format!r}")
    x, _ = _input(fn, x, nd, data_format)
    indices = as_tensor(indices, "indices", fn)
    if indices.dtype not in (oar.int32, oar.int64) or indices.shape != x.shape:
        raise ShapeError(f"{fn}: indices must be an int32 or int64 tensor of x's shape {x.shape}, got "
                         f"{indices.dtype.name}{indices.shape}")
    kernel = int_list(fn, "kernel_size", kernel_size, nd, minimum=1)
    stride = kernel if stride is None else int_list(fn, "stride", stride, nd, minimum=1)
    _, pads = parse_padding(fn, padding, nd, False)
    sizes = _unpool_size(fn, nd, x.shape[2:], kernel, stride, pads, output_size)
    positions = int(np.prod(sizes))
    # reading the indices would stop to_static capturing the call: traced, put_along_axis checks them
    if oar.in_dynamic_mode() and x.size and (int(indices.min()) < 0 or int(indices.max()) >= positions):
        raise ArgumentError(f"{fn}: indices must lie in [0, {positions}) for the output size {sizes}")
    planes = x.shape[:2]
    flat = reshape(x, [*planes, int(np.prod(x.shape[2:]))])
    canvas = oar.zeros([*planes, positions], dtype=x.dtype, device=x.place)
    # assign, not add: a position two windows chose keeps one value, as Paddle's kernel does
    out = oar.put_along_axis(canvas, reshape(indices, flat.shape).astype("int64"), flat, 2, reduce="assign")
    return reshape(out, [*planes, *sizes])


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
    """The partial inverse of ``max_pool1d``: ``x`` [N, C, L] written at ``indices`` (its mask)
    into zeros of length ``(L - 1) * stride - 2 * padding + kernel_size`` (or ``output_size``).

    >>> import oar
    >>> F = oar.nn.functional
    >>> out, mask = F.max_pool1d(oar.to_tensor([[[1., 3, 2, 5]]]), 2, return_mask=True)
    >>> F.max_unpool1d(out, mask, 2).tolist()
    [[[0.0, 3.0, 0.0, 5.0]]]
    """
    return _max_unpool_nd("max_unpool1d", 1, x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
    """The partial inverse of ``max_pool2d``: ``x`` [N, C, H, W] written at ``indices`` (the flat
    ``h * W + w`` positions of its mask) into zeros of the unpooled size (or ``output_size``).

    >>> import oar
    >>> F = oar.nn.functional
    >>> out, mask = F.max_pool2d(oar.arange(16, dtype="float32").reshape([1, 1, 4, 4]), 2, return_mask=True)
    >>> F.max_unpool2d(out, mask, 2)[0, 0].tolist()[1]
    [0.0, 5.0, 0.0, 7.0]
    """
    return _max_unpool_nd("max_unpool2d", 2, x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
    """The partial inverse of ``max_pool3d``: ``x`` [N, C, D, H, W] written at ``indices`` (flat
    positions in each output volume) into zeros of the unpooled size (or ``output_size``).

    >>> import oar
    >>> F = oar.nn.functional
    >>> out, mask = F.max_pool3d(oar.ones([1, 1, 2, 2, 2]), 2, return_mask=True)
    >>> F.max_unpool3d(out, mask, 2).shape
    [1, 1, 2, 2, 2]
    """
    return _max_unpool_nd("max_unpool3d", 3, x, indices, kernel_size, stride, padding, data_format, output_size)


def fractional_bounds(size: int, out: int, kernel: int, u: float) -> tuple[np.ndarray, np.ndarray]:
    """Paddle's fractional windows ``[start, end)`` of one dim (Graham's pseudo-random sequence).

    ``alpha = (size - kernel) / (out - 1)`` with a kernel, else ``size / out`` with ``u`` scaled
    into the range that keeps every window non-empty; window ``i`` starts at
    ``int(alpha * (i + u)) - int(alpha * u)`` and ends ``kernel`` later, or where the next starts.
    Computed in float32, as Paddle's kernel does, so that the windows are the same.
    """
    f = np.float32
    alpha = f(size - kernel) / f(out - (1 if kernel else 0))
    if not kernel:
        base = size // out
        u = f(u) * min(f(base + 2) / alpha - f(1), f(size + 1 - base) / alpha - f(out - 1))
    u = f(u)
    offset = int(f(alpha * u))
    starts = np.array([int(f(alpha * (f(i) + u))) - offset for i in range(out + 1)])
    ends = starts[:-1] + kernel if kernel else starts[1:]
    return np.maximum(starts[:-1], 0), np.minimum(ends, size)


def _fractional_max_pool_nd(fn, nd, x, output_size, kernel_size, random_u, return_mask):
    x, _ = _input(fn, x, nd, CHANNEL_FIRST[nd])
    sizes = x.shape[2:]
    out = _output_size(fn, output_size, sizes)
    kernel = [0] * nd if kernel_size is None else int_list(fn, "kernel_size", kernel_size, nd, minimum=1)
    for i, (size, o, k) in enumerate(zip(sizes, out, kernel)):
        if size < o + max(k - 1, 0):
            raise ShapeError(f"{fn}: spatial dim {i} of size {size} is too small for output size {o} and kernel "
                             f"{k or None} (it needs {o + max(k - 1, 0)})")
    if random_u is None:
        # Paddle draws u from its generator; oar's, so that oar.seed fixes it too
        random_u = float(oar.rand([1], dtype="float64").item())
    elif isinstance(random_u, bool) or not isinstance(random_u, (int, float)) or not 0 < random_u < 1:
        raise ArgumentError(f"{fn}: random_u must be a float in (0, 1), got {random_u!r}")
    # gather every window along each dim (shorter ones repeat their last element, which changes
    # neither the maximum nor its first position), then take the first maximum of each
    windows, positions, widths = x, np.zeros([1] * (2 * nd), dtype=np.int64), []
    for i, (size, o, k) in enumerate(zip(sizes, out, kernel)):
        start, end = fractional_bounds(size, o, k, random_u)
        width = int((end - start).max())
        index = np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)  # [o, width]
        windows = oar.index_select(windows, oar.to_tensor(index.reshape(-1), place=x.place), axis=2 + 2 * i)
        windows = reshape(windows, [*windows.shape[:2 + 2 * i], o, width, *windows.shape[3 + 2 * i:]])
        shape = [1] * (2 * nd)
        shape[2 * i], shape[2 * i + 1] = o, width
        positions = positions * size + index.reshape(shape)  # [o_0, w_0, o_1, w_1, ...]: flat input index
        widths.append(width)
    window_last = [*range(0, 2 * nd, 2), *range(1, 2 * nd, 2)]
    windows = oar.transpose(windows, [0, 1, *(2 + a for a in window_last)])
    windows = reshape(windows, [*x.shape[:2], *out, int(np.prod(widths))])
    best = oar.argmax(windows, axis=-1, keepdim=True)
    pooled = take_along_axis(windows, best, axis=-1).squeeze(-1)
    if not return_mask:
        return pooled
    table = positions.transpose(window_last).reshape([1, 1, *out, -1])
    table = oar.to_tensor(np.broadcast_to(table, [*x.shape[:2], *table.shape[2:]]).astype(np.int32), place=x.place)
    return pooled, take_along_axis(table, best, axis=-1).squeeze(-1)


def fractional_max_pool2d(x, output_size, kernel_size=None, random_u=None, return_mask=False, name=None):
    """Fractional max pooling (Graham, 2015) of ``x`` [N, C, H, W] into ``output_size``: windows of
    pseudo-random sizes set by ``random_u`` in (0, 1) (drawn when None), disjoint, or
    ``kernel_size`` long and overlapping. ``return_mask=True`` adds the int32 ``h * W + w`` of each maximum.

    >>> import oar
    >>> x = oar.to_tensor([[[[2., 4, 3, 1, 5, 2, 3]]]])
    >>> oar.nn.functional.fractional_max_pool2d(x, [1, 5], random_u=0.3).tolist()
    [[[[2.0, 4.0, 1.0, 5.0, 3.0]]]]
    """
    return _fractional_max_pool_nd("fractional_max_pool2d", 2, x, output_size, kernel_size, random_u, return_mask)


def fractional_max_pool3d(x, output_size, kernel_size=None, random_u=None, return_mask=False, name=None):
    """Fractional max pooling (Graham, 2015) of ``x`` [N, C, D, H, W] into ``output_size``; see
    ``fractional_max_pool2d``. The mask holds the int32 ``(d * H + h) * W + w`` of each maximum.

    >>> import oar
    >>> oar.nn.functional.fractional_max_pool3d(oar.rand([1, 2, 7, 7, 7]), 3, random_u=0.5).shape
    [1, 2, 3, 3, 3]
    """
    return _fractional_max_pool_nd("fractional_max_pool3d", 3, x, output_size, kernel_size, random_u, return_mask)


__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
    "fractional_max_pool3d",
]
