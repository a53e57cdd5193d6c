"""Normalisation kernels: layer_norm, group_norm, batch_norm (training and inference) and their
backward ops, with float32 statistics (float64 for float64 tensors).

Two shapes of reduction serve all of them:

- **Rows** (layer and group normalisation): x is viewed as ``[rows, cols]`` and each program
  normalises ``BLOCK_R`` rows: the mean, then the centred sum of squares (two passes, as the
  reference, rather than ``E[x^2] - E[x]^2``, which cancels), then the output. Rows of up to
  ``MAX_BLOCK_N`` columns are held in registers and read once; longer ones are read in
  ``BLOCK_N`` chunks once per pass. Group normalisation is the same
  with rows ``N * G`` and columns ``C / G * HW``; its affine index is
  ``((row % groups) * cols + col) // hw``, which is the column itself for layer normalisation.
- **Channels** (batch normalisation, and the weight and bias gradients of all three): x is viewed
  as ``[pre, C, post]`` and sums per channel run over ``pre * post`` elements. The ``M = pre *
  post`` elements are split into ``SPLIT`` ranges; program ``(channel block, split)`` writes one
  partial sum per channel and a second kernel adds the partials of each channel in a fixed order:
  the result does not depend on scheduling (no atomics). A tile is ``[BLOCK_M, BLOCK_C]``:
  consecutive ``m`` are consecutive memory when ``post > 1`` (NCHW), consecutive channels when
  ``post == 1`` (NHWC, and the ``[rows, cols]`` view of layer normalisation).

The backward ops return what the reference's do: ``dx`` from the given statistics, and ``dweight
= sum(g * xh)``, ``dbias = sum(g)`` per affine element. float16 and bfloat16 tensors are read and
written in their dtype and computed in float32. Empty inputs give what the reference gives (NaN
statistics, zero gradients) without a launch.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND, contiguous, empty
from oar_triton.kernels.elementwise import cast
from oar_triton.launch import compute_dtype, launch

from oar.errors import ArgumentError, ShapeError

TILE = 4096  # elements per program tile: 16 KiB of float32 in registers
MAX_BLOCK_N = 2048  # the widest row chunk; longer rows loop
MAX_PROGRAMS = 512  # channel sums: about four programs per SM of an H100 (132 SMs)
BLOCK = 1024  # elementwise passes


def _pow2(n: int) -> int:
    return triton.next_power_of_2(max(int(n), 1))


def _stats_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


# -- rows: layer_norm and group_norm ------------------------------------------------------------
@triton.jit
def _rows_forward_kernel(x, w, b, y, mean_out, var_out, rows, cols, groups, hw, eps: tl.float64,
                         BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, ONE_CHUNK: tl.constexpr, ACC: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < rows
    base = r[:, None] * cols
    affine = (r % groups)[:, None] * cols
    if ONE_CHUNK:  # the rows fit in one tile: x is read from memory once
        c = tl.arange(0, BLOCK_N)
        m = rmask[:, None] & (c < cols)[None, :]
        v = tl.load(x + base + c[None, :], mask=m, other=0).to(ACC)
        mean = tl.sum(v, axis=1) / cols
        d = tl.where(m, v - mean[:, None], 0)
        var = tl.sum(d * d, axis=1) / cols
        rstd = 1.0 / tl.sqrt(var + tl.cast(eps, ACC))
        k = (affine + c[None, :]) // hw
        wv = tl.load(w + k, mask=m, other=0).to(ACC)
        out = d * (wv * rstd[:, None]) + tl.load(b + k, mask=m, other=0).to(ACC)
        tl.store(y + base + c[None, :], out.to(y.dtype.element_ty), mask=m)
    else:  # a pass per statistic, then one that writes (the chunks come back from the cache)
        total = tl.zeros([BLOCK_R], ACC)
        for start in range(0, cols, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            m = rmask[:, None] & (c < cols)[None, :]
            total += tl.sum(tl.load(x + base + c[None, :], mask=m, other=0).to(ACC), axis=1)
        mean = total / cols
        squares = tl.zeros([BLOCK_R], ACC)
        for start in range(0, cols, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            m = rmask[:, None] & (c < cols)[None, :]
            d = tl.where(m, tl.load(x + base + c[None, :], mask=m, other=0).to(ACC) - mean[:, None], 0)
            squares += tl.sum(d * d, axis=1)
        var = squares / cols
        rstd = 1.0 / tl.sqrt(var + tl.cast(eps, ACC))
        for start in range(0, cols, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            m = rmask[:, None] & (c < cols)[None, :]
            k = (affine + c[None, :]) // hw
            v = tl.load(x + base + c[None, :], mask=m, other=0).to(ACC)
            wv = tl.load(w + k, mask=m, other=0).to(ACC)
            bv = tl.load(b + k, mask=m, other=0).to(ACC)
            out = (v - mean[:, None]) * (wv * rstd[:, None]) + bv
            tl.store(y + base + c[None, :], out.to(y.dtype.element_ty), mask=m)
    tl.store(mean_out + r, mean.to(mean_out.dtype.element_ty), mask=rmask)
    tl.store(var_out + r, var.to(var_out.dtype.element_ty), mask=rmask)


@triton.jit
def _rows_backward_kernel(x, w, mean, var, g, dx, rows, cols, groups, hw, eps: tl.float64,
                          BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, ONE_CHUNK: tl.constexpr, ACC: tl.constexpr):
    # dx = rstd * (a - mean(a) - xh * mean(a * xh)), a = g * w, xh = (x - mean) * rstd, per row
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < rows
    base = r[:, None] * cols
    affine = (r % groups)[:, None] * cols
    mu = tl.load(mean + r, mask=rmask, other=0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.load(var + r, mask=rmask, other=0).to(ACC) + tl.cast(eps, ACC))
    if ONE_CHUNK:  # x and g are read from memory once
        c = tl.arange(0, BLOCK_N)
        m = rmask[:, None] & (c < cols)[None, :]
        xh = tl.where(m, tl.load(x + base + c[None, :], mask=m, other=0).to(ACC) - mu[:, None], 0) * rstd[:, None]
        a = (tl.load(g + base + c[None, :], mask=m, other=0).to(ACC)
             * tl.load(w + (affine + c[None, :]) // hw, mask=m, other=0).to(ACC))
        mean_a = tl.sum(a, axis=1) / cols
        mean_axh = tl.sum(a * xh, axis=1) / cols
        out = (a - mean_a[:, None] - xh * mean_axh[:, None]) * rstd[:, None]
        tl.store(dx + base + c[None, :], out.to(dx.dtype.element_ty), mask=m)
    else:
        sum_a = tl.zeros([BLOCK_R], ACC)
        sum_axh = tl.zeros([BLOCK_R], ACC)
        for start in range(0, cols, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            m = rmask[:, None] & (c < cols)[None, :]
            xh = tl.where(m, tl.load(x + base + c[None, :], mask=m, other=0).to(ACC) - mu[:, None], 0) * rstd[:, None]
            a = (tl.load(g + base + c[None, :], mask=m, other=0).to(ACC)
                 * tl.load(w + (affine + c[None, :]) // hw, mask=m, other=0).to(ACC))
            sum_a += tl.sum(a, axis=1)
            sum_axh += tl.sum(a * xh, axis=1)
        mean_a = sum_a / cols
        mean_axh = sum_axh / cols
        for start in range(0, cols, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            m = rmask[:, None] & (c < cols)[None, :]
            xh = (tl.load(x + base + c[None, :], mask=m, other=0).to(ACC) - mu[:, None]) * rstd[:, None]
            a = (tl.load(g + base + c[None, :], mask=m, other=0).to(ACC)
                 * tl.load(w + (affine + c[None, :]) // hw, mask=m, other=0).to(ACC))
            out = (a - mean_a[:, None] - xh * mean_axh[:, None]) * rstd[:, None]
            tl.store(dx + base + c[None, :], out.to(dx.dtype.element_ty), mask=m)


def _row_blocks(rows: int, cols: int) -> tuple[int, int]:
    block_n = min(_pow2(cols), MAX_BLOCK_N)
    return max(1, min(TILE // block_n, _pow2(rows))), block_n


def _rows_forward(x: DeviceArray, w: DeviceArray, b: DeviceArray, rows: int, cols: int, groups: int, hw: int,
                  eps: float, stats_shape: tuple):
    x, w, b = contiguous(x), contiguous(w), contiguous(b)
    y = empty(x.shape, x.dtype)
    if x.size == 0:  # no element: the statistics of none are NaN, as the reference's
        return y, BACKEND.full(stats_shape, np.nan, x.dtype), BACKEND.full(stats_shape, np.nan, x.dtype)
    mean, var = empty(stats_shape, x.dtype), empty(stats_shape, x.dtype)
    block_r, block_n = _row_blocks(rows, cols)
    launch(_rows_forward_kernel, (triton.cdiv(rows, block_r),), x, w, b, y, mean, var, rows, cols, groups, hw,
           float(eps), BLOCK_R=block_r, BLOCK_N=block_n, ONE_CHUNK=cols <= block_n, ACC=compute_dtype(x.dtype))
    return y, mean, var


def _rows_dx(x, w, mean, var, g, rows: int, cols: int, groups: int, hw: int, eps: float) -> DeviceArray:
    dx = empty(x.shape, x.dtype)
    if x.size:
        block_r, block_n = _row_blocks(rows, cols)
        launch(_rows_backward_kernel, (triton.cdiv(rows, block_r),), x, w, mean, var, g, dx, rows, cols, groups, hw,
               float(eps), BLOCK_R=block_r, BLOCK_N=block_n, ONE_CHUNK=cols <= block_n, ACC=compute_dtype(x.dtype))
    return dx


# -- channels: batch_norm, and the affine gradients -----------------------------------------------
# MODE 0: sum(x); 1: sum((x - mean)^2); 2: sum(g) and sum(g * xh). The statistics of element
# (p, c) are at p * stat_p + c // stat_div: per channel (batch norm: 0, 1), per row (layer norm's
# [rows, cols, 1] view: 1, cols), per sample and group (group norm's [N, C, HW] view: G, C / G).
@triton.jit
def _channel_sums_kernel(x, g, mean, var, out1, out2, M, C, post, stat_p, stat_div, chunk, eps: tl.float64,
                         MODE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr):
    c = (tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)).to(tl.int64)
    cmask = c < C
    split = tl.program_id(1).to(tl.int64)
    first = split * chunk
    acc1 = tl.zeros([BLOCK_M, BLOCK_C], ACC)
    acc2 = tl.zeros([BLOCK_M, BLOCK_C], ACC)
    for start in range(0, chunk, BLOCK_M):
        mi = first + start + tl.arange(0, BLOCK_M)
        p = mi // post
        offs = p[:, None] * C * post + c[None, :] * post + (mi - p * post)[:, None]
        mask = ((mi < M) & (mi < first + chunk))[:, None] & cmask[None, :]
        v = tl.load(x + offs, mask=mask, other=0).to(ACC)
        if MODE == 0:
            acc1 += v
        else:
            s = p[:, None] * stat_p + c[None, :] // stat_div
            d = tl.where(mask, v - tl.load(mean + s, mask=mask, other=0).to(ACC), 0)
            if MODE == 1:
                acc1 += d * d
            else:
                rstd = 1.0 / tl.sqrt(tl.load(var + s, mask=mask, other=0).to(ACC) + tl.cast(eps, ACC))
                gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
                acc1 += gv
                acc2 += gv * d * rstd
    tl.store(out1 + split * C + c, tl.sum(acc1, axis=0), mask=cmask)
    if MODE == 2:
        tl.store(out2 + split * C + c, tl.sum(acc2, axis=0), mask=cmask)


@triton.jit
def _sum_splits_kernel(partial, out, splits, C, scale: tl.float64, BLOCK_C: tl.constexpr, ACC: tl.constexpr):
    # the partial sums of each channel added in split order: the same result on every run
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = c < C
    total = tl.zeros([BLOCK_C], ACC)
    for s in range(0, splits):
        total += tl.load(partial + s * C + c, mask=mask, other=0).to(ACC)
    tl.store(out + c, (total * tl.cast(scale, ACC)).to(out.dtype.element_ty), mask=mask)


@triton.jit
def _channel_affine_kernel(x, mean, var, w, b, y, n, C, post, eps: tl.float64, BLOCK: tl.constexpr, ACC: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // post) % C
    v = tl.load(x + offs, mask=mask, other=0).to(ACC)
    mu = tl.load(mean + c, mask=mask, other=0).to(ACC)
    scale = tl.load(w + c, mask=mask, other=0).to(ACC) / tl.sqrt(
        tl.load(var + c, mask=mask, other=0).to(ACC) + tl.cast(eps, ACC))
    out = (v - mu) * scale + tl.load(b + c, mask=mask, other=0).to(ACC)
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=mask)


@triton.jit
def _channel_dx_kernel(x, g, w, mean, var, dw, db, dx, n, C, post, inv_count: tl.float64, eps: tl.float64,
                       BLOCK: tl.constexpr,
                       ACC: tl.constexpr):
    # batch norm: w is constant over the reduced axes, so dx = (g - xh dw / n - db / n) rstd w
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // post) % C
    rstd = 1.0 / tl.sqrt(tl.load(var + c, mask=mask, other=0).to(ACC) + tl.cast(eps, ACC))
    xh = (tl.load(x + offs, mask=mask, other=0).to(ACC) - tl.load(mean + c, mask=mask, other=0).to(ACC)) * rstd
    inv = tl.cast(inv_count, ACC)
    gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
    out = (gv - xh * (tl.load(dw + c, mask=mask, other=0).to(ACC) * inv)
           - tl.load(db + c, mask=mask, other=0).to(ACC) * inv) * rstd * tl.load(w + c, mask=mask, other=0).to(ACC)
    tl.store(dx + offs, out.to(dx.dtype.element_ty), mask=mask)


def _channel_blocks(M: int, C: int, post: int) -> tuple[int, int, int, int]:
    """BLOCK_M, BLOCK_C, the number of splits of the M elements and each split's length."""
    block_c = min(_pow2(C), 256) if post == 1 else 1  # channels-last: a tile row is 256 contiguous channels
    block_m = max(16, min(TILE // block_c, _pow2(M)))
    splits = max(1, min(triton.cdiv(M, block_m), MAX_PROGRAMS // triton.cdiv(C, block_c)))
    chunk = triton.cdiv(triton.cdiv(M, splits), block_m) * block_m
    return block_m, block_c, triton.cdiv(M, chunk), chunk


def _channel_sums(mode: int, x, g, mean, var, pre: int, C: int, post: int, stat_p: int, stat_div: int, eps: float,
                  scale: float, out_dtype) -> tuple[DeviceArray, ...]:
    """Per channel sums over the ``pre * post`` elements of each (MODE above), times ``scale``, as
    ``out_dtype`` arrays of ``[C]``: one for modes 0 and 1, two (sum g, sum g xh) for mode 2."""
    M = pre * post
    acc = _stats_dtype(x.dtype)
    outs = tuple(empty((C,), out_dtype) for _ in range(2 if mode == 2 else 1))
    if C == 0:
        return outs
    if M == 0:  # a sum over no element
        return tuple(BACKEND.zeros((C,), out_dtype) for _ in outs)
    block_m, block_c, splits, chunk = _channel_blocks(M, C, post)
    partials = [empty((splits, C), acc) for _ in outs]
    p2 = partials[-1]
    launch(_channel_sums_kernel, (triton.cdiv(C, block_c), splits), x, g, mean, var, partials[0], p2, M, C, post,
           stat_p, stat_div, chunk, float(eps), MODE=mode, BLOCK_M=block_m, BLOCK_C=block_c,
           ACC=compute_dtype(acc))
    for partial, out in zip(partials, outs):
        launch(_sum_splits_kernel, (triton.cdiv(C, 256),), partial, out, splits, C, float(scale), BLOCK_C=256,
               ACC=compute_dtype(acc))
    return outs


def _affine_grads(x, w, mean, var, g, pre: int, C: int, post: int, stat_p: int, stat_div: int, eps: float):
    dbias, dweight = _channel_sums(2, x, g, mean, var, pre, C, post, stat_p, stat_div, eps, 1.0, x.dtype)
    return dweight, dbias


# -- the ops -------------------------------------------------------------------------------------
def _prod(dims) -> int:
    return int(np.prod(dims, dtype=np.int64))


def _check_affine(op: str, name: str, p: DeviceArray, size: int) -> None:
    if p.shape != (size,):
        raise ShapeError(f"{op}: {name} must have shape [{size}], got {list(p.shape)}")


def layer_norm(x, weight, bias, begin_norm_axis, epsilon):
    rows, cols = _prod(x.shape[:begin_norm_axis]), _prod(x.shape[begin_norm_axis:])
    _check_affine("layer_norm", "weight", weight, cols)
    _check_affine("layer_norm", "bias", bias, cols)
    return _rows_forward(x, weight, bias, rows, cols, 1, 1, epsilon, (rows,))


def layer_norm_grad(x, weight, mean, var, g, begin_norm_axis, epsilon):
    rows, cols = _prod(x.shape[:begin_norm_axis]), _prod(x.shape[begin_norm_axis:])
    x, weight, mean, var, g = (contiguous(a) for a in (x, weight, mean, var, g))
    dx = _rows_dx(x, weight, mean, var, g, rows, cols, 1, 1, epsilon)
    # the [rows, cols] view as [pre=rows, C=cols, post=1]: the statistics of (p, c) are row p's
    return (dx, *_affine_grads(x, weight, mean, var, g, rows, cols, 1, 1, max(cols, 1), epsilon))


def _group_view(op: str, x: DeviceArray, num_groups: int) -> tuple[int, int, int, int]:
    if x.ndim < 2 or num_groups <= 0 or x.shape[1] % num_groups:
        raise ArgumentError(f"{op}: num_groups {num_groups} must divide the channels of x {list(x.shape)}")
    return x.shape[0], x.shape[1], x.shape[1] // num_groups, _prod(x.shape[2:])


def group_norm(x, weight, bias, num_groups, epsilon):
    n, c, cg, hw = _group_view("group_norm", x, num_groups)
    _check_affine("group_norm", "weight", weight, c)
    _check_affine("group_norm", "bias", bias, c)
    return _rows_forward(x, weight, bias, n * num_groups, cg * hw, num_groups, max(hw, 1), epsilon, (n, num_groups))


def group_norm_grad(x, weight, mean, var, g, num_groups, epsilon):
    n, c, cg, hw = _group_view("group_norm_grad", x, num_groups)
    x, weight, mean, var, g = (contiguous(a) for a in (x, weight, mean, var, g))
    dx = _rows_dx(x, weight, mean, var, g, n * num_groups, cg * hw, num_groups, max(hw, 1), epsilon)
    # [N, C, HW]: the statistics of (sample p, channel c) are at p * G + c // (C / G)
    return (dx, *_affine_grads(x, weight, mean, var, g, n, c, hw, num_groups, max(cg, 1), epsilon))


def _bn_view(x: DeviceArray, channel_axis: int) -> tuple[int, int, int]:
    return _prod(x.shape[:channel_axis]), x.shape[channel_axis], _prod(x.shape[channel_axis + 1:])


def _channel_affine(x, mean, var, w, b, C: int, post: int, eps: float) -> DeviceArray:
    y = empty(x.shape, x.dtype)
    if x.size:
        launch(_channel_affine_kernel, (triton.cdiv(x.size, BLOCK),), x, mean, var, w, b, y, x.size, C, post,
               float(eps), BLOCK=BLOCK, ACC=compute_dtype(x.dtype))
    return y


def batch_norm(x, weight, bias, channel_axis, epsilon):
    pre, c, post = _bn_view(x, channel_axis)
    _check_affine("batch_norm", "weight", weight, c)
    _check_affine("batch_norm", "bias", bias, c)
    x, weight, bias = contiguous(x), contiguous(weight), contiguous(bias)
    if x.size == 0:
        return empty(x.shape, x.dtype), BACKEND.full((c,), np.nan, x.dtype), BACKEND.full((c,), np.nan, x.dtype)
    acc = _stats_dtype(x.dtype)
    count = pre * post
    (mean,) = _channel_sums(0, x, x, x, x, pre, c, post, 0, 1, epsilon, 1.0 / count, acc)
    (var,) = _channel_sums(1, x, x, mean, mean, pre, c, post, 0, 1, epsilon, 1.0 / count, acc)
    y = _channel_affine(x, mean, var, weight, bias, c, post, epsilon)
    if acc != x.dtype:
        mean, var = cast(mean, x.dtype), cast(var, x.dtype)
    return y, mean, var


def batch_norm_grad(x, weight, mean, var, g, channel_axis, epsilon):
    pre, c, post = _bn_view(x, channel_axis)
    x, weight, mean, var, g = (contiguous(a) for a in (x, weight, mean, var, g))
    acc = _stats_dtype(x.dtype)
    db, dw = _channel_sums(2, x, g, mean, var, pre, c, post, 0, 1, epsilon, 1.0, acc)
    dx = empty(x.shape, x.dtype)
    if x.size:
        launch(_channel_dx_kernel, (triton.cdiv(x.size, BLOCK),), x, g, weight, mean, var, dw, db, dx, x.size, c, post,
               1.0 / (pre * post), float(epsilon), BLOCK=BLOCK, ACC=compute_dtype(x.dtype))
    if acc != x.dtype:
        dw, db = cast(dw, x.dtype), cast(db, x.dtype)
    return dx, dw, db


def batch_norm_infer(x, weight, bias, mean, var, channel_axis, epsilon):
    _, c, post = _bn_view(x, channel_axis)
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", mean), ("running_var", var)):
        _check_affine("batch_norm_infer", name, p, c)
    x, weight, bias, mean, var = (contiguous(a) for a in (x, weight, bias, mean, var))
    return _channel_affine(x, mean, var, weight, bias, c, post, epsilon)


KERNELS = {
    "layer_norm": layer_norm,
    "layer_norm_grad": layer_norm_grad,
    "group_norm": group_norm,
    "group_norm_grad": group_norm_grad,
    "batch_norm": batch_norm,
    "batch_norm_grad": batch_norm_grad,
    "batch_norm_infer": batch_norm_infer,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each kernel in float32 and bfloat16, at the block sizes of a wide and a narrow case."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    for dtype in ("float32", "bfloat16"):
        t = POINTER_TYPES[dtype]
        acc = compute_dtype(np.dtype(np.float32))
        for block_r, block_n in ((2, 2048), (64, 64)):
            rows = {"rows": "i64", "cols": "i64", "groups": "i64", "hw": "i64", "eps": "fp64",
                    "BLOCK_R": "constexpr", "BLOCK_N": "constexpr", "ONE_CHUNK": "constexpr", "ACC": "constexpr"}
            consts = {"BLOCK_R": block_r, "BLOCK_N": block_n, "ONE_CHUNK": block_n == 64, "ACC": acc}
            found.append((f"norm.rows_forward[{dtype},{block_n}]", _rows_forward_kernel,
                          {"x": t, "w": t, "b": t, "y": t, "mean_out": t, "var_out": t, **rows}, consts))
            found.append((f"norm.rows_backward[{dtype},{block_n}]", _rows_backward_kernel,
                          {"x": t, "w": t, "mean": t, "var": t, "g": t, "dx": t, **rows}, consts))
        for mode in (0, 1, 2):
            for block_m, block_c in ((4096, 1), (16, 256)):
                found.append((f"norm.channel_sums[{dtype},mode{mode},{block_c}]", _channel_sums_kernel,
                              {"x": t, "g": t, "mean": "*fp32" if mode == 1 else t, "var": t, "out1": "*fp32",
                               "out2": "*fp32", "M": "i64", "C": "i64", "post": "i64", "stat_p": "i64",
                               "stat_div": "i64", "chunk": "i64", "eps": "fp64", "MODE": "constexpr",
                               "BLOCK_M": "constexpr", "BLOCK_C": "constexpr", "ACC": "constexpr"},
                              {"MODE": mode, "BLOCK_M": block_m, "BLOCK_C": block_c, "ACC": acc}))
        found.append((f"norm.sum_splits[{dtype}]", _sum_splits_kernel,
                      {"partial": "*fp32", "out": t, "splits": "i64", "C": "i64", "scale": "fp64",
                       "BLOCK_C": "constexpr", "ACC": "constexpr"}, {"BLOCK_C": 256, "ACC": acc}))
        found.append((f"norm.channel_affine[{dtype}]", _channel_affine_kernel,
                      {"x": t, "mean": "*fp32", "var": "*fp32", "w": t, "b": t, "y": t, "n": "i64", "C": "i64",
                       "post": "i64", "eps": "fp64", "BLOCK": "constexpr", "ACC": "constexpr"},
                      {"BLOCK": BLOCK, "ACC": acc}))
        found.append((f"norm.channel_dx[{dtype}]", _channel_dx_kernel,
                      {"x": t, "g": t, "w": t, "mean": t, "var": t, "dw": "*fp32", "db": "*fp32", "dx": t,
                       "n": "i64", "C": "i64", "post": "i64", "inv_count": "fp64", "eps": "fp64",
                       "BLOCK": "constexpr", "ACC": "constexpr"}, {"BLOCK": BLOCK, "ACC": acc}))
    return found


__all__ = ["KERNELS", "aot_configs"]
