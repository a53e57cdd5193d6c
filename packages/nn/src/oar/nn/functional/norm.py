"""Normalisation functions of oar.nn.functional: batch_norm, layer_norm, group_norm,
instance_norm, rms_norm, normalize, local_response_norm.

Batch and layer normalisation are fused ops in both directions: ``batch_norm`` (batch
statistics), ``batch_norm_infer`` (given statistics), ``layer_norm``, and their backward ops
``batch_norm_grad`` and ``layer_norm_grad``. The forward ops also return the statistics they
computed (mean and biased variance), which ``batch_norm`` uses to update the running statistics
and which the backward ops read instead of recomputing. The backward ops take the statistics as
inputs, so their own gradient rules (written with oar ops, below) are plain partial derivatives;
autograd adds the paths through the statistics back to ``x``. Group and instance normalisation
reshape onto ``layer_norm``; RMS normalisation and ``normalize`` compose core ops, and local
response normalisation an average pooling across channels.

Paddle's conventions: the running statistics are updated in place as
``running = momentum * running + (1 - momentum) * batch`` with ``momentum=0.9``, from the biased
batch variance; ``use_global_stats=None`` means batch statistics in training and the running ones
in evaluation.

>>> import oar
>>> import oar.nn.functional as F
>>> y = F.layer_norm(oar.to_tensor([[1.0, 3.0]]), 2)
>>> [round(v, 3) for v in y.numpy().ravel().tolist()]
[-1.0, 1.0]
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.functional.activation import check_float
from oar.nn.functional.pooling import avg_pool2d
from oar.ops import AMP_FP32, Op, Tensor, TensorMeta, as_tensor, axis_not_batch, dispatch, fmt_shape, reshape_to

FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32


class StatsOp(Op):
    """An op whose extra outputs (statistics) are often unused: its gradient rule gets ``None``
    rather than zeros for an output no gradient reached, and skips that term."""

    materialize_grads = False


def _numel(dims) -> int | None:
    if any(d is None for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))


def _float_meta_checks(fn: str, x: TensorMeta, params: dict) -> None:
    if not x.dtype.is_floating:
        raise DTypeError(f"{fn}: x must be a floating tensor, got {x.dtype.name}")
    for name, m in params.items():
        if m.dtype is not x.dtype:
            raise DTypeError(f"{fn}: {name} has dtype {m.dtype.name} but x is {x.dtype.name}")


def _check_param(fn: str, name: str, m: TensorMeta, size) -> None:
    if len(m.shape) != 1 or (size is not None and m.shape[0] is not None and m.shape[0] != size):
        raise ShapeError(f"{fn}: {name} must have shape [{size}], got {fmt_shape(m.shape)}")


# ------------------------------------------------------------------------------------------
# numpy kernels shared by batch and layer normalisation, on a view of x
# ------------------------------------------------------------------------------------------
def _normalize_kernel(xv, w, b, reduce, eps):
    if xv.size == 0:  # nothing to normalise; the statistics of no element are undefined (NaN)
        stats = np.full([1 if i in reduce else d for i, d in enumerate(xv.shape)], np.nan, xv.dtype)
        return np.empty(xv.shape, xv.dtype), stats, stats.copy()
    mean = np.mean(xv, axis=reduce, keepdims=True)
    y = xv - mean
    var = np.mean(np.square(y), axis=reduce, keepdims=True)
    y *= w / np.sqrt(var + eps)  # in place: one buffer for the whole output
    y += b
    return y.astype(xv.dtype, copy=False), mean, var


def _normalize_grad_kernel(xv, w, mean, var, gv, reduce, affine_reduce, eps):
    r = 1.0 / np.sqrt(var + eps)
    xh = xv - mean
    xh *= r
    n = np.prod([xv.shape[i] for i in reduce])
    db = np.sum(gv, axis=affine_reduce)
    dw = np.sum(gv * xh, axis=affine_reduce)
    if n == 0:  # an empty batch: no element to pass a gradient to, and the sums over none are 0
        return np.zeros_like(xv), dw.astype(xv.dtype, copy=False), db.astype(xv.dtype, copy=False)
    if tuple(reduce) == tuple(affine_reduce):
        # Batch norm: w is constant over the reduced axes, so mean(a) = w db / n, mean(a xh) = w dw / n.
        shape = r.shape
        xh *= dw.reshape(shape) / n
        dx = gv - xh
        dx -= db.reshape(shape) / n
        dx *= r * w
    else:
        a = gv * w
        m_a = np.mean(a * xh, axis=reduce, keepdims=True)
        a -= np.mean(a, axis=reduce, keepdims=True)
        xh *= m_a
        a -= xh
        a *= r
        dx = a
    return dx.astype(xv.dtype, copy=False), dw.astype(xv.dtype, copy=False), db.astype(xv.dtype, copy=False)


def _normalize_grad_vjp(ctx, cx, cw, cb, views: dict):
    """The gradient rule of a normalisation backward op ``(x, w, mean, var, g) -> (dx, dw, db)``,
    with ``dx = r (a - mean(a) - xh mean(a xh))``, ``dw = sum(g xh)``, ``db = sum(g)``, where
    ``r = 1 / sqrt(var + eps)``, ``xh = (x - mean) r``, ``a = g w`` and the means run over the
    ``reduce`` axes of the view. ``mean`` and ``var`` are independent inputs here."""
    x, w, mean, var, g = ctx.inputs
    eps, reduce, affine_reduce = views["eps"], views["reduce"], views["affine_reduce"]
    xv_shape, wv_shape, sv_shape = views["x"], views["w"], views["stats"]
    x, g, cx = (reshape_to(t, xv_shape) for t in (x, g, cx))
    w, cw, cb = (reshape_to(t, wv_shape) for t in (w, cw, cb))
    mean, var = reshape_to(mean, sv_shape), reshape_to(var, sv_shape)
    n = float(np.prod([xv_shape[i] for i in reduce]))

    def mean_r(t):
        return oar.mean(t, axis=list(reduce), keepdim=True)

    def sum_r(t):
        return oar.sum(t, axis=list(reduce), keepdim=True)

    r = oar.rsqrt(var + eps)
    r2 = r * r
    xh = (x - mean) * r
    a = g * w
    m_a, m_c = mean_r(a * xh), mean_r(cx * xh)
    mean_cx, mean_a = mean_r(cx), mean_r(a)
    need_x, need_w, need_mean, need_var, need_g = ctx.needs_input_grad
    ga = r * (cx - mean_cx - xh * m_c)  # the gradient of <cx, dx> with respect to a = g w
    cwg = cw * g
    grads = [None] * 5
    if need_x:
        grads[0] = reshape_to(cwg * r - r2 * (cx * m_a + a * m_c), list(ctx.in_shapes[0]))
    if need_w:
        grads[1] = reshape_to(oar.sum(ga * g, axis=list(affine_reduce), keepdim=True), list(ctx.in_shapes[1]))
    if need_mean:
        gm = r2 * n * (mean_cx * m_a + mean_a * m_c) - sum_r(cwg * r)
        grads[2] = reshape_to(gm, list(ctx.in_shapes[2]))
    if need_var:
        s = mean_r(cx * a) - mean_cx * mean_a
        gv = r2 * r * (n / 2.0) * (m_c * m_a * 3.0 - s) - sum_r(cwg * xh) * r2 * 0.5
        grads[3] = reshape_to(gv, list(ctx.in_shapes[3]))
    if need_g:
        grads[4] = reshape_to(ga * w + cw * xh + cb, list(ctx.in_shapes[4]))
    return tuple(grads)


def _stats_grad(x: Tensor, mean: Tensor, gmean, gvar, view, stats_view, reduce) -> Tensor:
    """The gradient reaching ``x`` through the mean and the biased variance it produced."""
    xv = reshape_to(x, view)
    n = float(np.prod([view[i] for i in reduce]))
    total = None
    if gmean is not None:
        total = reshape_to(gmean, stats_view) / n
    if gvar is not None:
        term = (xv - reshape_to(mean, stats_view)) * reshape_to(gvar, stats_view) * (2.0 / n)
        total = term if total is None else total + term
    return reshape_to(oar.broadcast_to(total, view), list(x.shape))


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


# ------------------------------------------------------------------------------------------
# layer_norm: x viewed as [rows, cols], the statistics per row, the affine per column
# ------------------------------------------------------------------------------------------
def _ln_view(shape, begin_norm_axis):
    return [_numel(shape[:begin_norm_axis]), _numel(shape[begin_norm_axis:])]


def _layer_norm_kernel(x, weight, bias, begin_norm_axis, epsilon):
    rows, cols = _ln_view(x.shape, begin_norm_axis)
    y, mean, var = _normalize_kernel(x.reshape(rows, cols), weight, bias, (1,), epsilon)
    return y.reshape(x.shape), mean.reshape(rows), var.reshape(rows)


def _layer_norm_meta(x: TensorMeta, weight: TensorMeta, bias: TensorMeta, begin_norm_axis, epsilon):
    _float_meta_checks("layer_norm", x, {"weight": weight, "bias": bias})
    if not 0 <= begin_norm_axis < len(x.shape):
        raise ArgumentError(f"layer_norm: begin_norm_axis {begin_norm_axis} is out of range for x {fmt_shape(x.shape)}")
    rows, cols = _ln_view(x.shape, begin_norm_axis)
    _check_param("layer_norm", "weight", weight, cols)
    _check_param("layer_norm", "bias", bias, cols)
    stats = TensorMeta((rows,), x.dtype)
    return TensorMeta(tuple(x.shape), x.dtype), stats, stats


layer_norm_op = StatsOp("layer_norm", reference=_layer_norm_kernel, meta=_layer_norm_meta, amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3, per_sample=axis_not_batch("begin_norm_axis"))


@layer_norm_op.defgrad
def _layer_norm_rule(ctx, gy, gmean, gvar):
    x, weight, _ = ctx.inputs
    _, mean, var = ctx.outputs
    dx = dw = db = None
    if gy is not None:
        dx, dw, db = dispatch(layer_norm_grad_op, (x, weight, mean, var, gy), dict(ctx.attrs))
    if (gmean is not None or gvar is not None) and ctx.needs_input_grad[0]:
        view = _ln_view(ctx.in_shapes[0], ctx.attrs["begin_norm_axis"])
        dx = _add(dx, _stats_grad(x, mean, gmean, gvar, view, [view[0], 1], (1,)))
    need_x, need_w, need_b = ctx.needs_input_grad
    return dx if need_x else None, dw if need_w else None, db if need_b else None


def _layer_norm_grad_kernel(x, weight, mean, var, g, begin_norm_axis, epsilon):
    rows, cols = _ln_view(x.shape, begin_norm_axis)
    dx, dw, db = _normalize_grad_kernel(x.reshape(rows, cols), weight, mean.reshape(rows, 1), var.reshape(rows, 1),
                                        g.reshape(rows, cols), (1,), (0,), epsilon)
    return dx.reshape(x.shape), dw, db


def _norm_grad_meta(fn: str, forward_meta):
    def meta(x, weight, mean, var, g, **attrs):
        y, stats, _ = forward_meta(x, weight, weight, **attrs)
        _float_meta_checks(fn, x, {"mean": mean, "var": var, "g": g})
        for name, m, expected in (("mean", mean, stats), ("var", var, stats), ("g", g, y)):
            if len(m.shape) != len(expected.shape) or any(
                a is not None and b is not None and a != b for a, b in zip(m.shape, expected.shape)
            ):
                raise ShapeError(f"{fn}: {name} has shape {fmt_shape(m.shape)}, expected {fmt_shape(expected.shape)}")
        return y, weight, weight

    return meta


layer_norm_grad_op = Op("layer_norm_grad", reference=_layer_norm_grad_kernel,
                        meta=_norm_grad_meta("layer_norm_grad", _layer_norm_meta), amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3)


@layer_norm_grad_op.defgrad
def _layer_norm_grad_rule(ctx, cx, cw, cb):
    rows, cols = _ln_view(ctx.in_shapes[0], ctx.attrs["begin_norm_axis"])
    views = {"x": [rows, cols], "w": [1, cols], "stats": [rows, 1], "reduce": (1,), "affine_reduce": (0,),
             "eps": ctx.attrs["epsilon"]}
    return _normalize_grad_vjp(ctx, cx, cw, cb, views)


def _normalized_shape(fn: str, normalized_shape, x: Tensor) -> list[int]:
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = [int(normalized_shape)]
    try:
        shape = [int(d) for d in normalized_shape]
    except (TypeError, ValueError):
        raise ArgumentError(f"{fn}: normalized_shape must be an int or a list of ints, got "
                            f"{type(normalized_shape).__name__}") from None
    if not shape or len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ShapeError(f"{fn}: normalized_shape {shape} must match the last dimensions of x {x.shape}")
    return shape


def _affine_param(fn: str, name: str, p, size: int, like: Tensor, fill: float) -> Tensor:
    """A weight or bias of ``size`` elements in ``like``'s dtype; None becomes a constant ``fill``."""
    if p is None:
        return oar.full([size], fill, dtype=like.dtype, device=like.place)
    p = as_tensor(p, name, fn)
    if p.size != size:
        raise ShapeError(f"{fn}: {name} has shape {p.shape} ({p.size} elements), expected {size} elements")
    if p.ndim != 1:
        p = reshape_to(p, [size])
    if p.dtype is not like.dtype:
        p = oar.cast(p, like.dtype)
    return p


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon: float = 1e-05, name=None) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dimensions: ``(x - mean) / sqrt(var +
    epsilon) * weight + bias`` with the biased variance. ``weight`` and ``bias`` have
    ``prod(normalized_shape)`` elements (Paddle's LayerNorm keeps them flat).

    >>> import oar
    >>> out = oar.nn.functional.layer_norm(oar.rand([2, 3, 4]), [3, 4])
    >>> out.shape
    [2, 3, 4]
    """
    x = as_tensor(x, "x", "layer_norm")
    check_float("layer_norm", x)
    shape = _normalized_shape("layer_norm", normalized_shape, x)
    cols = int(np.prod(shape))
    weight = _affine_param("layer_norm", "weight", weight, cols, x, 1.0)
    bias = _affine_param("layer_norm", "bias", bias, cols, x, 0.0)
    attrs = {"begin_norm_axis": x.ndim - len(shape), "epsilon": float(epsilon)}
    return dispatch(layer_norm_op, (x, weight, bias), attrs)[0]


# ------------------------------------------------------------------------------------------
# batch_norm: x viewed as [pre, C, post], the statistics and the affine per channel
# ------------------------------------------------------------------------------------------
def _bn_view(shape, channel_axis):
    return [_numel(shape[:channel_axis]), shape[channel_axis], _numel(shape[channel_axis + 1:])]


def _bn_meta_common(fn: str, x: TensorMeta, channel_axis, params: dict):
    _float_meta_checks(fn, x, params)
    if len(x.shape) < 2 or not 0 < channel_axis < len(x.shape):
        raise ShapeError(f"{fn}: x must have at least 2 dimensions with the channels on axis 1 or the last axis, "
                         f"got x {fmt_shape(x.shape)} and channel axis {channel_axis}")
    channels = x.shape[channel_axis]
    for name, m in params.items():
        _check_param(fn, name, m, channels)
    return channels


def _batch_norm_kernel(x, weight, bias, channel_axis, epsilon):
    pre, c, post = _bn_view(x.shape, channel_axis)
    y, mean, var = _normalize_kernel(x.reshape(pre, c, post), weight.reshape(1, c, 1), bias.reshape(1, c, 1),
                                     (0, 2), epsilon)
    return y.reshape(x.shape), mean.reshape(c), var.reshape(c)


def _batch_norm_meta(x: TensorMeta, weight: TensorMeta, bias: TensorMeta, channel_axis, epsilon):
    channels = _bn_meta_common("batch_norm", x, channel_axis, {"weight": weight, "bias": bias})
    stats = TensorMeta((channels,), x.dtype)
    return TensorMeta(tuple(x.shape), x.dtype), stats, stats


batch_norm_op = StatsOp("batch_norm", reference=_batch_norm_kernel, meta=_batch_norm_meta, amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3)


@batch_norm_op.defgrad
def _batch_norm_rule(ctx, gy, gmean, gvar):
    x, weight, _ = ctx.inputs
    _, mean, var = ctx.outputs
    dx = dw = db = None
    if gy is not None:
        dx, dw, db = dispatch(batch_norm_grad_op, (x, weight, mean, var, gy), dict(ctx.attrs))
    if (gmean is not None or gvar is not None) and ctx.needs_input_grad[0]:
        view = _bn_view(ctx.in_shapes[0], ctx.attrs["channel_axis"])
        dx = _add(dx, _stats_grad(x, mean, gmean, gvar, view, [1, view[1], 1], (0, 2)))
    need_x, need_w, need_b = ctx.needs_input_grad
    return dx if need_x else None, dw if need_w else None, db if need_b else None


def _batch_norm_grad_kernel(x, weight, mean, var, g, channel_axis, epsilon):
    pre, c, post = _bn_view(x.shape, channel_axis)
    stats = (1, c, 1)
    dx, dw, db = _normalize_grad_kernel(x.reshape(pre, c, post), weight.reshape(stats), mean.reshape(stats),
                                        var.reshape(stats), g.reshape(pre, c, post), (0, 2), (0, 2), epsilon)
    return dx.reshape(x.shape), dw, db


batch_norm_grad_op = Op("batch_norm_grad", reference=_batch_norm_grad_kernel,
                        meta=_norm_grad_meta("batch_norm_grad", _batch_norm_meta), amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3)


@batch_norm_grad_op.defgrad
def _batch_norm_grad_rule(ctx, cx, cw, cb):
    pre, c, post = _bn_view(ctx.in_shapes[0], ctx.attrs["channel_axis"])
    views = {"x": [pre, c, post], "w": [1, c, 1], "stats": [1, c, 1], "reduce": (0, 2), "affine_reduce": (0, 2),
             "eps": ctx.attrs["epsilon"]}
    return _normalize_grad_vjp(ctx, cx, cw, cb, views)


def _batch_norm_infer_kernel(x, weight, bias, mean, var, channel_axis, epsilon):
    pre, c, post = _bn_view(x.shape, channel_axis)
    scale = weight / np.sqrt(var + epsilon)
    shift = bias - mean * scale
    y = x.reshape(pre, c, post) * scale.reshape(1, c, 1) + shift.reshape(1, c, 1)
    return y.reshape(x.shape).astype(x.dtype, copy=False)


def _batch_norm_infer_meta(x, weight, bias, mean, var, channel_axis, epsilon):
    _bn_meta_common("batch_norm_infer", x, channel_axis,
                    {"weight": weight, "bias": bias, "running_mean": mean, "running_var": var})
    return TensorMeta(tuple(x.shape), x.dtype)


batch_norm_infer_op = Op("batch_norm_infer", paddle=("nn.functional.batch_norm",), reference=_batch_norm_infer_kernel, meta=_batch_norm_infer_meta,
                         amp=AMP_FP32, dtypes=FLOATS,
                         per_sample=axis_not_batch("channel_axis"))


@batch_norm_infer_op.defgrad
def _batch_norm_infer_rule(ctx, g):
    # With fixed statistics the op is affine in x: compose the gradient from core ops.
    x, weight, _, mean, var = ctx.inputs
    pre, c, post = _bn_view(ctx.in_shapes[0], ctx.attrs["channel_axis"])
    stats = [1, c, 1]
    gv = reshape_to(g, [pre, c, post])
    w, m, v = (reshape_to(t, stats) for t in (weight, mean, var))
    r = oar.rsqrt(v + ctx.attrs["epsilon"])
    need_x, need_w, need_b, need_m, need_v = ctx.needs_input_grad
    grads = [None] * 5
    if need_x:
        grads[0] = reshape_to(gv * (w * r), list(ctx.in_shapes[0]))
    if need_w or need_v:
        xc = reshape_to(x, [pre, c, post]) - m
        if need_w:
            grads[1] = reshape_to(oar.sum(gv * xc * r, axis=[0, 2]), [c])
        if need_v:
            grads[4] = reshape_to(oar.sum(gv * xc, axis=[0, 2], keepdim=True) * w * (r * r * r) * -0.5, [c])
    if need_b:
        grads[2] = reshape_to(oar.sum(gv, axis=[0, 2]), [c])
    if need_m:
        grads[3] = reshape_to(-(oar.sum(gv, axis=[0, 2], keepdim=True) * w * r), [c])
    return tuple(grads)


_BN_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


def _channel_axis(fn: str, data_format: str, ndim: int) -> int:
    if data_format not in _BN_FORMATS:
        raise ArgumentError(f"{fn}: data_format must be one of {list(_BN_FORMATS)}, got {data_format!r}")
    return 1 if data_format[1] == "C" else ndim - 1


def _running_stat(fn: str, name: str, t, channels: int) -> Tensor:
    if not isinstance(t, Tensor):
        raise ArgumentError(f"{fn}: {name} must be a Tensor of shape [{channels}], got {type(t).__name__}")
    if t.shape != [channels]:
        raise ShapeError(f"{fn}: {name} has shape {t.shape}, expected [{channels}] (the channels of x)")
    return t


def _update_running(running: Tensor, batch: Tensor, momentum: float) -> None:
    from oar.ops import apply_inplace

    with oar.no_grad():
        batch = batch.detach()
        if batch.dtype is not running.dtype:
            batch = oar.cast(batch, running.dtype)
        apply_inplace(running, running * momentum + batch * (1.0 - momentum), name="batch_norm")


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training: bool = False, momentum: float = 0.9,
               epsilon: float = 1e-05, data_format: str = "NCHW", use_global_stats=None, name=None) -> Tensor:
    """Batch normalisation over every axis but the channels (axis 1, or the last axis for
    ``NLC``/``NHWC``/``NDHWC``).

    With batch statistics (``training=True`` and ``use_global_stats`` not True, or
    ``use_global_stats=False``) the output uses the batch mean and biased variance, and
    ``running_mean``/``running_var`` are updated in place:
    ``running = momentum * running + (1 - momentum) * batch`` (not by an empty batch, which has
    no statistics: as in Paddle). Otherwise the running statistics normalise and nothing changes.
    ``weight``/``bias`` default to 1 and 0.

    >>> import oar
    >>> x = oar.to_tensor([[1.0], [3.0]])
    >>> mean, var = oar.zeros([1]), oar.ones([1])
    >>> y = oar.nn.functional.batch_norm(x, mean, var, training=True)
    >>> [round(v, 3) for v in y.numpy().ravel().tolist()], mean.tolist()
    ([-1.0, 1.0], [0.20000000298023224])
    """
    fn = "batch_norm"
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if x.ndim < 2:
        raise ShapeError(f"{fn}: x must have at least 2 dimensions [N, C, ...], got shape {x.shape}")
    axis = _channel_axis(fn, data_format, x.ndim)
    channels = x.shape[axis]
    running_mean = _running_stat(fn, "running_mean", running_mean, channels)
    running_var = _running_stat(fn, "running_var", running_var, channels)
    momentum = float(momentum)
    weight = _affine_param(fn, "weight", weight, channels, x, 1.0)
    bias = _affine_param(fn, "bias", bias, channels, x, 0.0)
    attrs = {"channel_axis": axis, "epsilon": float(epsilon)}
    use_global = (not training) if use_global_stats is None else bool(use_global_stats)
    if use_global:
        mean, var = (t if t.dtype is x.dtype else oar.cast(t, x.dtype) for t in (running_mean, running_var))
        return dispatch(batch_norm_infer_op, (x, weight, bias, mean, var), attrs)
    y, mean, var = dispatch(batch_norm_op, (x, weight, bias), attrs)
    if x.size:  # an empty batch has no statistics: Paddle's kernel leaves the running ones as they were
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var, momentum)
    return y


# ------------------------------------------------------------------------------------------
# group / instance normalisation: layer_norm on a reshaped x, then a per-channel affine
# ------------------------------------------------------------------------------------------
def _plain_layer_norm(x: Tensor, begin_norm_axis: int, epsilon: float) -> Tensor:
    cols = int(np.prod(x.shape[begin_norm_axis:]))
    ones, zeros = oar.ones([cols], dtype=x.dtype, device=x.place), oar.zeros([cols], dtype=x.dtype, device=x.place)
    return dispatch(layer_norm_op, (x, ones, zeros), {"begin_norm_axis": begin_norm_axis, "epsilon": float(epsilon)})[0]


def _channel_affine(fn: str, y: Tensor, weight, bias) -> Tensor:
    """``y * weight + bias`` per channel (axis 1); None leaves that part out."""
    channels = y.shape[1]
    shape = [1, channels] + [1] * (y.ndim - 2)
    if weight is not None:
        y = y * reshape_to(_affine_param(fn, "weight", weight, channels, y, 1.0), shape)
    if bias is not None:
        y = y + reshape_to(_affine_param(fn, "bias", bias, channels, y, 0.0), shape)
    return y


def _to_channel_first(x: Tensor) -> Tensor:
    return oar.moveaxis(x, -1, 1)


def group_norm(x, num_groups: int, epsilon: float = 1e-05, weight=None, bias=None, data_format: str = "NCHW",
               name=None) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels (with its spatial positions) of each
    sample, then scale and shift per channel.

    >>> import oar
    >>> oar.nn.functional.group_norm(oar.rand([2, 4, 3, 3]), num_groups=2).shape
    [2, 4, 3, 3]
    """
    fn = "group_norm"
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if x.ndim < 2:
        raise ShapeError(f"{fn}: x must have at least 2 dimensions [N, C, ...], got shape {x.shape}")
    if data_format not in ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC", "NC"):
        raise ArgumentError(f"{fn}: data_format must be NCL, NCHW, NCDHW, NLC, NHWC or NDHWC, got {data_format!r}")
    last = data_format[1] != "C"
    xc = _to_channel_first(x) if last else x
    channels = xc.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or num_groups <= 0 \
            or channels % num_groups:
        raise ArgumentError(f"{fn}: num_groups must be a positive int dividing the {channels} channels of x, "
                            f"got {num_groups!r}")
    w = _affine_param(fn, "weight", weight, channels, xc, 1.0)
    b = _affine_param(fn, "bias", bias, channels, xc, 0.0)
    y = dispatch(group_norm_op, (xc, w, b), {"num_groups": int(num_groups), "epsilon": float(epsilon)})[0]
    return oar.moveaxis(y, 1, -1) if last else y


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.9, eps: float = 1e-05, data_format: str = "NCHW", name=None) -> Tensor:
    """Normalise each channel of each sample over its spatial positions, then scale and shift
    per channel. ``running_mean``, ``running_var``, ``use_input_stats`` and ``momentum`` are
    accepted for Paddle's signature and unused (Paddle marks them obsolete).

    >>> import oar
    >>> oar.nn.functional.instance_norm(oar.rand([2, 3, 4, 4])).shape
    [2, 3, 4, 4]
    """
    fn = "instance_norm"
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if x.ndim < 2:
        raise ShapeError(f"{fn}: x must have at least 2 dimensions [N, C, ...], got shape {x.shape}")
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ArgumentError(f"{fn}: data_format must be one of NC, NCL, NCHW, NCDHW, NLC, NHWC, NDHWC, got {data_format!r}")
    last = data_format[1] != "C"
    xc = _to_channel_first(x) if last else x
    n, channels = xc.shape[0], xc.shape[1]
    flat = reshape_to(xc, [n, channels, int(np.prod(xc.shape[2:]))])
    y = reshape_to(_plain_layer_norm(flat, 2, eps), xc.shape)
    y = _channel_affine(fn, y, weight, bias)
    return oar.moveaxis(y, 1, -1) if last else y


