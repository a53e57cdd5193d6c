"""Convolution kernels (1-d and 2-d): im2col and col2im compiled with numba, the GEMMs in BLAS.

The references build the patch matrix with a strided window view whose copy (numpy's generic
strided loop) and the transposes around one large matmul dominate their time, with fresh
multi-MiB buffers (page faults) on every call. Here, without groups and where compiled code can
call numpy's BLAS (``_blas``), ``conv`` and ``conv_weight_grad`` go band by band of output rows,
patches and GEMM in one compiled call (``_conv_bands``, ``_weight_grad_bands``: see
``BAND_BYTES``). Otherwise a chunk of samples (a few MiB of patches, in a buffer the thread
reuses) goes through:

- ``conv``: numba writes the patches ``cols [m, C * K, P]`` (P output positions, each kernel row a
  run of contiguous copies) and BLAS multiplies ``W [O, C * K] @ cols[n]``.
- ``conv_weight_grad``: the same patches, ``dw = sum_n g[n] @ cols[n].T``.
- ``conv_transpose``: ``cols[n] = W.T @ x[n]``, then numba's col2im adds every patch into its
  window of the output, one thread per (sample, channel) plane, so no two threads meet.
- stride 1 without padding (LeNet's second convolution): "wide" patches, one contiguous run per
  tap (below), for all three.

The GEMMs go sample by sample (and group by group) through numpy's batched ``matmul``, straight
into the output's layout: nothing is transposed afterwards. (One GEMM per chunk over
channel-major patches, which gives BLAS's threads fewer forks and joins, measured no faster at
two threads on an idle machine, and slower at one.)

With ``oar.set_num_threads(k > 1)``, ``conv`` and ``conv_weight_grad`` give k threads shares of
whole samples, BLAS and numba at one thread inside (``_jit.split_samples``), instead of forking
BLAS's threads for every per-sample product: one join per call rather than one per product.

Both directions share one index rule: output position ``p`` and kernel offset ``k`` read input
position ``p * stride - pad_before + k * dilation``; a negative ``after`` padding (a crop, which
gradient rules use) needs no care, since no window reaches the cropped part. 1-d convolutions run
as 2-d ones of height 1; 3-d ones go to the reference kernels.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from oar.nn.functional import conv as _ref
from oar.ops import blas_threads_for, one_blas_thread
from oar.profiler import RecordEvent, TracerEventType
from oar_numba import _jit
from oar_numba._blas import gemm, gemm_for, gemm_nt
from oar_numba._jit import always_parallel, parallel, scratch, serial, split_samples, two_ways

CHUNK_BYTES = 4 << 20  # patches of this many bytes (at least one sample's) per chunk
WIDE_CHUNK_BYTES = 512 << 10  # wide patches per chunk: they stay in L2 between the copy and the GEMM
SAME_ADJOINT_MAX_CHANNELS = 32  # see _same_adjoint
SAME_ADJOINT_MIN_CHANNELS = 8
DEPTHWISE_DIRECT_MIN_WIDTH = 56  # output columns from which _depthwise beats im2col at stride 1
POINTWISE_MAX_POSITIONS = 64  # see _pointwise


@numba.njit(inline="always")
def _inside(start, stride, width, size):
    """``(lo, hi)``: the output columns ``ow`` in [lo, hi) of ``size`` whose input column
    ``ow * stride + start`` lies inside [0, width); ``lo == hi`` when none does."""
    lo = 0 if start >= 0 else (-start + stride - 1) // stride
    hi = min(size, (width - start + stride - 1) // stride) if start < width else 0
    lo = min(lo, size)
    return lo, max(lo, hi)


@parallel
def _im2col(x, kh, kw, sh, sw, top, left, dh, dw, cols):
    """cols[n, c, i, j, oh, ow] = x[n, c, oh * sh - top + i * dh, ow * sw - left + j * dw] (0 outside)."""
    batch, channels, height, width = x.shape
    oh_size, ow_size = cols.shape[4], cols.shape[5]
    for nc in prange(batch * channels):
        n, c = nc // channels, nc % channels
        for i in range(kh):
            for j in range(kw):
                start = j * dw - left
                lo, hi = _inside(start, sw, width, ow_size)
                if sh == 1 and sw == 1 and ow_size == width and hi > lo:
                    # Stride 1, rows as wide as the input's: the rows inside the input read it at
                    # one constant offset, so they are copied as one run (memcpy speed) instead of
                    # row by row, whose bookkeeping cost more than the copy with rows of 32 floats
                    # (ResNet's 3x3 block im2col); the few entries that run lands
                    # between windows, and the rows outside the input, are zeroed after.
                    first = min(max(0, top - i * dh), oh_size)
                    stop = min(oh_size, height + top - i * dh)
                    block, plane = cols[n, c, i, j].reshape(-1), x[n, c].reshape(-1)
                    if stop > first:
                        a, b = first * width + lo, (stop - 1) * width + hi
                        offset = start - (top - i * dh) * width
                        block[a:b] = plane[a + offset:b + offset]
                        for row in range(first * width, stop * width, width):
                            for ow in range(lo):
                                block[row + ow] = 0
                            for ow in range(hi, width):
                                block[row + ow] = 0
                    block[:first * width] = 0
                    block[max(first, stop) * width:] = 0
                    continue
                for oh in range(oh_size):
                    h = oh * sh - top + i * dh
                    row = cols[n, c, i, j, oh]
                    if h < 0 or h >= height:
                        row[:] = 0
                        continue
                    row[:lo] = 0
                    row[hi:] = 0
                    src = x[n, c, h]
                    if sw == 1:  # a slice copy, which numba vectorises: 2x on ResNet's 3x3 convs
                        row[lo:hi] = src[lo + start:hi + start]
                    else:
                        for ow in range(lo, hi):
                            row[ow] = src[ow * sw + start]


@parallel
def _col2im(cols, kh, kw, sh, sw, top, left, dh, dw, out):
    """The adjoint of ``_im2col``: out[n, c, ih * sh - top + i * dh, ...] += cols[n, c, i, j, ih, iw]."""
    batch, channels, height, width = out.shape
    ih_size, iw_size = cols.shape[4], cols.shape[5]
    for nc in prange(batch * channels):
        n, c = nc // channels, nc % channels
        for i in range(kh):
            for j in range(kw):
                start = j * dw - left
                lo, hi = _inside(start, sw, width, iw_size)
                for ih in range(ih_size):
                    h = ih * sh - top + i * dh
                    if h < 0 or h >= height:
                        continue
                    row = cols[n, c, i, j, ih]
                    dst = out[n, c, h]
                    if sw == 1:  # unit stride, which LLVM vectorises
                        for iw in range(lo, hi):
                            dst[iw + start] += row[iw]
                    else:
                        for iw in range(lo, hi):
                            dst[iw * sw + start] += row[iw]


# -- bands of output rows: patches and product in one compiled call ------------------------------
# A sample's whole patch matrix (ResNet's 3x3 block conv: [288, 1024], 1.2 MB) leaves L2 before
# its GEMM reads it, and a chunk of several samples (what ``_patches`` makes) leaves it further:
# the same product ran much faster on a band of 8 output rows ([288, 256], 295 KB) that stays in
# cache than on the batch's patches written beforehand (docs/numba.md). So where numpy's BLAS can be called
# from compiled code (``_blas``), a convolution and its weight gradient go band by band: the
# band's patches, then its GEMM, one compiled call for a whole share of samples (one GIL release).
BAND_BYTES = 512 << 10  # a band's patches at most (ResNet's block conv: 11 rows, 396 KB)


@numba.njit(inline="always")
def _band_patches(x, r0, rows, kh, kw, sh, sw, top, left, dh, dw, ow_size, cols):
    """cols[(c, i, j), (oh - r0) * OW + ow] = x[c, oh * sh - top + i * dh, ow * sw - left + j * dw]
    (0 outside) for the output rows ``oh`` in [r0, r0 + rows): a band of one sample's patch matrix
    (x [C, H, W] C-contiguous, cols [C * kh * kw, rows * OW]). The index rule is ``_im2col``'s."""
    channels, height, width = x.shape
    for c in range(channels):
        plane = x[c].reshape(-1)
        for i in range(kh):
            for j in range(kw):
                block = cols[(c * kh + i) * kw + j]
                start = j * dw - left
                lo, hi = _inside(start, sw, width, ow_size)
                if sh == 1 and sw == 1 and ow_size == width and hi > lo:
                    # the band's rows inside the input as one run, as in _im2col (see there)
                    first = min(max(r0, top - i * dh), r0 + rows)
                    stop = max(first, min(r0 + rows, height + top - i * dh))
                    if stop > first:
                        a, b = (first - r0) * width + lo, (stop - 1 - r0) * width + hi
                        run, src = block[a:b], plane[a + (r0 - top + i * dh) * width + start:]
                        for t in range(b - a):  # a loop: a slice assignment copies through a temporary
                            run[t] = src[t]
                        for row in range((first - r0) * width, (stop - r0) * width, width):
                            for ow in range(lo):
                                block[row + ow] = 0
                            for ow in range(hi, width):
                                block[row + ow] = 0
                    for t in range((first - r0) * width):
                        block[t] = 0
                    for t in range((stop - r0) * width, rows * width):
                        block[t] = 0
                    continue
                for q in range(rows):
                    h = (r0 + q) * sh - top + i * dh
                    row = block[q * ow_size:(q + 1) * ow_size]
                    if h < 0 or h >= height:
                        for ow in range(ow_size):
                            row[ow] = 0
                        continue
                    for ow in range(lo):
                        row[ow] = 0
                    for ow in range(hi, ow_size):
                        row[ow] = 0
                    src = x[c, h]
                    if sw == 1:
                        run = src[lo + start:hi + start]
                        for ow in range(hi - lo):
                            row[lo + ow] = run[ow]
                    else:
                        for ow in range(lo, hi):
                            row[ow] = src[ow * sw + start]


