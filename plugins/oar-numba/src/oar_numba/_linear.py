"""``linear`` (``x @ w + b``) for a row or two: batch-1 inference and the tiny layers of eager code.

numpy's path for one row is a GEMM call, then a second pass for the bias, each with a fixed cost
of a microsecond or more; here one compiled loop streams the weight's rows once, four at a time,
into an accumulator that starts as the bias: faster than the reference for a row or two
(``bench_kernels.py --ops linear``, docs/numba.md). From four rows on BLAS's blocked GEMM wins,
so a 2-d x of more rows, and any x of more dims, goes to the reference kernel.

In a program (the executor's bound nodes) at more than one thread, a product of
``PARTS_MIN_ROWS`` rows a thread and more that core keeps on one BLAS thread
(``oar._engine.threads.small_product``: OpenBLAS's threads would spin after it) runs in row shares
instead, one per numba thread, each a GEMM of numpy's BLAS on one thread (``_blas``) into rows
that start as the bias: LeNet's [64, 400] @ [400, 120] at batch-64 inference. Not in eager code,
where such a product sits between BLAS's own threaded products (an MLP's larger layers) and
numba's thread, spinning after its region (``_jit.SPIN_ROUNDS``), would hold the core BLAS's
next product wants: W2's step at 2 threads ran slower that way (docs/numba.md).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from oar.nn.functional import common as _ref
from oar.ops import one_blas_thread, small_product
from oar_numba._blas import gemm, gemm_for
from oar_numba._jit import always_parallel, serial

MAX_ROWS = 2  # rows of a 2-d x up to which the loop beats BLAS
PARTS_MIN_ROWS = 16  # rows per thread from which a product runs in row shares (at more than one thread)


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


@always_parallel
def _linear_parts(x, w, b, parts, out, address, int_kind):
    """out = x @ w + b in ``parts`` row shares, one per numba thread: each share's rows start as
    the bias and its GEMM adds the product (beta 1)."""
    rows = x.shape[0]
    for part in prange(parts):
        first, last = rows * part // parts, rows * (part + 1) // parts
        for r in range(first, last):
            out[r, :] = b
        gemm(address, int_kind, x[first:last], w, out[first:last], 1.0)


def _fits(x, w, b) -> bool:
    """The checks numba does not make (it indexes without bounds): a 2-d x, shapes that agree."""
    return (x.ndim == 2 and x.shape[0] > 0 and w.ndim == 2 and w.shape[0] == x.shape[1] > 0
            and b.shape == (w.shape[1],) and x.dtype == w.dtype == b.dtype)


def _in_parts(x, w, b):
    """The product in row shares over numba's threads, or None where it does not apply."""
    parts = min(numba.get_num_threads(), x.shape[0] // PARTS_MIN_ROWS)
    if parts < 2 or not small_product(x, w) or not (x.flags.c_contiguous and w.flags.c_contiguous):
        return None
    blas = gemm_for(x.dtype)
    if blas is None:
        return None
    out = np.empty((x.shape[0], w.shape[1]), x.dtype)
    with one_blas_thread():
        _linear_parts(x, w, b, parts, out, *blas)
    return out


def linear(x, w, b):
    if _fits(x, w, b) and x.shape[0] <= MAX_ROWS:
        out = np.empty((x.shape[0], w.shape[1]), x.dtype)
        _rows_linear(x, w, b, out)
        return out
    return _ref._linear_kernel(x, w, b)


def _bind(attrs: dict):
    """``linear`` for one program node: the checks are made once per input shape and dtype, weight
    and bias (compared by identity: a program's parameters are the same arrays from call to call),
    so that a batch-1 call is the loop and its output (see ``oar._graph.executor``)."""
    last = [(None, None, None, None, False)]  # (x's shape, x's dtype, w, b, whether they fit): replaced whole

    def linear_node(x, w, b):
        known = last[0]
        if x.shape != known[0] or w is not known[2] or b is not known[3] or x.dtype != known[1]:
            known = last[0] = (x.shape, x.dtype, w, b, _fits(x, w, b))
        if known[4]:
            if x.shape[0] <= MAX_ROWS:
                out = np.empty((x.shape[0], w.shape[1]), x.dtype)
                _rows_linear(x, w, b, out)
                return out
            out = _in_parts(x, w, b)
            if out is not None:
                return out
        return _ref._linear_kernel(x, w, b)

    return linear_node


linear.bind = _bind
linear.batch_parallel = True  # row shares on numba's threads (oar._graph.executor)
