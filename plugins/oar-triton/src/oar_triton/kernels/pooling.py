"""Pooling kernels: ``max_pool`` (values and Paddle's argmax mask), ``max_pool_infer`` (values
only), ``max_pool_grad``, ``avg_pool``, ``avg_pool_grad``, ``adaptive_avg_pool``,
``adaptive_avg_pool_grad`` and ``adaptive_max_pool``, over 1, 2 or 3 spatial dims.

Every kernel maps one program to ``BLOCK`` elements of its (contiguous) output and loops over a
window in registers; an input is read through its strides, so a channel-last input (a
transposed view) is not copied. 1-d and 2-d pooling run the 3-d kernels with leading spatial
dims of size 1.

- max pooling keeps the first maximum of each window (a NaN beats everything), as the reference;
  its mask is the flat index of that maximum in the input's ``[N, C]`` plane, -1 for a window
  of padding only.
- ``max_pool_grad`` adds each output gradient at its mask position with atomic adds (windows
  overlap, and the mask is all it is given): into the output itself for float32/float64, into
  a float32 buffer cast afterwards for the half types. The order of the adds is not fixed.
- ``avg_pool_grad`` and ``adaptive_avg_pool_grad`` gather instead: each input element sums the
  windows that cover it (for a strided window, the taps ``t`` with ``(i + pad - t) % stride ==
  0``; for adaptive windows, the contiguous run of windows from ``floor(i * out / in)``), so
  they need no atomics and are deterministic.
- window divisors follow the reference: ``exclusive`` counts the input elements of a window,
  inclusive also its padding but not ceil_mode's overhang past it.

Values are compared and summed in float32 (float64 for float64). Flat indices are int32, whose
division is cheap, unless an array spans 2**31 elements or more (``WIDE``: int64).
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND, contiguous, empty
from oar_triton.kernels.elementwise import cast
from oar_triton.launch import cdiv, launch

from oar.errors import ArgumentError, ShapeError

BLOCK = 256


@triton.jit
def _offsets(BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """This program's BLOCK flat indices: int32 (cheap division) unless an array needs int64."""
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    return pid * BLOCK + tl.arange(0, BLOCK)


@triton.jit
def _split(e, C, OD, OH, OW):
    """Flat output index -> (n, c, od, oh, ow)."""
    ow = e % OW
    t = e // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    t = t // OD
    return t // C, t % C, od, oh, ow


@triton.jit
def _window_starts(x, total, C, OD, OH, OW, sd, sh, sw, pd, ph, pw, xs_n, xs_c, BLOCK: tl.constexpr,
                   WIDE: tl.constexpr):
    """This program's outputs ``e`` (and which are real), their input plane and the first tap of
    each window along depth, height and width (before the padding is cut)."""
    e = _offsets(BLOCK, WIDE)
    live = e < total
    n, c, od, oh, ow = _split(e, C, OD, OH, OW)
    return e, live, x + n * xs_n + c * xs_c, od * sd - pd, oh * sh - ph, ow * sw - pw


@triton.jit
def _tap(plane, id_, ih, iw, live, ID, IH, IW, xs_d, xs_h, xs_w):
    """Where the window tap at (id_, ih, iw) of ``plane`` is, and whether it lies in the input."""
    ok = live & (id_ >= 0) & (id_ < ID) & (ih >= 0) & (ih < IH) & (iw >= 0) & (iw < IW)
    return plane + id_ * xs_d + ih * xs_h + iw * xs_w, ok


