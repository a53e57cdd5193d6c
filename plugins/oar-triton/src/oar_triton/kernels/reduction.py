"""Reductions and the cumulative sum: sum, mean, prod, max/min, amax/amin, argmax/argmin, all/any,
logsumexp, var/std, cumsum.

Every kernel sees its input as a matrix of M rows (the kept dims, in order) and N columns (the
reduced dims, in order), indexed through the input's own strides: dims that step contiguously are
merged first, and the rows and the columns may each be two merged groups (``(i // inner) * outer +
(i % inner) * stride``), which covers reducing leading, trailing or middle axes of any contiguous
array and of transposes and slices without a copy. A layout that needs more groups is made a
contiguous (kept..., reduced...) copy first (``backend.contiguous``).

A program owns a tile of BLOCK_M rows and walks their columns in BLOCK_N steps, accumulating in a
[BLOCK_M, BLOCK_N] tile of float32 (float64 for float64, int64 for integers) and reducing the tile
at the end; the tile is long in N when the columns are contiguous (a row reduction) and long in M
when the rows are (a column reduction), so loads are coalesced either way. When few row tiles
would keep the GPU busy and the rows are long, sum, mean, prod, max, min, all and any split each
row into pieces of ``SPLIT_STEPS * BLOCK_N`` columns reduced by separate programs into a partial
array, reduced again by the same kernel. argmax/argmin, var/std, logsumexp and cumsum do not split:
one program walks each row tile (var/std and logsumexp in two passes over the row: the mean, then
the centred squares; the maximum, then the shifted exponentials).

Semantics are the reference kernels' (numpy's): max/min/argmax/argmin propagate NaN (argmax and
argmin give the first NaN, and the first of ties); a sum over no elements is 0, a mean NaN, a
product 1, all True, any False, logsumexp -inf; max/min/amax/amin/argmax/argmin of no elements
are refused (ArgumentError). Integer sums and products wrap as numpy's in the input's dtype; a bool
sum is a logical or and a bool product a logical and, as numpy's (``oar.sum`` casts bool to int64
first). Refused: cumsum of bool (``oar.cumsum`` casts it to int64), float math (mean, var, std,
logsumexp) on integers (core casts those inputs to float32 first).
"""

from __future__ import annotations

import math

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import contiguous, empty
from oar_triton.kernels.elementwise import strided_copy
from oar_triton.kernels.shape import fill_with
from oar_triton.launch import BFLOAT16, TRITON_DTYPES, compute_dtype, launch

from oar.errors import ArgumentError, DTypeError

SUM, PROD, MAX, MIN, ALL, ANY = range(6)
OP_CODES = {"sum": SUM, "mean": SUM, "prod": PROD, "max": MAX, "min": MIN, "amax": MAX, "amin": MIN,
            "all": ALL, "any": ANY}
TILE = 4096  # elements of one program's accumulator tile
SPLIT_STEPS = 8  # BLOCK_N steps one program takes over a split row
FEW_PROGRAMS = 32  # fewer row tiles than this leave the GPU idle: split long rows


