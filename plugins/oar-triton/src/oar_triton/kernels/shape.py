"""Shape and indexing kernels: views where numpy's reference returns one, Triton copies elsewhere.

Views (no kernel, zero copy; strides in elements): ``reshape``/``flatten`` wherever numpy's is a
view (else of a contiguous copy: a transposed array), ``squeeze``, ``unsqueeze``, ``transpose``,
``broadcast_to`` (stride 0), ``slice``/``strided_slice``, ``split``, ``unbind`` and basic
``getitem`` (ints, slices with steps, None, Ellipsis).

Kernels, each over the flat index of a contiguous output (or of the copied region), unravelled
into at most ``RANK`` dims after merging the dims that step contiguously:

- ``_copy_kernel``: any strided source into any strided destination (``concat``/``stack`` write
  each input into the output's slice, ``flip`` copies a negative-stride view);
- ``_remap_kernel``: ``src_i = (sign * i + add) % mod`` per dim (``tile``, ``roll``);
- ``_pad_kernel``: constant, reflect, replicate and circular padding;
- ``_triangle_kernel``: ``tril``/``triu`` over the last two dims;
- index ops (``gather``, ``gather_nd``, ``take_along_axis``, ``_take_along_axis``, advanced
  ``getitem``, ``masked_select``) first turn their index tensors into one int64 array of element
  offsets (``_offsets_kernel``, one launch per index tensor; a bool mask goes through
  ``_nonzero_kernel``, which writes the offsets of its true elements in row-major order), then
  ``_gather_kernel`` reads ``x[base + i·s + off[i·t]]``; ``nonzero`` unravels those offsets;
- assignments (``setitem``, ``scatter``) write a copy of ``x``: a basic region with the copy
  kernel, an indexed one in two passes, ``_claim_kernel`` (each destination keeps the greatest
  source position, by ``atomic_max``) then ``_scatter_store_kernel``, so a repeated index gets the
  last value, deterministically, as numpy's assignment;
- scatters (``getitem_grad`` with index tensors, ``_scatter_add_along_axis``, ``index_add``,
  ``scatter_nd_add``, ``scatter(overwrite=False)``, ``put_along_axis(reduce="add",
  include_self=True)``) add with ``tl.atomic_add`` into a buffer of float32 (half types, then
  cast), float64, int32 or int64: fast, but in float not bitwise deterministic when indices repeat;
- ``put_along_axis``'s other reduces (assign, mul, mean, amin, amax, ``include_self=False``) are
  deterministic: each output element visits the K sources of its line in order
  (``_put_along_kernel``, K loads per element), so repeated indices combine as numpy's, the last
  assigned winning;
- ``one_hot`` compares each index with its class (``masked_fill`` is an elementwise op, generated);
  ``full_like`` and ``pad`` fill with the value as numpy converts it to the dtype (a float travels
  as its float64 bits, as a float scalar argument would be rounded to float32).

Index ranges are checked as on the cpu: each index kernel records the least and greatest index it
read (atomic min/max), out-of-range lanes read nothing, and the host reads those two numbers back
to raise ``IndexOutOfRangeError`` (one small device-to-host read per index op). A bool mask's
true count (``getitem``, ``masked_select``, ``nonzero``) and ``one_hot(num_classes=-1)``'s largest
class are read back the same way, as the output shape depends on them.

Refused with an error naming the op and shapes: more than ``RANK`` dims left after merging.

>>> from oar_triton.backend import BACKEND                         # doctest: +SKIP
>>> x = BACKEND.from_numpy(np.zeros((2, 3), np.float32))          # doctest: +SKIP
>>> KERNELS["transpose"](x, perm=[1, 0]).block is x.block         # doctest: +SKIP
True
>>> KERNELS["concat"](x, x, axis=0).shape                         # doctest: +SKIP
(4, 3)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray, contiguous_strides
from oar_triton.backend import BACKEND, contiguous, empty
from oar_triton.kernels.elementwise import broadcast_strides, cast, merge_dims, strided_copy
from oar_triton.launch import HALF, launch

from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from oar.ops import get_dtype

RANK = 6  # the most dims a kernel indexes after merging
BLOCK = 1024
NONZERO_BLOCK = 1024
NO_WRAP = 2**62  # the "size" of precomputed offsets: never negative, never out of range


# -- kernels --------------------------------------------------------------------------------------
@triton.jit
def _coords(offs, d1, d2, d3, d4, d5):
    i5 = offs % d5
    rest = offs // d5
    i4 = rest % d4
    rest = rest // d4
    i3 = rest % d3
    rest = rest // d3
    i2 = rest % d2
    rest = rest // d2
    i1 = rest % d1
    i0 = rest // d1
    return i0, i1, i2, i3, i4, i5


@triton.jit
def _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5):
    return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4 + i5 * s5


@triton.jit
def _copy_kernel(dst, src, n, d1, d2, d3, d4, d5, a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5,
                 BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    v = tl.load(src + _dot(i0, i1, i2, i3, i4, i5, a0, a1, a2, a3, a4, a5), mask=mask)
    tl.store(dst + _dot(i0, i1, i2, i3, i4, i5, b0, b1, b2, b3, b4, b5), v.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _remap_index(i, sign, add, mod):
    return (i * sign + add) % mod  # kept non-negative by the host: Triton's % truncates on the GPU


@triton.jit
def _remap_kernel(out, x, n, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5,
                  g0, g1, g2, g3, g4, g5, a0, a1, a2, a3, a4, a5, m0, m1, m2, m3, m4, m5, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    src = _dot(_remap_index(i0, g0, a0, m0), _remap_index(i1, g1, a1, m1), _remap_index(i2, g2, a2, m2),
               _remap_index(i3, g3, a3, m3), _remap_index(i4, g4, a4, m4), _remap_index(i5, g5, a5, m5),
               s0, s1, s2, s3, s4, s5)
    tl.store(out + offs, tl.load(x + src, mask=mask), mask=mask)


@triton.jit
def _pad_index(i, size, before, MODE: tl.constexpr):
    j = i - before
    if MODE == 1:  # reflect (the edge itself is not repeated)
        j = tl.abs(j)
        j = tl.where(j >= size, 2 * (size - 1) - j, j)
    elif MODE == 2:  # replicate
        j = tl.minimum(tl.maximum(j, 0), size - 1)
    elif MODE == 3:  # circular; correct under both truncating and flooring %
        j = (j % size + size) % size
    return j, (j >= 0) & (j < size)


@triton.jit
def _pad_kernel(out, x, n, d1, d2, d3, d4, d5, c0, c1, c2, c3, c4, c5, p0, p1, p2, p3, p4, p5,
                s0, s1, s2, s3, s4, s5, value, VIA: tl.constexpr, MODE: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    j0, k0 = _pad_index(i0, c0, p0, MODE)
    j1, k1 = _pad_index(i1, c1, p1, MODE)
    j2, k2 = _pad_index(i2, c2, p2, MODE)
    j3, k3 = _pad_index(i3, c3, p3, MODE)
    j4, k4 = _pad_index(i4, c4, p4, MODE)
    j5, k5 = _pad_index(i5, c5, p5, MODE)
    inside = k0 & k1 & k2 & k3 & k4 & k5
    v = tl.load(x + _dot(j0, j1, j2, j3, j4, j5, s0, s1, s2, s3, s4, s5), mask=mask & inside)
    filler = _filler(value, VIA, BLOCK).to(out.dtype.element_ty)
    tl.store(out + offs, tl.where(inside, v.to(out.dtype.element_ty), filler), mask=mask)


@triton.jit
def _triangle_kernel(out, x, n, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5, diagonal,
                     LOWER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)  # i4: row, i5: column
    if LOWER:
        keep = i5 - i4 <= diagonal
    else:
        keep = i5 - i4 >= diagonal
    v = tl.load(x + _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5), mask=mask & keep)
    tl.store(out + offs, tl.where(keep, v, tl.zeros_like(v)), mask=mask)


@triton.jit
def _offsets_kernel(off, idx, stats, n, d1, d2, d3, d4, d5, t0, t1, t2, t3, t4, t5, size, stride,
                    HAS_ACC: tl.constexpr, BLOCK: tl.constexpr):
    # off (contiguous int64) += wrapped index * stride; stats[0:2] <- least and greatest index read
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    v = tl.load(idx + _dot(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask, other=0).to(tl.int64)
    tl.atomic_min(stats, tl.min(v, axis=0))
    tl.atomic_max(stats + 1, tl.max(v, axis=0))
    v = tl.where(v < 0, v + size, v)
    v = tl.where((v >= 0) & (v < size), v, 0)  # out of range: read nothing, the host raises
    o = v * stride
    if HAS_ACC:
        o += tl.load(off + offs, mask=mask, other=0)
    tl.store(off + offs, o, mask=mask)


@triton.jit
def _gather_kernel(out, x, off, n, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    o = tl.load(off + _dot(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask, other=0)
    v = tl.load(x + _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5) + o, mask=mask)
    tl.store(out + offs, v, mask=mask)


@triton.jit
def _scatter_add_kernel(dst, g, off, n, d1, d2, d3, d4, d5, u0, u1, u2, u3, u4, u5, s0, s1, s2, s3, s4, s5,
                        t0, t1, t2, t3, t4, t5, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    o = tl.load(off + _dot(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask, other=0)
    v = tl.load(g + _dot(i0, i1, i2, i3, i4, i5, u0, u1, u2, u3, u4, u5), mask=mask)
    tl.atomic_add(dst + _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5) + o, v.to(dst.dtype.element_ty),
                  mask=mask)


@triton.jit
def _put_along_kernel(out, arr, idx, val, n, d1, d2, d3, d4, d5, a0, a1, a2, a3, a4, a5, o0, o1, o2, o3, o4, o5,
                      e0, e1, e2, e3, e4, q0, q1, q2, q3, q4, q5, w0, w1, w2, w3, w4, w5, K, size,
                      REDUCE: tl.constexpr, INCLUDE_SELF: tl.constexpr, MEAN: tl.constexpr, TRUNC: tl.constexpr,
                      ACC: tl.constexpr, BLOCK: tl.constexpr):
    # each output element (the indexed axis last) visits the K sources of its line in order, so
    # that repeated indices combine as numpy's (the last one assigned wins) without atomics
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    lanes = mask & (i0 < e0) & (i1 < e1) & (i2 < e2) & (i3 < e3) & (i4 < e4)
    x = tl.load(arr + _dot(i0, i1, i2, i3, i4, i5, a0, a1, a2, a3, a4, a5), mask=mask, other=0).to(ACC)
    line_idx = i0 * q0 + i1 * q1 + i2 * q2 + i3 * q3 + i4 * q4
    line_val = i0 * w0 + i1 * w1 + i2 * w2 + i3 * w3 + i4 * w4
    acc = x
    count = tl.zeros([BLOCK], tl.int32)
    for k in range(0, K):
        j = tl.load(idx + line_idx + k * q5, mask=lanes, other=-1).to(tl.int64)
        j = tl.where(j < 0, j + size, j)
        hit = lanes & (j == i5)
        v = tl.load(val + line_val + k * w5, mask=hit, other=0).to(ACC)
        if REDUCE == 0:  # assign
            new = v
        elif REDUCE == 1:  # add, mean
            new = acc + v
        elif REDUCE == 2:  # mul
            new = acc * v
        elif REDUCE == 3:  # amin
            new = tl.minimum(acc, v)
        else:  # amax
            new = tl.maximum(acc, v)
        if not INCLUDE_SELF:  # the first source replaces the old value
            new = tl.where(count == 0, v, new)
        acc = tl.where(hit, new, acc)
        count += hit.to(tl.int32)
    if MEAN:
        total = count.to(ACC) + 1 if INCLUDE_SELF else count.to(ACC)
        acc = tl.where(count > 0, acc / tl.maximum(total, 1), x)
        if TRUNC:
            acc = tl.where(acc < 0, -tl.floor(-acc), tl.floor(acc))
    tl.store(out + _dot(i0, i1, i2, i3, i4, i5, o0, o1, o2, o3, o4, o5), acc.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _nonzero_kernel(mask_ptr, n, off, count, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5, UPCAST: tl.constexpr,
                    BLOCK: tl.constexpr):
    # one program: a running prefix sum keeps the true elements in row-major order
    total = tl.zeros([1], tl.int64)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK).to(tl.int64)
        inside = offs < n
        m = tl.load(mask_ptr + offs, mask=inside, other=0)
        if UPCAST:  # half types: compare values (-0.0 is zero), not bits
            m = m.to(tl.float32)
        m = (m != 0) & inside
        taken = m.to(tl.int64)
        pos = tl.cumsum(taken, axis=0) - 1 + tl.sum(total, axis=0)
        i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
        tl.store(off + pos, _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5), mask=m)
        total += tl.sum(taken, axis=0)
    tl.store(count + tl.arange(0, 1), total)


@triton.jit
def _claim_kernel(winner, off, n, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5,
                  BLOCK: tl.constexpr):
    # the last source (in row-major order) of each destination claims it, as numpy's assignment
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    o = tl.load(off + _dot(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask, other=0)
    tl.atomic_max(winner + _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5) + o, offs, mask=mask)


@triton.jit
def _scatter_store_kernel(dst, g, off, winner, n, d1, d2, d3, d4, d5, u0, u1, u2, u3, u4, u5,
                          s0, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, CLAIMED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i0, i1, i2, i3, i4, i5 = _coords(offs, d1, d2, d3, d4, d5)
    where = _dot(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5)
    where += tl.load(off + _dot(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask, other=0)
    if CLAIMED:  # only the claiming source writes: repeated destinations get the last value
        mask = mask & (tl.load(winner + where, mask=mask, other=-1) == offs)
    v = tl.load(g + _dot(i0, i1, i2, i3, i4, i5, u0, u1, u2, u3, u4, u5), mask=mask)
    tl.store(dst + where, v.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _unravel_kernel(out, flat, n, ndim, c0, c1, c2, c3, c4, c5, z0, z1, z2, z3, z4, z5, BLOCK: tl.constexpr):
    # out[i, d] = the d-th coordinate of flat index flat[i] (strides c, sizes z)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = offs % ndim
    f = tl.load(flat + offs // ndim, mask=mask, other=0)
    stride = tl.where(d == 0, c0, tl.where(d == 1, c1, tl.where(d == 2, c2,
                      tl.where(d == 3, c3, tl.where(d == 4, c4, c5)))))
    size = tl.where(d == 0, z0, tl.where(d == 1, z1, tl.where(d == 2, z2,
                    tl.where(d == 3, z3, tl.where(d == 4, z4, z5)))))
    tl.store(out + offs, (f // stride) % size, mask=mask)


@triton.jit
def _range_kernel(idx, n, stats, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(idx + offs, mask=offs < n, other=0).to(tl.int64)
    tl.atomic_min(stats, tl.min(v, axis=0))
    tl.atomic_max(stats + 1, tl.max(v, axis=0))


@triton.jit
def _one_hot_kernel(out, x, n, classes, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs // classes, mask=mask, other=-1).to(tl.int64)
    tl.store(out + offs, (v == offs % classes).to(out.dtype.element_ty), mask=mask)


@triton.jit
def _filler(value, VIA: tl.constexpr, BLOCK: tl.constexpr):
    # a float comes as its float64 bits (a float scalar argument would be rounded to float32) and
    # goes to half types through float32 (the interpreter converts float64 to bfloat16 wrongly)
    v = tl.full([BLOCK], value, tl.int64)
    if VIA == tl.int64:
        w = v
    else:
        w = v.to(tl.float64, bitcast=True).to(VIA)
    return w


@triton.jit
def _fill_kernel(out, n, value, VIA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, _filler(value, VIA, BLOCK).to(out.dtype.element_ty), mask=offs < n)


# -- host helpers ---------------------------------------------------------------------------------
def _grid(n: int) -> tuple[int]:
    return (triton.cdiv(n, BLOCK),)


def _padded(op: str, dims: list[int], strides: list[list[int]], shapes) -> tuple[list[int], list[int]]:
    """Dims and each operand's strides left-padded to ``RANK`` (flattened), or the refusal."""
    if len(dims) > RANK:
        raise ShapeError(f"{op}: gpu kernel: operands of shapes {[list(s) for s in shapes]} need {len(dims)} dims "
                         f"of indexing after merging; the kernels index at most {RANK}")
    pad = RANK - len(dims)
    return [1] * pad + list(dims), [s for operand in strides for s in [0] * pad + list(operand)]


