"""``softmax_with_cross_entropy`` fused forward and backward, and ``log_softmax`` with its gradient.

- ``softmax_with_cross_entropy``: one pass per row gives the loss and the softmax. The fused path
  covers what ``F.cross_entropy`` dispatches for classification: hard labels over the last axis
  with ``use_softmax=True``. Soft labels, probabilities as input, another axis, or a label out of
  range (the reference raises the error that names it) go to the reference kernel.
- ``softmax_with_cross_entropy_grad``: ``(prob - onehot) * g`` in one pass per row (the reference
  builds the one-hot, the mask and three temporaries). Class weights and label smoothing reach it
  folded into ``g`` and into soft labels by ``F.cross_entropy``; soft labels never come here.
- ``log_softmax`` and ``log_softmax_grad`` over the last axis, for small calls only
  (``LOG_SOFTMAX_MAX`` elements): their time is ``exp``, which numpy evaluates with SIMD and
  numba (without Intel's SVML) one element at a time, so above that size the numpy references
  win and get the call; below it numpy's half-dozen passes and temporaries cost more than the
  scalar ``exp`` (docs/numba.md).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from oar.nn.functional import activation as _act
from oar.nn.functional import loss as _ref
from oar_numba._jit import parallel, serial


@parallel
def _softmax_cross_entropy_rows(x, label, ignore_index, loss, prob):
    """Returns False, having written nothing useful, when a label is out of range."""
    rows, n = x.shape
    bad = 0
    for r in prange(rows):
        k = label[r]
        if k != ignore_index and (k < 0 or k >= n):
            bad += 1
            continue
        m = x[r, 0]
        for c in range(1, n):
            v = x[r, c]
            if v > m or v != v:
                m = v
        s = 0.0
        for c in range(n):
            e = math.exp(x[r, c] - m)
            prob[r, c] = e
            s += e
        inv = 1.0 / s
        for c in range(n):
            prob[r, c] *= inv
        loss[r] = 0.0 if k == ignore_index else math.log(s) - (x[r, k] - m)
    return bad == 0


def softmax_with_cross_entropy(logits, label, soft_label=False, use_softmax=True, ignore_index=-100, axis=-1):
    fused = (not soft_label and use_softmax and logits.ndim > 0 and logits.size > 0
             and axis in (-1, logits.ndim - 1) and label.dtype.kind in "iu")
    if fused:
        n = logits.shape[-1]
        x = np.ascontiguousarray(logits).reshape(-1, n)
        labels = np.ascontiguousarray(label, dtype=np.int64).reshape(-1)
        loss = np.empty(x.shape[0], logits.dtype)
        prob = np.empty(x.shape, logits.dtype)
        if _softmax_cross_entropy_rows(x, labels, ignore_index, loss, prob):
            return loss.reshape(*logits.shape[:-1], 1), prob.reshape(logits.shape)
    return _ref._softmax_with_cross_entropy_kernel(logits, label, soft_label, use_softmax, ignore_index, axis)


@parallel
def _softmax_cross_entropy_grad_rows(prob, label, g, ignore_index, out):
    """Returns False at a label out of range (which no forward pass let through), having written
    nothing out of bounds."""
    rows, n = prob.shape
    bad = 0
    for r in prange(rows):
        k = label[r]
        if k == ignore_index:
            out[r, :] = 0
            continue
        if k < 0 or k >= n:
            bad += 1
            continue
        gr = g[r]
        for c in range(n):
            out[r, c] = prob[r, c] * gr
        out[r, k] -= gr
    return bad == 0


def softmax_with_cross_entropy_grad(prob, label, g_loss, ignore_index, axis):
    if prob.ndim == 0 or prob.size == 0 or axis not in (-1, prob.ndim - 1):
        return _ref._softmax_with_cross_entropy_grad_kernel(prob, label, g_loss, ignore_index, axis)
    n = prob.shape[-1]
    p = np.ascontiguousarray(prob).reshape(-1, n)
    out = np.empty(p.shape, prob.dtype)
    labels = np.ascontiguousarray(label, dtype=np.int64).reshape(-1)
    if not _softmax_cross_entropy_grad_rows(p, labels, np.ascontiguousarray(g_loss, dtype=prob.dtype).reshape(-1),
                                            ignore_index, out):
        return _ref._softmax_with_cross_entropy_grad_kernel(prob, label, g_loss, ignore_index, axis)
    return out.reshape(prob.shape)


# -- log_softmax over the last axis, small calls --------------------------------------------------
LOG_SOFTMAX_MAX = 2048  # elements: faster than the reference below, slower above (docs/numba.md)


@serial
def _log_softmax_rows(x, out):
    rows, n = x.shape
    for r in range(rows):
        m = x[r, 0]
        for c in range(1, n):
            v = x[r, c]
            if v > m or v != v:
                m = v
        s = 0.0
        for c in range(n):
            s += math.exp(x[r, c] - m)
        shift = m + math.log(s)
        for c in range(n):
            out[r, c] = x[r, c] - shift


@serial
def _log_softmax_grad_rows(y, g, out):
    rows, n = y.shape
    for r in range(rows):
        s = 0.0
        for c in range(n):
            s += g[r, c]
        for c in range(n):
            out[r, c] = g[r, c] - math.exp(y[r, c]) * s


def _small_last_axis(a, axis) -> bool:
    return 0 < a.size <= LOG_SOFTMAX_MAX and a.ndim > 0 and axis in (-1, a.ndim - 1)


def log_softmax(x, axis):
    if not _small_last_axis(x, axis):
        return _act._log_softmax_kernel(x, axis)
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(x2.shape, x.dtype)
    _log_softmax_rows(x2, out)
    return out.reshape(x.shape)


def log_softmax_grad(out, g, axis):
    if not _small_last_axis(out, axis):
        return _act._log_softmax_grad_kernel(out, g, axis)
    n = out.shape[-1]
    dx = np.empty((out.size // n, n), g.dtype)
    _log_softmax_grad_rows(np.ascontiguousarray(out).reshape(-1, n), np.ascontiguousarray(g).reshape(-1, n), dx)
    return dx.reshape(g.shape)
