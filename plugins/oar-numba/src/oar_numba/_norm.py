"""Batch and layer normalisation, forward and backward, with float64 accumulators.

``layer_norm`` views ``x`` as [rows, cols] (statistics per row, affine per column) and runs one
row per task. ``batch_norm`` views it as [pre, C, post] (statistics and affine per channel) and
splits ``pre`` into chunks, each summing its part of every channel into a row of partial sums:
the loops then read memory in order for NCHW (post > 1) and NHWC (post == 1) alike. The
statistics are two-pass (mean, then the mean of squared deviations), as in the reference.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from oar.nn.functional import norm as _ref
from oar_numba._jit import chunks, parallel


# -- layer_norm ---------------------------------------------------------------------------------
@parallel
def _layer_norm_rows(x, w, b, eps, y, mean, var):
    rows, n = x.shape
    for r in prange(rows):
        s = 0.0
        for c in range(n):
            s += x[r, c]
        mu = s / n
        ss = 0.0
        for c in range(n):
            d = x[r, c] - mu
            ss += d * d
        v = ss / n
        inv = 1.0 / math.sqrt(v + eps)
        for c in range(n):
            y[r, c] = (x[r, c] - mu) * inv * w[c] + b[c]
        mean[r] = mu
        var[r] = v


def _ln_view(x, begin_norm_axis):
    rows = math.prod(x.shape[:begin_norm_axis])
    return np.ascontiguousarray(x).reshape(rows, -1)


def layer_norm(x, weight, bias, begin_norm_axis, epsilon):
    if x.size == 0:
        return _ref._layer_norm_kernel(x, weight, bias, begin_norm_axis, epsilon)
    xv = _ln_view(x, begin_norm_axis)
    y = np.empty(xv.shape, x.dtype)
    mean = np.empty(xv.shape[0], x.dtype)
    var = np.empty(xv.shape[0], x.dtype)
    _layer_norm_rows(xv, np.ascontiguousarray(weight), np.ascontiguousarray(bias), float(epsilon), y, mean, var)
    return y.reshape(x.shape), mean, var


@parallel
def _layer_norm_grad_rows(x, w, mean, var, g, eps, pieces, dx, dw_part, db_part):
    rows, n = x.shape
    for k in prange(pieces):
        for r in range(k * rows // pieces, (k + 1) * rows // pieces):
            mu = mean[r]
            inv = 1.0 / math.sqrt(var[r] + eps)
            sa = 0.0
            saxh = 0.0
            for c in range(n):
                xh = (x[r, c] - mu) * inv
                gv = g[r, c]
                a = gv * w[c]
                sa += a
                saxh += a * xh
                dw_part[k, c] += gv * xh
                db_part[k, c] += gv
            m_a = sa / n
            m_axh = saxh / n
            for c in range(n):
                xh = (x[r, c] - mu) * inv
                dx[r, c] = inv * (g[r, c] * w[c] - m_a - xh * m_axh)


def layer_norm_grad(x, weight, mean, var, g, begin_norm_axis, epsilon):
    if x.size == 0:
        return _ref._layer_norm_grad_kernel(x, weight, mean, var, g, begin_norm_axis, epsilon)
    xv, gv = _ln_view(x, begin_norm_axis), _ln_view(g, begin_norm_axis)
    pieces = chunks(xv.shape[0])
    dx = np.empty(xv.shape, x.dtype)
    dw_part = np.zeros((pieces, xv.shape[1]))
    db_part = np.zeros((pieces, xv.shape[1]))
    _layer_norm_grad_rows(xv, np.ascontiguousarray(weight), np.ascontiguousarray(mean).reshape(-1),
                          np.ascontiguousarray(var).reshape(-1), gv, float(epsilon), pieces, dx, dw_part, db_part)
    return dx.reshape(x.shape), dw_part.sum(0).astype(x.dtype), db_part.sum(0).astype(x.dtype)


# -- batch_norm ---------------------------------------------------------------------------------
@parallel
def _channel_sums(x, center, pieces, part):
    """part[k, c] = sum over chunk k of (x - center[c]) ** p, p = 1 if center is empty else 2."""
    pre, channels, post = x.shape
    squares = center.size > 0
    for k in prange(pieces):
        for i in range(k * pre // pieces, (k + 1) * pre // pieces):
            for c in range(channels):
                s = 0.0
                if squares:
                    mu = center[c]
                    for p in range(post):
                        d = x[i, c, p] - mu
                        s += d * d
                else:
                    for p in range(post):
                        s += x[i, c, p]
                part[k, c] += s


@parallel
def _normalize(x, mean, scale, bias, pieces, y):
    pre, channels, post = x.shape
    for k in prange(pieces):
        for i in range(k * pre // pieces, (k + 1) * pre // pieces):
            for c in range(channels):
                mu = mean[c]
                a = scale[c]
                b = bias[c]
                for p in range(post):
                    y[i, c, p] = (x[i, c, p] - mu) * a + b


def batch_norm_infer(x, weight, bias, mean, var, channel_axis, epsilon):
    """Batch norm with the running statistics (eval mode): the per-channel scale in float64, then
    training's one normalising pass over x, in x's dtype (the reference makes a product and a sum,
    two passes and a temporary of x's size)."""
    if x.size == 0:
        return _ref._batch_norm_infer_kernel(x, weight, bias, mean, var, channel_axis, epsilon)
    xv = _bn_view(x, channel_axis)
    scale = weight.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
    y = np.empty(xv.shape, x.dtype)
    _normalize(xv, mean.astype(x.dtype), scale.astype(x.dtype), bias.astype(x.dtype), chunks(xv.shape[0]), y)
    return y.reshape(x.shape)


def _bn_view(a, channel_axis):
    pre = math.prod(a.shape[:channel_axis])
    return np.ascontiguousarray(a).reshape(pre, a.shape[channel_axis], -1)


def batch_norm(x, weight, bias, channel_axis, epsilon):
    if x.size == 0:
        return _ref._batch_norm_kernel(x, weight, bias, channel_axis, epsilon)
    xv = _bn_view(x, channel_axis)
    pre, channels, post = xv.shape
    pieces = chunks(pre)
    count = pre * post
    part = np.zeros((pieces, channels))
    _channel_sums(xv, np.empty(0), pieces, part)
    mean = part.sum(0) / count
    part[:] = 0.0
    _channel_sums(xv, mean, pieces, part)
    var = part.sum(0) / count
    scale = weight.astype(np.float64) / np.sqrt(var + epsilon)
    y = np.empty(xv.shape, x.dtype)
    _normalize(xv, mean, scale, bias.astype(np.float64), pieces, y)
    return y.reshape(x.shape), mean.astype(x.dtype), var.astype(x.dtype)


@parallel
def _batch_norm_grad_sums(x, mean, inv, g, pieces, dw_part, db_part):
    pre, channels, post = x.shape
    for k in prange(pieces):
        for i in range(k * pre // pieces, (k + 1) * pre // pieces):
            for c in range(channels):
                mu = mean[c]
                r = inv[c]
                sg = 0.0
                sgx = 0.0
                for p in range(post):
                    gv = g[i, c, p]
                    sg += gv
                    sgx += gv * (x[i, c, p] - mu) * r
                db_part[k, c] += sg
                dw_part[k, c] += sgx


@parallel
def _batch_norm_dx(x, mean, inv, g, scale, db_mean, dw_mean, pieces, dx):
    pre, channels, post = x.shape
    for k in prange(pieces):
        for i in range(k * pre // pieces, (k + 1) * pre // pieces):
            for c in range(channels):
                mu = mean[c]
                r = inv[c]
                a = scale[c]
                b = db_mean[c]
                d = dw_mean[c]
                for p in range(post):
                    xh = (x[i, c, p] - mu) * r
                    dx[i, c, p] = a * (g[i, c, p] - b - xh * d)


def batch_norm_grad(x, weight, mean, var, g, channel_axis, epsilon):
    if x.size == 0:
        return _ref._batch_norm_grad_kernel(x, weight, mean, var, g, channel_axis, epsilon)
    xv, gv = _bn_view(x, channel_axis), _bn_view(g, channel_axis)
    pre, channels, post = xv.shape
    pieces = chunks(pre)
    count = pre * post
    mean64 = mean.astype(np.float64).reshape(-1)
    inv = 1.0 / np.sqrt(var.astype(np.float64).reshape(-1) + epsilon)
    dw_part = np.zeros((pieces, channels))
    db_part = np.zeros((pieces, channels))
    _batch_norm_grad_sums(xv, mean64, inv, gv, pieces, dw_part, db_part)
    dw, db = dw_part.sum(0), db_part.sum(0)
    dx = np.empty(xv.shape, x.dtype)
    _batch_norm_dx(xv, mean64, inv, gv, inv * weight.reshape(-1), db / count, dw / count, pieces, dx)
    return dx.reshape(x.shape), dw.astype(x.dtype), db.astype(x.dtype)