# -- kernels --------------------------------------------------------------------------------------
@triton.jit
def offsets(index, inner, outer_stride, inner_stride, TWO: tl.constexpr):
    # the element offset of flat row (or column) ``index`` over one or two merged dims
    if TWO:
        return (index // inner) * outer_stride + (index % inner) * inner_stride
    return index * inner_stride


@triton.jit
def _nan_if_any(tile, value):
    # tl.max and tl.min leave NaN's fate to the hardware: a NaN anywhere in the row makes it NaN here
    if tile.dtype.is_floating():
        value = tl.where(tl.max((tile != tile).to(tl.int32), axis=1) != 0, float("nan"), value)
    return value


@triton.jit
def _max_nan(tile):
    return _nan_if_any(tile, tl.max(tile, axis=1))


@triton.jit
def _min_nan(tile):
    return _nan_if_any(tile, tl.min(tile, axis=1))


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _reduce_kernel(x, out, M, N, CHUNK, P, rin, rso, rsi, cin, cso, csi, scale,
                   OP: tl.constexpr, ACC: tl.constexpr, ROW2: tl.constexpr, COL2: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[row * P + piece] = OP over columns [piece * CHUNK, (piece + 1) * CHUNK) of each row."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    piece = tl.program_id(1).to(tl.int64)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    if OP == 2 or OP == 3:
        # masked lanes repeat the row's first element, the identity of max/min for any dtype
        first = tl.load(x + roff, mask=rmask[:, None]).to(ACC)
        acc = tl.zeros([BLOCK_M, BLOCK_N], ACC) + first
    elif OP == 1 or OP == 4:
        acc = tl.full([BLOCK_M, BLOCK_N], 1, ACC)
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, CHUNK, BLOCK_N):
        cols = piece * CHUNK + start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask, other=0).to(ACC)
        if OP == 0:
            acc += v
        elif OP == 1:
            acc *= tl.where(mask, v, 1)
        elif OP == 2:
            acc = tl.maximum(acc, tl.where(mask, v, first), propagate_nan=tl.PropagateNan.ALL)
        elif OP == 3:
            acc = tl.minimum(acc, tl.where(mask, v, first), propagate_nan=tl.PropagateNan.ALL)
        elif OP == 4:
            acc = tl.where(mask & (v == 0), 0, acc)
        else:
            acc = tl.where(mask & (v != 0), 1, acc)
    if OP == 0:
        result = tl.sum(acc, axis=1) * scale
    elif OP == 1:
        result = tl.reduce(acc, 1, _mul)
    elif OP == 2:
        result = _max_nan(acc)
    elif OP == 3:
        result = _min_nan(acc)
    elif OP == 4:
        result = tl.min(acc, axis=1)
    else:
        result = tl.max(acc, axis=1)
    tl.store(out + rows * P + piece, result.to(out.dtype.element_ty), mask=rmask)


@triton.jit
def _arg_kernel(x, out, M, N, rin, rso, rsi, cin, cso, csi,
                LARGEST: tl.constexpr, ACC: tl.constexpr, ROW2: tl.constexpr, COL2: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The column index of each row's maximum (minimum): the first NaN, else the first extreme."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    first = tl.load(x + roff, mask=rmask[:, None]).to(ACC)
    best = tl.zeros([BLOCK_M, BLOCK_N], ACC) + first
    where = tl.zeros([BLOCK_M, BLOCK_N], tl.int64)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask).to(ACC)
        # each lane sees its columns in increasing order: a strict comparison keeps the first
        if LARGEST:
            better = v > best
        else:
            better = v < best
        better = mask & (better | ((v != v) & (best == best)))
        best = tl.where(better, v, best)
        where = tl.where(better, cols[None, :], where)
    if LARGEST:
        top = _max_nan(best)
    else:
        top = _min_nan(best)
    hit = (best == top[:, None]) | ((best != best) & (top != top)[:, None])
    index = tl.min(tl.where(hit, where, N), axis=1)
    tl.store(out + rows, index.to(out.dtype.element_ty), mask=rmask)


@triton.jit
def _moment_kernel(x, out, M, N, rin, rso, rsi, cin, cso, csi, divisor,
                   STD: tl.constexpr, ACC: tl.constexpr, ROW2: tl.constexpr, COL2: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Variance (or its square root) of each row: the mean, then the centred squares (two passes,
    exact where a one-pass sum of squares would cancel)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        acc += tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask, other=0).to(ACC)
    mean = tl.sum(acc, axis=1) / N
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask, other=0).to(ACC)
        d = tl.where(mask, v - mean[:, None], 0)
        acc += d * d
    result = tl.sum(acc, axis=1) / divisor
    if STD:
        result = tl.sqrt(result)
    tl.store(out + rows, result.to(out.dtype.element_ty), mask=rmask)


