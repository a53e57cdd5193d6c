"""int8 kernels of ``oar.nn.quant``: the int8 x int8 -> int32 GEMM, the weight-only linear that
reads int8 weights, LLM.int8's row quantization, and (de)quantization per tensor or per channel.

- ``matmul_int8``: numpy has no integer BLAS; its reference widens both operands to int32 and runs
  numpy's generic (unblocked) integer matmul. Here tiles of ``y``'s rows (a few KiB of int8, which
  stay in L1) meet every row of ``x``; each dot product widens to int32 in registers, which LLVM
  vectorises. Exact: int32 cannot overflow below k = 2**17.
- ``weight_only_linear``: for a few rows (decoding, small batches: m <= ``GEMV_ROWS``) each int8
  weight row is read once and dotted with every activation row, output channels in parallel, scaled at the end:
  a quarter of the bytes of a float32 weight, which is what a GEMV waits for. For more rows the
  weight is dequantized once (in a reused buffer) and BLAS multiplies: its float GEMM is faster
  than any int8 loop here.
- quantize / dequantize: one pass over ``[outer, channel, inner]``, channels in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from oar.nn.functional import quant as _ref
from oar_numba._jit import ParallelKernel, parallel, scratch


def exact(fn) -> ParallelKernel:
    """A parallel kernel compiled without fast-math: the quantizers divide by the scale as numpy
    does (``arcp`` would multiply by a reciprocal, and move values across rounding ties, so that
    an int8 result differed from the reference's by one step)."""
    return ParallelKernel(fn, fastmath=False)


GEMV_ROWS = 32  # w[4096, 1024], 1 thread, CPU ms GEMV vs dequantize + BLAS: 8 rows 1.8 vs 5.2, 32: 6.3 vs 7.3
TILE_N = 32  # rows of y per tile: 32 x k int8 stays in L1 for k up to 1024


@parallel
def _matmul_int8(x, y, out):
    m, k = x.shape
    n = y.shape[0]
    tiles = (n + TILE_N - 1) // TILE_N
    for t in prange(tiles):
        j0, j1 = t * TILE_N, min(n, (t + 1) * TILE_N)
        for i in range(m):
            xi = x[i]
            for j in range(j0, j1):
                yj = y[j]
                acc = np.int32(0)
                for p in range(k):
                    acc += np.int32(xi[p]) * np.int32(yj[p])
                out[i, j] = acc


def matmul_int8(x, y):
    if x.size == 0 or y.size == 0 or x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        return _ref.matmul_int8_reference(x, y)
    out = np.empty((x.shape[0], y.shape[0]), np.int32)
    _matmul_int8(np.ascontiguousarray(x), np.ascontiguousarray(y), out)
    return out


# -- weight-only linear ----------------------------------------------------------------------------
@parallel
def _int8_gemv(x, w, scale, out):
    """out[i, j] = scale[j] * sum_p x[i, p] * w[j, p]; one weight row per step, read once."""
    m, k = x.shape
    zero = np.zeros(1, x.dtype)[0]  # x's dtype: float32 accumulates in float32 lanes
    for j in prange(w.shape[0]):
        wj = w[j]
        for i in range(m):
            xi = x[i]
            acc = zero
            for p in range(k):
                acc += xi[p] * wj[p]
            out[i, j] = acc * scale[j]


@parallel
def _dequantize_rows(w, scale, out):
    """out[j, p] = w[j, p] * scale[j]."""
    for j in prange(w.shape[0]):
        s = scale[j]
        for p in range(w.shape[1]):
            out[j, p] = w[j, p] * s


def _linear_fits(x, weight, scale) -> bool:
    """Shapes the loops may index by (a direct call could pass others to the op)."""
    return (x.ndim > 0 and x.size > 0 and weight.ndim == 2 and weight.size > 0 and x.shape[-1] == weight.shape[1]
            and scale.shape == (weight.shape[0],))


def weight_only_linear(x, weight, scale):
    if not _linear_fits(x, weight, scale):
        return _ref._weight_only_linear_kernel(x, weight, scale)
    n, k = weight.shape
    x2 = np.ascontiguousarray(x).reshape(-1, k)
    s = np.ascontiguousarray(scale, dtype=x.dtype)
    w = np.ascontiguousarray(weight)
    if x2.shape[0] <= GEMV_ROWS:
        out = np.empty((x2.shape[0], n), x.dtype)
        _int8_gemv(x2, w, s, out)
    else:
        deq = scratch("dequantized_weight", n * k, x.dtype).reshape(n, k)
        _dequantize_rows(w, s, deq)
        out = x2 @ deq.T
    return out.reshape(*x.shape[:-1], n)


# -- LLM.int8 -----------------------------------------------------------------------------------------
@exact
def _quantize_rows(x, outliers, xq, row_scale):
    """Per row: the abs-max of the inlier columns / 127 and the row in int8 (outlier columns 0)."""
    m, k = x.shape
    for i in prange(m):
        amax = 0.0
        for p in range(k):
            if not outliers[p]:
                amax = max(amax, abs(x[i, p]))
        row_scale[i] = amax / 127.0
        s = row_scale[i] if amax > 0 else row_scale[i] + 1  # x's dtype: divide as the reference does
        for p in range(k):
            xq[i, p] = 0 if outliers[p] else np.int8(min(max(np.rint(x[i, p] / s), -127.0), 127.0))


def llm_int8_linear(x, weight, scale, threshold):
    if not _linear_fits(x, weight, scale):
        return _ref._llm_int8_linear_kernel(x, weight, scale, threshold)
    n, k = weight.shape
    x2 = np.ascontiguousarray(x).reshape(-1, k)
    outliers = np.any(np.abs(x2) >= threshold, axis=0)
    xq = np.empty(x2.shape, np.int8)
    row_scale = np.empty(x2.shape[0], x.dtype)
    _quantize_rows(x2, outliers, xq, row_scale)
    acc = matmul_int8(xq, weight)
    y = acc.astype(x.dtype)
    y *= row_scale[:, None]
    y *= scale.astype(x.dtype)[None, :]
    if outliers.any():
        w_out = weight[:, outliers].astype(x.dtype) * scale.astype(x.dtype)[:, None]
        y += x2[:, outliers] @ w_out.T
    return y.reshape(*x.shape[:-1], n)


# -- quantize / dequantize per tensor or per channel -------------------------------------------
def _channel_view(a: np.ndarray, axis, per_channel: bool) -> np.ndarray:
    """``a`` as [outer, channels, inner] (channels 1 per tensor)."""
    a = np.ascontiguousarray(a)
    if not per_channel:
        return a.reshape(1, 1, -1)
    return a.reshape(int(np.prod(a.shape[:axis])), a.shape[axis], -1)


@exact
def _quantize(x, scale, zero_point, lo, hi, out):
    """out = clip(rint(x / scale) + zero_point, lo, hi) in x's dtype (lo, hi too). The reference adds
    the zero point in float64; here float32 lanes, twice as many a register, give the same int8:
    rint(x / scale) is an integer, which adding |zero_point| <= 128 keeps exact up to 2**24, and
    beyond that the clip answers lo or hi either way."""
    outer, channels, inner = x.shape
    for oc in prange(outer * channels):
        o, c = oc // channels, oc % channels
        s = scale[c]
        z = x.dtype.type(zero_point[c])
        row, dst = x[o, c], out[o, c]
        for i in range(inner):
            v = np.rint(row[i] / s) + z
            dst[i] = np.int8(min(max(v, lo), hi))


@exact
def _dequantize(q, scale, zero_point, out):
    outer, channels, inner = q.shape
    for oc in prange(outer * channels):
        o, c = oc // channels, oc % channels
        s = scale[c]
        z = np.int32(zero_point[c])
        for i in range(inner):
            out[o, c, i] = (np.int32(q[o, c, i]) - z) * s


@exact
def _fake_quantize(x, scale, zero_point, lo, hi, out):
    outer, channels, inner = x.shape
    for oc in prange(outer * channels):
        o, c = oc // channels, oc % channels
        s = scale[c]
        z = np.float64(zero_point[c])
        for i in range(inner):
            v = min(max(np.rint(x[o, c, i] / s) + z, lo), hi)
            out[o, c, i] = (v - z) * s


def _qfits(x, scale, zero_point, axis) -> bool:
    """A scalar scale, or one per channel along ``axis``, with a zero point of the same shape."""
    if x.ndim == 0 or x.size == 0 or scale.shape != zero_point.shape:
        return False
    return scale.ndim == 0 or (scale.ndim == 1 and axis is not None and scale.size == x.shape[axis])


def _qparams(x, scale, zero_point, axis):
    per_channel = scale.ndim == 1
    s = np.ascontiguousarray(scale.reshape(-1), dtype=x.dtype if x.dtype.kind == "f" else scale.dtype)
    return per_channel, s, np.ascontiguousarray(zero_point.reshape(-1))


def quantize_linear(x, scale, zero_point, axis, bit_length):
    if not _qfits(x, scale, zero_point, axis):
        return _ref._quantize_linear_kernel(x, scale, zero_point, axis, bit_length)
    lo, hi = _ref.qrange(bit_length)
    per_channel, s, z = _qparams(x, scale, zero_point, axis)
    view = _channel_view(x, axis, per_channel)
    out = np.empty(view.shape, np.int8)
    _quantize(view, s, z, view.dtype.type(lo), view.dtype.type(hi), out)
    return out.reshape(x.shape)


def dequantize_linear(q, scale, zero_point, axis, bit_length):
    # registered for int8 x: a float16 or bfloat16 scale (the output's dtype) reaches it as it is
    if not _qfits(q, scale, zero_point, axis) or scale.dtype not in (np.float32, np.float64):
        return _ref._dequantize_linear_kernel(q, scale, zero_point, axis, bit_length)
    per_channel, s, z = _qparams(q, scale, zero_point, axis)
    view = _channel_view(q, axis, per_channel)
    out = np.empty(view.shape, scale.dtype)
    _dequantize(view, s, z, out)
    return out.reshape(q.shape)


def fake_quantize_dequantize(x, scale, zero_point, axis, bit_length):
    if not _qfits(x, scale, zero_point, axis):
        return _ref._fake_quantize_dequantize_kernel(x, scale, zero_point, axis, bit_length)
    lo, hi = _ref.qrange(bit_length)
    per_channel, s, z = _qparams(x, scale, zero_point, axis)
    view = _channel_view(x, axis, per_channel)
    out = np.empty(view.shape, x.dtype)
    _fake_quantize(view, s, z, float(lo), float(hi), out)
    return out.reshape(x.shape)