@triton.jit
def _max_pool_kernel(x, out, mask_out, total, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw,
                     xs_n, xs_c, xs_d, xs_h, xs_w, WITH_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    e, live, plane, d0, h0, w0 = _window_starts(x, total, C, OD, OH, OW, sd, sh, sw, pd, ph, pw, xs_n, xs_c,
                                                BLOCK, WIDE)
    best = tl.full([BLOCK], float("-inf"), ACC)
    bd = tl.zeros([BLOCK], tl.int64)
    bh = tl.zeros([BLOCK], tl.int64)
    bw = tl.zeros([BLOCK], tl.int64)
    for kd in range(0, KD):
        for kh in range(0, KH):
            for kw in range(0, KW):
                at, ok = _tap(plane, d0 + kd, h0 + kh, w0 + kw, live, ID, IH, IW, xs_d, xs_h, xs_w)
                v = tl.load(at, mask=ok, other=float("-inf")).to(ACC)
                # the first maximum wins; a NaN beats everything and stays
                better = (v > best) | ((v != v) & (best == best))
                best = tl.where(better, v, best)
                bd = tl.where(better, kd, bd)
                bh = tl.where(better, kh, bh)
                bw = tl.where(better, kw, bw)
    tl.store(out + e, best.to(out.dtype.element_ty), mask=live)
    if WITH_MASK:
        pd_ = d0 + bd
        ph_ = h0 + bh
        pw_ = w0 + bw
        inside = (pd_ >= 0) & (pd_ < ID) & (ph_ >= 0) & (ph_ < IH) & (pw_ >= 0) & (pw_ < IW)
        flat = (pd_ * IH + ph_) * IW + pw_
        tl.store(mask_out + e, tl.where(inside, flat, -1).to(tl.int32), mask=live)


@triton.jit
def _max_pool_grad_kernel(g, mask, out, total, windows, positions, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Adds g[e] at ``mask[e]`` of e's plane of ``out`` (``g`` and ``mask`` contiguous)."""
    e = _offsets(BLOCK, WIDE)
    live = e < total
    at = tl.load(mask + e, mask=live, other=-1)
    v = tl.load(g + e, mask=live, other=0.0).to(out.dtype.element_ty)
    plane = e // windows
    tl.atomic_add(out + plane * positions + at, v, mask=live & (at >= 0))


@triton.jit
def _window_count(start, size, k, after, EXCLUSIVE: tl.constexpr):
    """The divisor of the window whose first tap is ``start`` along one dim (as the reference's
    ``_window_counts``)."""
    end = tl.minimum(start + k, size + after)
    if EXCLUSIVE:
        start = tl.maximum(start, 0)
        end = tl.minimum(end, size)
    return tl.maximum(end - start, 1)


@triton.jit
def _avg_pool_kernel(x, out, total, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, ad, ah, aw,
                     xs_n, xs_c, xs_d, xs_h, xs_w, EXCLUSIVE: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    e, live, plane, d0, h0, w0 = _window_starts(x, total, C, OD, OH, OW, sd, sh, sw, pd, ph, pw, xs_n, xs_c,
                                                BLOCK, WIDE)
    acc = tl.zeros([BLOCK], ACC)
    for kd in range(0, KD):
        for kh in range(0, KH):
            for kw in range(0, KW):
                at, ok = _tap(plane, d0 + kd, h0 + kh, w0 + kw, live, ID, IH, IW, xs_d, xs_h, xs_w)
                acc += tl.load(at, mask=ok, other=0.0).to(ACC)
    count = (_window_count(d0, ID, KD, ad, EXCLUSIVE) * _window_count(h0, IH, KH, ah, EXCLUSIVE)
             * _window_count(w0, IW, KW, aw, EXCLUSIVE))
    tl.store(out + e, (acc / count.to(ACC)).to(out.dtype.element_ty), mask=live)


@triton.jit
def _avg_pool_grad_kernel(g, out, total, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, ad, ah, aw,
                          gs_n, gs_c, gs_d, gs_h, gs_w, EXCLUSIVE: tl.constexpr, ACC: tl.constexpr,
                          BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Input element e sums ``g / count`` over the windows that cover it."""
    e = _offsets(BLOCK, WIDE)
    live = e < total
    n, c, id_, ih, iw = _split(e, C, ID, IH, IW)
    plane = g + n * gs_n + c * gs_c
    acc = tl.zeros([BLOCK], ACC)
    for kd in range(0, KD):
        nd = id_ + pd - kd
        od = nd // sd
        okd = (nd >= 0) & (nd % sd == 0) & (od < OD)
        cd = _window_count(od * sd - pd, ID, KD, ad, EXCLUSIVE)
        for kh in range(0, KH):
            nh = ih + ph - kh
            oh = nh // sh
            okh = okd & (nh >= 0) & (nh % sh == 0) & (oh < OH)
            ch = cd * _window_count(oh * sh - ph, IH, KH, ah, EXCLUSIVE)
            for kw in range(0, KW):
                nw = iw + pw - kw
                ow = nw // sw
                ok = live & okh & (nw >= 0) & (nw % sw == 0) & (ow < OW)
                count = ch * _window_count(ow * sw - pw, IW, KW, aw, EXCLUSIVE)
                v = tl.load(plane + od * gs_d + oh * gs_h + ow * gs_w, mask=ok, other=0.0).to(ACC)
                acc += v / count.to(ACC)
    tl.store(out + e, acc.to(out.dtype.element_ty), mask=live)


@triton.jit
def _adaptive_bounds(o, size, out_size):
    """Adaptive window ``o``: ``[floor(o * size / out), ceil((o + 1) * size / out))``."""
    return (o * size) // out_size, ((o + 1) * size + out_size - 1) // out_size


@triton.jit
def _adaptive_pool_kernel(x, out, mask_out, total, C, ID, IH, IW, OD, OH, OW, WD, WH, WW,
                          xs_n, xs_c, xs_d, xs_h, xs_w, IS_MAX: tl.constexpr, ACC: tl.constexpr,
                          BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Adaptive average or maximum (with its mask); ``WD, WH, WW`` are the widest windows."""
    e = _offsets(BLOCK, WIDE)
    live = e < total
    n, c, od, oh, ow = _split(e, C, OD, OH, OW)
    plane = x + n * xs_n + c * xs_c
    d0, d1 = _adaptive_bounds(od, ID, OD)
    h0, h1 = _adaptive_bounds(oh, IH, OH)
    w0, w1 = _adaptive_bounds(ow, IW, OW)
    acc = tl.zeros([BLOCK], ACC)
    best = tl.full([BLOCK], float("-inf"), ACC)
    bd = d0
    bh = h0
    bw = w0
    for a in range(0, WD):
        for b in range(0, WH):
            for k in range(0, WW):
                ok = live & (d0 + a < d1) & (h0 + b < h1) & (w0 + k < w1)
                v = tl.load(plane + (d0 + a) * xs_d + (h0 + b) * xs_h + (w0 + k) * xs_w, mask=ok, other=0.0).to(ACC)
                if IS_MAX:
                    better = ok & ((v > best) | ((v != v) & (best == best)))
                    best = tl.where(better, v, best)
                    bd = tl.where(better, d0 + a, bd)
                    bh = tl.where(better, h0 + b, bh)
                    bw = tl.where(better, w0 + k, bw)
                else:
                    acc += v
    if IS_MAX:
        tl.store(out + e, best.to(out.dtype.element_ty), mask=live)
        tl.store(mask_out + e, ((bd * IH + bh) * IW + bw).to(tl.int32), mask=live)
    else:
        count = ((d1 - d0) * (h1 - h0) * (w1 - w0)).to(ACC)
        tl.store(out + e, (acc / count).to(out.dtype.element_ty), mask=live)


@triton.jit
def _adaptive_avg_pool_grad_kernel(g, out, total, C, ID, IH, IW, OD, OH, OW, MD, MH, MW,
                                   gs_n, gs_c, gs_d, gs_h, gs_w, ACC: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Input element e sums ``g / count`` over the adaptive windows that cover it: at most
    ``MD, MH, MW`` of them per dim, the first ``floor(i * out / in)``."""
    e = _offsets(BLOCK, WIDE)
    live = e < total
    n, c, id_, ih, iw = _split(e, C, ID, IH, IW)
    plane = g + n * gs_n + c * gs_c
    acc = tl.zeros([BLOCK], ACC)
    for a in range(0, MD):
        od = (id_ * OD) // ID + a
        d0, d1 = _adaptive_bounds(od, ID, OD)
        okd = (od < OD) & (d0 <= id_)
        for b in range(0, MH):
            oh = (ih * OH) // IH + b
            h0, h1 = _adaptive_bounds(oh, IH, OH)
            okh = okd & (oh < OH) & (h0 <= ih)
            for k in range(0, MW):
                ow = (iw * OW) // IW + k
                w0, w1 = _adaptive_bounds(ow, IW, OW)
                ok = live & okh & (ow < OW) & (w0 <= iw)
                count = tl.where(ok, (d1 - d0) * (h1 - h0) * (w1 - w0), 1).to(ACC)  # (no 0 / 0 off the windows)
                v = tl.load(plane + od * gs_d + oh * gs_h + ow * gs_w, mask=ok, other=0.0).to(ACC)
                acc += v / count
    tl.store(out + e, acc.to(out.dtype.element_ty), mask=live)


# -- host side ------------------------------------------------------------------------------------
def _wide(*arrays: DeviceArray) -> bool:
    """Whether an index into one of ``arrays`` (or past its end, by a block) needs int64."""
    return any(sum((d - 1) * abs(s) for d, s in zip(a.shape, a.strides) if d) + BLOCK >= 2**31 for a in arrays)


def _acc(dtype: np.dtype):
    return tl.float64 if dtype == np.float64 else tl.float32


def _spatial3(values, fill) -> list[int]:
    values = [int(v) for v in values]
    return [fill] * (3 - len(values)) + values


def _strides5(a: DeviceArray) -> list[int]:
    return [int(s) for s in a.strides[:2]] + _spatial3(a.strides[2:], 0)


def _rank(op: str, x: DeviceArray) -> int:
    nd = x.ndim - 2
    if nd not in (1, 2, 3):
        raise ShapeError(f"{op}: the gpu kernels pool 1, 2 or 3 spatial dims; got x {list(x.shape)} (rank {x.ndim})")
    return nd


def _windows(op: str, x: DeviceArray, kernel_size, stride, padding, ceil_mode) -> tuple[list[int], list[list[int]]]:
    """The output shape and the window attributes as 3-d lists (kernel, stride, before, after)."""
    nd = _rank(op, x)
    if len(kernel_size) != nd or len(stride) != nd or len(padding) != 2 * nd:
        raise ArgumentError(f"{op}: kernel_size {kernel_size}, stride {stride} and padding {padding} must have "
                            f"{nd}, {nd} and {2 * nd} entries for x {list(x.shape)}")
    sizes = []
    for i, (size, k, s) in enumerate(zip(x.shape[2:], kernel_size, stride)):
        sizes.append((size + padding[2 * i] + padding[2 * i + 1] - k + (s - 1 if ceil_mode else 0)) // s + 1)
    attrs = [_spatial3(kernel_size, 1), _spatial3(stride, 1), _spatial3(padding[0::2], 0), _spatial3(padding[1::2], 0)]
    return [*x.shape[:2], *sizes], attrs


def _max_pool(op: str, x: DeviceArray, kernel_size, stride, padding, ceil_mode, with_mask: bool):
    shape, (kernel, stride3, before, _) = _windows(op, x, kernel_size, stride, padding, ceil_mode)
    out = empty(shape, x.dtype)
    mask = empty(shape, np.int32) if with_mask else out
    if out.size:
        launch(_max_pool_kernel, (cdiv(out.size, BLOCK),), x, out, mask, out.size, x.shape[1],
               *_spatial3(x.shape[2:], 1), *_spatial3(shape[2:], 1), *kernel, *stride3, *before, *_strides5(x),
               WITH_MASK=with_mask, ACC=_acc(x.dtype), BLOCK=BLOCK, WIDE=_wide(x, out))
    return (out, mask) if with_mask else out


def max_pool(x: DeviceArray, kernel_size, stride, padding, ceil_mode):
    """``max_pool``: (values, int32 mask of each maximum's flat index in its input plane)."""
    return _max_pool("max_pool", x, kernel_size, stride, padding, ceil_mode, True)


def max_pool_infer(x: DeviceArray, kernel_size, stride, padding, ceil_mode) -> DeviceArray:
    """``max_pool_infer``: max_pool's values alone."""
    return _max_pool("max_pool_infer", x, kernel_size, stride, padding, ceil_mode, False)


def max_pool_grad(g: DeviceArray, mask: DeviceArray, input_size) -> DeviceArray:
    """``max_pool_grad``: each of ``g`` added at its ``mask`` position of a zero input gradient."""
    shape = (*g.shape[:2], *[int(s) for s in input_size])
    positions = int(np.prod(shape[2:], dtype=np.int64))
    exact = g.dtype in (np.float32, np.float64)  # atomics add in the output itself; halves in float32
    out = BACKEND.zeros(shape, g.dtype if exact else np.float32)
    if g.size:
        windows = int(np.prod(g.shape[2:], dtype=np.int64))
        launch(_max_pool_grad_kernel, (cdiv(g.size, BLOCK),), contiguous(g), contiguous(mask), out, g.size,
               windows, positions, BLOCK=BLOCK, WIDE=_wide(g, out))
    return out if exact else cast(out, g.dtype)


def avg_pool(x: DeviceArray, kernel_size, stride, padding, ceil_mode, exclusive) -> DeviceArray:
    """``avg_pool``: window sums over the reference's divisors."""
    shape, (kernel, stride3, before, after) = _windows("avg_pool", x, kernel_size, stride, padding, ceil_mode)
    out = empty(shape, x.dtype)
    if out.size:
        launch(_avg_pool_kernel, (cdiv(out.size, BLOCK),), x, out, out.size, x.shape[1], *_spatial3(x.shape[2:], 1),
               *_spatial3(shape[2:], 1), *kernel, *stride3, *before, *after, *_strides5(x),
               EXCLUSIVE=bool(exclusive), ACC=_acc(x.dtype), BLOCK=BLOCK, WIDE=_wide(x, out))
    return out


def avg_pool_grad(g: DeviceArray, input_size, kernel_size, stride, padding, ceil_mode, exclusive) -> DeviceArray:
    """``avg_pool_grad``: avg_pool's adjoint, gathered per input element."""
    shape = (*g.shape[:2], *[int(s) for s in input_size])
    out = empty(shape, g.dtype)
    _, (kernel, stride3, before, after) = _windows("avg_pool_grad", out, kernel_size, stride, padding, ceil_mode)
    if out.size:
        launch(_avg_pool_grad_kernel, (cdiv(out.size, BLOCK),), g, out, out.size, g.shape[1],
               *_spatial3(shape[2:], 1), *_spatial3(g.shape[2:], 1), *kernel, *stride3, *before, *after,
               *_strides5(g), EXCLUSIVE=bool(exclusive), ACC=_acc(g.dtype), BLOCK=BLOCK,
               WIDE=_wide(g, out))
    return out


def _widest(size: int, out: int) -> int:
    """The longest adaptive window of ``size`` elements pooled to ``out``."""
    o = np.arange(out)
    return int(((-(-(o + 1) * size // out)) - (o * size) // out).max())


def _most_covering(size: int, out: int) -> int:
    """The most adaptive windows (``size`` -> ``out``) one input element lies in."""
    o = np.arange(out)
    start, end = (o * size) // out, -(-(o + 1) * size // out)
    i = np.arange(size)[:, None]
    return int(((start <= i) & (i < end)).sum(axis=1).max())


def _adaptive(op: str, x: DeviceArray, output_size, is_max: bool):
    nd = _rank(op, x)
    if len(output_size) != nd:
        raise ArgumentError(f"{op}: output_size {output_size} must have {nd} entries for x {list(x.shape)}")
    shape = (*x.shape[:2], *[int(o) for o in output_size])
    out = empty(shape, x.dtype)
    mask = empty(shape, np.int32) if is_max else out
    if out.size:
        widest = _spatial3([_widest(s, o) for s, o in zip(x.shape[2:], shape[2:])], 1)
        launch(_adaptive_pool_kernel, (cdiv(out.size, BLOCK),), x, out, mask, out.size, x.shape[1],
               *_spatial3(x.shape[2:], 1), *_spatial3(shape[2:], 1), *widest, *_strides5(x),
               IS_MAX=is_max, ACC=_acc(x.dtype), BLOCK=BLOCK, WIDE=_wide(x, out))
    return (out, mask) if is_max else out


def adaptive_avg_pool(x: DeviceArray, output_size) -> DeviceArray:
    """``adaptive_avg_pool``: the mean of each of Paddle's adaptive windows."""
    return _adaptive("adaptive_avg_pool", x, output_size, False)


def adaptive_max_pool(x: DeviceArray, output_size):
    """``adaptive_max_pool``: (the first maximum of each adaptive window, its int32 mask)."""
    return _adaptive("adaptive_max_pool", x, output_size, True)


def adaptive_avg_pool_grad(g: DeviceArray, input_size) -> DeviceArray:
    """``adaptive_avg_pool_grad``: adaptive_avg_pool's adjoint, gathered per input element."""
    _rank("adaptive_avg_pool_grad", g)
    shape = (*g.shape[:2], *[int(s) for s in input_size])
    out = empty(shape, g.dtype)
    if out.size:
        most = _spatial3([_most_covering(s, o) for s, o in zip(shape[2:], g.shape[2:])], 1)
        launch(_adaptive_avg_pool_grad_kernel, (cdiv(out.size, BLOCK),), g, out, out.size, g.shape[1],
               *_spatial3(shape[2:], 1), *_spatial3(g.shape[2:], 1), *most, *_strides5(g),
               ACC=_acc(g.dtype), BLOCK=BLOCK, WIDE=_wide(g, out))
    return out


KERNELS = {
    "max_pool": max_pool,
    "max_pool_infer": max_pool_infer,
    "max_pool_grad": max_pool_grad,
    "avg_pool": avg_pool,
    "avg_pool_grad": avg_pool_grad,
    "adaptive_avg_pool": adaptive_avg_pool,
    "adaptive_avg_pool_grad": adaptive_avg_pool_grad,
    "adaptive_max_pool": adaptive_max_pool,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each pooling kernel in float32 and bfloat16 (the mask variants with their mask)."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    def config(label, kernel, pointers, ints, constexprs):
        signature = {**pointers, **{name: "i32" for name in ints}, **{name: "constexpr" for name in constexprs}}
        return (label, kernel, signature, constexprs)

    sizes = ("C", "ID", "IH", "IW", "OD", "OH", "OW")
    window = ("KD", "KH", "KW", "sd", "sh", "sw", "pd", "ph", "pw")
    strides = ("xs_n", "xs_c", "xs_d", "xs_h", "xs_w")
    gstrides = ("gs_n", "gs_c", "gs_d", "gs_h", "gs_w")
    found = []
    for dtype in ("float32", "bfloat16"):
        ptr = POINTER_TYPES[dtype]
        acc = {"ACC": tl.float32, "BLOCK": BLOCK, "WIDE": False}
        for with_mask in (True, False):
            found.append(config(f"pooling.max_pool[{dtype}{'' if with_mask else ',infer'}]", _max_pool_kernel,
                                {"x": ptr, "out": ptr, "mask_out": "*i32" if with_mask else ptr},
                                ("total", *sizes, *window, *strides), {"WITH_MASK": with_mask, **acc}))
        found.append(config(f"pooling.max_pool_grad[{dtype}]", _max_pool_grad_kernel,
                            {"g": ptr, "mask": "*i32", "out": POINTER_TYPES["float32"]},
                            ("total", "windows", "positions"), {"BLOCK": BLOCK, "WIDE": False}))
        for exclusive in (True, False):
            found.append(config(f"pooling.avg_pool[{dtype},exclusive={exclusive}]", _avg_pool_kernel,
                                {"x": ptr, "out": ptr}, ("total", *sizes, *window, "ad", "ah", "aw", *strides),
                                {"EXCLUSIVE": exclusive, **acc}))
            found.append(config(f"pooling.avg_pool_grad[{dtype},exclusive={exclusive}]", _avg_pool_grad_kernel,
                                {"g": ptr, "out": ptr}, ("total", *sizes, *window, "ad", "ah", "aw", *gstrides),
                                {"EXCLUSIVE": exclusive, **acc}))
        for is_max in (True, False):
            found.append(config(f"pooling.adaptive_{'max' if is_max else 'avg'}_pool[{dtype}]", _adaptive_pool_kernel,
                                {"x": ptr, "out": ptr, "mask_out": "*i32" if is_max else ptr},
                                ("total", *sizes, "WD", "WH", "WW", *strides), {"IS_MAX": is_max, **acc}))
        found.append(config(f"pooling.adaptive_avg_pool_grad[{dtype}]", _adaptive_avg_pool_grad_kernel,
                            {"g": ptr, "out": ptr}, ("total", *sizes, "MD", "MH", "MW", *gstrides), acc))
    return found