@serial
def _conv_bands(x, weights, kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band, buffer, y, address,
                int_kind):
    """y[n, :, band's positions] = weights @ the band's patches, sample after sample and band
    after band (x [N, C, H, W], weights [O, taps], y [N, O, OH * OW], ``buffer`` at least
    taps * band * OW elements)."""
    taps = weights.shape[1]
    for n in range(x.shape[0]):
        for r0 in range(0, oh_size, band):
            rows = min(band, oh_size - r0)
            cols = buffer[:taps * rows * ow_size].reshape(taps, rows * ow_size)
            _band_patches(x[n], r0, rows, kh, kw, sh, sw, top, left, dh, dw, ow_size, cols)
            gemm(address, int_kind, weights, cols, y[n, :, r0 * ow_size:(r0 + rows) * ow_size], 0.0)


@serial
def _weight_grad_bands(x, g, kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band, buffer, dw_t, address,
                       int_kind):
    """dw_t [taps, O] += the band's patches @ g's band transposed, over every sample and band of
    output rows (g [N, O, OH * OW]): the long side (taps) as the GEMM's rows, as ``conv_weight_grad``."""
    taps = dw_t.shape[0]
    for n in range(x.shape[0]):
        for r0 in range(0, oh_size, band):
            rows = min(band, oh_size - r0)
            cols = buffer[:taps * rows * ow_size].reshape(taps, rows * ow_size)
            _band_patches(x[n], r0, rows, kh, kw, sh, sw, top, left, dh, dw, ow_size, cols)
            gemm_nt(address, int_kind, cols, g[n, :, r0 * ow_size:(r0 + rows) * ow_size], dw_t, 1.0)


@always_parallel
def _conv_band_parts(x, weights, kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band, parts, y, address,
                     int_kind):
    """``_conv_bands`` over ``parts`` shares of the samples, one per numba thread, each with its
    own buffer. At 2 threads the ResNet block conv ran faster this way than in shares over Python
    threads (``split_samples``; docs/numba.md)."""
    n = x.shape[0]
    for part in prange(parts):
        buffer = np.empty(weights.shape[1] * band * ow_size, x.dtype)
        first, last = n * part // parts, n * (part + 1) // parts
        _conv_bands(x[first:last], weights, kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band, buffer,
                    y[first:last], address, int_kind)


@always_parallel
def _weight_grad_band_parts(x, g, kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band, sums, address,
                            int_kind):
    """``_weight_grad_bands`` over ``len(sums)`` shares of the samples, one per numba thread, each
    into its own partial sum ``sums[part]`` [taps, O] (added up by the caller)."""
    n, parts = x.shape[0], sums.shape[0]
    for part in prange(parts):
        buffer = np.empty(sums.shape[1] * band * ow_size, x.dtype)
        first, last = n * part // parts, n * (part + 1) // parts
        _weight_grad_bands(x[first:last], g[first:last], kh, kw, sh, sw, top, left, dh, dw, oh_size, ow_size, band,
                           buffer, sums[part], address, int_kind)


def _band_parts(n: int, size: int) -> int:
    """Shares of the samples for the band kernels: one per numba thread where the call touches
    at least ``_jit.SPLIT_BELOW`` elements of patches (``size``), else 1 (this thread alone)."""
    return min(numba.get_num_threads(), n) if size >= _jit.SPLIT_BELOW else 1


