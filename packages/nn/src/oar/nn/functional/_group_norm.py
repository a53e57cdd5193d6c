"""The ``group_norm`` op and its backward ``group_norm_grad``: ``F.group_norm``'s kernels.

x ``[N, C, *spatial]`` is viewed as ``[N, G, C / G, HW]``: the statistics run over the last two
axes (one mean and variance per sample and group, returned as ``[N, G]`` as Paddle does), the
affine over the channel axis. One op instead of a ``layer_norm`` on a reshaped x followed by a
per-channel multiply and add (two more ops forward, four backward), so that a plugin can do the
whole of it in one pass (oar-numba's ``_group_norm``). The numpy kernels and the gradient rules
are batch and layer normalisation's, on this view.
"""

from __future__ import annotations

from oar._core.op import AMP_FP32, TensorMeta
from oar._ops._common import dispatch, fmt_shape
from oar.errors import ArgumentError
from oar.nn.functional.norm import (
    FLOATS,
    Op,
    StatsOp,
    _add,
    _check_param,
    _float_meta_checks,
    _norm_grad_meta,
    _normalize_grad_kernel,
    _normalize_grad_vjp,
    _normalize_kernel,
    _numel,
    _stats_grad,
)


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


OPS = [group_norm_op, group_norm_grad_op]
__all__: list[str] = []  # F.group_norm (norm.py) dispatches these
