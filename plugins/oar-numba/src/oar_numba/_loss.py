"""``softmax_with_cross_entropy`` fused: one pass per row gives the loss and the softmax.

The fused path covers what ``F.cross_entropy`` dispatches for classification: hard labels over
the last axis with ``use_softmax=True``. Soft labels, probabilities as input, another axis, or a
label out of range (the reference raises the error that names it) go to the reference kernel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from oar.nn.functional import loss as _ref
from oar_numba._jit import parallel


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
