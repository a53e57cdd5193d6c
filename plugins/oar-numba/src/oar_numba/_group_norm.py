"""Group normalisation forward and backward, one (sample, group) per task.

x ``[N, C, *spatial]`` is read as ``[N, G, C / G, HW]``. Forward: the group's mean and variance
in float64 (two passes over the group, which stays in cache), then each channel's
``y = x * (w r) + (b - mean w r)``, one multiply-add per element. Backward: per channel of the
group, ``sum g`` and ``sum g xh`` (which are also that sample's share of ``db`` and ``dw``), from
which the group's ``mean(g w)`` and ``mean(g w xh)`` follow without another pass; then
``dx = r (g w - mean(g w) - xh mean(g w xh))``. The per-sample shares of ``dw`` and ``db`` land
in ``[N, C]`` buffers that numpy sums, so no two threads write one place.

The references (layer normalisation's numpy kernels on the grouped view) make about eight
passes with temporaries forward and a dozen backward.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from oar.nn.functional import norm as _ref
from oar_numba._jit import parallel


@parallel
def _forward(x, w, b, eps, y, mean_out, var_out):
    n, groups, cg, hw = x.shape
    for task in prange(n * groups):
        i, g = task // groups, task % groups
        total = 0.0
        for ci in range(cg):
            for j in range(hw):
                total += x[i, g, ci, j]
        count = cg * hw
        mean = total / count
        sq = 0.0
        for ci in range(cg):
            for j in range(hw):
                d = x[i, g, ci, j] - mean
                sq += d * d
        var = sq / count
        r = 1.0 / math.sqrt(var + eps)
        mean_out[i, g] = mean
        var_out[i, g] = var
        for ci in range(cg):
            c = g * cg + ci
            a = w[c] * r
            shift = b[c] - mean * a
            for j in range(hw):
                y[i, g, ci, j] = x[i, g, ci, j] * a + shift


def _fits(x, *params) -> bool:
    """Whether the loops below may index ``params`` by channel (a direct call could pass others)."""
    return x.ndim >= 2 and x.size > 0 and all(p.shape == (x.shape[1],) for p in params)


def group_norm(x, weight, bias, num_groups, epsilon):
    if not _fits(x, weight, bias):
        return _ref._group_norm_kernel(x, weight, bias, num_groups, epsilon)
    n, g, cg, hw = _ref.group_view(x.shape, num_groups)
    xv = np.ascontiguousarray(x).reshape(n, g, cg, hw)
    y = np.empty(xv.shape, x.dtype)
    mean = np.empty((n, g), x.dtype)
    var = np.empty((n, g), x.dtype)
    _forward(xv, np.ascontiguousarray(weight), np.ascontiguousarray(bias), float(epsilon), y, mean, var)
    return y.reshape(x.shape), mean, var


@parallel
def _backward(x, w, mean, var, gy, eps, dx, dw_part, db_part):
    n, groups, cg, hw = x.shape
    count = cg * hw
    for task in prange(n * groups):
        i, g = task // groups, task % groups
        m = mean[i, g]
        r = 1.0 / math.sqrt(var[i, g] + eps)
        sum_a = 0.0  # sum of g * w over the group
        sum_axh = 0.0  # sum of g * w * xh
        for ci in range(cg):
            c = g * cg + ci
            sg = 0.0
            sgx = 0.0
            for j in range(hw):
                gv = gy[i, g, ci, j]
                sg += gv
                sgx += gv * (x[i, g, ci, j] - m)
            sgx *= r
            db_part[i, c] = sg
            dw_part[i, c] = sgx
            sum_a += w[c] * sg
            sum_axh += w[c] * sgx
        mean_a = sum_a / count
        mean_axh = sum_axh / count
        for ci in range(cg):
            wc = w[ci + g * cg]
            for j in range(hw):
                xh = (x[i, g, ci, j] - m) * r
                dx[i, g, ci, j] = r * (gy[i, g, ci, j] * wc - mean_a - xh * mean_axh)


def group_norm_grad(x, weight, mean, var, g, num_groups, epsilon):
    if not _fits(x, weight) or g.shape != x.shape or mean.size != x.shape[0] * num_groups or var.size != mean.size:
        return _ref._group_norm_grad_kernel(x, weight, mean, var, g, num_groups, epsilon)
    n, groups, cg, hw = _ref.group_view(x.shape, num_groups)
    xv = np.ascontiguousarray(x).reshape(n, groups, cg, hw)
    dx = np.empty(xv.shape, x.dtype)
    dw_part = np.empty((n, groups * cg), np.float64)
    db_part = np.empty((n, groups * cg), np.float64)
    _backward(xv, np.ascontiguousarray(weight), np.ascontiguousarray(mean).reshape(n, groups),
              np.ascontiguousarray(var).reshape(n, groups), np.ascontiguousarray(g).reshape(xv.shape), float(epsilon),
              dx, dw_part, db_part)
    return dx.reshape(x.shape), dw_part.sum(axis=0).astype(x.dtype), db_part.sum(axis=0).astype(x.dtype)