class _Dim(NamedTuple):
    size: int  # of the output
    strides: tuple  # of each operand
    params: tuple  # the per-dim mapping, identity when ``plain``
    plain: bool


def _merge_plain(dims: list[_Dim], identity) -> list[_Dim]:
    """Drop size-1 plain dims and merge neighbouring plain dims that every operand steps through
    contiguously; ``identity(size)`` gives a merged dim's parameters."""
    merged: list[_Dim] = []
    for d in dims:
        if d.plain and d.size == 1:
            continue
        if merged and d.plain and merged[-1].plain and all(
                a == b * d.size for a, b in zip(merged[-1].strides, d.strides)):
            size = merged[-1].size * d.size
            merged[-1] = _Dim(size, d.strides, identity(size), True)
            continue
        merged.append(d)
    return merged or [_Dim(1, tuple(0 for _ in dims[0].strides) if dims else (0,), identity(1), True)]


def _fill_args(value, dtype: np.dtype) -> tuple:
    """``value`` as numpy converts it to ``dtype``, as the fill kernels' ``value`` and ``VIA``."""
    v = np.asarray(value).astype(dtype)
    if dtype.kind in "biu":
        return int(v), tl.int64
    bits = int(np.asarray(float(v), np.float64).view(np.int64))
    return bits, tl.float64 if dtype == np.float64 else tl.float32


