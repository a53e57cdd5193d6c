"""Pooling kernels: max pooling and its gradient, adaptive max pooling, and the gradient of
adaptive average pooling, one window at a time.

The references loop over kernel offsets, each a strided view of a padded copy of the input, with
an argmax bookkeeping pass per offset. Here every window is read once, in place, and planes
(``N * C``) run in parallel. 1-d pooling runs as 2-d pooling of height 1; 3-d pooling goes to the
reference kernels. Window rules are the references': padding never wins, the first maximum wins
and a NaN beats everything, and a window of padding alone gives -inf and mask -1.

Average pooling (``avg_pool``, ``avg_pool_grad``) is compiled for 2x2 windows of stride 2 that
tile the input (LeNet's, VGG's, a U-Net's downsampling): four loads (or stores) per output,
7.9x and 4.9x on LeNet's. Other windows go to the references, whose strided adds beat a general window
loop (0.4x and 0.7x for 3x3 stride 1, docs/numba.md). The forward adaptive average pooling stays
with the reference, a BLAS product with an averaging matrix.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from oar.nn.functional import pooling as _ref
from oar_numba._jit import parallel


def _planes(x: np.ndarray, nd: int) -> np.ndarray:
    """``x`` [N, C, *spatial] (1 or 2 spatial dims) as contiguous planes [N * C, H, W]."""
    x = np.ascontiguousarray(x)
    h, w = (1, x.shape[2]) if nd == 1 else x.shape[2:]
    return x.reshape(-1, h, w)


def _as_2d(kernel, stride, padding, nd):
    """Kernel, stride and padding ``[top, bottom, left, right]`` of the 2-d view."""
    if nd == 1:
        return (1, kernel[0]), (1, stride[0]), (0, 0, padding[0], padding[1])
    return tuple(kernel), tuple(stride), tuple(padding)


# -- max_pool -----------------------------------------------------------------------------------
@parallel
def _max_pool_planes(x, kh, kw, sh, sw, top, left, out, mask):
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
                bh, bw = h0, w0  # the window's first offset, where the reference's argmax starts
                for h in range(h_lo, h_hi):
                    for w in range(w_lo, w_hi):
                        v = x[p, h, w]
                        # selects, not branches: which element wins is data, and unpredictable
                        better = (v > best) | ((v != v) & (best == best))
                        best = v if better else best
                        bh = h if better else bh
                        bw = w if better else bw
                out[p, oh, ow] = best
                inside = (bh >= 0) & (bh < height) & (bw >= 0) & (bw < width)
                mask[p, oh, ow] = bh * width + bw if inside else -1


@parallel
def _max_pool_2x2_planes(x, out, mask):
    """2x2 windows of stride 2 that tile the input (LeNet's, VGG's): four loads and three selects
    per window, no bounds. The same winner as ``_max_pool_planes``, which the pairwise order keeps:
    the first maximum of (a, b, c, d) wins, and the first NaN beats everything. 7x the general
    loop on LeNet's pools (docs/numba.md)."""
    width = x.shape[2]
    planes, oh_size, ow_size = out.shape
    for p in prange(planes):
        for oh in range(oh_size):
            r0, r1, dst, index = x[p, 2 * oh], x[p, 2 * oh + 1], out[p, oh], mask[p, oh]
            for ow in range(ow_size):
                a, b = r0[2 * ow], r0[2 * ow + 1]
                c, d = r1[2 * ow], r1[2 * ow + 1]
                take_b = (b > a) | ((b != b) & (a == a))
                take_d = (d > c) | ((d != d) & (c == c))
                ab, cd = (b if take_b else a), (d if take_d else c)
                take_cd = (cd > ab) | ((cd != cd) & (ab == ab))
                dst[ow] = cd if take_cd else ab
                offset = (width + (1 if take_d else 0)) if take_cd else (1 if take_b else 0)
                index[ow] = 2 * oh * width + 2 * ow + offset


