"""Kernels of the fused ops that inference programs hold after oar's fusion passes.

- ``max_pool_infer``: max pooling's values only; the window loop of ``max_pool`` without the
  argmax bookkeeping (the mask is for gradients), and four loads per output for 2x2 windows of
  stride 2 that stay inside the input.
- ``fused_conv2d`` with a bias and relu or no activation, stride 1, no dilation or groups (LeNet's
  and most small CNNs' convolutions), in one of two ways by the size of a patch:

  - few taps (``C * KH * KW`` up to ``DIRECT_MAX_TAPS``, a first layer): a direct convolution, one
    vectorised multiply-add over a whole padded plane per tap (per channel's nine taps for 3x3),
    into a per-sample accumulator;
  - more: "wide" patches, where row ``(c, i, j)`` of a sample's patch matrix is the one contiguous
    run of ``x[c]`` starting at ``(i, j)``, as long as the output's rows laid at the input's
    width (the few columns past the output's width are computed and dropped). Filling it is one
    slice copy per tap instead of one per tap and output row (LeNet's second conv: 150 copies of
    136 floats per sample instead of 1500 of 10; im2col was 60% of its time), then numpy's BLAS,
    called from the compiled kernel (``_blas``): a whole call is one GIL release.

  Both end in one epilogue that adds the bias, applies relu and, when the op carries
  ``max_pool``, keeps the maximum of each window (the pooled output is all that is written).
  Other convolutions run the registered ``conv`` kernel and a bias + relu pass in its buffer;
  other activations go to the reference epilogue.
- ``fused_elementwise``: one compiled loop per distinct chain. The loop's source is generated
  from the chain's op names through their ``numba`` lowerings (``LOWERINGS``, expression
  templates this plugin registers in oar's lowering table; installed plugins may add their own
  ops'); an op without one sends the chain to the reference kernel, and attribute values (a
  scale, a bias) are passed to the compiled function as arguments, never written into its
  source. So no string of a program ever reaches the generated code: op names only select
  registered templates. Compiled loops are kept per
  (op names and argument indices, rank) for the life of the process.
"""

from __future__ import annotations

import math
import threading

import numba
import numpy as np
from numba import prange

from oar.nn.functional import fused as _ref
from oar.nn.functional import pooling as _pool
from oar.ops import blas_threads_for, cached_for, check_dtypes, evaluate_chain, lowering, one_blas_thread
from oar_numba._blas import gemm, gemm_for
from oar_numba._conv import WIDE_CHUNK_BYTES, _wide_patches
from oar_numba._jit import (
    COMPUTE_SERIAL_BELOW,
    SERIAL_BELOW,
    ParallelKernel,
    always_parallel,
    parallel,
    scratch,
    serial,
    split_samples,
    two_ways,
)


# -- max_pool_infer -------------------------------------------------------------------------------
@parallel
def _max_pool_values(x, kh, kw, sh, sw, top, left, out):
    planes, height, width = x.shape
    _, oh_size, ow_size = out.shape
    for p in prange(planes):
        for oh in range(oh_size):
            h0 = oh * sh - top
            h_lo, h_hi = max(h0, 0), min(h0 + kh, height)
            for ow in range(ow_size):
                w0 = ow * sw - left
                w_lo, w_hi = max(w0, 0), min(w0 + kw, width)
                best = -np.inf
                for h in range(h_lo, h_hi):
                    for w in range(w_lo, w_hi):
                        v = x[p, h, w]
                        best = v if (v > best) | (v != v) else best  # a NaN wins and stays
                out[p, oh, ow] = best


@parallel
def _max_pool_2x2(x, out):
    """2x2 windows, stride 2, no padding (LeNet's, VGG's): four loads, no bounds per window."""
    planes = x.shape[0]
    _, oh_size, ow_size = out.shape
    for p in prange(planes):
        for oh in range(oh_size):
            r0, r1, dst = x[p, 2 * oh], x[p, 2 * oh + 1], out[p, oh]
            for ow in range(ow_size):
                a, b = r0[2 * ow], r0[2 * ow + 1]
                c, d = r1[2 * ow], r1[2 * ow + 1]
                ab = a if (a > b) | (a != a) else b  # a NaN wins, as in the general loop
                cd = c if (c > d) | (c != c) else d
                dst[ow] = ab if (ab > cd) | (ab != ab) else cd