@triton.jit
def _logsumexp_kernel(x, out, M, N, rin, rso, rsi, cin, cso, csi,
                      ACC: tl.constexpr, ROW2: tl.constexpr, COL2: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """log(sum(exp(x))) of each row, shifted by the row's maximum (by 0 where that is infinite)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    peak = tl.full([BLOCK_M, BLOCK_N], float("-inf"), ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask, other=float("-inf"))
        peak = tl.maximum(peak, v.to(ACC), propagate_nan=tl.PropagateNan.ALL)
    top = _max_nan(peak)
    top = tl.where((top == top) & (tl.abs(top) < float("inf")), top, 0)
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + offsets(cols, cin, cso, csi, COL2)[None, :], mask=mask, other=float("-inf"))
        acc += tl.where(mask, tl.exp(v.to(ACC) - top[:, None]), 0)
    result = tl.log(tl.sum(acc, axis=1)) + top
    tl.store(out + rows, result.to(out.dtype.element_ty), mask=rmask)


@triton.jit
def _cumsum_kernel(x, out, M, N, rin, rso, rsi, sn,
                   REVERSE: tl.constexpr, ACC: tl.constexpr, ROW2: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Running sums along each row (x and out share one layout), a block at a time with the carry
    of the blocks before; the reversed scan walks the row from its end."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    carry = tl.zeros([BLOCK_M], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        if REVERSE:
            cols = N - 1 - cols
        offs = roff + cols[None, :] * sn
        v = tl.load(x + offs, mask=mask, other=0).to(ACC)
        tl.store(out + offs, (tl.cumsum(v, axis=1) + carry[:, None]).to(out.dtype.element_ty), mask=mask)
        carry += tl.sum(v, axis=1)


# -- layout ---------------------------------------------------------------------------------------
def merged(dims: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(size, stride) dims, outer first, with size-1 dims dropped and neighbours that step
    contiguously merged into one."""
    out: list[tuple[int, int]] = []
    for size, stride in dims:
        if size == 1:
            continue
        if out and out[-1][1] == size * stride:
            out[-1] = (out[-1][0] * size, stride)
        else:
            out.append((size, stride))
    return out


def group_args(groups: list[tuple[int, int]]) -> tuple[int, int, int, bool]:
    """(inner size, outer stride, inner stride, two groups) of at most two merged dims."""
    if not groups:
        return 1, 0, 0, False
    if len(groups) == 1:
        return groups[0][0], 0, groups[0][1], False
    return groups[1][0], groups[0][1], groups[1][1], True


class Layout:
    """``x`` seen as M rows of N columns: rows over the dims not in ``axes``, columns over ``axes``."""

    def __init__(self, x: DeviceArray, axes: tuple[int, ...]):
        kept = [d for d in range(x.ndim) if d not in axes]
        rows = merged([(x.shape[d], x.strides[d]) for d in kept])
        cols = merged([(x.shape[d], x.strides[d]) for d in axes])
        if len(rows) > 2 or len(cols) > 2:  # too many groups to index: a (kept..., reduced...) copy
            order = kept + list(axes)
            x = contiguous(x.view([x.shape[d] for d in order], [x.strides[d] for d in order]))
            rows = merged([(x.shape[d], x.strides[d]) for d in range(len(kept))])
            cols = merged([(x.shape[d], x.strides[d]) for d in range(len(kept), x.ndim)])
        self.x = x
        self.M = math.prod(s for s, _ in rows)
        self.N = math.prod(s for s, _ in cols)
        self.rows, self.cols = group_args(rows), group_args(cols)
        # coalesced along columns when they are contiguous, else along rows (column reductions)
        self.along_rows = bool(rows) and rows[-1][1] == 1 and not (cols and cols[-1][1] == 1)

    def blocks(self) -> tuple[int, int]:
        """(BLOCK_M, BLOCK_N): a tile of TILE elements at most, long along the contiguous dim."""
        m, n = triton.next_power_of_2(max(self.M, 1)), triton.next_power_of_2(max(self.N, 1))
        if self.along_rows:
            block_m = min(m, 128)
            return block_m, min(n, max(TILE // block_m, 8))
        block_n = min(n, 1024)
        return min(m, max(TILE // block_n, 1)), block_n

    def geometry(self) -> tuple:
        (rin, rso, rsi, row2), (cin, cso, csi, col2) = self.rows, self.cols
        return (rin, rso, rsi, cin, cso, csi), row2, col2


def reduce_axes(op: str, x: DeviceArray, axis) -> tuple[int, ...]:
    """The reduced axes, sorted and non-negative (every axis for None)."""
    if axis is None:
        return tuple(range(x.ndim))
    listed = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = set()
    for a in listed:
        a = int(a)
        if not -max(x.ndim, 1) <= a < max(x.ndim, 1):
            raise ArgumentError(f"{op}: axis {a} is out of range for a {x.ndim}-d tensor of shape {list(x.shape)}")
        if x.ndim:
            axes.add(a % x.ndim)
    return tuple(sorted(axes))


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a floating type (numpy's kind of bfloat16 is "V", not "f")."""
    return dtype.kind == "f" or dtype == BFLOAT16


def accumulator(dtype: np.dtype):
    """The type a reduction of ``dtype`` accumulates in: float32 for halves, int64 for integers."""
    if is_float(dtype):
        return compute_dtype(dtype)
    if dtype.kind == "b":
        return tl.int32
    return tl.int64


def partial_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a split reduction's partial results: its accumulator's."""
    if is_float(dtype):
        return np.dtype(np.float64 if dtype == np.float64 else np.float32)
    return np.dtype(np.bool_ if dtype.kind == "b" else np.int64)


def _require_nonempty(op: str, x: DeviceArray, axes: tuple[int, ...]) -> None:
    if any(x.shape[d] == 0 for d in axes) or (x.size == 0 and len(axes) == x.ndim):
        raise ArgumentError(f"{op}: cannot reduce a zero-size tensor of shape {list(x.shape)} over axis "
                            f"{list(axes)}: the result has no value")


def _require_float(op: str, x: DeviceArray) -> None:
    if not is_float(x.dtype):
        raise DTypeError(f"{op}: the gpu kernel computes floating inputs only, got {x.dtype}")


# -- sum, mean, prod, max, min, amax, amin, all, any ----------------------------------------------
def _run_reduce(code: int, x: DeviceArray, axes: tuple[int, ...], out: DeviceArray, scale: float) -> DeviceArray:
    """Reduce ``x`` over ``axes`` into ``out`` (contiguous, M elements), split in pieces when the
    rows are long and few."""
    layout = Layout(x, axes)
    if layout.M == 0:
        return out
    block_m, block_n = layout.blocks()
    acc = accumulator(x.dtype)
    chunk = SPLIT_STEPS * block_n
    pieces = triton.cdiv(layout.N, chunk)
    if triton.cdiv(layout.M, block_m) >= FEW_PROGRAMS or pieces <= 1:
        pieces, chunk = 1, max(layout.N, 1)
    target = out if pieces == 1 else empty((layout.M, pieces), partial_dtype(x.dtype))
    geometry, row2, col2 = layout.geometry()
    grid = (triton.cdiv(layout.M, block_m), pieces)
    launch(_reduce_kernel, grid, layout.x, target, layout.M, layout.N, chunk, pieces, *geometry,
           float(scale if pieces == 1 else 1.0), OP=code, ACC=acc, ROW2=row2, COL2=col2,
           BLOCK_M=block_m, BLOCK_N=block_n)
    if pieces > 1:  # the partials, a (M, pieces) array, reduced by the same kernel
        _run_reduce(code, target, (1,), out, scale)
    return out


def _reduction(name: str):
    code = OP_CODES[name]

    def kernel(x: DeviceArray, axis=None, keepdim=False) -> DeviceArray:
        axes = reduce_axes(name, x, axis)
        if name == "mean":
            _require_float(name, x)
        if code in (MAX, MIN):
            _require_nonempty(name, x, axes)
        out = empty(reduced_shape(x.shape, axes, bool(keepdim)), np.bool_ if code in (ALL, ANY) else x.dtype)
        count = math.prod(x.shape[d] for d in axes)
        scale = (1.0 / count if count else math.nan) if name == "mean" else 1.0
        if out.size and x.size == 0:  # reductions of no elements: the identity (NaN for mean)
            return fill_with(out, math.nan if name == "mean" else {SUM: 0, PROD: 1, ALL: 1, ANY: 0}[code])
        run = code
        if x.dtype.kind == "b" and code in (SUM, PROD):  # numpy's bool sum is a logical or, its product an and
            run = ANY if code == SUM else ALL
        return _run_reduce(run, x, axes, out, scale)

    kernel.__name__ = f"{name}_gpu"
    return kernel


# -- argmax, argmin -------------------------------------------------------------------------------
def _arg_reduction(name: str):
    def kernel(x: DeviceArray, axis=None, keepdim=False, dtype="int64") -> DeviceArray:
        axes = reduce_axes(name, x, axis)
        if not (is_float(x.dtype) or x.dtype.kind in "iu"):
            raise DTypeError(f"{name}: the gpu kernel takes float and integer tensors, got {x.dtype}")
        if str(dtype) not in ("int32", "int64"):
            raise DTypeError(f"{name}: dtype must be 'int32' or 'int64', got {dtype!r}")
        _require_nonempty(name, x, axes)
        out = empty(reduced_shape(x.shape, axes, bool(keepdim)), np.dtype(str(dtype)))
        layout = Layout(x, axes)
        if layout.M == 0:
            return out
        block_m, block_n = layout.blocks()
        geometry, row2, col2 = layout.geometry()
        launch(_arg_kernel, (triton.cdiv(layout.M, block_m),), layout.x, out, layout.M, layout.N, *geometry,
               LARGEST=name == "argmax", ACC=accumulator(x.dtype), ROW2=row2, COL2=col2,
               BLOCK_M=block_m, BLOCK_N=block_n)
        return out

    kernel.__name__ = f"{name}_gpu"
    return kernel


# -- var, std, logsumexp --------------------------------------------------------------------------
def _row_launch(jit_kernel, x: DeviceArray, axes: tuple[int, ...], out: DeviceArray, *extra, **constexprs):
    layout = Layout(x, axes)
    if layout.M == 0:
        return out
    block_m, block_n = layout.blocks()
    geometry, row2, col2 = layout.geometry()
    launch(jit_kernel, (triton.cdiv(layout.M, block_m),), layout.x, out, layout.M, layout.N, *geometry, *extra,
           ACC=accumulator(x.dtype), ROW2=row2, COL2=col2, BLOCK_M=block_m, BLOCK_N=block_n, **constexprs)
    return out


def _moment(name: str):
    def kernel(x: DeviceArray, axis=None, unbiased=True, keepdim=False) -> DeviceArray:
        _require_float(name, x)
        axes = reduce_axes(name, x, axis)
        count = math.prod(x.shape[d] for d in axes)
        divisor = max(count - 1, 0) if unbiased else count  # 0: 0 / 0 is NaN, as the reference's
        out = empty(reduced_shape(x.shape, axes, bool(keepdim)), x.dtype)
        return _row_launch(_moment_kernel, x, axes, out, float(divisor), STD=name == "std")

    kernel.__name__ = f"{name}_gpu"
    return kernel


def logsumexp(x: DeviceArray, axis=None, keepdim=False) -> DeviceArray:
    _require_float("logsumexp", x)
    axes = reduce_axes("logsumexp", x, axis)
    out = empty(reduced_shape(x.shape, axes, bool(keepdim)), x.dtype)
    return _row_launch(_logsumexp_kernel, x, axes, out)


# -- cumsum ---------------------------------------------------------------------------------------
def cumsum(x: DeviceArray, axis=0, reverse=False) -> DeviceArray:
    if x.dtype.kind == "b":
        raise DTypeError(f"cumsum: the gpu kernel does not scan bool tensors (shape {list(x.shape)}); cast to "
                         f"int64 first, as oar.cumsum does")
    if x.ndim == 0:
        return strided_copy(x)
    out = empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    (axis,) = reduce_axes("cumsum", x, int(axis))
    x = contiguous(x)  # x and out then share one layout
    layout = Layout(x, (axis,))
    block_m, block_n = layout.blocks()
    (rin, rso, rsi, _, _, csi), row2, _ = layout.geometry()
    launch(_cumsum_kernel, (triton.cdiv(layout.M, block_m),), x, out, layout.M, layout.N, rin, rso, rsi, csi,
           REVERSE=bool(reverse), ACC=accumulator(x.dtype), ROW2=row2, BLOCK_M=block_m, BLOCK_N=block_n)
    return out


KERNELS = {
    **{name: _reduction(name) for name in OP_CODES},
    "argmax": _arg_reduction("argmax"),
    "argmin": _arg_reduction("argmin"),
    "var": _moment("var"),
    "std": _moment("std"),
    "logsumexp": logsumexp,
    "cumsum": cumsum,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_config(label: str, kernel, signature: dict, constexprs: dict) -> tuple:
    """``(label, kernel, signature, constexprs)`` with the constexprs marked in the signature."""
    return label, kernel, {**signature, **{name: "constexpr" for name in constexprs}}, constexprs


# (BLOCK_M, BLOCK_N, two groups of rows): along contiguous columns, and across contiguous rows
# with two groups of rows (a middle axis), the two code paths of each kernel
TILINGS = {"rows": (4, 1024, False), "cols": (128, 32, True)}


def aot_configs() -> list[tuple]:
    """Each kernel in float32 (in both tilings), bfloat16, int32 (where it serves integers) and
    bool (the logic reductions)."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    geometry = {name: "i64" for name in ("M", "N", "rin", "rso", "rsi", "cin", "cso", "csi")}
    rows = {name: "i64" for name in ("M", "N", "rin", "rso", "rsi", "sn")}
    reductions = {"float32": ("sum", "prod", "max", "min", "all", "any"), "bfloat16": ("sum", "prod", "max", "min"),
                  "int32": ("sum", "prod", "max", "min"), "bool": ("max", "min", "all", "any")}
    for dtype, names in reductions.items():
        ptr = POINTER_TYPES[dtype]
        acc = accumulator(TRITON_DTYPES_BY_NAME[dtype])
        for tiling, (block_m, block_n, two) in TILINGS.items() if dtype == "float32" else [("rows", TILINGS["rows"])]:
            blocks = {"ROW2": two, "BLOCK_M": block_m, "BLOCK_N": block_n}
            shared = {"ACC": acc, "COL2": not two, **blocks}
            tag = f"[{dtype}:{tiling}]"
            for name in names:
                out = POINTER_TYPES["bool" if name in ("all", "any") else dtype]
                signature = {"x": ptr, "out": out, **geometry, "CHUNK": "i64", "P": "i64", "scale": "fp32"}
                found.append(aot_config(f"reduction.{name}{tag}", _reduce_kernel, signature,
                                        {"OP": OP_CODES[name], **shared}))
            if dtype == "bool":
                continue
            for name in ("argmax", "argmin"):
                found.append(aot_config(f"reduction.{name}{tag}", _arg_kernel, {"x": ptr, "out": "*i64", **geometry},
                                        {"LARGEST": name == "argmax", **shared}))
            found.append(aot_config(f"reduction.cumsum{tag}", _cumsum_kernel, {"x": ptr, "out": ptr, **rows},
                                    {"REVERSE": two, "ACC": acc, **blocks}))
            if dtype == "int32":
                continue
            for name in ("var", "std"):
                found.append(aot_config(f"reduction.{name}{tag}", _moment_kernel,
                                        {"x": ptr, "out": ptr, **geometry, "divisor": "fp32"},
                                        {"STD": name == "std", **shared}))
            found.append(aot_config(f"reduction.logsumexp{tag}", _logsumexp_kernel, {"x": ptr, "out": ptr, **geometry},
                                    shared))
    return found


TRITON_DTYPES_BY_NAME = {str(d): d for d in TRITON_DTYPES}

__all__ = ["KERNELS", "Layout", "aot_config", "aot_configs", "is_float", "merged", "reduce_axes"]