def max_pool(x, kernel_size, stride, padding, ceil_mode):
    nd = x.ndim - 2
    if nd > 2 or x.size == 0:
        return _ref._max_pool_kernel(x, kernel_size, stride, padding, ceil_mode)
    sizes = _ref.pool_sizes("max_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode)
    (kh, kw), (sh, sw), (top, _, left, _) = _as_2d(kernel_size, stride, padding, nd)
    out = np.empty((*x.shape[:2], *sizes), x.dtype)
    mask = np.empty(out.shape, np.int32)
    planes_out = out.reshape(-1, 1 if nd == 1 else sizes[0], sizes[-1])
    planes = _planes(x, nd)
    if (kh, kw, sh, sw) == (2, 2, 2, 2) and not any(padding) and 2 * sizes[0] <= planes.shape[1] and \
            2 * sizes[-1] <= planes.shape[2]:  # every window inside the input (not so with ceil_mode)
        _max_pool_2x2_planes(planes, planes_out, mask.reshape(planes_out.shape))
    else:
        _max_pool_planes(planes, kh, kw, sh, sw, top, left, planes_out, mask.reshape(planes_out.shape))
    return out, mask


@parallel
def _scatter_at_mask(g, mask, positions, out):
    """out[p, mask[p, q]] += g[p, q]; returns False (and stops adding) at a mask past the plane."""
    planes, count = g.shape
    bad = 0
    for p in prange(planes):
        for q in range(count):
            m = mask[p, q]
            if m >= positions:
                bad += 1
                break
            if m >= 0:
                out[p, m] += g[p, q]
    return bad == 0


def max_pool_grad(g, mask, input_size):
    """Also the gradient of adaptive_max_pool: any number of spatial dims (the mask is flat)."""
    positions = int(np.prod(input_size))
    if g.size == 0:
        return _ref._max_pool_grad_kernel(g, mask, input_size)
    planes = g.shape[0] * g.shape[1]
    out = np.zeros((planes, positions), g.dtype)
    g2 = np.ascontiguousarray(g).reshape(planes, -1)
    mask2 = np.ascontiguousarray(mask, dtype=np.int32).reshape(planes, -1)
    if not _scatter_at_mask(g2, mask2, positions, out):  # a mask no forward pass made
        return _ref._max_pool_grad_kernel(g, mask, input_size)
    return out.reshape(*g.shape[:2], *input_size)


# -- adaptive pools -------------------------------------------------------------------------------
def _bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    start, end = _ref.adaptive_bounds(size, out)
    return start.astype(np.int64), end.astype(np.int64)


def _adaptive_bounds_2d(sizes, output_size, nd):
    if nd == 1:
        return (*_bounds(1, 1), *_bounds(sizes[0], output_size[0]))
    return (*_bounds(sizes[0], output_size[0]), *_bounds(sizes[1], output_size[1]))


@parallel
def _adaptive_avg_grad_planes(g, h_start, h_end, w_start, w_end, out):
    planes = g.shape[0]
    for p in prange(planes):
        for oh in range(h_start.size):
            for ow in range(w_start.size):
                share = g[p, oh, ow] / ((h_end[oh] - h_start[oh]) * (w_end[ow] - w_start[ow]))
                for h in range(h_start[oh], h_end[oh]):
                    for w in range(w_start[ow], w_end[ow]):
                        out[p, h, w] += share


def adaptive_avg_pool_grad(g, input_size):
    nd = g.ndim - 2
    if nd > 2 or g.size == 0:
        return _ref._adaptive_avg_pool_grad_kernel(g, input_size)
    out = np.zeros((*g.shape[:2], *input_size), g.dtype)
    bounds = _adaptive_bounds_2d(input_size, g.shape[2:], nd)
    planes_out = out.reshape(-1, 1 if nd == 1 else input_size[0], input_size[-1])
    _adaptive_avg_grad_planes(_planes(g, nd), *bounds, planes_out)
    return out


@parallel
def _adaptive_max_planes(x, h_start, h_end, w_start, w_end, out, mask):
    planes, _, width = x.shape
    for p in prange(planes):
        for oh in range(h_start.size):
            for ow in range(w_start.size):
                best = -np.inf
                at = h_start[oh] * width + w_start[ow]
                for h in range(h_start[oh], h_end[oh]):
                    for w in range(w_start[ow], w_end[ow]):
                        v = x[p, h, w]
                        if v > best or (v != v and best == best):
                            best = v
                            at = h * width + w
                out[p, oh, ow] = best
                mask[p, oh, ow] = at


def adaptive_max_pool(x, output_size):
    nd = x.ndim - 2
    if nd > 2 or x.size == 0:
        return _ref._adaptive_max_pool_kernel(x, output_size)
    out = np.empty((*x.shape[:2], *output_size), x.dtype)
    mask = np.empty(out.shape, np.int32)
    bounds = _adaptive_bounds_2d(x.shape[2:], output_size, nd)
    shape = (-1, bounds[0].size, bounds[2].size)
    _adaptive_max_planes(_planes(x, nd), *bounds, out.reshape(shape), mask.reshape(shape))
    return out, mask


# -- avg_pool: 2x2 windows of stride 2 --------------------------------------------------------------
def _tiles_2x2(sizes, kernel_size, stride, padding, out_sizes) -> bool:
    """Whether every window is a 2x2 block of the input: 2-d, stride 2, no padding, and (with
    ceil_mode) no window hanging over the edge. Such windows always divide by 4."""
    return (len(sizes) == 2 and list(kernel_size) == [2, 2] and list(stride) == [2, 2] and not any(padding)
            and 2 * out_sizes[0] <= sizes[0] and 2 * out_sizes[1] <= sizes[1])


@parallel
def _avg_pool_2x2(x, out):
    planes = x.shape[0]
    _, oh_size, ow_size = out.shape
    for p in prange(planes):
        for oh in range(oh_size):
            for ow in range(ow_size):
                h, w = 2 * oh, 2 * ow
                out[p, oh, ow] = (x[p, h, w] + x[p, h, w + 1] + x[p, h + 1, w] + x[p, h + 1, w + 1]) * 0.25


def avg_pool(x, kernel_size, stride, padding, ceil_mode, exclusive):
    if x.ndim != 4 or x.size == 0:
        return _ref._avg_pool_kernel(x, kernel_size, stride, padding, ceil_mode, exclusive)
    sizes = _ref.pool_sizes("avg_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode)
    if not _tiles_2x2(x.shape[2:], kernel_size, stride, padding, sizes):
        return _ref._avg_pool_kernel(x, kernel_size, stride, padding, ceil_mode, exclusive)
    out = np.empty((*x.shape[:2], *sizes), x.dtype)
    _avg_pool_2x2(_planes(x, 2), out.reshape(-1, *sizes))
    return out


@parallel
def _avg_pool_grad_2x2(g, out):
    """Each input element gets the share of the one window over it (0 past the last window)."""
    planes, height, width = out.shape
    _, oh_size, ow_size = g.shape
    for p in prange(planes):
        for h in range(2 * oh_size, height):
            out[p, h, :] = 0
        for oh in range(oh_size):
            out[p, 2 * oh, 2 * ow_size:] = 0
            out[p, 2 * oh + 1, 2 * ow_size:] = 0
            for ow in range(ow_size):
                share = g[p, oh, ow] * 0.25
                h, w = 2 * oh, 2 * ow
                out[p, h, w] = share
                out[p, h, w + 1] = share
                out[p, h + 1, w] = share
                out[p, h + 1, w + 1] = share


def avg_pool_grad(g, input_size, kernel_size, stride, padding, ceil_mode, exclusive):
    if g.ndim != 4 or g.size == 0 or not _tiles_2x2(input_size, kernel_size, stride, padding, g.shape[2:]):
        return _ref._avg_pool_grad_kernel(g, input_size, kernel_size, stride, padding, ceil_mode, exclusive)
    out = np.empty((*g.shape[:2], *input_size), g.dtype)
    _avg_pool_grad_2x2(_planes(g, 2), out.reshape(-1, *input_size))
    return out
