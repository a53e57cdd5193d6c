"""Convolution kernels: ``conv`` (1-d, 2-d, 3-d), its two adjoints ``conv_transpose`` and
``conv_weight_grad``, and ``fused_conv2d`` (conv + bias + activation [+ max pooling]).

Every op is channel-first (``[N, C, *spatial]``, as oar's ops are; an NHWC input reaches the
kernel as a transposed view and is read through its strides, never copied). 1-d and 2-d
convolutions run the 3-d kernels with leading spatial dims of size 1.

- ``conv`` and ``conv_transpose`` are one implicit GEMM per group, ``tl.dot`` on tiles gathered
  on the fly (no im2col buffer): M = N * output positions, N = output channels of the group,
  K = input channels of the group * kernel taps. A K index is decomposed into (channel, tap);
  the input element a (position, tap) reads is ``pos * stride - pad + tap * dilation`` for conv,
  and for conv_transpose the position ``q`` with ``q * stride + tap * dilation - pad == pos``
  (taps that hit no such ``q`` are masked: a strided transposed convolution reads one tap in
  ``stride`` per dim). Padding, a cropping (negative) ``after`` padding, stride and dilation are
  all masks on the gather. A group with one input channel and few output channels (depthwise)
  runs a direct kernel instead: a tile of channels x positions, a loop over the taps. Offsets
  within one sample are int32 (a sample of 2**31 elements or more is out of reach), the sample's
  own offset int64.
- ``conv_weight_grad`` is the GEMM ``dw[o, (c, tap)] = sum over (n, pos) of g[n, o, pos] *
  x[n, c, pos * stride - pad + tap * dilation]``; its K (batch * positions) is long and its grid
  small, so K is split over programs (``SPLIT``) into a float32 workspace that a second kernel
  sums (deterministic: no atomics).
- ``fused_conv2d`` is conv's kernel with an epilogue: bias per output channel, then the
  activation, in registers; ``max_pool=k`` then runs pooling's ``max_pool_infer`` kernel.

Accumulation is float32 (float64 for float64); float32 tiles multiply with
``input_precision="ieee"`` (the GPU's default tf32 would not match the cpu to float32 tolerance).
float16 tiles go to ``tl.dot`` as they are (tensor cores, float32 accumulation); bfloat16 tiles
too on a GPU, but in Triton's interpreter, whose bfloat16 arithmetic is wrong, they are upcast
to float32 first. Grids are flat (one axis, no 65535 limit on groups). Refused: more than three
spatial dims (a ShapeError naming the op and the rank) and an activation outside
``ACTIVATIONS`` (an ArgumentError).
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import contiguous, empty
from oar_triton.kernels.elementwise import _gelu_erf, _gelu_tanh, _tanh
from oar_triton.kernels.pooling import max_pool_infer
from oar_triton.launch import BFLOAT16, INTERPRETING, cdiv, launch

from oar.errors import ArgumentError, ShapeError

BM, BK = 64, 32  # GEMM tile rows (output positions) and reduction step
BC_DIRECT, BP_DIRECT = 16, 128  # the direct (depthwise) kernel's tile: channels x output positions
TARGET_PROGRAMS = 264  # two per SM of an H100: where conv_weight_grad's K split stops

# fused_conv2d's activations: name -> (code in the epilogue, its attributes with their defaults)
ACTIVATIONS = {
    None: (0, ()),
    "relu": (1, ()),
    "relu6": (2, ()),
    "leaky_relu": (3, (("negative_slope", 0.01),)),
    "gelu": (4, (("approximate", False),)),
    "silu": (5, ()),
    "sigmoid": (6, ()),
    "tanh": (7, ()),
    "elu": (8, (("alpha", 1.0),)),
    "hardswish": (9, ()),
    "hardsigmoid": (10, (("slope", 0.1666667), ("offset", 0.5))),
    "softplus": (11, (("beta", 1.0), ("threshold", 20.0))),
    "mish": (12, ()),
}


@triton.jit
def _softplus(v, beta, threshold):
    # log1p(exp(.)) without libdevice: log(1 + e) loses only values below float32's epsilon
    bv = v * beta
    soft = tl.log(1.0 + tl.exp(tl.minimum(bv, threshold))) / beta
    return tl.where(bv > threshold, v, soft)


@triton.jit
def _activation(v, ACT: tl.constexpr, p0, p1):
    """The activation ``ACT`` (a code of ``ACTIVATIONS``) of the float32/float64 values ``v``."""
    if ACT == 1:
        v = tl.where(v < 0, 0.0, v)
    elif ACT == 2:
        v = tl.where(v < 0, 0.0, tl.where(v > 6.0, 6.0, v))
    elif ACT == 3:
        v = tl.where(v > 0, v, v * p0)
    elif ACT == 4:
        v = tl.where(p0 != 0, _gelu_tanh(v), _gelu_erf(v))
    elif ACT == 5:
        v = v / (1.0 + tl.exp(-v))
    elif ACT == 6:
        v = 1.0 / (1.0 + tl.exp(-v))
    elif ACT == 7:
        v = _tanh(v)
    elif ACT == 8:
        v = tl.where(v > 0, v, p0 * (tl.exp(tl.minimum(v, 0.0)) - 1.0))
    elif ACT == 9:
        v = v * tl.minimum(tl.maximum(v + 3.0, 0.0), 6.0) / 6.0
    elif ACT == 10:
        v = tl.minimum(tl.maximum(v * p0 + p1, 0.0), 1.0)
    elif ACT == 11:
        v = _softplus(v, p0, p1)
    elif ACT == 12:
        v = v * _tanh(_softplus(v, 1.0, 20.0))
    return v


@triton.jit
def _source(od, oh, ow, kd, kh, kw, ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw, TRANSPOSED: tl.constexpr):
    """The input position output ``(od, oh, ow)`` reads through tap ``(kd, kh, kw)``, and whether
    there is one (not padding, and for a transposed convolution on the stride's lattice)."""
    if TRANSPOSED:
        nd = od + pd - kd * dd
        nh = oh + ph - kh * dh
        nw = ow + pw - kw * dw
        id_ = nd // sd
        ih = nh // sh
        iw = nw // sw
        ok = (nd >= 0) & (nh >= 0) & (nw >= 0) & (nd % sd == 0) & (nh % sh == 0) & (nw % sw == 0)
        ok = ok & (id_ < ID) & (ih < IH) & (iw < IW)
    else:
        id_ = od * sd - pd + kd * dd
        ih = oh * sh - ph + kh * dh
        iw = ow * sw - pw + kw * dw
        ok = (id_ >= 0) & (ih >= 0) & (iw >= 0) & (id_ < ID) & (ih < IH) & (iw < IW)
    return id_, ih, iw, ok


@triton.jit
def _conv_gemm_kernel(x, w, bias, out, M, G, CA, GN, ID, IH, IW, OD, OH, OW, KD, KH, KW,
                      sd, sh, sw, pd, ph, pw, dd, dh, dw,
                      xs_n, xs_c, xs_d, xs_h, xs_w, ws_g, ws_n, ws_c, ws_d, ws_h, ws_w, p0, p1,
                      TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                      UPCAST: tl.constexpr, ACC: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One [BM, BN] tile of a group's output: rows are output positions ``(n, od, oh, ow)``,
    columns the group's output channels; K runs over (input channel, tap). The flat grid runs
    the column tiles of one row tile together, so they read the same gathered rows from L2."""
    n_tiles = tl.cdiv(GN, BN)
    m_tiles = tl.cdiv(M, BM)
    pid = tl.program_id(0)
    pid_n = pid % n_tiles
    pid_m = (pid // n_tiles) % m_tiles
    g = pid // (n_tiles * m_tiles)
    rm = pid_m * BM + tl.arange(0, BM)
    ow = rm % OW
    t = rm // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    n = t // OD
    mask_m = rm < M
    x_rows = x + n.to(tl.int64) * xs_n + (g * CA).to(tl.int64) * xs_c
    rn = pid_n * BN + tl.arange(0, BN)
    mask_n = rn < GN
    w_cols = w + g.to(tl.int64) * ws_g + rn * ws_n
    taps = KD * KH * KW
    K = CA * taps
    acc = tl.zeros([BM, BN], dtype=ACC)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        mask_k = rk < K
        kw = rk % KW
        u = rk // KW
        kh = u % KH
        u = u // KH
        kd = u % KD
        c = u // KD
        id_, ih, iw, ok = _source(od[:, None], oh[:, None], ow[:, None], kd[None, :], kh[None, :], kw[None, :],
                                  ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw, TRANSPOSED)
        a = tl.load(x_rows[:, None] + c[None, :] * xs_c + id_ * xs_d + ih * xs_h + iw * xs_w,
                    mask=ok & mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(w_cols[None, :] + c[:, None] * ws_c + kd[:, None] * ws_d + kh[:, None] * ws_h + kw[:, None] * ws_w,
                    mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        if UPCAST:
            acc = tl.dot(a.to(ACC), b.to(ACC), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias + g * GN + rn, mask=mask_n, other=0.0).to(ACC)[None, :]
    acc = _activation(acc, ACT, p0, p1)
    positions = OD * OH * OW
    rows = n.to(tl.int64) * (G * GN) * positions + rm % positions
    cols = (g * GN + rn).to(tl.int64) * positions
    tl.store(out + rows[:, None] + cols[None, :], acc.to(out.dtype.element_ty),
             mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _conv_direct_kernel(x, w, bias, out, CO, GN, ID, IH, IW, OD, OH, OW, KD, KH, KW,
                        sd, sh, sw, pd, ph, pw, dd, dh, dw,
                        xs_n, xs_c, xs_d, xs_h, xs_w, ws_g, ws_n, ws_d, ws_h, ws_w, p0, p1,
                        TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                        ACC: tl.constexpr, BC: tl.constexpr, BP: tl.constexpr):
    """A [BC channels, BP positions] tile of one sample's output, each channel's group having one
    input channel (depthwise): a sum over the taps of products of x and a column of weights."""
    positions = OD * OH * OW
    p_tiles = tl.cdiv(positions, BP)
    c_tiles = tl.cdiv(CO, BC)
    pid = tl.program_id(0)
    n = pid // (p_tiles * c_tiles)
    o = ((pid // p_tiles) % c_tiles) * BC + tl.arange(0, BC)
    mask_c = o < CO
    g = o // GN
    p = (pid % p_tiles) * BP + tl.arange(0, BP)
    mask_p = p < positions
    ow = p % OW
    oh = (p // OW) % OH
    od = p // (OW * OH)
    x_planes = x + n.to(tl.int64) * xs_n + g.to(tl.int64) * xs_c
    w_taps = w + g.to(tl.int64) * ws_g + (o % GN) * ws_n
    acc = tl.zeros([BC, BP], dtype=ACC)
    for kd in range(0, KD):
        for kh in range(0, KH):
            for kw in range(0, KW):
                id_, ih, iw, ok = _source(od, oh, ow, kd, kh, kw, ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw,
                                          TRANSPOSED)
                v = tl.load(x_planes[:, None] + (id_ * xs_d + ih * xs_h + iw * xs_w)[None, :],
                            mask=mask_c[:, None] & (ok & mask_p)[None, :], other=0.0).to(ACC)
                tap = tl.load(w_taps + kd * ws_d + kh * ws_h + kw * ws_w, mask=mask_c, other=0.0).to(ACC)
                acc += v * tap[:, None]
    if HAS_BIAS:
        acc += tl.load(bias + o, mask=mask_c, other=0.0).to(ACC)[:, None]
    acc = _activation(acc, ACT, p0, p1)
    rows = (n.to(tl.int64) * CO + o) * positions
    tl.store(out + rows[:, None] + p[None, :], acc.to(out.dtype.element_ty), mask=mask_c[:, None] & mask_p[None, :])


@triton.jit
def _conv_weight_grad_kernel(x, g, out, R, G, GO, CA, ID, IH, IW, OD, OH, OW, KD, KH, KW,
                             sd, sh, sw, pd, ph, pw, dd, dh, dw,
                             xs_n, xs_c, xs_d, xs_h, xs_w, gs_n, gs_c, gs_d, gs_h, gs_w, CHUNK, SPLIT,
                             UPCAST: tl.constexpr, ACC: tl.constexpr,
                             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One [BM, BN] tile of a group's ``dw``: rows its output channels, columns (input channel,
    tap); K runs over (n, output position), one ``CHUNK`` of it per part. With SPLIT > 1, ``out``
    is the float32 workspace ``[SPLIT, G * GO, CA * taps]``."""
    taps = KD * KH * KW
    J = CA * taps
    m_tiles = tl.cdiv(GO, BM)
    n_tiles = tl.cdiv(J, BN)
    pid = tl.program_id(0)
    pid_n = pid % n_tiles
    pid_m = (pid // n_tiles) % m_tiles
    part = (pid // (n_tiles * m_tiles)) % SPLIT
    grp = pid // (n_tiles * m_tiles * SPLIT)
    rm = pid_m * BM + tl.arange(0, BM)
    mask_m = rm < GO
    rj = pid_n * BN + tl.arange(0, BN)
    mask_j = rj < J
    kw = rj % KW
    t = rj // KW
    kh = t % KH
    t = t // KH
    kd = t % KD
    c = t // KD
    g_rows = g + (grp * GO + rm).to(tl.int64) * gs_c
    x_cols = x + (grp * CA + c).to(tl.int64) * xs_c
    positions = OD * OH * OW
    acc = tl.zeros([BM, BN], dtype=ACC)
    start = part * CHUNK
    for r0 in range(start, tl.minimum(start + CHUNK, R), BK):
        rr = r0 + tl.arange(0, BK)
        mask_r = rr < R
        n = rr // positions
        ow = rr % OW
        oh = (rr // OW) % OH
        od = (rr // (OW * OH)) % OD
        a = tl.load(g_rows[:, None] + (n.to(tl.int64) * gs_n + od * gs_d + oh * gs_h + ow * gs_w)[None, :],
                    mask=mask_m[:, None] & mask_r[None, :], other=0.0)
        id_, ih, iw, ok = _source(od[:, None], oh[:, None], ow[:, None], kd[None, :], kh[None, :], kw[None, :],
                                  ID, IH, IW, sd, sh, sw, pd, ph, pw, dd, dh, dw, False)
        b = tl.load(x_cols[None, :] + n.to(tl.int64)[:, None] * xs_n + id_ * xs_d + ih * xs_h + iw * xs_w,
                    mask=ok & mask_r[:, None] & mask_j[None, :], other=0.0)
        if UPCAST:
            acc = tl.dot(a.to(ACC), b.to(ACC), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    base = part.to(tl.int64) * (G * GO) * J
    tl.store(out + base + (grp * GO + rm).to(tl.int64)[:, None] * J + rj[None, :], acc.to(out.dtype.element_ty),
             mask=mask_m[:, None] & mask_j[None, :])


@triton.jit
def _sum_parts_kernel(parts, out, size, SPLIT, BLOCK: tl.constexpr):
    """``out[i] = sum over s of parts[s, i]`` (the K split of conv_weight_grad), in order."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < size
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    part = parts + i
    for _ in range(0, SPLIT):
        acc += tl.load(part, mask=mask, other=0.0)
        part += size
    tl.store(out + i, acc.to(out.dtype.element_ty), mask=mask)


# -- host side ------------------------------------------------------------------------------------
def _pow2(n: int, low: int, high: int) -> int:
    return max(low, min(high, triton.next_power_of_2(max(int(n), 1))))


def _dot_flags(dtype: np.dtype) -> dict:
    """How tiles of ``dtype`` are multiplied: float16 (and bfloat16 on a GPU) as they are, the
    rest upcast to the accumulator with IEEE float32/float64 products."""
    native = dtype == np.float16 or (dtype == BFLOAT16 and not INTERPRETING)
    return {"UPCAST": not native, "ACC": tl.float64 if dtype == np.float64 else tl.float32}


def _spatial3(values, fill) -> list[int]:
    """Per-dim values of 1-3 spatial dims as three (missing leading dims: ``fill``)."""
    values = [int(v) for v in values]
    return [fill] * (3 - len(values)) + values


def _strides5(a: DeviceArray) -> list[int]:
    """A [N, C, *spatial] array's strides as five (size-1 leading spatial dims: stride 0)."""
    return [int(s) for s in a.strides[:2]] + _spatial3(a.strides[2:], 0)


def _geometry(op: str, x: DeviceArray, kernel, stride, padding, dilation) -> list[int]:
    """Input sizes, kernel sizes, strides, padding before and dilations, three of each."""
    nd = x.ndim - 2
    if nd not in (1, 2, 3) or len(kernel) != nd:
        raise ShapeError(f"{op}: the gpu kernels convolve 1, 2 or 3 spatial dims; got x {list(x.shape)} and a "
                         f"kernel of {list(kernel)} (rank {x.ndim})")
    if len(stride) != nd or len(dilation) != nd or len(padding) != 2 * nd:
        raise ArgumentError(f"{op}: stride {stride}, dilation {dilation} and padding {padding} must have {nd}, {nd} "
                            f"and {2 * nd} entries for x {list(x.shape)}")
    return (_spatial3(x.shape[2:], 1) + _spatial3(kernel, 1) + _spatial3(stride, 1)
            + _spatial3(padding[0::2], 0) + _spatial3(dilation, 1))


def _activation_params(act, act_attrs) -> tuple[int, float, float]:
    if act not in ACTIVATIONS:
        raise ArgumentError(f"fused_conv2d: act must be None or one of {sorted(a for a in ACTIVATIONS if a)}, "
                            f"got {act!r}")
    code, names = ACTIVATIONS[act]
    params = [float(act_attrs.get(name, default)) for name, default in names] + [0.0, 0.0]
    return code, params[0], params[1]


def _convolve(op: str, x: DeviceArray, w: DeviceArray, out_shape, stride, padding, dilation, groups: int,
              transposed: bool, bias: DeviceArray | None = None, act: tuple = (0, 0.0, 0.0)) -> DeviceArray:
    """``out_shape``'s convolution (or transposed convolution) of ``x`` by ``w``, through their strides."""
    out = empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    geometry = _geometry(op, x, w.shape[2:], stride, padding, dilation)
    OD, OH, OW = _spatial3(out_shape[2:], 1)
    channels_in = x.shape[1] // groups  # the reduction's channels per group
    gn = out_shape[1] // groups  # output channels per group
    # weight [O, CA, *k] for conv, [C, GN, *k] for conv_transpose: a group's block, its column
    # (output channel) step and its reduction-channel step
    ws = _strides5(w)
    ws_g, ws_n, ws_c = (gn * ws[0], ws[0], ws[1]) if not transposed else (channels_in * ws[0], ws[1], ws[0])
    code, p0, p1 = act
    flags = _dot_flags(x.dtype)
    common = dict(TRANSPOSED=transposed, HAS_BIAS=bias is not None, ACT=code, ACC=flags["ACC"])
    b = x if bias is None else bias  # (any pointer: HAS_BIAS=False never reads it)
    positions = OD * OH * OW
    if channels_in == 1 and gn < 16:  # depthwise: a GEMM tile of >= 16 columns would idle
        bc, bp = _pow2(out_shape[1], 1, BC_DIRECT), _pow2(positions, 16, BP_DIRECT)
        grid = (out_shape[0] * cdiv(out_shape[1], bc) * cdiv(positions, bp),)
        launch(_conv_direct_kernel, grid, x, w, b, out, out_shape[1], gn, *geometry[:3], OD, OH, OW, *geometry[3:15],
               *_strides5(x), ws_g, ws_n, *ws[2:], p0, p1, BC=bc, BP=bp, **common)
        return out
    bn = _pow2(gn, 16, 64)
    m = out_shape[0] * positions
    launch(_conv_gemm_kernel, (cdiv(m, BM) * cdiv(gn, bn) * groups,), x, w, b, out, m, groups, channels_in, gn,
           *geometry[:3], OD, OH, OW, *geometry[3:15], *_strides5(x), ws_g, ws_n, ws_c, *ws[2:], p0, p1,
           BM=BM, BN=bn, BK=BK, num_warps=4, **common, UPCAST=flags["UPCAST"])
    return out


def _conv_out_shape(x: DeviceArray, w: DeviceArray, stride, padding, dilation) -> tuple[int, ...]:
    sizes = []
    for i, (size, k) in enumerate(zip(x.shape[2:], w.shape[2:])):
        sizes.append((size + padding[2 * i] + padding[2 * i + 1] - dilation[i] * (k - 1) - 1) // stride[i] + 1)
    return (x.shape[0], w.shape[0], *sizes)


def conv(x: DeviceArray, w: DeviceArray, stride, padding, dilation, groups) -> DeviceArray:
    """``conv``: x [N, C, *S] by w [O, C / groups, *k]."""
    return _convolve("conv", x, w, _conv_out_shape(x, w, stride, padding, dilation), stride,
                     padding, dilation, groups, transposed=False)


def conv_transpose(x: DeviceArray, w: DeviceArray, stride, padding, output_padding, dilation, groups) -> DeviceArray:
    """``conv_transpose``: x [N, C, *S] by w [C, O / groups, *k], conv's adjoint in its input."""
    sizes = [(s - 1) * stride[i] - padding[2 * i] - padding[2 * i + 1] + dilation[i] * (k - 1) + 1 + output_padding[i]
             for i, (s, k) in enumerate(zip(x.shape[2:], w.shape[2:]))]
    return _convolve("conv_transpose", x, w, (x.shape[0], w.shape[1] * groups, *sizes), stride, padding, dilation,
                     groups, transposed=True)


def conv_weight_grad(x: DeviceArray, g: DeviceArray, kernel_size, stride, padding, dilation, groups) -> DeviceArray:
    """``conv_weight_grad``: dw [O, C / groups, *kernel_size] from x [N, C, *S] and grad [N, O, *P]."""
    op = "conv_weight_grad"
    channels_in, go = x.shape[1] // groups, g.shape[1] // groups
    out_shape = (g.shape[1], channels_in, *kernel_size)
    out = empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    geometry = _geometry(op, x, kernel_size, stride, padding, dilation)
    OD, OH, OW = _spatial3(g.shape[2:], 1)
    r = g.shape[0] * OD * OH * OW
    j = channels_in * int(np.prod(kernel_size))
    bm, bn = _pow2(go, 16, 64), _pow2(j, 16, 64)
    programs = cdiv(go, bm) * cdiv(j, bn) * groups
    steps = cdiv(r, BK)
    # split K while the grid is short of the GPU, each part at least 8 steps long
    split = max(1, min(cdiv(steps, 8), TARGET_PROGRAMS // programs))
    chunk = max(cdiv(steps, split), 1) * BK
    split = max(cdiv(r, chunk), 1)  # (an empty batch: one part, which stores zeros)
    target = out if split == 1 else empty((split, *out_shape), np.float32)
    launch(_conv_weight_grad_kernel, (programs * split,), x, g, target, r, groups, go,
           channels_in, *geometry[:3], OD, OH, OW, *geometry[3:15], *_strides5(x), *_strides5(g), chunk, split,
           BM=bm, BN=bn, BK=BK, num_warps=4, **_dot_flags(x.dtype))
    if split > 1:
        launch(_sum_parts_kernel, (cdiv(out.size, 1024),), target, out, out.size, split, BLOCK=1024)
    return out


def fused_conv2d(x: DeviceArray, w: DeviceArray, b: DeviceArray | None = None, stride=(1, 1), padding=(0, 0, 0, 0),
                 dilation=(1, 1), groups=1, act=None, act_attrs=None, max_pool=None) -> DeviceArray:
    """``fused_conv2d``: conv's kernel with the bias and the activation in its epilogue, then
    ``max_pool``'s windows (``max_pool_infer``'s kernel)."""
    if x.ndim != 4:
        raise ShapeError(f"fused_conv2d: x must be 4-d [N, C, H, W], got {list(x.shape)}")
    activation = _activation_params(act, act_attrs or {})
    bias = None if b is None else contiguous(b).view((b.size,), (1,))
    shape = _conv_out_shape(x, w, stride, padding, dilation)
    y = _convolve("fused_conv2d", x, w, shape, stride, padding, dilation, groups, transposed=False, bias=bias,
                  act=activation)
    if max_pool is None:
        return y
    return max_pool_infer(y, [max_pool] * 2, [max_pool] * 2, [0, 0, 0, 0], False)


KERNELS = {
    "conv": conv,
    "conv_transpose": conv_transpose,
    "conv_weight_grad": conv_weight_grad,
    "fused_conv2d": fused_conv2d,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
_GEOMETRY = ("ID", "IH", "IW", "OD", "OH", "OW", "KD", "KH", "KW", "sd", "sh", "sw", "pd", "ph", "pw", "dd", "dh", "dw")


def _signature(pointers: dict, ints: tuple, floats: tuple, constexprs: dict) -> dict:
    return {**pointers, **{name: "i32" for name in ints}, **{name: "fp32" for name in floats},
            **{name: "constexpr" for name in constexprs}}


AOT_ACTIVATIONS = (None, "relu", "gelu", "mish", "hardsigmoid")


def aot_configs() -> list[tuple]:
    """The GEMM (conv and transposed; with bias and activations in float32), the direct
    (depthwise) kernel, conv_weight_grad's GEMM and its sum, in float32 and bfloat16 as a GPU
    runs them (bfloat16 tiles into tl.dot unconverted)."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    for dtype in ("float32", "bfloat16"):
        ptr = POINTER_TYPES[dtype]
        flags = {"UPCAST": dtype == "float32", "ACC": tl.float32}
        tensors = {"x": ptr, "w": ptr, "bias": ptr, "out": ptr}
        # the activations that call helpers, and one of two parameters (the rest are single tl ops)
        acts = [(None, 0)] if dtype == "bfloat16" else [(name, ACTIVATIONS[name][0]) for name in AOT_ACTIVATIONS]
        for transposed in (False, True):
            for act, code in acts if not transposed else [(None, 0)]:
                constexprs = {"TRANSPOSED": transposed, "HAS_BIAS": act is not None, "ACT": code, **flags,
                              "BM": BM, "BN": 64, "BK": BK}
                ints = ("M", "G", "CA", "GN", *_GEOMETRY, "xs_n", "xs_c", "xs_d", "xs_h", "xs_w",
                        "ws_g", "ws_n", "ws_c", "ws_d", "ws_h", "ws_w")
                label = f"conv.gemm{'_transposed' if transposed else ''}[{dtype}{'' if act is None else ',' + act}]"
                found.append((label, _conv_gemm_kernel, _signature(tensors, ints, ("p0", "p1"), constexprs), constexprs))
            constexprs = {"TRANSPOSED": transposed, "HAS_BIAS": True, "ACT": 1, "ACC": tl.float32, "BC": BC_DIRECT,
                          "BP": BP_DIRECT}
            ints = ("CO", "GN", *_GEOMETRY, "xs_n", "xs_c", "xs_d", "xs_h", "xs_w", "ws_g", "ws_n", "ws_d", "ws_h", "ws_w")
            found.append((f"conv.direct{'_transposed' if transposed else ''}[{dtype}]", _conv_direct_kernel,
                          _signature(tensors, ints, ("p0", "p1"), constexprs), constexprs))
        constexprs = {**flags, "BM": 64, "BN": 64, "BK": BK}
        ints = ("R", "G", "GO", "CA", *_GEOMETRY, "xs_n", "xs_c", "xs_d", "xs_h", "xs_w", "gs_n", "gs_c", "gs_d", "gs_h",
                "gs_w", "CHUNK", "SPLIT")
        found.append((f"conv.weight_grad[{dtype}]", _conv_weight_grad_kernel,
                      _signature({"x": ptr, "g": ptr, "out": ptr}, ints, (), constexprs), constexprs))
        found.append((f"conv.sum_parts[{dtype}]", _sum_parts_kernel,
                      _signature({"parts": "*fp32", "out": ptr}, ("size", "SPLIT"), (), {"BLOCK": 1024}),
                      {"BLOCK": 1024}))
    return found
