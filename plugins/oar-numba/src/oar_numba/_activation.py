"""Activation kernels: relu and its gradient, gelu, the gradient of softmax and ``where``, one pass each.

The numpy references make one pass per operation (``np.where`` builds a mask, gelu's erf takes a
dozen passes); these read each input once and write each output once, in parallel over elements
or rows. ``softmax_grad`` runs over the last axis (attention); another axis, or a 0-d input, goes
to the reference kernel.

What stays with the references (measured, docs/numba.md): the forward softmax and log_softmax,
log_softmax's gradient and gelu's gradient, whose time is ``exp``/``erf``, which numpy evaluates
with SIMD and numba (without Intel's SVML) one element at a time.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from oar.nn.functional import activation as _ref
from oar_numba._jit import parallel

_SQRT_HALF = math.sqrt(0.5)
_TANH_K = math.sqrt(2.0 / math.pi)
_TANH_C = 0.044715


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1)


# -- relu ---------------------------------------------------------------------------------------
@parallel
def _relu_loop(x, out):
    for i in prange(x.size):
        v = x[i]
        out[i] = 0 if v < 0 else v  # NaN stays NaN, as with np.maximum


def relu(x):
    out = np.empty(x.shape, x.dtype)
    _relu_loop(_flat(x), out.reshape(-1))
    return out


@parallel
def _relu_grad_loop(y, g, out):
    for i in prange(g.size):
        out[i] = g[i] if y[i] > 0 else 0


def relu_grad(out, g):
    dx = np.empty(g.shape, g.dtype)
    _relu_grad_loop(_flat(out), _flat(g), dx.reshape(-1))
    return dx


# -- where --------------------------------------------------------------------------------------
# np.where over a mask whose value changes from element to element (the gradients of clip, ReLU6,
# hardtanh) runs at about a tenth of a multiply's speed; a compiled select is a blend.
@parallel
def _select(condition, x, y, out):
    for i in prange(out.size):
        out[i] = x[i] if condition[i] else y[i]


@parallel
def _select_scalar(condition, x, value, take_x, out):
    """out = where(condition, x, value) when ``take_x``, else where(condition, value, x)."""
    for i in prange(out.size):
        out[i] = x[i] if condition[i] == take_x else value


def where(x, y, condition):
    """``where`` for same-shaped x, y and condition, or one of x and y a scalar; else the reference."""
    dtype = np.result_type(x, y)
    if x.dtype == y.dtype == dtype and x.shape == y.shape == condition.shape:
        out = np.empty(x.shape, dtype)
        _select(_flat(condition), _flat(x), _flat(y), out.reshape(-1))
        return out
    for full, scalar, take_x in ((x, y, True), (y, x, False)):
        if scalar.ndim == 0 and full.shape == condition.shape and full.dtype == dtype:
            out = np.empty(full.shape, dtype)
            _select_scalar(_flat(condition), _flat(full), scalar.astype(dtype)[()], take_x, out.reshape(-1))
            return out
    return np.where(condition, x, y)


# -- gelu ---------------------------------------------------------------------------------------
# The constants are passed in the input's dtype so that float32 stays float32 arithmetic.
@parallel
def _gelu_erf_loop(x, out, half, one, sqrt_half):
    for i in prange(x.size):
        v = x[i]
        out[i] = half * v * (one + math.erf(v * sqrt_half))


@parallel
def _gelu_tanh_loop(x, out, half, one, k, c):
    for i in prange(x.size):
        v = x[i]
        out[i] = half * v * (one + math.tanh(k * (v + c * v * v * v)))


def gelu(x, approximate):
    t = x.dtype.type
    out = np.empty(x.shape, x.dtype)
    if approximate:
        _gelu_tanh_loop(_flat(x), out.reshape(-1), t(0.5), t(1.0), t(_TANH_K), t(_TANH_C))
    else:
        _gelu_erf_loop(_flat(x), out.reshape(-1), t(0.5), t(1.0), t(_SQRT_HALF))
    return out


# -- softmax's gradient over the last axis --------------------------------------------------------
@parallel
def _softmax_grad_rows(y, g, out):
    rows, n = y.shape
    for r in prange(rows):
        s = 0.0
        for c in range(n):
            s += g[r, c] * y[r, c]
        for c in range(n):
            out[r, c] = y[r, c] * (g[r, c] - s)


def _last_axis(a: np.ndarray, axis) -> bool:
    return a.ndim > 0 and a.size > 0 and axis in (-1, a.ndim - 1)


def softmax_grad(out, g, axis):
    if not _last_axis(out, axis):
        return _ref._softmax_grad_kernel(out, g, axis)
    dx = np.empty(g.shape, g.dtype)
    n = g.shape[-1]
    _softmax_grad_rows(np.ascontiguousarray(out).reshape(-1, n), np.ascontiguousarray(g).reshape(-1, n),
                       dx.reshape(-1, n))
    return dx