# ------------------------------------------------------------------------------------------
# rms_norm, normalize: compositions of core ops
# ------------------------------------------------------------------------------------------
def rms_norm(input, normalized_shape, weight=None, eps: float = 1e-05, name=None, *, epsilon=None) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions:
    ``input / sqrt(mean(input^2) + eps) * weight`` (no centring, no bias); Paddle 3.3's names,
    with ``epsilon`` kept as an alias of ``eps``.

    >>> import oar
    >>> y = oar.nn.functional.rms_norm(oar.to_tensor([[3.0, 4.0]]), 2, epsilon=0.0)
    >>> [round(v, 4) for v in y.numpy().ravel().tolist()]
    [0.8485, 1.1314]
    """
    fn = "rms_norm"
    x = as_tensor(input, "input", fn)
    check_float(fn, x)
    shape = _normalized_shape(fn, normalized_shape, x)
    epsilon = float(epsilon if epsilon is not None else eps)
    axes = list(range(x.ndim - len(shape), x.ndim))
    y = x * oar.rsqrt(oar.mean(x * x, axis=axes, keepdim=True) + epsilon)
    if weight is not None:
        weight = as_tensor(weight, "weight", fn)
        if weight.size != int(np.prod(shape)):
            raise ShapeError(f"{fn}: weight has shape {weight.shape}, expected {shape}")
        if weight.dtype is not x.dtype:
            weight = oar.cast(weight, x.dtype)
        y = y * reshape_to(weight, shape)
    return y


def normalize(x, p: float = 2, axis: int = 1, epsilon: float = 1e-12, out=None, name=None) -> Tensor:
    """``x / max(||x||_p, epsilon)`` along ``axis`` (written into ``out`` too when given).

    >>> import oar
    >>> oar.nn.functional.normalize(oar.to_tensor([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    x = as_tensor(x, "x", "normalize")
    check_float("normalize", x)
    norm = oar.norm(x, p=float(p), axis=axis, keepdim=True)
    result = x / oar.maximum(norm, float(epsilon))
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise ArgumentError(f"normalize: out must be a Tensor, got {type(out).__name__}")
    return oar.assign(result, output=out)


# -- group_norm's ops -----------------------------------------------------------------------------
# x [N, C, *spatial] is viewed as [N, G, C / G, HW]: the statistics run over the last two axes (one
# mean and variance per sample and group, returned as [N, G] as Paddle does), the affine over the
# channel axis. One op instead of a layer_norm on a reshaped x followed by a per-channel multiply
# and add (two more ops forward, four backward), so that a plugin can do the whole of it in one
# pass (oar-numba's). The numpy kernels and the gradient rules are batch and layer normalisation's,
# on this view.
def group_view(shape, num_groups: int) -> list:
    """``[N, G, C / G, HW]`` for x of ``shape`` ``[N, C, *spatial]``."""
    return [shape[0], num_groups, _numel([shape[1]]) // num_groups if shape[1] is not None else None,
            _numel(shape[2:])]


def _group_norm_kernel(x, weight, bias, num_groups, epsilon):
    n, g, cg, hw = group_view(x.shape, num_groups)
    affine = (1, g, cg, 1)
    y, mean, var = _normalize_kernel(x.reshape(n, g, cg, hw), weight.reshape(affine), bias.reshape(affine), (2, 3),
                                     epsilon)
    return y.reshape(x.shape), mean.reshape(n, g), var.reshape(n, g)


def _group_norm_meta(x: TensorMeta, weight: TensorMeta, bias: TensorMeta, num_groups, epsilon):
    _float_meta_checks("group_norm", x, {"weight": weight, "bias": bias})
    if len(x.shape) < 2:
        raise ArgumentError(f"group_norm: x must be [N, C, ...], got {fmt_shape(x.shape)}")
    channels = x.shape[1]
    if num_groups <= 0 or (channels is not None and channels % num_groups):
        raise ArgumentError(f"group_norm: num_groups {num_groups} must divide the {channels} channels of x")
    _check_param("group_norm", "weight", weight, channels)
    _check_param("group_norm", "bias", bias, channels)
    stats = TensorMeta((x.shape[0], num_groups), x.dtype)
    return TensorMeta(tuple(x.shape), x.dtype), stats, stats


group_norm_op = StatsOp("group_norm", reference=_group_norm_kernel, meta=_group_norm_meta, amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3, per_sample=True)


@group_norm_op.defgrad
def _group_norm_rule(ctx, gy, gmean, gvar):
    x, weight, _ = ctx.inputs
    _, mean, var = ctx.outputs
    dx = dw = db = None
    if gy is not None:
        dx, dw, db = dispatch(group_norm_grad_op, (x, weight, mean, var, gy), dict(ctx.attrs))
    if (gmean is not None or gvar is not None) and ctx.needs_input_grad[0]:
        n, g, cg, hw = group_view(ctx.in_shapes[0], ctx.attrs["num_groups"])
        dx = _add(dx, _stats_grad(x, mean, gmean, gvar, [n, g, cg * hw], [n, g, 1], (2,)))
    need_x, need_w, need_b = ctx.needs_input_grad
    return dx if need_x else None, dw if need_w else None, db if need_b else None


def _group_norm_grad_kernel(x, weight, mean, var, g, num_groups, epsilon):
    n, gs, cg, hw = group_view(x.shape, num_groups)
    stats = (n, gs, 1, 1)
    dx, dw, db = _normalize_grad_kernel(x.reshape(n, gs, cg, hw), weight.reshape(1, gs, cg, 1), mean.reshape(stats),
                                        var.reshape(stats), g.reshape(n, gs, cg, hw), (2, 3), (0, 3), epsilon)
    return dx.reshape(x.shape), dw.reshape(-1), db.reshape(-1)


group_norm_grad_op = Op("group_norm_grad", reference=_group_norm_grad_kernel,
                        meta=_norm_grad_meta("group_norm_grad", _group_norm_meta), amp=AMP_FP32, dtypes=FLOATS,
                        num_outputs=3)


@group_norm_grad_op.defgrad
def _group_norm_grad_rule(ctx, cx, cw, cb):
    n, g, cg, hw = group_view(ctx.in_shapes[0], ctx.attrs["num_groups"])
    views = {"x": [n, g, cg, hw], "w": [1, g, cg, 1], "stats": [n, g, 1, 1], "reduce": (2, 3), "affine_reduce": (0, 3),
             "eps": ctx.attrs["epsilon"]}
    return _normalize_grad_vjp(ctx, cx, cw, cb, views)


OPS = [layer_norm_op, layer_norm_grad_op, batch_norm_op, batch_norm_grad_op, batch_norm_infer_op, group_norm_op,
       group_norm_grad_op]
_LRN_FORMATS = ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


def local_response_norm(x, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                        data_format: str = "NCHW", name=None) -> Tensor:
    """Local response normalisation across channels (AlexNet's):
    ``x / (k + alpha * mean of x^2 over size neighbouring channels) ** beta``, the window
    ``[c - size // 2, c + (size - 1) // 2]`` zero-padded at the ends (the mean still divides by ``size``).

    >>> import oar
    >>> x = oar.to_tensor([[[2.0], [0.0]]])
    >>> round(oar.nn.functional.local_response_norm(x, size=2, alpha=1.0, beta=1.0, k=0.0, data_format="NCL")[0, 0, 0].item(), 4)
    1.0
    """
    fn = "local_response_norm"
    x = as_tensor(x, "x", fn)
    if not x.dtype.is_floating:
        raise DTypeError(f"{fn}: x must be a floating tensor, got {x.dtype.name}")
    if data_format not in _LRN_FORMATS:
        raise ArgumentError(f"{fn}: data_format must be one of {list(_LRN_FORMATS)}, got {data_format!r}")
    if x.ndim < 3:
        raise ShapeError(f"{fn}: x must have 3 or more dims (a batch, channels and spatial dims), got shape {x.shape}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ArgumentError(f"{fn}: size must be a positive int, got {size!r}")
    last = data_format[-1] == "C"
    xc = oar.moveaxis(x, -1, 1) if last else x
    shape = xc.shape
    # the mean of x^2 over the channel window: a (size x 1) average pooling of [N, 1, C, rest]
    squares = oar.reshape(xc * xc, [shape[0], 1, shape[1], -1])
    window = avg_pool2d(squares, (size, 1), stride=1, padding=[size // 2, (size - 1) // 2, 0, 0], exclusive=False)
    out = xc / (oar.reshape(window, shape) * float(alpha) + float(k)) ** float(beta)
    return oar.moveaxis(out, 1, -1) if last else out


__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize", "local_response_norm"]