def fill_with(out: DeviceArray, value) -> DeviceArray:
    """``out`` (contiguous) filled with ``value`` converted as numpy converts it."""
    if out.size:
        bits, via = _fill_args(value, out.dtype)
        launch(_fill_kernel, _grid(out.size), out, out.size, bits, VIA=via, BLOCK=BLOCK)
    return out


def copy_into(dst: DeviceArray, src: DeviceArray, op: str = "copy") -> DeviceArray:
    """``src`` (broadcast to ``dst``'s shape) written into the view ``dst``, cast to its dtype."""
    n = dst.size
    if n == 0:
        return dst
    dims, strides = merge_dims(dst.shape, [broadcast_strides(src, dst.shape), list(dst.strides)])
    dims, flat = _padded(op, dims, strides, [src.shape, dst.shape])
    launch(_copy_kernel, _grid(n), dst, src, n, *dims[1:], *flat, BLOCK=BLOCK)
    return dst


def _remap(op: str, x: DeviceArray, out_shape, maps) -> DeviceArray:
    """``out[i] = x[(sign*i + add) % mod per dim]``; ``maps[d]`` is ``(sign, add, mod)`` or None
    (the identity) for output dim ``d``; ``x`` has as many dims as the output."""
    out = empty(out_shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    dims = [_Dim(size, (stride,), m or (1, 0, size), m is None)
            for size, stride, m in zip(out_shape, x.strides, maps)]
    dims = _merge_plain(dims, lambda size: (1, 0, size)) if dims else [_Dim(1, (0,), (1, 0, 1), True)]
    sizes, flat = _padded(op, [d.size for d in dims], [[d.strides[0] for d in dims]], [x.shape, out_shape])
    pad = RANK - len(dims)
    params = [(1, 0, 1)] * pad + [d.params for d in dims]
    launch(_remap_kernel, _grid(n), out, x, n, *sizes[1:], *flat, *[p[0] for p in params],
           *[p[1] for p in params], *[p[2] for p in params], BLOCK=BLOCK)
    return out


def _read_stats(stats: DeviceArray) -> np.ndarray:
    return BACKEND.to_numpy(stats).reshape(-1, 2)


def _out_of_range(op: str, lo: int, hi: int, size: int, axis: int, name: str = "index"):
    """The cpu's error when index values fall outside ``[-size, size)``, else None."""
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        return IndexOutOfRangeError(f"{op}: {name} {int(bad)} is out of range for axis {axis} with size {size} "
                                    f"(expected {-size}..{size - 1})")
    return None


class _Index(NamedTuple):
    """One advanced index: ``array`` (or None: all zeros) of broadcast shape ``shape``, read
    along a dim of ``size`` and ``stride`` (original ``axis``); precomputed offsets have
    ``size=NO_WRAP`` and ``stride=1``."""

    array: DeviceArray | None
    shape: tuple
    size: int
    stride: int
    axis: int


def _offsets(op: str, entries: list[_Index], shape: tuple, name: str = "index") -> DeviceArray:
    """The int64 offsets (contiguous, of ``shape``) that the advanced ``entries`` select, summed;
    raises the cpu's ``IndexOutOfRangeError`` for an index outside its dim."""
    live = [e for e in entries if e.array is not None and e.array.size]
    if not live or not math.prod(shape):
        return BACKEND.zeros(shape, np.int64)
    off = empty(shape, np.int64)  # the first pass writes every element
    n = off.size
    stats = BACKEND.zeros((len(live), 2), np.int64)
    for k, e in enumerate(live):
        dims, strides = merge_dims(shape, [broadcast_strides(e.array, shape)])
        dims, flat = _padded(op, dims, strides, [e.array.shape, shape])
        launch(_offsets_kernel, _grid(n), off, e.array, stats.view((2,), (1,), 2 * k), n, *dims[1:], *flat,
               int(e.size), int(e.stride), HAS_ACC=k > 0, BLOCK=BLOCK)
    for e, (lo, hi) in zip(live, _read_stats(stats)):
        if e.size != NO_WRAP:
            error = _out_of_range(op, int(lo), int(hi), e.size, e.axis, name)
            if error is not None:
                raise error
    return off


def _gather(op: str, x: DeviceArray, base: int, out_shape, s: list[int], off: DeviceArray, t: list[int]) -> DeviceArray:
    """``out[i] = x[base + i·s + off[i·t]]`` over a contiguous output of ``out_shape``."""
    out = empty(out_shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    dims, strides = merge_dims(tuple(out_shape), [s, t])
    dims, flat = _padded(op, dims, strides, [x.shape, off.shape, out_shape])
    launch(_gather_kernel, _grid(n), out, x.view(x.shape, x.strides, base), off, n, *dims[1:], *flat, BLOCK=BLOCK)
    return out


ACCUMULATE = {np.dtype(np.float64): np.dtype(np.float64), np.dtype(np.int32): np.dtype(np.int32),
              np.dtype(np.int64): np.dtype(np.int64)}  # every other served dtype adds in float32
ACCUMULATE_SERVED = {*ACCUMULATE, np.dtype(np.float32), *HALF}


def _scatter_add(op: str, dst: DeviceArray, base: int, g: DeviceArray, s: list[int], off: DeviceArray,
                 t: list[int]) -> None:
    """``dst[base + i·s + off[i·t]] += g[i]`` with atomics, over ``g``'s shape."""
    n = g.size
    if n == 0:
        return
    dims, strides = merge_dims(g.shape, [list(g.strides), s, t])
    dims, flat = _padded(op, dims, strides, [g.shape, dst.shape, off.shape])
    launch(_scatter_add_kernel, _grid(n), dst.view(dst.shape, dst.strides, base), g, off, n, *dims[1:], *flat,
           BLOCK=BLOCK)


def _accumulator(shape, dtype: np.dtype) -> DeviceArray:
    return BACKEND.zeros(shape, ACCUMULATE.get(dtype, np.dtype(np.float32)))


def _finish(acc: DeviceArray, dtype: np.dtype) -> DeviceArray:
    return acc if acc.dtype == dtype else cast(acc, dtype)


# -- views ----------------------------------------------------------------------------------------
def _reshaped_strides(shape, strides, new_shape) -> list[int] | None:
    """Strides that show ``new_shape`` over the memory of (``shape``, ``strides``), or None when
    no view can (numpy's and PyTorch's rule): each run of old dims that step through memory
    contiguously must be split or merged into new dims on its own."""
    if not shape or math.prod(shape) == 0:
        return list(contiguous_strides(tuple(new_shape)))
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1]  # the stride of the innermost dim of the current contiguous run
    numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != numel * base):  # the run ends at d
            while view_d >= 0 and (view_numel < numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != numel:
                return None
            if d > 0:
                base, numel, view_numel = strides[d - 1], 1, 1
    return new_strides if view_d == -1 else None


def _view(x: DeviceArray, shape) -> DeviceArray:
    """``x`` with a new shape of the same size: a view where the strides allow one, else a view of
    a contiguous copy (of a transposed array, say)."""
    shape = tuple(shape)
    strides = _reshaped_strides(x.shape, x.strides, shape)
    if strides is None:
        return contiguous(x).view(shape, None, 0)
    return x.view(shape, tuple(strides))


def reshape(x: DeviceArray, shape) -> DeviceArray:
    shape = [int(d) for d in shape]
    if -1 in shape:  # the size a dynamic program left open, inferred now
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = x.size // known if known else 0
    if math.prod(shape) != x.size:
        raise ShapeError(f"reshape: cannot reshape an array of shape {list(x.shape)} ({x.size} elements) to {shape}")
    return _view(x, shape)


def flatten(x: DeviceArray, start_axis, stop_axis) -> DeviceArray:
    if x.ndim == 0:
        return _view(x, (1,))
    return _view(x, (*x.shape[:start_axis], math.prod(x.shape[start_axis:stop_axis + 1]), *x.shape[stop_axis + 1:]))


def squeeze(x: DeviceArray, axis) -> DeviceArray:
    drop = {d for d in (range(x.ndim) if axis is None else axis) if x.shape[d] == 1}
    keep = [d for d in range(x.ndim) if d not in drop]
    return x.view(tuple(x.shape[d] for d in keep), tuple(x.strides[d] for d in keep))


def unsqueeze(x: DeviceArray, axis) -> DeviceArray:
    ndim = x.ndim + len(axis)
    dims = iter(zip(x.shape, x.strides))
    pairs = [(1, 0) if d in axis else next(dims) for d in range(ndim)]
    return x.view(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


def transpose(x: DeviceArray, perm) -> DeviceArray:
    return x.view(tuple(x.shape[p] for p in perm), tuple(x.strides[p] for p in perm))


def broadcast_to(x: DeviceArray, shape) -> DeviceArray:
    shape = tuple(int(d) for d in shape)
    if len(shape) < x.ndim or any(d not in (1, t) for d, t in zip(x.shape, shape[len(shape) - x.ndim:])):
        raise ShapeError(f"broadcast_to: cannot broadcast an array of shape {list(x.shape)} to {list(shape)}")
    return x.view(shape, tuple(broadcast_strides(x, shape)))


def _sliced(x: DeviceArray, axes, starts, ends, steps) -> DeviceArray:
    shape, strides, offset = list(x.shape), list(x.strides), 0
    for a, s, e, st in zip(axes, starts, ends, steps):
        start, stop, step = slice(s, e, st).indices(x.shape[a])
        shape[a] = len(range(start, stop, step))
        if shape[a]:
            offset += start * x.strides[a]
        strides[a] = x.strides[a] * step
    return x.view(tuple(shape), tuple(strides), offset)


def slice_(x: DeviceArray, axes, starts, ends) -> DeviceArray:
    return _sliced(x, axes, starts, ends, [1] * len(axes))


def strided_slice(x: DeviceArray, axes, starts, ends, strides) -> DeviceArray:
    return _sliced(x, axes, starts, ends, strides)


def split(x: DeviceArray, sections, axis) -> tuple[DeviceArray, ...]:
    outs, start = [], 0
    for size in sections:
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
        outs.append(x.view(shape, x.strides, start * x.strides[axis] if size else 0))
        start += size
    return tuple(outs)


def unbind(x: DeviceArray, axis) -> tuple[DeviceArray, ...]:
    shape = x.shape[:axis] + x.shape[axis + 1:]
    strides = x.strides[:axis] + x.strides[axis + 1:]
    return tuple(x.view(shape, strides, k * x.strides[axis]) for k in range(x.shape[axis]))


# -- copies ---------------------------------------------------------------------------------------
def _joined_dtype(xs) -> np.dtype:
    dtypes = {x.dtype for x in xs}
    return xs[0].dtype if len(dtypes) == 1 else np.result_type(*dtypes)


def concat(*xs: DeviceArray, axis) -> DeviceArray:
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = empty(shape, _joined_dtype(xs))
    start = 0
    for x in xs:
        if x.size:
            copy_into(out.view(x.shape, out.strides, start * out.strides[axis]), x, "concat")
        start += x.shape[axis]
    return out


def stack(*xs: DeviceArray, axis) -> DeviceArray:
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    out = empty(shape, _joined_dtype(xs))
    strides = out.strides[:axis] + out.strides[axis + 1:]
    for k, x in enumerate(xs):
        copy_into(out.view(x.shape, strides, k * out.strides[axis]), x, "stack")
    return out


def full_like(x: DeviceArray, fill_value, dtype) -> DeviceArray:
    return fill_with(empty(x.shape, get_dtype(dtype).np), fill_value)


def tile(x: DeviceArray, repeat_times) -> DeviceArray:
    ndim = max(x.ndim, len(repeat_times))
    x = x.view((1,) * (ndim - x.ndim) + x.shape, (0,) * (ndim - x.ndim) + x.strides)
    reps = (1,) * (ndim - len(repeat_times)) + tuple(repeat_times)
    out_shape = tuple(d * r for d, r in zip(x.shape, reps))
    return _remap("tile", x, out_shape, [None if r == 1 else (1, 0, d) for d, r in zip(x.shape, reps)])


def flip(x: DeviceArray, axis) -> DeviceArray:
    # a copy of the view with negative strides along the flipped axes (Paddle's flip is no view)
    strides, offset = list(x.strides), 0
    for a in axis:
        if x.shape[a]:
            offset += (x.shape[a] - 1) * x.strides[a]
        strides[a] = -x.strides[a]
    return strided_copy(x.view(x.shape, tuple(strides), offset))


def roll(x: DeviceArray, shifts, axis) -> DeviceArray:
    if axis is None:  # the flattened array rolled, given its shape back
        flat = _view(x, (x.size,))
        return _remap("roll", flat, flat.shape, [(1, -shifts[0] % max(x.size, 1), max(x.size, 1))]).view(x.shape, None)
    total = [0] * x.ndim
    for s, a in zip(shifts, axis):
        total[a] += s
    maps = [None if not x.shape[d] or total[d] % x.shape[d] == 0 else (1, -total[d] % x.shape[d], x.shape[d])
            for d in range(x.ndim)]
    return _remap("roll", x, x.shape, maps)


PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def pad(x: DeviceArray, pads, mode, value) -> DeviceArray:
    if mode not in PAD_MODES:
        raise ArgumentError(f"pad: mode {mode!r} is not one of {sorted(PAD_MODES)}")
    pairs = [(pads[2 * d], pads[2 * d + 1]) for d in range(x.ndim)]
    out_shape = tuple(size + b + a for size, (b, a) in zip(x.shape, pairs))
    out = empty(out_shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    dims = [_Dim(o, (s,), (size, b), not b and not a)
            for o, size, s, (b, a) in zip(out_shape, x.shape, x.strides, pairs)]
    dims = _merge_plain(dims, lambda size: (size, 0)) if dims else [_Dim(1, (0,), (1, 0), True)]
    sizes, flat = _padded("pad", [d.size for d in dims], [[d.strides[0] for d in dims]], [x.shape, out_shape])
    params = [(1, 0)] * (RANK - len(dims)) + [d.params for d in dims]
    bits, via = _fill_args(value, x.dtype)
    launch(_pad_kernel, _grid(n), out, x, n, *sizes[1:], *[p[0] for p in params], *[p[1] for p in params], *flat,
           bits, VIA=via, MODE=PAD_MODES[mode], BLOCK=BLOCK)
    return out


def _triangle(op: str, x: DeviceArray, diagonal: int, lower: bool) -> DeviceArray:
    out = empty(x.shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    batch, batch_strides = merge_dims(x.shape[:-2], [list(x.strides[:-2])])
    dims, flat = _padded(op, [*batch, *x.shape[-2:]], [[*batch_strides[0], *x.strides[-2:]]], [x.shape])
    launch(_triangle_kernel, _grid(n), out, x, n, *dims[1:], *flat, int(diagonal), LOWER=lower, BLOCK=BLOCK)
    return out


def tril(x: DeviceArray, diagonal) -> DeviceArray:
    return _triangle("tril", x, diagonal, True)


def triu(x: DeviceArray, diagonal) -> DeviceArray:
    return _triangle("triu", x, diagonal, False)


# -- index ops ------------------------------------------------------------------------------------
def _check_index_dtype(op: str, index: DeviceArray, name: str = "index") -> None:
    if index.dtype.kind not in "iu":
        raise DTypeError(f"{op}: {name} must be an integer tensor (int32 or int64), got {index.dtype}")


def gather(x: DeviceArray, index: DeviceArray, axis) -> DeviceArray:
    _check_index_dtype("gather", index)
    k = index.ndim
    off = _offsets("gather", [_Index(index, index.shape, x.shape[axis], x.strides[axis], axis)], index.shape)
    out_shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
    s = list(x.strides[:axis]) + [0] * k + list(x.strides[axis + 1:])
    t = [0] * axis + list(off.strides) + [0] * (x.ndim - axis - 1)
    return _gather("gather", x, 0, out_shape, s, off, t)


def _along_axis(op: str, x: DeviceArray, index: DeviceArray, axis: int, arg: str, name: str) -> DeviceArray:
    _check_index_dtype(op, index, arg)
    if index.ndim != x.ndim or any(i > a for d, (a, i) in enumerate(zip(x.shape, index.shape)) if d != axis):
        raise ShapeError(f"{op}: index {list(index.shape)} does not fit x {list(x.shape)} outside axis {axis}")
    off = _offsets(op, [_Index(index, index.shape, x.shape[axis], x.strides[axis], axis)], index.shape, name)
    s = [0 if d == axis else st for d, st in enumerate(x.strides)]
    return _gather(op, x, 0, index.shape, s, off, list(off.strides))


def take_along_axis(arr: DeviceArray, indices: DeviceArray, axis) -> DeviceArray:
    return _along_axis("take_along_axis", arr, indices, axis, "indices", "indices value")


def take_along_axis_private(x: DeviceArray, index: DeviceArray, axis) -> DeviceArray:
    if x.ndim == 0:
        return strided_copy(x)
    return _along_axis("_take_along_axis", x, index, axis, "index", "index")


def scatter_add_along_axis(src: DeviceArray, index: DeviceArray, axis, shape) -> DeviceArray:
    op = "_scatter_add_along_axis"
    _check_index_dtype(op, index)
    acc = _accumulator(shape, src.dtype)
    if src.ndim == 0:
        copy_into(acc, src, op)
        return _finish(acc, src.dtype)
    if src.shape != index.shape:
        raise ShapeError(f"{op}: src {list(src.shape)} and index {list(index.shape)} differ")
    off = _offsets(op, [_Index(index, index.shape, shape[axis], acc.strides[axis], axis)], index.shape)
    s = [0 if d == axis else st for d, st in enumerate(acc.strides)]
    _scatter_add(op, acc, 0, src, s, off, list(off.strides))
    return _finish(acc, src.dtype)


def index_add(x: DeviceArray, index: DeviceArray, value: DeviceArray, axis) -> DeviceArray:
    op = "index_add"
    _check_index_dtype(op, index)
    expected = x.shape[:axis] + index.shape + x.shape[axis + 1:]
    if index.ndim != 1 or value.shape != expected:
        raise ShapeError(f"{op}: index {list(index.shape)} must be 1-D and value {list(value.shape)} of shape "
                         f"{list(expected)} for x {list(x.shape)} along axis {axis}")
    acc = copy_into(_accumulator(x.shape, x.dtype), x, op)
    off = _offsets(op, [_Index(index, index.shape, x.shape[axis], acc.strides[axis], axis)], index.shape)
    s = [0 if d == axis else st for d, st in enumerate(acc.strides)]
    t = [1 if d == axis else 0 for d in range(x.ndim)]
    _scatter_add(op, acc, 0, value, s, off, t)
    return _finish(acc, x.dtype)


PUT_REDUCES = {"assign": 0, "add": 1, "mean": 1, "mul": 2, "multiply": 2, "amin": 3, "amax": 4}


def put_along_axis(arr: DeviceArray, indices: DeviceArray, values: DeviceArray, axis, reduce,
                   include_self) -> DeviceArray:
    op = "put_along_axis"
    _check_index_dtype(op, indices, "indices")
    if reduce not in PUT_REDUCES:
        raise ArgumentError(f"{op}: reduce must be one of {list(PUT_REDUCES)}, got {reduce!r}")
    if indices.ndim != arr.ndim or values.shape != indices.shape or any(
            i > a for d, (a, i) in enumerate(zip(arr.shape, indices.shape)) if d != axis):
        raise ShapeError(f"{op}: indices {list(indices.shape)} and values {list(values.shape)} do not fit arr "
                         f"{list(arr.shape)} along axis {axis}")
    if arr.ndim > RANK:
        raise ShapeError(f"{op}: gpu kernel: arr {list(arr.shape)} has {arr.ndim} dims; the kernel indexes at "
                         f"most {RANK}")
    if reduce == "add" and include_self and arr.dtype in ACCUMULATE_SERVED:  # the gradient of take_along_axis
        acc = copy_into(_accumulator(arr.shape, arr.dtype), arr, op)
        off = _offsets(op, [_Index(indices, indices.shape, arr.shape[axis], acc.strides[axis], axis)], indices.shape,
                       "indices value")
        _scatter_add(op, acc, 0, values, [0 if d == axis else st for d, st in enumerate(acc.strides)], off,
                     list(off.strides))
        return _finish(acc, arr.dtype)
    indices = contiguous(indices)
    if indices.size:  # the cpu's range check
        stats = BACKEND.zeros((2,), np.int64)
        launch(_range_kernel, _grid(indices.size), indices, indices.size, stats, BLOCK=BLOCK)
        lo, hi = (int(v) for v in BACKEND.to_numpy(stats))
        error = _out_of_range(op, lo, hi, arr.shape[axis], axis, "indices value")
        if error is not None:
            raise error
    out = empty(arr.shape, arr.dtype)
    if not out.size:
        return out
    mean = reduce == "mean"
    if arr.dtype.kind in "iu":
        via = tl.float64 if mean else tl.int64
    else:
        via = tl.float64 if arr.dtype == np.float64 else tl.float32
    perm = [d for d in range(arr.ndim) if d != axis] + [axis]  # the indexed axis last
    pad = RANK - arr.ndim

    def strides_of(a: DeviceArray) -> list[int]:
        return [0] * pad + [a.strides[d] for d in perm]

    dims = [1] * pad + [arr.shape[d] for d in perm]
    extents = ([1] * pad + [indices.shape[d] for d in perm])[:RANK - 1]
    launch(_put_along_kernel, _grid(out.size), out, arr, indices, values, out.size, *dims[1:], *strides_of(arr),
           *strides_of(out), *extents, *strides_of(indices), *strides_of(values), indices.shape[axis], arr.shape[axis],
           REDUCE=PUT_REDUCES[reduce], INCLUDE_SELF=bool(include_self), MEAN=mean,
           TRUNC=mean and arr.dtype.kind in "iu",
           ACC=via, BLOCK=BLOCK)
    return out


def one_hot(x: DeviceArray, num_classes) -> DeviceArray:
    _check_index_dtype("one_hot", x, "x")
    x = contiguous(x)
    lo = hi = 0
    if x.size:
        stats = BACKEND.zeros((2,), np.int64)
        launch(_range_kernel, _grid(x.size), x, x.size, stats, BLOCK=BLOCK)
        lo, hi = (int(v) for v in BACKEND.to_numpy(stats))
    n = hi + 1 if num_classes == -1 and x.size else max(num_classes, 0)
    if x.size and (lo < 0 or hi >= n):
        raise IndexOutOfRangeError(f"one_hot: x contains {lo if lo < 0 else hi}, out of range for "
                                   f"num_classes={n} (expected 0..{n - 1})")
    out = empty(x.shape + (n,), np.float32)
    if out.size:
        launch(_one_hot_kernel, _grid(out.size), out, x, out.size, n, BLOCK=BLOCK)
    return out


# -- getitem --------------------------------------------------------------------------------------
class _Plan(NamedTuple):
    """``x[items]`` as a basic view (``shape``, ``strides``, ``offset``) and advanced indices
    whose broadcast shape goes at ``insert_at`` of the view's dims (or first, when separated)."""

    shape: list
    strides: list
    offset: int
    entries: list
    insert_at: int | None
    adjacent: bool


def _consumed(item, indices) -> int:
    kind = item["kind"]
    if kind in ("int", "slice"):
        return 1
    if kind == "tensor":
        a = indices[item["input"]]
        return a.ndim if a.dtype == np.bool_ else 1
    return 0


def _expanded(op: str, shape, items, indices) -> list:
    ellipses = sum(1 for it in items if it["kind"] == "ellipsis")
    if ellipses > 1:
        raise ArgumentError(f"{op}: an index can only have a single ellipsis ('...'), got {ellipses}")
    used = sum(_consumed(it, indices) for it in items)
    if used > len(shape):
        raise ArgumentError(f"{op}: too many indices for a {len(shape)}-d tensor of shape {list(shape)}: "
                            f"{used} were indexed")
    fill_ = [{"kind": "slice", "start": None, "stop": None, "step": None}] * (len(shape) - used)
    if not ellipses:
        return list(items) + fill_
    out = []
    for it in items:
        out.extend(fill_ if it["kind"] == "ellipsis" else [it])
    return out


def _nonzero_offsets(op: str, mask: DeviceArray, strides) -> DeviceArray:
    """The offsets (under ``strides``) of ``mask``'s true elements in row-major order: one program
    with a running prefix sum; the count is read back, as it is the result's shape."""
    mask = contiguous(mask)
    n = mask.size
    off = empty((n,), np.int64)
    count = BACKEND.zeros((1,), np.int64)
    if n:
        dims, flat = _padded(op, list(mask.shape), [list(strides)], [mask.shape])
        launch(_nonzero_kernel, (1,), mask, n, off, count, *dims[1:], *flat, UPCAST=mask.dtype in HALF,
               BLOCK=NONZERO_BLOCK)
    found = int(BACKEND.to_numpy(count)[0])
    return off.view((found,), (1,))


def _plan(op: str, shape, strides, items, indices) -> _Plan:
    for a in indices:
        if a.dtype.kind not in "iub":
            raise DTypeError(f"{op}: index must be an integer or bool tensor, got {a.dtype}")
    expanded = _expanded(op, shape, items, indices)
    fancy = any(it["kind"] == "bool" or (it["kind"] == "tensor" and (
        indices[it["input"]].dtype == np.bool_ or indices[it["input"]].ndim > 0)) for it in expanded)
    out_shape, out_strides, offset, entries, positions, insert_at = [], [], 0, [], [], None
    dim = 0
    for pos, it in enumerate(expanded):
        kind = it["kind"]
        if kind == "none":
            out_shape.append(1)
            out_strides.append(0)
            continue
        if kind == "slice":
            start, stop, step = slice(it["start"], it["stop"], it["step"]).indices(shape[dim])
            size = len(range(start, stop, step))
            out_shape.append(size)
            out_strides.append(strides[dim] * step)
            offset += start * strides[dim] if size else 0
            dim += 1
            continue
        if fancy or kind == "tensor":  # advanced, or a 0-d index tensor (its value stays on the device)
            if insert_at is None:
                insert_at = len(out_shape)
            positions.append(pos)
        if kind == "int":
            size, value = shape[dim], it["value"]
            if not -size <= value < size:
                raise IndexOutOfRangeError(f"{op}: index {value} is out of range for axis {dim} with size {size} "
                                           f"(expected {-size}..{size - 1})")
            offset += (value % size) * strides[dim]
            dim += 1
        elif kind == "bool":  # a new dim of size 1 taken whole (True) or not at all (False)
            entries.append(_Index(None, (1 if it["value"] else 0,), 1, 0, dim))
        else:
            a = indices[it["input"]]
            if a.dtype == np.bool_:
                k = a.ndim
                if tuple(a.shape) != tuple(shape[dim:dim + k]):
                    raise ShapeError(f"{op}: bool mask of shape {list(a.shape)} does not match the indexed dims "
                                     f"{list(shape[dim:dim + k])} of x {list(shape)} (starting at axis {dim})")
                off = _nonzero_offsets(op, a, strides[dim:dim + k])
                entries.append(_Index(off, off.shape, NO_WRAP, 1, dim))
                dim += k
            else:
                entries.append(_Index(a, a.shape, shape[dim], strides[dim], dim))
                dim += 1
    adjacent = not positions or positions[-1] - positions[0] + 1 == len(positions)
    return _Plan(out_shape, out_strides, offset, entries, insert_at, adjacent)


def _advanced_layout(op: str, plan: _Plan) -> tuple[tuple, tuple, list, list]:
    """The broadcast index shape, the result's shape, and the view's (``s``) and offsets' (``t``)
    strides along each dim of the result."""
    try:
        index_shape = np.broadcast_shapes(*[e.shape for e in plan.entries])
    except ValueError:
        raise ShapeError(f"{op}: index shapes {[list(e.shape) for e in plan.entries]} do not broadcast "
                         f"together") from None
    at = plan.insert_at if plan.adjacent else 0
    shape = (*plan.shape[:at], *index_shape, *plan.shape[at:])
    s = [*plan.strides[:at], *[0] * len(index_shape), *plan.strides[at:]]
    t = [0] * at + list(contiguous_strides(index_shape)) + [0] * (len(plan.shape) - at)
    return index_shape, shape, s, t


def _take(op: str, x: DeviceArray, plan: _Plan) -> DeviceArray:
    """The elements of ``x`` that ``plan`` (with advanced indices) selects, as a new array."""
    index_shape, shape, s, t = _advanced_layout(op, plan)
    off = _offsets(op, plan.entries, index_shape)
    return _gather(op, x, plan.offset, shape, s, off, t)


def _value_for(value: DeviceArray, shape) -> DeviceArray:
    """``value`` without the leading 1s numpy drops when assigning to a region of ``shape``."""
    while value.ndim > len(shape) and value.shape[0] == 1:
        value = value.view(value.shape[1:], value.strides[1:])
    return value


def _store(op: str, dst: DeviceArray, plan: _Plan, value: DeviceArray, claimed: bool = True) -> None:
    """``dst[plan] = value`` (broadcast) for a contiguous ``dst``; with ``claimed``, a destination
    that several sources name gets the last of them, as numpy's assignment."""
    index_shape, shape, s, t = _advanced_layout(op, plan)
    off = _offsets(op, plan.entries, index_shape)
    n = math.prod(shape)
    if n == 0:
        return
    value = _value_for(value, shape)
    winner = dst  # (not read without a claim)
    if claimed:
        winner = fill_with(empty(dst.shape, np.int64), -1)
        dims, strides = merge_dims(tuple(shape), [s, t])
        dims, flat = _padded(op, dims, strides, [dst.shape, off.shape])
        launch(_claim_kernel, _grid(n), winner.view(winner.shape, winner.strides, plan.offset), off, n, *dims[1:],
               *flat, BLOCK=BLOCK)
    dims, strides = merge_dims(tuple(shape), [broadcast_strides(value, tuple(shape)), s, t])
    dims, flat = _padded(op, dims, strides, [value.shape, dst.shape, off.shape])
    launch(_scatter_store_kernel, _grid(n), dst.view(dst.shape, dst.strides, plan.offset), value, off,
           winner.view(winner.shape, winner.strides, plan.offset), n, *dims[1:], *flat, CLAIMED=claimed, BLOCK=BLOCK)


def getitem(x: DeviceArray, *indices: DeviceArray, items) -> DeviceArray:
    plan = _plan("getitem", x.shape, x.strides, items, indices)
    if not plan.entries:  # basic indexing: a view of x, as Paddle's
        return x.view(tuple(plan.shape), tuple(plan.strides), plan.offset)
    return _take("getitem", x, plan)


def setitem(x: DeviceArray, value: DeviceArray, *indices: DeviceArray, items) -> DeviceArray:
    out = BACKEND.copy(x)  # contiguous
    plan = _plan("setitem", out.shape, out.strides, items, indices)
    if not plan.entries:  # a strided region, each element written once
        region = out.view(tuple(plan.shape), tuple(plan.strides), plan.offset)
        copy_into(region, _value_for(value, region.shape), "setitem")
        return out
    _store("setitem", out, plan, value)
    return out


def masked_select(x: DeviceArray, mask: DeviceArray) -> DeviceArray:
    shape = np.broadcast_shapes(x.shape, mask.shape)
    xb = x.view(shape, tuple(broadcast_strides(x, shape)))
    mb = mask.view(shape, tuple(broadcast_strides(mask, shape)))
    return _take("masked_select", xb, _plan("masked_select", shape, xb.strides, [{"kind": "tensor", "input": 0}], [mb]))


def nonzero(x: DeviceArray) -> DeviceArray:
    flat = x.view((1,), (1,)) if x.ndim == 0 else x
    positions = _nonzero_offsets("nonzero", flat, contiguous_strides(flat.shape))  # offsets = flat indices
    out = empty((positions.shape[0], x.ndim), np.int64)
    if out.size:
        pad = RANK - x.ndim
        launch(_unravel_kernel, _grid(out.size), out, positions, out.size, x.ndim,
               *(list(contiguous_strides(x.shape)) + [1] * pad), *(list(x.shape) + [1] * pad), BLOCK=BLOCK)
    return out


def _nd_plan(op: str, shape, strides, index: DeviceArray) -> _Plan:
    """``gather_nd``'s selection: ``index[..., i]`` picks along dim ``i`` of ``shape``."""
    _check_index_dtype(op, index)
    if index.ndim == 0 or index.shape[-1] > len(shape):
        raise ShapeError(f"{op}: index {list(index.shape)} must be at least 1-D with a last dim of at most "
                         f"{len(shape)} (x {list(shape)})")
    k, lead = index.shape[-1], index.shape[:-1]
    entries = [_Index(index.view(lead, index.strides[:-1], i * index.strides[-1]), lead, shape[i], strides[i], i)
               for i in range(k)] or [_Index(None, lead, 1, 0, 0)]
    return _Plan(list(shape[k:]), list(strides[k:]), 0, entries, 0, True)


def gather_nd(x: DeviceArray, index: DeviceArray) -> DeviceArray:
    return _take("gather_nd", x, _nd_plan("gather_nd", x.shape, x.strides, index))


def _scatter_add_planned(op: str, x: DeviceArray, plan_of, updates: DeviceArray) -> DeviceArray:
    acc = copy_into(_accumulator(x.shape, x.dtype), x, op)
    plan = plan_of(acc)
    index_shape, shape, s, t = _advanced_layout(op, plan)
    if tuple(shape) != updates.shape:
        raise ShapeError(f"{op}: updates has shape {list(updates.shape)}, expected {list(shape)}")
    _scatter_add(op, acc, 0, updates, s, _offsets(op, plan.entries, index_shape), t)
    return _finish(acc, x.dtype)


def scatter_nd_add(x: DeviceArray, index: DeviceArray, updates: DeviceArray) -> DeviceArray:
    return _scatter_add_planned("scatter_nd_add", x, lambda a: _nd_plan("scatter_nd_add", a.shape, a.strides, index),
                                updates)


def scatter(x: DeviceArray, index: DeviceArray, updates: DeviceArray, overwrite) -> DeviceArray:
    op = "scatter"
    _check_index_dtype(op, index)
    if x.ndim == 0 or index.ndim != 1:
        raise ShapeError(f"{op}: x {list(x.shape)} must be at least 1-D and index {list(index.shape)} 1-D")

    def rows(a: DeviceArray) -> _Plan:
        rows_index = _Index(index, index.shape, a.shape[0], a.strides[0], 0)
        return _Plan(list(a.shape[1:]), list(a.strides[1:]), 0, [rows_index], 0, True)

    if overwrite:  # the last update of a repeated row wins, as on the cpu
        out = BACKEND.copy(x)
        _store(op, out, rows(out), updates)
        return out
    # the indexed rows are zeroed, then the updates add up

    def zeroed(acc: DeviceArray) -> _Plan:
        plan = rows(acc)
        _store(op, acc, plan, BACKEND.zeros((), acc.dtype), claimed=False)
        return plan

    return _scatter_add_planned(op, x, zeroed, updates)


def getitem_grad(g: DeviceArray, *indices: DeviceArray, items, shape) -> DeviceArray:
    shape = tuple(int(d) for d in shape)
    strides = contiguous_strides(shape)
    plan = _plan("getitem_grad", shape, strides, items, indices)
    if not plan.entries:  # each element of g has a place of its own: a strided copy into zeros
        out = BACKEND.zeros(shape, g.dtype)
        region = out.view(tuple(plan.shape), tuple(plan.strides), plan.offset)
        if region.shape != g.shape:
            raise ShapeError(f"getitem_grad: grad has shape {list(g.shape)}, expected {list(region.shape)}")
        copy_into(region, g, "getitem_grad")
        return out
    index_shape, out_shape, s, t = _advanced_layout("getitem_grad", plan)
    if tuple(out_shape) != g.shape:
        raise ShapeError(f"getitem_grad: grad has shape {list(g.shape)}, expected {list(out_shape)}")
    off = _offsets("getitem_grad", plan.entries, index_shape)
    acc = _accumulator(shape, g.dtype)  # repeated indices add up, as np.add.at
    _scatter_add("getitem_grad", acc, plan.offset, g, s, off, t)
    return _finish(acc, g.dtype)


KERNELS = {
    "reshape": reshape,
    "flatten": flatten,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "transpose": transpose,
    "broadcast_to": broadcast_to,
    "slice": slice_,
    "strided_slice": strided_slice,
    "getitem": getitem,
    "getitem_grad": getitem_grad,
    "split": split,
    "unbind": unbind,
    "concat": concat,
    "stack": stack,
    "full_like": full_like,
    "tile": tile,
    "flip": flip,
    "roll": roll,
    "pad": pad,
    "tril": tril,
    "triu": triu,
    "gather": gather,
    "take_along_axis": take_along_axis,
    "_take_along_axis": take_along_axis_private,
    "_scatter_add_along_axis": scatter_add_along_axis,
    "index_add": index_add,
    "put_along_axis": put_along_axis,
    "setitem": setitem,
    "masked_select": masked_select,
    "nonzero": nonzero,
    "gather_nd": gather_nd,
    "scatter_nd_add": scatter_nd_add,
    "scatter": scatter,
    "one_hot": one_hot,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each kernel in float32 and bfloat16 (and an integer dtype where it moves ints), with every
    pad mode, both triangles, and the accumulating and first offset passes."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    def config(label, kernel, pointers: dict, scalars: dict | None = None, **constexprs):
        signature = {}
        for name in kernel.arg_names:
            if name in constexprs:
                signature[name] = "constexpr"
            elif name in pointers:
                signature[name] = POINTER_TYPES[pointers[name]]
            else:
                signature[name] = (scalars or {}).get(name, "i64")
        return (f"shape.{label}", kernel, signature, {"BLOCK": BLOCK, **constexprs})

    found = []
    for dtype in ("float32", "bfloat16", "int64", "bool"):
        found.append(config(f"copy[{dtype}]", _copy_kernel, {"dst": dtype, "src": dtype}))
    for dtype in ("float32", "bfloat16", "int64"):
        both = {"out": dtype, "x": dtype}
        found.append(config(f"remap[{dtype}]", _remap_kernel, both))
        via = tl.int64 if dtype == "int64" else tl.float32
        for mode, code in PAD_MODES.items():
            if dtype == "float32" or mode == "constant":
                found.append(config(f"pad.{mode}[{dtype}]", _pad_kernel, both, VIA=via, MODE=code))
        found.append(config(f"fill[{dtype}]", _fill_kernel, {"out": dtype}, VIA=via))
        for lower in (True, False):
            found.append(config(f"{'tril' if lower else 'triu'}[{dtype}]", _triangle_kernel, both, LOWER=lower))
        found.append(config(f"gather[{dtype}]", _gather_kernel, {**both, "off": "int64"}))
    for index in ("int64", "int32"):
        for has_acc in (False, True):
            found.append(config(f"offsets[{index}{', acc' if has_acc else ''}]", _offsets_kernel,
                                {"off": "int64", "idx": index, "stats": "int64"}, HAS_ACC=has_acc))
        found.append(config(f"range[{index}]", _range_kernel, {"idx": index, "stats": "int64"}))
        found.append(config(f"one_hot[{index}]", _one_hot_kernel, {"out": "float32", "x": index}))
    for acc, grad in (("float32", "float32"), ("float32", "bfloat16"), ("float64", "float64"), ("int64", "int64"),
                      ("int32", "int32")):
        found.append(config(f"scatter_add[{grad}->{acc}]", _scatter_add_kernel,
                            {"dst": acc, "g": grad, "off": "int64"}))
    put_configs = (("float32", ("assign", "add", "mean", "mul", "amin", "amax")), ("bfloat16", ("assign", "mean")),
                   ("int64", ("mul", "mean")))
    for dtype, reduces in put_configs:
        acc = tl.int64 if dtype == "int64" else tl.float32
        for reduce in reduces:
            mean = reduce == "mean"
            found.append(config(f"put_along_axis.{reduce}[{dtype}]", _put_along_kernel,
                                {"out": dtype, "arr": dtype, "idx": "int64", "val": dtype}, REDUCE=PUT_REDUCES[reduce],
                                INCLUDE_SELF=reduce != "assign", MEAN=mean, TRUNC=mean and dtype == "int64",
                                ACC=tl.float64 if mean and dtype == "int64" else acc))
    for dtype in ("bool", "bfloat16"):
        found.append(config(f"nonzero[{dtype}]", _nonzero_kernel, {"mask_ptr": dtype, "off": "int64", "count": "int64"},
                            UPCAST=dtype == "bfloat16", BLOCK=NONZERO_BLOCK))
    found.append(config("unravel[int64]", _unravel_kernel, {"out": "int64", "flat": "int64"}))
    found.append(config("claim[int64]", _claim_kernel, {"winner": "int64", "off": "int64"}))
    for dtype in ("float32", "bfloat16", "int64"):
        for claimed in (True, False):
            found.append(config(f"scatter_store[{dtype}{', claimed' if claimed else ''}]", _scatter_store_kernel,
                                {"dst": dtype, "g": dtype, "off": "int64", "winner": "int64"}, CLAIMED=claimed))
    return found


__all__ = ["KERNELS", "aot_configs", "copy_into"]