def _band_rows(taps: int, ow: int, oh: int, itemsize: int) -> int:
    """Output rows per band: patches of at most ``BAND_BYTES`` (one row at least), in bands of
    nearly equal height (32 rows at 14 a band: 11, 11, 10, not 14, 14, 4)."""
    most = max(1, min(oh, BAND_BYTES // (taps * ow * itemsize)))
    return -(-oh // -(-oh // most))


# -- wide patches: stride-1 convolutions without padding -----------------------------------------
# Row (c, i, j) of a sample's "wide" patch matrix is the one contiguous run of x[c] that starts at
# (i, j), as long as the output's rows laid at the input's width W: span = (OH - 1) * W + OW
# columns, output position (oh, ow) at column oh * W + ow. The W - OW columns between two output
# rows are computed and dropped (forward) or fed zeros (gradients): some more GEMM work for one
# run copy per tap instead of one per tap and output row. On LeNet's second convolution (rows of
# 10 floats) all three run in about half the im2col kernels' time (docs/numba.md).
@two_ways
def _wide_patches(x, kh, kw, span, cols):
    """cols[n, (c, i, j), :] = x[n, c].flat[i * W + j:][:span]: one contiguous run per tap."""
    batch, channels = x.shape[0], x.shape[1]
    width = x.shape[3]
    for n in prange(batch):
        plane = x[n].reshape(channels, -1)
        for c in range(channels):
            for i in range(kh):
                for j in range(kw):
                    src = plane[c, i * width + j:i * width + j + span]
                    dst = cols[n, (c * kh + i) * kw + j]
                    for t in range(span):  # a loop: a slice assignment copies through a temporary when serial
                        dst[t] = src[t]


@two_ways
def _wide_add(cols, kh, kw, width, out):
    """The adjoint of ``_wide_patches``: out[n, c].flat[i * W + j:][:span] += cols[n, (c, i, j)];
    one thread per (sample, channel) plane, so no two threads meet."""
    batch, channels = out.shape[0], out.shape[1]
    span = cols.shape[2]
    for nc in prange(batch * channels):
        n, c = nc // channels, nc % channels
        plane = out[n, c]
        for i in range(kh):
            for j in range(kw):
                src = cols[n, (c * kh + i) * kw + j]
                dst = plane[i * width + j:i * width + j + span]
                for t in range(span):
                    dst[t] += src[t]


def _wide(ndim, kernel, stride, padding, dilation, groups) -> bool:
    """Whether a convolution (or its transpose) runs on wide patches: 2-d, stride 1, no padding,
    dilation or groups, and kernel rows wider than one (else im2col copies whole runs already)."""
    return (ndim == 4 and groups == 1 and kernel[1] > 1 and all(s == 1 for s in stride)
            and all(d == 1 for d in dilation) and not any(padding))


def _wide_chunks(x, first, last, kh, kw, span):
    """(start, stop, cols [stop - start, C * kh * kw, span]) over samples [first, last), in chunks
    that stay in L2, in one scratch buffer of this thread."""
    taps = x.shape[1] * kh * kw
    step = max(1, WIDE_CHUNK_BYTES // (taps * span * x.itemsize))
    buffer = scratch("wide_patches", min(step, last - first) * taps * span, x.dtype)
    for start in range(first, last, step):
        stop = min(last, start + step)
        cols = buffer[:(stop - start) * taps * span].reshape(stop - start, taps, span)
        _wide_patches.serial(x[start:stop], kh, kw, span, cols)  # a copy: memory-bound, no threads
        yield start, stop, cols


def _spread(g, width: int, span: int) -> np.ndarray:
    """g [N, O, H, OW] laid at row width ``width`` >= OW, zeros between the rows: [N, O, span]."""
    n, o, h, w = g.shape
    wide = np.zeros((n, o, h, width), g.dtype)
    wide[..., :w] = g
    return wide.reshape(n, o, h * width)[:, :, :span]


def _wide_conv(x, w):
    n, c, height, width = x.shape
    o, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    oh, ow = height - kh + 1, width - kw + 1
    span = (oh - 1) * width + ow
    weights = np.ascontiguousarray(w).reshape(o, -1)
    y = np.empty((n, o, oh, ow), x.dtype)

    def samples(first, last):
        with blas_threads_for(o, c * kh * kw, span):  # small per-sample products: see oar._engine.threads
            for start, stop, cols in _wide_chunks(x, first, last, kh, kw, span):
                # the products at full rows (oh * W columns): dropping each row's tail is a reshape
                products = scratch("wide_products", (stop - start) * o * oh * width, x.dtype)
                products = products.reshape(stop - start, o, oh * width)
                np.matmul(weights, cols, out=products[:, :, :span])
                y[start:stop] = products.reshape(stop - start, o, oh, width)[..., :ow]

    split_samples(samples, n, n * c * kh * kw * span)
    return y


def _wide_weight_grad(x, g, kh, kw):
    n, c, _, width = x.shape
    o, oh, ow = g.shape[1:]
    span = (oh - 1) * width + ow
    grads = _spread(g, width, span).transpose(0, 2, 1)  # [N, span, O]
    partial_sums = {}  # per part of the samples (see split_samples), added up after

    def samples(first, last):
        dw_t = partial_sums[first] = np.zeros((c * kh * kw, o), x.dtype)
        with blas_threads_for(c * kh * kw, span, o):
            for start, stop, cols in _wide_chunks(x, first, last, kh, kw, span):
                dw_t += np.matmul(cols, grads[start:stop]).sum(axis=0)

    split_samples(samples, n, n * c * kh * kw * span)
    dw_t = sum(partial_sums[first] for first in sorted(partial_sums))
    return np.ascontiguousarray(dw_t.T).reshape(o, c, kh, kw)


def _wide_transpose(x, w):
    """The full transposed convolution (stride 1, no padding): a convolution's input gradient."""
    n, o, ih, iw = x.shape
    c, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    height, width = ih + kh - 1, iw + kw - 1
    span = (ih - 1) * width + iw
    taps = c * kh * kw
    inputs = _spread(x, width, span)
    weights_t = np.ascontiguousarray(w.reshape(o, taps).T)  # [C * kh * kw, O]
    y = np.zeros((n, c, height * width), x.dtype)
    step = max(1, WIDE_CHUNK_BYTES // (taps * span * x.itemsize))

    def samples(first, last):
        buffer = scratch("wide_patches", min(step, last - first) * taps * span, x.dtype)
        with blas_threads_for(taps, o, span):
            for start in range(first, last, step):
                stop = min(last, start + step)
                cols = buffer[:(stop - start) * taps * span].reshape(stop - start, taps, span)
                np.matmul(weights_t, inputs[start:stop], out=cols)
                _wide_add.serial(cols, kh, kw, width, y[start:stop])

    split_samples(samples, n, n * taps * span)
    return y.reshape(n, c, height, width)


# -- pointwise: 1x1 convolutions on small maps ------------------------------------------------------
# A 1x1 convolution is one product per sample, [O, C] @ [C, H * W]: on MobileNetV2's last maps
# (1x1 to 4x4 at CIFAR size) a few columns each, 32 calls of BLAS's fixed cost per layer. With
# the samples' positions side by side it is one product, [O, C] @ [C, N * H * W], for two
# transposed copies: 2.1 -> 0.17 ms for 960 -> 160 channels at 1x1, even at 7x7, slower from
# 16x16 (docs/numba.md).
def _pointwise(x, kernel, stride, padding, dilation, groups) -> bool:
    """Whether a convolution (or a gradient of one) is 1x1, stride 1, unpadded, without groups,
    on a map of at most ``POINTWISE_MAX_POSITIONS`` positions."""
    return (x.ndim == 4 and groups == 1 and tuple(kernel) == (1, 1) and all(s == 1 for s in stride)
            and not any(padding) and x.shape[2] * x.shape[3] <= POINTWISE_MAX_POSITIONS)


def _positions_side_by_side(a):
    """[N, C, H, W] -> [C, N * H * W]."""
    n, c = a.shape[:2]
    if a.shape[2] * a.shape[3] == 1:
        return np.ascontiguousarray(a.reshape(n, c).T)
    return np.ascontiguousarray(a.reshape(n, c, -1).transpose(1, 0, 2)).reshape(c, -1)


def _samples_again(a2, n, height, width):
    """The inverse of ``_positions_side_by_side``: [C, N * H * W] -> [N, C, H, W]."""
    c = a2.shape[0]
    return np.ascontiguousarray(a2.reshape(c, n, height * width).transpose(1, 0, 2)).reshape(n, c, height, width)


def _pointwise_conv(x, w):
    n, _, height, width = x.shape
    with blas_threads_for(w.shape[0], x.shape[1], n * height * width):
        y2 = np.matmul(w.reshape(w.shape[0], -1), _positions_side_by_side(x))
    return _samples_again(y2, n, height, width)


def _pointwise_weight_grad(x, g):
    with blas_threads_for(g.shape[1], x.shape[0] * x.shape[2] * x.shape[3], x.shape[1]):
        dw = np.matmul(_positions_side_by_side(g), _positions_side_by_side(x).T)
    return dw.reshape(g.shape[1], x.shape[1], 1, 1)


def _pointwise_transpose(g, w):
    """A 1x1 convolution's input gradient: [C, O] @ g's positions side by side."""
    n, _, height, width = g.shape
    with blas_threads_for(w.shape[1], w.shape[0], n * height * width):
        x2 = np.matmul(w.reshape(w.shape[0], -1).T, _positions_side_by_side(g))
    return _samples_again(x2, n, height, width)


# -- one output position: the window inside the input, one product ---------------------------------
# ResNet18's last stage at CIFAR size: 3x3 convolutions of 512 channels, padding 1, on 1x1 maps.
# Each sample's patch is its whole (padded) map, of which only the taps inside the input count
# (the centre one): one product over every sample of those taps' inputs, [N, C * taps] @
# [C * taps, O], instead of a GEMV per sample over all nine (33 -> ~1 ms a call; docs/numba.md).
def _taps_inside(kernel, padding, dilation, size):
    """``(taps, reads)``: the taps of a kernel dim whose one output position reads inside
    [0, size), and the input positions they read, as two slices; None when no tap does."""
    inside = [i for i in range(kernel) if 0 <= i * dilation - padding < size]
    if not inside:
        return None
    first, last = inside[0], inside[-1]
    return slice(first, last + 1), slice(first * dilation - padding, last * dilation - padding + 1, dilation)


def _single_position(x, kernel, padding, dilation, groups, out_positions: int):
    """(taps, reads) per spatial dim when a 2-d convolution without groups has one output position
    (for ``conv_transpose``: one input position), else None."""
    if x.ndim != 4 or groups != 1 or out_positions != 1:
        return None
    rows = _taps_inside(kernel[0], padding[0], dilation[0], x.shape[2])
    cols = _taps_inside(kernel[1], padding[2], dilation[1], x.shape[3])
    return None if rows is None or cols is None else (rows, cols)


def _single_position_conv(x, w, window):
    (taps_h, reads_h), (taps_w, reads_w) = window
    patches = np.ascontiguousarray(x[:, :, reads_h, reads_w]).reshape(x.shape[0], -1)
    weights = np.ascontiguousarray(w[:, :, taps_h, taps_w]).reshape(w.shape[0], -1)
    with blas_threads_for(*patches.shape, weights.shape[0]):
        return np.matmul(patches, weights.T).reshape(x.shape[0], w.shape[0], 1, 1)


def _single_position_weight_grad(x, g, kernel, window):
    (taps_h, reads_h), (taps_w, reads_w) = window
    patches = np.ascontiguousarray(x[:, :, reads_h, reads_w]).reshape(x.shape[0], -1)
    grads = g.reshape(g.shape[0], g.shape[1])
    dw = np.zeros((g.shape[1], x.shape[1], *kernel), x.dtype)
    with blas_threads_for(grads.shape[1], grads.shape[0], patches.shape[1]):
        inside = np.matmul(grads.T, patches)
    dw[:, :, taps_h, taps_w] = inside.reshape(g.shape[1], x.shape[1], taps_h.stop - taps_h.start,
                                              taps_w.stop - taps_w.start)
    return dw


def _single_position_transpose(g, w, window, out):
    """The transposed convolution of g [N, C, 1, 1] by w [C, O, kh, kw]: each sample's one input
    position spread through the taps that land inside the output."""
    (taps_h, reads_h), (taps_w, reads_w) = window
    weights = np.ascontiguousarray(w[:, :, taps_h, taps_w])
    n, o = g.shape[0], w.shape[1]
    with blas_threads_for(n, g.shape[1], weights[0].size):
        spread = np.matmul(g.reshape(n, -1), weights.reshape(w.shape[0], -1))
    y = np.zeros((n, o, *out), g.dtype)
    y[:, :, reads_h, reads_w] = spread.reshape(n, o, *weights.shape[2:])
    return y


# -- gathered: every sample's patches in one product ------------------------------------------------
# Band by band, each sample's product reads the whole weight matrix: cheap where a sample has many
# output positions, dominant where it has few and the weights are large (ResNet18's 3x3
# convolutions of 256 and 512 channels on 2x2 to 7x7 maps: 8 to 33 ms a call). There every
# sample's patches go side by side, [C * kh * kw, N * OH * OW] (one strided numpy copy), into one
# product that reads the weights once (docs/numba.md).
GATHERED_MIN_WEIGHTS_PER_POSITION = 2048  # O * C * kh * kw over OH * OW from which gathering wins


def _gathered(x, w_shape, padding, groups, out_positions: int) -> bool:
    """Whether a 2-d convolution without groups (padding not negative) has a weight matrix that
    is large next to its output positions."""
    return (x.ndim == 4 and groups == 1 and min(padding) >= 0
            and math.prod(w_shape) >= GATHERED_MIN_WEIGHTS_PER_POSITION * out_positions)


def _gathered_patches(x, kernel, stride, padding, dilation):
    """Every sample's patches side by side, [C * kh * kw, N * OH * OW], and (OH, OW)."""
    top, bottom, left, right = padding
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right))) if any(padding) else x
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    windows = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=(2, 3))
    windows = windows[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]  # [N, C, OH, OW, kh, kw]
    n, c, oh, ow = windows.shape[:4]
    cols = np.ascontiguousarray(windows.transpose(1, 4, 5, 0, 2, 3)).reshape(c * kernel[0] * kernel[1], n * oh * ow)
    return cols, (oh, ow)


def _gathered_conv(x, w, stride, padding, dilation):
    cols, out_hw = _gathered_patches(x, w.shape[2:], stride, padding, dilation)
    with blas_threads_for(w.shape[0], cols.shape[0], cols.shape[1]):
        y2 = np.matmul(np.ascontiguousarray(w).reshape(w.shape[0], -1), cols)
    return _samples_again(y2, x.shape[0], *out_hw)


def _gathered_weight_grad(x, g, kernel, stride, padding, dilation):
    cols, _ = _gathered_patches(x, kernel, stride, padding, dilation)
    with blas_threads_for(g.shape[1], cols.shape[1], cols.shape[0]):
        dw = np.matmul(_positions_side_by_side(g), cols.T)
    return dw.reshape(g.shape[1], x.shape[1], *kernel)


def _gathered_transpose(x, w, stride, padding, dilation, out):
    """The transposed convolution of x [N, C, IH, IW] by w [C, O, kh, kw] (no groups): one
    product for every sample's input positions, then col2im."""
    n, c, ih, iw = x.shape
    o, kernel = w.shape[1], w.shape[2:]
    weights_t = np.ascontiguousarray(np.ascontiguousarray(w).reshape(c, -1).T)  # [O * kh * kw, C]
    with blas_threads_for(weights_t.shape[0], c, n * ih * iw):
        cols2 = np.matmul(weights_t, _positions_side_by_side(x))  # [O * K, N * IH * IW]
    cols = np.ascontiguousarray(cols2.reshape(-1, n, ih * iw).transpose(1, 0, 2)).reshape(n, o, *kernel, ih, iw)
    y = np.zeros((n, o, *out), x.dtype)
    _col2im(cols, *kernel, *stride, padding[0], padding[2], *dilation, y)
    return y


def _as_2d(x, kernel, stride, padding, dilation):
    """A 1-d problem as a 2-d one of height 1: (x4, kernel, stride, (top, left), dilation)."""
    if x.ndim == 3:
        return (np.ascontiguousarray(x)[:, :, None, :], (1, kernel[0]), (1, stride[0]), (0, padding[0]),
                (1, dilation[0]))
    return np.ascontiguousarray(x), tuple(kernel), tuple(stride), (padding[0], padding[2]), tuple(dilation)


def _sample_chunks(n: int, bytes_per_sample: int) -> list[tuple[int, int]]:
    step = max(1, CHUNK_BYTES // max(bytes_per_sample, 1))
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _patches(x4, kernel, stride, pads, dilation, out_hw, chunks):
    """Per chunk of samples: (start, stop, cols [stop - start, C, kh, kw, OH, OW]), in one scratch buffer."""
    per_sample = x4.shape[1] * kernel[0] * kernel[1] * out_hw[0] * out_hw[1]
    buffer = scratch("patches", per_sample * (chunks[0][1] - chunks[0][0]), x4.dtype)
    for start, stop in chunks:
        cols = buffer[:per_sample * (stop - start)].reshape(stop - start, x4.shape[1], *kernel, *out_hw)
        _im2col(x4[start:stop], *kernel, *stride, *pads, *dilation, cols)
        yield start, stop, cols


@parallel
def _depthwise(x, w, sh, sw, top, left, dh, dw, y):
    """y [N, C, OH, OW] = each channel of x [N, C, H, W] correlated with its own filter w [C, kh, kw],
    one (sample, channel) plane per thread: every tap added along an output row (views indexed
    from 0, so the loop has no negative-index wrap and vectorises at stride 1)."""
    n, c, height, width = x.shape
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = y.shape[2], y.shape[3]
    for plane in prange(n * c):
        s, ch = plane // c, plane % c
        for r in range(oh):
            acc = y[s, ch, r]  # the output row itself (no buffer to allocate per plane: 1x1 maps have many)
            acc[:] = 0
            for i in range(kh):
                h = r * sh - top + i * dh
                if h < 0 or h >= height:
                    continue
                for j in range(kw):
                    tap = w[ch, i, j]
                    start = j * dw - left
                    lo, hi = _inside(start, sw, width, ow)
                    dst = acc[lo:hi]
                    if sw == 1:
                        src = x[s, ch, h, lo + start:hi + start]
                        for q in range(hi - lo):
                            dst[q] += tap * src[q]
                    else:
                        src = x[s, ch, h]
                        for q in range(hi - lo):
                            dst[q] += tap * src[(q + lo) * sw + start]


@parallel
def _depthwise_input_grad(g, w, sh, sw, top, left, dh, dw, out):
    """out [N, C, H, W] += the input gradient of ``_depthwise`` (out zeroed by the caller): each
    output gradient row scattered back through every tap, one (sample, channel) plane per thread."""
    n, c, height, width = out.shape
    kh, kw = w.shape[1], w.shape[2]
    oh, ow = g.shape[2], g.shape[3]
    for plane in prange(n * c):
        s, ch = plane // c, plane % c
        for r in range(oh):
            grads = g[s, ch, r]
            for i in range(kh):
                h = r * sh - top + i * dh
                if h < 0 or h >= height:
                    continue
                dst = out[s, ch, h]
                for j in range(kw):
                    tap = w[ch, i, j]
                    start = j * dw - left
                    lo, hi = _inside(start, sw, width, ow)
                    if sw == 1:
                        run = dst[lo + start:hi + start]
                        for q in range(hi - lo):
                            run[q] += tap * grads[q + lo]
                    else:
                        for q in range(lo, hi):
                            dst[q * sw + start] += tap * grads[q]


# Channels-last depthwise kernels, for maps up to 28x28 (MobileNetV2's later stages, at any input
# size): there a plane's rows are short and the loops above pay their per-row, per-tap setup
# for each, while with the channels innermost the loop over the channels is long and vectorises
# (8x192x28x28: 7.8 -> 5.1 ms, 8x960x7x7: 5.4 -> 1.2 ms; docs/numba.md). The two transposed
# copies cost more than they save on the large early maps, which keep the loops above.
CHANNELS_LAST_MAX_POSITIONS = 784  # output positions of a plane (28x28)


@parallel
def _depthwise_nhwc(x, w, sh, sw, top, left, dh, dw, y):
    """y [N, OH, OW, C] = each channel of x [N, H, W, C] correlated with its filter w [kh, kw, C],
    one output row of one sample per task."""
    n, height, width, c = x.shape
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = y.shape[1], y.shape[2]
    for row in prange(n * oh):
        s, r = row // oh, row % oh
        for q in range(ow):
            acc = y[s, r, q]
            acc[:] = 0
            for i in range(kh):
                h = r * sh - top + i * dh
                if h < 0 or h >= height:
                    continue
                for j in range(kw):
                    col = q * sw - left + j * dw
                    if col < 0 or col >= width:
                        continue
                    src, tap = x[s, h, col], w[i, j]
                    for k in range(c):
                        acc[k] += tap[k] * src[k]


@parallel
def _depthwise_nhwc_input_grad(g, w, sh, sw, top, left, dh, dw, out):
    """out [N, H, W, C] += the input gradient of ``_depthwise_nhwc`` (out zeroed by the caller),
    one sample per task (its windows overlap, another sample's do not)."""
    n, oh, ow, c = g.shape
    height, width = out.shape[1], out.shape[2]
    kh, kw = w.shape[0], w.shape[1]
    for s in prange(n):
        for r in range(oh):
            for q in range(ow):
                grads = g[s, r, q]
                for i in range(kh):
                    h = r * sh - top + i * dh
                    if h < 0 or h >= height:
                        continue
                    for j in range(kw):
                        col = q * sw - left + j * dw
                        if col < 0 or col >= width:
                            continue
                        dst, tap = out[s, h, col], w[i, j]
                        for k in range(c):
                            dst[k] += tap[k] * grads[k]


@parallel
def _depthwise_nhwc_weight_grad(x, g, sh, sw, top, left, dh, dw, sums):
    """sums [parts, kh, kw, C]: part k's share of the samples' products of g [N, OH, OW, C] with
    the inputs each tap read (x [N, H, W, C]); the caller adds the parts up."""
    n, height, width, c = x.shape
    oh, ow = g.shape[1], g.shape[2]
    parts, kh, kw = sums.shape[0], sums.shape[1], sums.shape[2]
    for part in prange(parts):
        acc = sums[part]
        for s in range(n * part // parts, n * (part + 1) // parts):
            for r in range(oh):
                for q in range(ow):
                    grads = g[s, r, q]
                    for i in range(kh):
                        h = r * sh - top + i * dh
                        if h < 0 or h >= height:
                            continue
                        for j in range(kw):
                            col = q * sw - left + j * dw
                            if col < 0 or col >= width:
                                continue
                            src, dst = x[s, h, col], acc[i, j]
                            for k in range(c):
                                dst[k] += grads[k] * src[k]


def _channels_last(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _channels_first(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _depthwise_channels_last(x, w, stride, padding, dilation, out_hw):
    y = np.empty((x.shape[0], *out_hw, x.shape[1]), x.dtype)
    _depthwise_nhwc(_channels_last(x), np.ascontiguousarray(w[:, 0].transpose(1, 2, 0)), stride[0], stride[1],
                    padding[0], padding[2], dilation[0], dilation[1], y)
    return _channels_first(y)


def _depthwise_weight_grad_channels_last(x, g, kernel, stride, padding, dilation):
    parts = min(numba.get_num_threads(), x.shape[0])
    sums = np.zeros((parts, *kernel, x.shape[1]), x.dtype)
    _depthwise_nhwc_weight_grad(_channels_last(x), _channels_last(g), stride[0], stride[1], padding[0], padding[2],
                                dilation[0], dilation[1], sums)
    return np.ascontiguousarray(sums.sum(axis=0).transpose(2, 0, 1)).reshape(x.shape[1], 1, *kernel)


def _depthwise_input_grad_channels_last(g, w, stride, padding, dilation, out):
    dx = np.zeros((g.shape[0], *out, g.shape[1]), g.dtype)
    _depthwise_nhwc_input_grad(_channels_last(g), np.ascontiguousarray(w[:, 0].transpose(1, 2, 0)), stride[0],
                               stride[1], padding[0], padding[2], dilation[0], dilation[1], dx)
    return _channels_first(dx)


def _is_depthwise(channels: int, w, groups: int, dtype) -> bool:
    """One filter per channel (``w`` [C, 1, kh, kw], groups == C), 2-d, one dtype."""
    return groups == channels == w.shape[0] and w.ndim == 4 and w.shape[1] == 1 and w.dtype == dtype


def _direct_depthwise(x, w, stride, groups, out_w: int) -> bool:
    """Whether a convolution is depthwise (one filter per channel) with output rows long enough, or
    a stride, for ``_depthwise`` to beat im2col and its per-channel products (docs/numba.md)."""
    return (x.ndim == 4 and _is_depthwise(x.shape[1], w, groups, x.dtype)
            and (stride[0] > 1 or stride[1] > 1 or out_w >= DEPTHWISE_DIRECT_MIN_WIDTH))


def conv(x, w, stride, padding, dilation, groups):
    return _conv(x, w, stride, padding, dilation, groups, None)


def conv_bands(x, w, stride, padding, dilation, groups):
    """``conv`` band by band where it can (no groups, numpy's BLAS), else as ``conv`` chooses:
    an alternative for ``oar.incubate.autotune``, as are ``conv_im2col`` and ``conv_weight_grad_*``."""
    return _conv(x, w, stride, padding, dilation, groups, "bands")


def conv_im2col(x, w, stride, padding, dilation, groups):
    return _conv(x, w, stride, padding, dilation, groups, "im2col")


def _conv(x, w, stride, padding, dilation, groups, path):
    """The convolution by ``path`` ("pointwise", "channels_last" or "direct" for depthwise, "single",
    "gathered", "wide", "bands", "im2col"), or, where that path does not apply or is None, by the
    one the measured rules pick (docs/numba.md)."""
    if x.ndim not in (3, 4) or x.size == 0 or w.size == 0:
        return _ref._conv_kernel(x, w, stride, padding, dilation, groups)
    out = _ref.conv_sizes("conv", x.shape[2:], w.shape[2:], stride, padding, dilation)
    blas = gemm_for(x.dtype) if groups == 1 and x.dtype == w.dtype else None
    depthwise = x.ndim == 4 and _is_depthwise(x.shape[1], w, groups, x.dtype)
    applies = {"pointwise": _pointwise(x, w.shape[2:], stride, padding, dilation, groups) and x.dtype == w.dtype,
               "channels_last": depthwise and math.prod(out) <= CHANNELS_LAST_MAX_POSITIONS,
               "direct": depthwise and _direct_depthwise(x, w, stride, groups, out[-1]),
               "single": x.dtype == w.dtype and _single_position(x, w.shape[2:], padding, dilation, groups,
                                                                  math.prod(out)) is not None,
               "gathered": x.dtype == w.dtype and _gathered(x, w.shape, padding, groups, math.prod(out)),
               "wide": _wide(x.ndim, w.shape[2:], stride, padding, dilation, groups) and x.dtype == w.dtype,
               "bands": blas is not None, "im2col": True}
    if not applies.get(path, False):
        path = next(p for p, ok in applies.items() if ok)
    with RecordEvent(f"conv: numba.{path}", TracerEventType.Kernel):  # the path, in a profile's Kernel Summary
        return _conv_by(path, x, w, stride, padding, dilation, groups, out, blas)


def _conv_by(path, x, w, stride, padding, dilation, groups, out, blas):
    if path == "pointwise":
        return _pointwise_conv(x, w)
    if path == "single":
        return _single_position_conv(x, w, _single_position(x, w.shape[2:], padding, dilation, groups, 1))
    if path == "gathered":
        return _gathered_conv(x, w, stride, padding, dilation)
    if path == "channels_last":
        return _depthwise_channels_last(x, w, stride, padding, dilation, out)
    if path == "direct":
        y = np.empty((x.shape[0], x.shape[1], *out), x.dtype)
        _depthwise(np.ascontiguousarray(x), np.ascontiguousarray(w).reshape(w.shape[0], *w.shape[2:]),
                   stride[0], stride[1], padding[0], padding[2], dilation[0], dilation[1], y)
        return y
    if path == "wide":
        return _wide_conv(np.ascontiguousarray(x), w)
    x4, kernel, stride2, pads, dilation2 = _as_2d(x, w.shape[2:], stride, padding, dilation)
    out_hw = (1, out[0]) if x.ndim == 3 else out
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    positions = out_hw[0] * out_hw[1]
    if path == "bands":  # band by band, in compiled code (see BAND_BYTES)
        weights2 = np.ascontiguousarray(w).reshape(o, -1)
        taps = weights2.shape[1]
        band = _band_rows(taps, out_hw[1], out_hw[0], x.itemsize)
        y3 = np.empty((n, o, positions), x.dtype)
        parts = _band_parts(n, n * taps * positions)
        if parts > 1:
            with one_blas_thread():
                _conv_band_parts(x4, weights2, *kernel, *stride2, *pads, *dilation2, *out_hw, band, parts, y3, *blas)
        else:
            buffer = scratch("band_patches", taps * band * out_hw[1], x.dtype)
            with blas_threads_for(o, taps, band * out_hw[1]):
                _conv_bands(x4, weights2, *kernel, *stride2, *pads, *dilation2, *out_hw, band, buffer, y3, *blas)
        return y3.reshape(n, o, *out)
    weights = np.ascontiguousarray(w).reshape(groups, o // groups, -1)  # [G, O/G, C/G * K]
    y = np.empty((n, groups, o // groups, positions), x.dtype)

    def samples(first, last):
        chunks = _sample_chunks(last - first, c * kernel[0] * kernel[1] * positions * x.itemsize)
        for start, stop, cols in _patches(x4[first:last], kernel, stride2, pads, dilation2, out_hw, chunks):
            np.matmul(weights, cols.reshape(stop - start, groups, -1, positions), out=y[first + start:first + stop])

    split_samples(samples, n, n * c * kernel[0] * kernel[1] * positions)
    return y.reshape(n, o, *out)


def conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups, None)


def conv_weight_grad_bands(x, g, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups, "bands")


def conv_weight_grad_channels_last(x, g, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups, "channels_last")


def conv_weight_grad_im2col(x, g, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups, "im2col")


def _conv_weight_grad(x, g, kernel_size, stride, padding, dilation, groups, path):
    """The weight gradient by ``path`` ("pointwise", "channels_last" for depthwise, "single", "gathered",
    "wide", "bands", "im2col") where it
    applies, as ``_conv``."""
    if x.ndim not in (3, 4) or x.size == 0 or g.size == 0:
        return _ref._conv_weight_grad_kernel(x, g, kernel_size, stride, padding, dilation, groups)
    blas = gemm_for(x.dtype) if groups == 1 and x.dtype == g.dtype else None
    applies = {"pointwise": _pointwise(x, kernel_size, stride, padding, dilation, groups) and x.dtype == g.dtype,
               "channels_last": x.ndim == 4 and groups == x.shape[1] == g.shape[1] and x.dtype == g.dtype
               and math.prod(g.shape[2:]) <= CHANNELS_LAST_MAX_POSITIONS,
               "single": x.dtype == g.dtype and _single_position(x, kernel_size, padding, dilation, groups,
                                                                  math.prod(g.shape[2:])) is not None,
               "gathered": x.dtype == g.dtype and _gathered(x, (g.shape[1], x.shape[1], *kernel_size), padding, groups,
                                                            math.prod(g.shape[2:])),
               "wide": _wide(x.ndim, kernel_size, stride, padding, dilation, groups) and x.dtype == g.dtype,
               "bands": blas is not None, "im2col": True}
    if not applies.get(path, False):
        path = next(p for p, ok in applies.items() if ok)
    with RecordEvent(f"conv_weight_grad: numba.{path}", TracerEventType.Kernel):
        return _conv_weight_grad_by(path, x, g, kernel_size, stride, padding, dilation, groups, blas)


def _conv_weight_grad_by(path, x, g, kernel_size, stride, padding, dilation, groups, blas):
    if path == "pointwise":
        return _pointwise_weight_grad(x, g)
    if path == "single":
        return _single_position_weight_grad(x, g, tuple(kernel_size),
                                            _single_position(x, kernel_size, padding, dilation, groups, 1))
    if path == "gathered":
        return _gathered_weight_grad(x, g, tuple(kernel_size), stride, padding, dilation)
    if path == "channels_last":  # a depthwise convolution on a map of at most 28x28
        return _depthwise_weight_grad_channels_last(x, g, tuple(kernel_size), stride, padding, dilation)
    if path == "wide":
        return _wide_weight_grad(np.ascontiguousarray(x), g, *kernel_size)
    x4, kernel, stride2, pads, dilation2 = _as_2d(x, kernel_size, stride, padding, dilation)
    out_hw = (1, g.shape[2]) if x.ndim == 3 else g.shape[2:]
    n, c, o = x.shape[0], x.shape[1], g.shape[1]
    positions = out_hw[0] * out_hw[1]
    if path == "bands":  # band by band, in compiled code (see BAND_BYTES)
        taps = c * kernel[0] * kernel[1]
        band = _band_rows(taps, out_hw[1], out_hw[0], x.itemsize)
        g3 = np.ascontiguousarray(g).reshape(n, o, positions)
        parts = _band_parts(n, n * taps * positions)
        if parts > 1:
            sums = np.zeros((parts, taps, o), x.dtype)  # per share, added up after
            with one_blas_thread():
                _weight_grad_band_parts(x4, g3, *kernel, *stride2, *pads, *dilation2, *out_hw, band, sums, *blas)
            dw_t = sums.sum(axis=0)
        else:
            dw_t = np.zeros((taps, o), x.dtype)
            buffer = scratch("band_patches", taps * band * out_hw[1], x.dtype)
            with blas_threads_for(taps, band * out_hw[1], o):
                _weight_grad_bands(x4, g3, *kernel, *stride2, *pads, *dilation2, *out_hw, band, buffer, dw_t, *blas)
        return np.ascontiguousarray(dw_t.T).reshape(o, c, *kernel_size)
    grads = np.ascontiguousarray(g).reshape(n, groups, o // groups, positions).transpose(0, 1, 3, 2)
    # dw.T = sum over samples of cols[n] @ g[n].T: the long side (channels x kernel) as the GEMM's
    # rows and the few output channels as its columns, which BLAS runs faster than g[n] @ cols[n].T.
    partial_sums = {}  # per part of the samples (see split_samples), added up after

    def samples(first, last):
        dw_t = partial_sums[first] = np.zeros((groups, c // groups * kernel[0] * kernel[1], o // groups), x.dtype)
        chunks = _sample_chunks(last - first, c * kernel[0] * kernel[1] * positions * x.itemsize)
        for start, stop, cols in _patches(x4[first:last], kernel, stride2, pads, dilation2, out_hw, chunks):
            grads_chunk = grads[first + start:first + stop]
            dw_t += np.matmul(cols.reshape(stop - start, groups, -1, positions), grads_chunk).sum(axis=0)

    split_samples(samples, n, n * c * kernel[0] * kernel[1] * positions)
    dw_t = sum(partial_sums[first] for first in sorted(partial_sums))
    return np.ascontiguousarray(dw_t.transpose(0, 2, 1)).reshape(o, c // groups, *kernel_size)


def _same_adjoint(x, w, stride, padding, output_padding, dilation, groups) -> bool:
    """Whether ``conv_transpose`` here is the input gradient of a stride-1 "same" convolution
    whose GEMM below would contract over few channels, so that running it as a convolution (with
    the kernel flipped, and the same padding) is faster: im2col + a GEMM that contracts over
    channels x kernel, instead of a GEMM that contracts over channels alone + col2im. On 3x3
    convolutions at 32x32 this is faster for 8 to 32 channels and slower for 64, or for 3 output
    channels (a stem): docs/numba.md."""
    if groups != 1 or any(s != 1 for s in stride) or any(d != 1 for d in dilation) or any(output_padding):
        return False
    for i, k in enumerate(w.shape[2:]):
        if k % 2 == 0 or padding[2 * i] != (k - 1) // 2 or padding[2 * i + 1] != (k - 1) // 2:
            return False
    return x.shape[1] <= SAME_ADJOINT_MAX_CHANNELS and w.shape[1] >= SAME_ADJOINT_MIN_CHANNELS


def _transpose_path(x, w, stride, padding, output_padding, dilation, groups, out) -> str:
    """Which way ``conv_transpose`` goes, by the measured rules (docs/numba.md)."""
    same_dtype = x.dtype == w.dtype
    if _pointwise(x, w.shape[2:], stride, padding, dilation, groups) and not any(output_padding) and same_dtype:
        return "pointwise"
    if x.ndim == 4 and _is_depthwise(x.shape[1], w, groups, x.dtype):  # a depthwise convolution's input gradient
        return "channels_last" if math.prod(x.shape[2:]) <= CHANNELS_LAST_MAX_POSITIONS else "direct"
    if x.ndim == 4 and groups == 1 and math.prod(x.shape[2:]) == 1 and same_dtype and \
            _single_position(np.empty((1, 1, *out)), w.shape[2:], padding, dilation, 1, 1) is not None:
        return "single"
    if x.ndim == 4 and _gathered(x, w.shape, padding, groups, math.prod(x.shape[2:])) and same_dtype:
        return "gathered"
    if _same_adjoint(x, w, stride, padding, output_padding, dilation, groups):
        return "flipped"
    if _wide(x.ndim, w.shape[2:], stride, padding, dilation, groups) and not any(output_padding) and same_dtype:
        return "wide"
    return "col2im"


def conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
    if x.ndim not in (3, 4) or x.size == 0 or w.size == 0:
        return _ref._conv_transpose_kernel(x, w, stride, padding, output_padding, dilation, groups)
    out = _ref.conv_transpose_sizes("conv_transpose", x.shape[2:], w.shape[2:], stride, padding, output_padding,
                                    dilation)
    path = _transpose_path(x, w, stride, padding, output_padding, dilation, groups, out)
    with RecordEvent(f"conv_transpose: numba.{path}", TracerEventType.Kernel):
        return _conv_transpose_by(path, x, w, stride, padding, dilation, groups, out)


def _conv_transpose_by(path, x, w, stride, padding, dilation, groups, out):
    if path == "pointwise":
        return _pointwise_transpose(x, w)
    if path == "channels_last":
        return _depthwise_input_grad_channels_last(x, w, stride, padding, dilation, out)
    if path == "direct":
        y = np.zeros((x.shape[0], x.shape[1], *out), x.dtype)
        _depthwise_input_grad(np.ascontiguousarray(x), np.ascontiguousarray(w).reshape(w.shape[0], *w.shape[2:]),
                              stride[0], stride[1], padding[0], padding[2], dilation[0], dilation[1], y)
        return y
    if path == "single":
        window = _single_position(np.empty((1, 1, *out)), w.shape[2:], padding, dilation, 1, 1)
        return _single_position_transpose(x, w, window, out)
    if path == "gathered":
        return _gathered_transpose(x, w, stride, padding, dilation, out)
    if path == "flipped":  # see _same_adjoint
        flip = (slice(None), slice(None)) + (slice(None, None, -1),) * (w.ndim - 2)
        flipped = np.ascontiguousarray(np.swapaxes(w, 0, 1)[flip])  # [C, O, *kernel], reversed
        return conv(x, flipped, stride, padding, dilation, 1)
    if path == "wide":
        return _wide_transpose(x, w)
    x4, kernel, stride2, pads, dilation2 = _as_2d(x, w.shape[2:], stride, padding, dilation)
    ih, iw = x4.shape[2:]
    n, c = x.shape[:2]
    o = w.shape[1] * groups
    weights = np.ascontiguousarray(w).reshape(groups, c // groups, -1).transpose(0, 2, 1)  # [G, O/G * K, C/G]
    inputs = x4.reshape(n, groups, c // groups, ih * iw)
    y = np.zeros((n, o, *((1, out[0]) if x.ndim == 3 else out)), x.dtype)
    per_sample = o * kernel[0] * kernel[1] * ih * iw
    chunks = _sample_chunks(n, per_sample * x.itemsize)
    buffer = scratch("patches", per_sample * (chunks[0][1] - chunks[0][0]), x.dtype)
    for start, stop in chunks:
        cols = buffer[:per_sample * (stop - start)].reshape(stop - start, groups, -1, ih * iw)
        np.matmul(weights, inputs[start:stop], out=cols)  # per sample and group: W.T @ x[n]
        _col2im(cols.reshape(stop - start, o, *kernel, ih, iw), *kernel, *stride2, *pads, *dilation2, y[start:stop])
    return y.reshape(n, o, *out)