def max_pool_infer(x, kernel_size, stride, padding, ceil_mode):
    nd = x.ndim - 2
    if nd not in (1, 2) or x.size == 0:
        return _ref._max_pool_infer_kernel(x, kernel_size, stride, padding, ceil_mode)
    sizes = _pool.pool_sizes("max_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode)
    if nd == 1:
        (kh, kw), (sh, sw), (top, left) = (1, kernel_size[0]), (1, stride[0]), (0, padding[0])
    else:
        (kh, kw), (sh, sw), (top, left) = tuple(kernel_size), tuple(stride), (padding[0], padding[2])
    planes = np.ascontiguousarray(x).reshape(-1, 1 if nd == 1 else x.shape[2], x.shape[-1])
    out = np.empty((*x.shape[:2], *sizes), x.dtype)
    planes_out = out.reshape(-1, 1 if nd == 1 else sizes[0], sizes[-1])
    complete = 2 * planes_out.shape[1] <= planes.shape[1] and 2 * planes_out.shape[2] <= planes.shape[2]
    if (kh, kw, sh, sw) == (2, 2, 2, 2) and not any(padding) and complete:  # no window past the edge (ceil_mode)
        _max_pool_2x2(planes, planes_out)
    else:
        _max_pool_values(planes, kh, kw, sh, sw, top, left, planes_out)
    return out


# -- fused_conv2d ---------------------------------------------------------------------------------
DIRECT_MAX_TAPS = 32  # C * KH * KW; above it the wide patches and BLAS win (LeNet: 9 direct, 150 BLAS)


@parallel
def _bias_relu(y, bias, relu):
    """y[n, c, :] = max(y[n, c, :] + bias[c], 0) (without the max unless ``relu``), in place."""
    batch, channels, positions = y.shape
    for nc in prange(batch * channels):
        n, c = nc // channels, nc % channels
        row = y[n, c]
        b = bias[c]
        for i in range(positions):
            v = row[i] + b
            row[i] = (0 if v < 0 else v) if relu else v  # NaN stays NaN, as with np.maximum


@numba.njit(inline="always")
def _nan_max(a, b):
    return a if (a > b) | (a != a) else b  # a NaN wins, as in max_pool


@numba.njit(inline="always")
def _finish(acc, width, b, relu, pool, dst):
    """dst[oh, ow] = act(acc[oh * width + ow] + b), or the max of each pool x pool window of that.

    Row slices and unit-stride (or stride-2) loops, which LLVM vectorises: a generic window loop
    here took longer than the convolution before it."""
    zero = acc.dtype.type(0)
    out_h, out_w = dst.shape
    if pool <= 1:
        for oh in range(out_h):
            row, target = acc[oh * width:oh * width + out_w], dst[oh]
            for ow in range(out_w):
                v = row[ow] + b
                target[ow] = (zero if v < zero else v) if relu else v  # NaN stays NaN
    elif pool == 2:
        for oh in range(out_h):
            r0 = acc[2 * oh * width:2 * oh * width + 2 * out_w]
            r1 = acc[(2 * oh + 1) * width:(2 * oh + 1) * width + 2 * out_w]
            target = dst[oh]
            for ow in range(out_w):
                v = _nan_max(_nan_max(r0[2 * ow], r0[2 * ow + 1]), _nan_max(r1[2 * ow], r1[2 * ow + 1])) + b
                target[ow] = (zero if v < zero else v) if relu else v
    else:
        for oh in range(out_h):
            for ow in range(out_w):
                best = acc[oh * pool * width + ow * pool]
                for i in range(pool):
                    for j in range(pool):
                        best = _nan_max(acc[(oh * pool + i) * width + ow * pool + j], best)
                v = best + b
                dst[oh, ow] = (zero if v < zero else v) if relu else v


@serial
def _direct_conv(x, w, bias, top, left, relu, pool, out):
    """out[n, o] = epilogue(sum over c, i, j of w[o, c, i, j] * xpad[n, c, i:, j:]), stride 1, on
    this thread, with the padded sample (its border stays zero: only the inside is written from
    sample to sample) and the accumulators made once."""
    channels = x.shape[1]
    o_size, _, kh, kw = w.shape
    p = max(pool, 1)
    hp, wp = out.shape[2] * p + kh - 1, out.shape[3] * p + kw - 1
    span = out.shape[2] * p * wp  # the output's rows at the padded width
    xp = np.zeros((channels, hp * wp + kw), x.dtype)  # + kw: the last tap's run reads past the end
    acc = np.empty((2, span), x.dtype)
    for n in range(x.shape[0]):
        _direct_sample(x[n], w, bias, top, left, relu, pool, hp, wp, span, xp, acc, out[n])


@always_parallel
def _direct_parts(x, w, bias, top, left, relu, pool, parts, out):
    """``_direct_conv`` over ``parts`` shares of the batch, one per numba thread. Each share calls
    the serial compilation: the loops inlined into a parallel region ran slower."""
    batch = x.shape[0]
    for part in prange(parts):
        first, last = batch * part // parts, batch * (part + 1) // parts
        _direct_conv(x[first:last], w, bias, top, left, relu, pool, out[first:last])


@numba.njit(inline="always")
def _direct_sample(x, w, bias, top, left, relu, pool, hp, wp, span, xp, acc, out):
    """One sample of ``_direct_conv``: x [C, H, W] padded into ``xp``, out [O, OH, OW]."""
    channels, height, width = x.shape
    o_size, _, kh, kw = w.shape
    cols = min(width, wp - left)  # a pooled output can leave the last input rows and columns unread
    for c in range(channels):
        for h in range(top, min(hp, top + height)):  # padding >= 0
            src, dst = x[c, h - top], xp[c, h * wp + left:]
            for k in range(cols):
                dst[k] = src[k]
    a0, a1 = acc[0], acc[1]
    if kh == 3 and kw == 3:
        # 3x3, the common first layer: a channel's nine taps in one pass, nine loads and one
        # store per output element instead of an accumulator load and store per tap
        for o in range(o_size):
            for c in range(channels):
                _taps_3x3(xp[c], wp, span, w[o, c], a0, c == 0)
            _finish(a0, wp, bias[o], relu, pool, out[o])
        return
    # Output channels in pairs: each load of the input serves two multiply-adds; an odd last
    # channel goes alone.
    for o in range(0, o_size - 1, 2):
        a0[:] = 0
        a1[:] = 0
        for c in range(channels):
            for i in range(kh):
                for j in range(kw):
                    u, v = w[o, c, i, j], w[o + 1, c, i, j]
                    # a slice, not row[base + t]: numba's negative-index check on a computed
                    # index keeps LLVM from vectorising the loop (several times slower)
                    run = xp[c, i * wp + j:i * wp + j + span]
                    for t in range(span):
                        r = run[t]
                        a0[t] += u * r
                        a1[t] += v * r
        _finish(a0, wp, bias[o], relu, pool, out[o])
        _finish(a1, wp, bias[o + 1], relu, pool, out[o + 1])
    if o_size % 2:
        o = o_size - 1
        a0[:] = 0
        for c in range(channels):
            for i in range(kh):
                for j in range(kw):
                    u = w[o, c, i, j]
                    run = xp[c, i * wp + j:i * wp + j + span]
                    for t in range(span):
                        a0[t] += u * run[t]
        _finish(a0, wp, bias[o], relu, pool, out[o])


@numba.njit(inline="always")
def _taps_3x3(plane, wp, span, k, acc, first):
    """acc[t] (= if ``first``, else +=) sum over i, j < 3 of k[i, j] * plane[i * wp + j + t]."""
    k00, k01, k02, k10, k11, k12, k20, k21, k22 = (k[0, 0], k[0, 1], k[0, 2], k[1, 0], k[1, 1], k[1, 2],
                                                   k[2, 0], k[2, 1], k[2, 2])
    r00, r01, r02 = plane[0:span], plane[1:1 + span], plane[2:2 + span]
    r10, r11, r12 = plane[wp:wp + span], plane[wp + 1:wp + 1 + span], plane[wp + 2:wp + 2 + span]
    r20, r21, r22 = plane[2 * wp:2 * wp + span], plane[2 * wp + 1:2 * wp + 1 + span], plane[2 * wp + 2:2 * wp + 2 + span]
    if first:
        for t in range(span):
            acc[t] = (k00 * r00[t] + k01 * r01[t] + k02 * r02[t] + k10 * r10[t] + k11 * r11[t] + k12 * r12[t]
                      + k20 * r20[t] + k21 * r21[t] + k22 * r22[t])
    else:
        for t in range(span):
            acc[t] += (k00 * r00[t] + k01 * r01[t] + k02 * r02[t] + k10 * r10[t] + k11 * r11[t] + k12 * r12[t]
                       + k20 * r20[t] + k21 * r21[t] + k22 * r22[t])


@two_ways
def _wide_epilogue(acc, width, bias, relu, pool, out):
    batch, channels = out.shape[0], out.shape[1]
    for nc in prange(batch * channels):
        n, c = nc // channels, nc % channels
        _finish(acc[n, c], width, bias[c], relu, pool, out[n, c])


_patches_serial = _wide_patches.serial  # a global name, which compiled code can call


@serial
def _wide_block(x, weights, bias, kh, kw, span, relu, pool, cols, acc, out, address, int_kind):
    """out[n] = epilogue(weights @ wide patches of x[n]) for every sample, on this thread: one
    sample's patches (``cols`` [1, taps, span]), product (numpy's BLAS, ``_blas.gemm``) and
    epilogue (from ``acc`` [O, span]) after another, so that the whole call is one GIL release."""
    width = x.shape[3]
    for n in range(x.shape[0]):
        _patches_serial(x[n:n + 1], kh, kw, span, cols)
        gemm(address, int_kind, weights, cols[0], acc, 0.0)
        for o in range(acc.shape[0]):
            _finish(acc[o], width, bias[o], relu, pool, out[n, o])


@always_parallel
def _wide_parts(x, weights, bias, kh, kw, span, relu, pool, parts, out, address, int_kind):
    """``_wide_block`` over ``parts`` shares of the batch, one per numba thread, each with its own
    buffers. numba's threads wait for the next region spinning a while (``_jit``), and no part
    needs the GIL: LeNet's batch 64 at 2 threads ran faster this way than in two Python threads
    (the executor's split), whose every return to Python can sleep (docs/numba.md)."""
    batch = x.shape[0]
    for part in prange(parts):
        cols = np.empty((1, weights.shape[1], span), x.dtype)
        acc = np.empty((weights.shape[0], span), x.dtype)
        first, last = batch * part // parts, batch * (part + 1) // parts
        _wide_block(x[first:last], weights, bias, kh, kw, span, relu, pool, cols, acc, out[first:last], address,
                    int_kind)


def _direct_shape(x, w, stride, padding, dilation, groups) -> bool:
    return (x.ndim == 4 and groups == 1 and stride[0] == stride[1] == 1 and dilation[0] == dilation[1] == 1
            and min(padding) >= 0 and x.size > 0 and w.size > 0 and x.dtype == w.dtype)


class _Plan:
    """What the shapes and attributes of a ``fused_conv2d`` call decide, worked out once: the
    way ("direct" or "wide"), the output shape and the loop bounds."""

    __slots__ = ("kind", "shape", "top", "left", "pool", "oh", "taps", "span", "step", "small", "blas")

    def __init__(self, kind, x_shape, w_shape, dtype, padding, pool, oh, shape):
        self.kind, self.shape, self.pool, self.oh = kind, shape, pool, oh
        self.blas = gemm_for(dtype)  # the wide way's products inside its kernel, where numpy's BLAS allows
        itemsize = np.dtype(dtype).itemsize
        self.top, self.left = padding[0], padding[2]
        width = x_shape[3]
        self.taps = w_shape[1] * w_shape[2] * w_shape[3]
        self.span = (oh - 1) * width + (width - w_shape[3] + 1)  # wide: first output to last, at width W
        self.step = max(1, WIDE_CHUNK_BYTES // (self.taps * self.span * itemsize))  # samples per chunk
        self.small = x_shape[0] * self.taps * self.span < SPLIT_MIN and x_shape[0] <= self.step


def _plan(x, w, stride, padding, dilation, groups, max_pool) -> _Plan | None:
    """How the numba kernels run this call, or None for the general path."""
    if not _direct_shape(x, w, stride, padding, dilation, groups):
        return None
    oh = x.shape[2] + padding[0] + padding[1] - w.shape[2] + 1
    ow = x.shape[3] + padding[2] + padding[3] - w.shape[3] + 1
    pool = int(max_pool or 0)
    shape = (x.shape[0], w.shape[0], *((oh // pool, ow // pool) if pool else (oh, ow)))
    if w.shape[1] * w.shape[2] * w.shape[3] <= DIRECT_MAX_TAPS:
        kind = "direct"
    elif not any(padding):
        kind = "wide"
    else:
        return None
    return _Plan(kind, x.shape, w.shape, x.dtype, padding, pool, oh, shape)


_plans: dict = {}  # (shapes, dtype, attributes) -> _Plan (or None) for direct calls


def fused_conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None,
                 act_attrs=None, max_pool=None):
    if b is None or act not in (None, "relu"):
        return _ref._fused_conv2d_kernel(x, w, b, stride, padding, dilation, groups, act, act_attrs, max_pool)
    key = (x.shape, w.shape, x.dtype, w.dtype, *stride, *padding, *dilation, groups, max_pool)
    plan = _plans.get(key, False)
    if plan is False:
        if len(_plans) > 256:  # shapes come and go (a varying batch): keep the table small
            _plans.clear()
        plan = _plans[key] = _plan(x, w, stride, padding, dilation, groups, max_pool)
    if plan is None:
        return _general(x, w, b, stride, padding, dilation, groups, act == "relu", max_pool)
    return _run(plan, x, w, b, act == "relu")


def _bind(attrs: dict):
    """``fused_conv2d`` for one program node (see ``oar._graph.executor``): the attributes are read
    once, and what a call needs besides its input (plan, weights as a matrix, checked bias,
    buffers' shapes) is worked out for the last input shape, weights and bias, so that a call does
    little but run the kernels (LeNet at batch 1: the checks and look-ups were a fifth of its
    convolutions' time)."""
    act = attrs.get("act")
    if act not in (None, "relu"):
        return None
    relu = act == "relu"
    stride, padding, dilation = tuple(attrs["stride"]), tuple(attrs["padding"]), tuple(attrs["dilation"])
    groups, max_pool = attrs["groups"], attrs.get("max_pool")
    # (x's shape, x's dtype, w, b, the call): one tuple, read and replaced whole, since threads
    # running parts of a batch share this node (Executor._run_split). w and b are compared by
    # identity: a program's parameters are the same arrays from call to call.
    last = [(None, None, None, None, None)]

    def fused_conv2d_node(x, w, b=None):
        if b is None:
            return fused_conv2d(x, w, b, **attrs)
        known = last[0]
        if x.shape != known[0] or w is not known[2] or b is not known[3] or x.dtype != known[1]:
            plan = _plan(x, w, stride, padding, dilation, groups, max_pool)
            known = last[0] = (x.shape, x.dtype, w, b, _call_for(plan, x, w, b, relu, (stride, padding, dilation,
                                                                                        groups, max_pool)))
        return known[4](x)

    return fused_conv2d_node


def _call_for(plan: _Plan | None, x, w, b, relu: bool, general_attrs: tuple):
    """``call(x)``: the node's convolution of inputs of ``x``'s shape and dtype with this ``w`` and
    ``b``, with everything that does not depend on ``x``'s values decided here."""
    if plan is None:
        return lambda x: _general(x, w, b, *general_attrs[:4], relu, general_attrs[4])
    kept = b.ndim == 1 and b.dtype == x.dtype and b.flags.c_contiguous and w.flags.c_contiguous
    if not kept:  # a converted copy would miss in-place changes of w or b: convert on every call
        return lambda x: _run(plan, x, w, b, relu)
    shape, dtype, top, left, pool = plan.shape, x.dtype, plan.top, plan.left, plan.pool
    if plan.kind == "direct" and max(x.size * 2, math.prod(shape)) < COMPUTE_SERIAL_BELOW:
        def direct(x):
            out = np.empty(shape, dtype)
            _direct_conv(x if x.flags.c_contiguous else np.ascontiguousarray(x), w, b, top, left, relu, pool, out)
            return out

        return direct
    if plan.kind == "wide" and plan.small and plan.blas is not None:
        kh, kw, span, blas = w.shape[2], w.shape[3], plan.span, plan.blas
        weights = w.reshape(w.shape[0], plan.taps)

        def small_wide(x):
            out = np.empty(shape, dtype)
            _wide_here(x if x.flags.c_contiguous else np.ascontiguousarray(x), weights, b, kh, kw, span, relu, pool,
                       out, blas)
            return out

        return small_wide
    return lambda x: _run(plan, x, w, b, relu)


fused_conv2d.bind = _bind
fused_conv2d.batch_parallel = True  # shares of a large batch on numba's threads (oar._graph.executor)


def _run(plan: _Plan, x, w, b, relu: bool):
    bias = b if b.ndim == 1 and b.dtype == x.dtype and b.flags.c_contiguous else \
        np.ascontiguousarray(b, dtype=x.dtype).reshape(-1)
    out = np.empty(plan.shape, x.dtype)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    if not w.flags.c_contiguous:
        w = np.ascontiguousarray(w)
    if plan.kind == "direct":
        parts = 1 if max(x.size * 2, out.size) < COMPUTE_SERIAL_BELOW else min(numba.get_num_threads(), x.shape[0])
        if parts == 1:
            _direct_conv(x, w, bias, plan.top, plan.left, relu, plan.pool, out)
        else:
            _direct_parts(x, w, bias, plan.top, plan.left, relu, plan.pool, parts, out)
    elif plan.small:  # batch 1: this thread, the buffers made once
        o = w.shape[0]
        if plan.blas is not None:
            _wide_here(x, w.reshape(o, plan.taps), bias, w.shape[2], w.shape[3], plan.span, relu, plan.pool, out,
                       plan.blas)
        else:
            c, a = _small_buffers(x.shape[0], plan.taps, o, plan.span, x.dtype)
            _wide_patches.serial(x, w.shape[2], w.shape[3], plan.span, c)
            np.matmul(w.reshape(o, plan.taps), c, out=a)
            _wide_epilogue.serial(a, x.shape[3], bias, relu, plan.pool, out)
    else:
        _wide_conv(plan, x, w, bias, relu, out)
    return out


def _wide_here(x, weights, bias, kh, kw, span, relu, pool, out, blas) -> None:
    """Every sample of ``x`` through ``_wide_block`` on this thread, with this thread's buffers;
    BLAS on one thread for products ``blas_threads_for`` keeps there (one product per sample: OpenBLAS's
    threads gain nothing on them)."""
    o, taps = weights.shape
    c, a = _small_buffers(1, taps, o, span, x.dtype)
    with blas_threads_for(o, taps, span):
        _wide_block(x, weights, bias, kh, kw, span, relu, pool, c, a[0], out, *blas)


def _general(x, w, b, stride, padding, dilation, groups, relu, max_pool):
    """The registered ``conv`` kernel, then bias and relu in one pass over its buffer."""
    bias = np.ascontiguousarray(b, dtype=x.dtype).reshape(-1)
    y = _ref._kernel(_ref.conv_op, x.dtype)(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    if not (y.flags.c_contiguous and y.flags.writeable):
        y = np.ascontiguousarray(y)
    _bias_relu(y.reshape(y.shape[0], y.shape[1], int(np.prod(y.shape[2:]))), bias, relu)  # not -1: N may be 0
    return _ref.pool_output(y, max_pool)


def _wide_conv(plan: _Plan, x, w, bias, relu, out) -> None:
    n, width = x.shape[0], x.shape[3]
    o, taps, span, step = w.shape[0], plan.taps, plan.span, plan.step
    weights = w.reshape(o, taps)
    if plan.blas is not None:  # the whole call in one compiled kernel
        parts = min(numba.get_num_threads(), n) if n * taps * span >= SPLIT_MIN else 1
        if parts > 1:  # a share of the batch per numba thread, each product on one BLAS thread
            with one_blas_thread():
                _wide_parts(x, weights, bias, w.shape[2], w.shape[3], span, relu, plan.pool, parts, out, *plan.blas)
        else:
            _wide_here(x, weights, bias, w.shape[2], w.shape[3], span, relu, plan.pool, out, plan.blas)
        return

    def work(first: int, last: int, threaded: bool) -> None:
        rows = min(last - first, step)
        buffer = scratch("wide_conv", rows * (taps + o) * span, x.dtype)  # per thread: the patches, then the products
        for start in range(first, last, step):
            stop = min(last, start + step)
            c = buffer[:(stop - start) * taps * span].reshape(stop - start, taps, span)
            a = buffer[rows * taps * span:rows * taps * span + (stop - start) * o * span].reshape(stop - start, o, span)
            # a part of a split runs the serial kernels (its thread is the parallelism), as small calls do
            if threaded or c.size < SERIAL_BELOW:
                patches, epilogue = _wide_patches.serial, _wide_epilogue.serial
            else:
                patches, epilogue = _wide_patches.parallel, _wide_epilogue.parallel
            patches(x[start:stop], w.shape[2], w.shape[3], span, c)
            # Per sample [O, taps] @ [taps, span], BLAS. One GEMM of all the chunk's samples side
            # by side (N = samples * span) measured slower: OpenBLAS's packing of the wider B.
            np.matmul(weights, c, out=a)
            epilogue(a, width, bias, relu, plan.pool, out[start:stop])

    if n * taps * span >= SPLIT_MIN:
        # each part runs with numba at one thread (split_samples): its serial kernels, then
        split_samples(lambda first, last: work(first, last, numba.get_num_threads() == 1), n, n * taps * span,
                      min_size=SPLIT_MIN)
    else:
        work(0, n, False)


_small = threading.local()


def _small_buffers(n, taps, o, span, dtype):
    """Per thread, the patches [n, taps, span] and products [n, o, span] of one small call's shape:
    slicing and reshaping a scratch buffer on every call cost more than the patches' copy."""
    cache = _small.__dict__.setdefault("buffers", {})
    key = (n, taps, o, span, dtype)
    found = cache.get(key)
    if found is None:
        if len(cache) > 32:  # shapes come and go (a varying batch): keep the set small
            cache.clear()
        found = cache[key] = (np.empty((n, taps, span), dtype), np.empty((n, o, span), dtype))
    return found


# -- splitting a batch over threads ---------------------------------------------------------------
# The wide convolution's per-sample GEMMs are small (LeNet's: [16, 150] @ [150, 136]), BLAS's
# threads gain little on them, and each chunk's patch copy and epilogue fork and join numba's
# pool around them; the 2-thread suite ran this conv no faster than 1 thread. So with more
# threads the batch is split instead: in shares of samples on numba's threads (_wide_parts), or,
# where BLAS cannot be called from compiled code, over Python threads (_jit.split_samples, which
# training's convs use with a higher bound), each share with the serial kernels and BLAS pinned
# to one thread. Handing work to another thread costs tens of microseconds; below SPLIT_MIN
# elements of patches the calling thread does it all (batch 1 never wakes a thread).
SPLIT_MIN = 1 << 18


# -- fused_elementwise ----------------------------------------------------------------------------
# How each op is written in a compiled loop: its lowering for target "numba" (the plugin registers
# these through oar_register_op_lowerings, in oar's one (target, op) table). A lowering is an
# expression template over the arguments {0}, {1}, ... and the attribute parameters {p0}, {p1}, ...,
# with the attribute names those parameters take and their defaults.
NUMBA = "numba"
LOWERINGS = {
    "add": ("({0} + {1})", ()),
    "subtract": ("({0} - {1})", ()),
    "multiply": ("({0} * {1})", ()),
    "divide": ("({0} / {1})", ()),
    "neg": ("(-{0})", ()),
    "abs": ("abs({0})", ()),
    "relu": ("_relu({0}, zero)", ()),
    "scale": ("_scale({0}, {p0}, {p1}, {p2})", (("scale", 1.0), ("bias", 0.0), ("bias_after_scale", True))),
}
# Ops without a lowering send their chain to the reference kernel: maximum, minimum and clip
# (NaN rules), and the transcendental ones (exp, tanh, sigmoid, ...), which numpy evaluates with
# SIMD and numba (without SVML) one element at a time: a chain with a tanh ran many times slower.


@numba.njit(inline="always")
def _relu(v, zero):
    return zero if v < zero else v  # zero has v's dtype: no float64 on the way; NaN stays NaN


@numba.njit(inline="always")
def _scale(v, s, b, after):
    return v * s + b if after else (v + b) * s


def _step_attr_values(chain) -> list:
    values = []
    for name, _, attrs in chain:
        for attr, default in lowering(NUMBA, name)[1]:
            values.append(attrs.get(attr, default))
    return values


def _source(chain, n_inputs: int, rank: int) -> str:
    """The loop's source: per element, load each input once, one local per step, store the last.

    Every name in it is generated here (``a0``, ``v0``, ``q0``, ``i0``, ...) or comes from a
    template of a ``numba`` lowering; attribute values arrive as the arguments ``q0, q1, ...``."""
    params = 0
    steps = []
    for k, (name, args, _) in enumerate(chain):
        template, attr_names = lowering(NUMBA, name)
        names = {f"p{j}": f"q{params + j}" for j in range(len(attr_names))}
        params += len(attr_names)
        steps.append(f"v{n_inputs + k} = " + template.format(*[f"v{a}" for a in args], **names))
    idx = ", ".join(f"i{d}" for d in range(rank))
    args = ", ".join([f"a{k}" for k in range(n_inputs)] + [f"q{j}" for j in range(params)])
    lines = [f"def loop(out, zero, {args}):"]
    indent = "    "
    for d in range(rank):
        lines.append(f"{indent}for i{d} in {'prange' if d == 0 else 'range'}(out.shape[{d}]):")
        indent += "    "
    lines += [f"{indent}v{k} = a{k}[{idx}]" for k in range(n_inputs)]
    lines += [indent + step for step in steps]
    lines.append(f"{indent}out[{idx}] = v{n_inputs + len(chain) - 1}")
    return "\n".join(lines)


_compiled: dict[tuple, object] = {}


def _loop(chain, n_inputs: int, rank: int):
    # attribute values are arguments of the loop, so chains differing only in them share it
    key = (tuple((name, tuple(args)) for name, args, _ in chain), n_inputs, rank)
    loop = _compiled.get(key)
    if loop is None:
        namespace = {"math": math, "prange": prange, "_relu": _relu, "_scale": _scale}
        exec(compile(_source(chain, n_inputs, rank), "<oar_numba fused_elementwise>", "exec"), namespace)  # noqa: S102
        loop = _compiled[key] = parallel_loop(namespace["loop"])
    return loop


def parallel_loop(fn) -> ParallelKernel:
    """``fn`` compiled as ``_jit.parallel`` compiles, but not cached on disk (generated source
    has no file to key numba's cache on) and without fast-math: a chain has no reduction to
    reassociate, and without contraction (FMA) or reciprocals each step rounds as numpy's ufunc
    does, so a fused program's outputs equal eager's bit for bit."""
    return ParallelKernel(fn, cache=False, fastmath=False)


REFERENCE_BELOW = 1 << 15  # elements of the result; a 3-step broadcast chain broke even at 16-64 thousand


def supports(chain) -> bool:
    """Whether every step of ``chain`` has a ``numba`` lowering (else the reference kernel runs it)."""
    return all(lowering(NUMBA, step[0]) is not None for step in chain)


def _chain_state(chain, n_inputs: int) -> dict:
    """What one chain object needs on every call, made once (``cached_for``): whether it compiles,
    its attribute values in argument order, and its loops by rank (compiled on first use)."""
    ok = supports(chain)
    return {"supported": ok, "params": _step_attr_values(chain) if ok else [], "loops": {}}


def fused_elementwise(*arrays, chain):
    # The product of the inputs' sizes bounds the broadcast result's: below the threshold the
    # reference runs at once, without the checks and broadcasting below (a loop body of a few
    # elements spent half its time in them).
    if math.prod([a.size for a in arrays]) < REFERENCE_BELOW:
        return evaluate_chain(arrays, chain)
    state = cached_for(chain, len(arrays), _chain_state)  # checks the chain once
    if not state["supported"] or not arrays:
        return evaluate_chain(arrays, chain)
    check_dtypes(arrays)
    first = arrays[0]
    shape = first.shape if all(a.shape == first.shape for a in arrays) else \
        np.broadcast_shapes(*(a.shape for a in arrays))
    if math.prod(shape) < REFERENCE_BELOW:  # numpy's few ufunc calls beat numba's call overhead
        return evaluate_chain(arrays, chain)
    dtype = first.dtype
    out = np.empty(shape, dtype)
    if all(a.shape == shape and a.flags.c_contiguous for a in arrays):
        views, rank = [a.reshape(-1) for a in arrays], 1  # one flat loop
        target = out.reshape(-1)
    else:
        views, rank = [np.broadcast_to(a, shape) for a in arrays], len(shape)
        target = out
    loop = state["loops"].get(rank)
    if loop is None:
        loop = state["loops"][rank] = _loop(chain, len(arrays), rank)
    params = [v if isinstance(v, bool) else dtype.type(v) for v in state["params"]]
    loop(target, dtype.type(0), *views, *params)
    return out
