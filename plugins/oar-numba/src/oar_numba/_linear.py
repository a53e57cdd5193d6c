"""``linear`` (``x @ w + b``) for a row or two: batch-1 inference and the tiny layers of eager code.

numpy's path for one row is a GEMM call, then a second pass for the bias, each with a fixed cost
of a microsecond or more; here one compiled loop streams the weight's rows once, four at a time,
into an accumulator that starts as the bias. Against the reference (``bench_kernels.py --ops
linear``, docs/numba.md): LeNet's [1, 400] @ [400, 120] 1.1x, [1, 84] @ [84, 10] 1.6x, W1's
[1, 4] @ [4, 4] 1.7x. From four rows on BLAS's blocked GEMM wins (4 rows: 11.7 vs 14.4 us on a
loaded machine), so a 2-d x of more rows, and any x of more dims, goes to the reference kernel.
"""

from __future__ import annotations

import numpy as np

from oar.nn.functional import common as _ref
from oar_numba._jit import serial

MAX_ROWS = 2  # rows of a 2-d x up to which the loop beats BLAS


@serial
def _rows_linear(x, w, b, out):
    """out[r] = b + sum_p x[r, p] * w[p]."""
    m, k = x.shape
    n = w.shape[1]
    k4 = k - k % 4
    for r in range(m):
        acc, xr = out[r], x[r]
        for j in range(n):
            acc[j] = b[j]
        for p in range(0, k4, 4):
            x0, x1, x2, x3 = xr[p], xr[p + 1], xr[p + 2], xr[p + 3]
            w0, w1, w2, w3 = w[p], w[p + 1], w[p + 2], w[p + 3]
            for j in range(n):
                acc[j] += x0 * w0[j] + x1 * w1[j] + x2 * w2[j] + x3 * w3[j]
        for p in range(k4, k):
            xp, wp = xr[p], w[p]
            for j in range(n):
                acc[j] += xp * wp[j]


def linear(x, w, b):
    # the checks numba does not make (it indexes without bounds), as few as the hot path allows
    if (x.ndim == 2 and 0 < x.shape[0] <= MAX_ROWS and w.ndim == 2 and w.shape[0] == x.shape[1] > 0
            and b.shape == (w.shape[1],) and x.dtype == w.dtype == b.dtype):
        out = np.empty((x.shape[0], w.shape[1]), x.dtype)
        _rows_linear(x, w, b, out)
        return out
    return _ref._linear_kernel(x, w, b)


def _bind(attrs: dict):
    """``linear`` for one program node: the checks are made once per input shapes and dtypes, so
    that a batch-1 call is the loop and its output (see ``oar._core.executor``)."""
    last = [(None, False)]  # ((shapes, dtypes), whether the loop serves them): one tuple, replaced whole

    def linear_node(x, w, b):
        key = (x.shape, w.shape, b.shape, x.dtype, w.dtype, b.dtype)
        known = last[0]
        if key != known[0]:
            fits = (x.ndim == 2 and 0 < x.shape[0] <= MAX_ROWS and w.ndim == 2 and w.shape[0] == x.shape[1] > 0
                    and b.shape == (w.shape[1],) and x.dtype == w.dtype == b.dtype)
            known = last[0] = (key, fits)
        if known[1]:
            out = np.empty((x.shape[0], w.shape[1]), x.dtype)
            _rows_linear(x, w, b, out)
            return out
        return _ref._linear_kernel(x, w, b)

    return linear_node


linear.bind = _bind
