"""Matrix products: matmul, dot, outer, linear (and its gradient), fused_linear, and the int8 GEMMs
(matmul_int8, quantized_linear).

One tiled GEMM kernel serves matmul, linear, linear_grad and fused_linear. Each program computes
a ``BLOCK_M x BLOCK_N`` tile of ``C = A @ B``, walking K in ``BLOCK_K`` steps with ``tl.dot``
into an accumulator (float32 for float16/bfloat16/float32, float64 for float64, int32 for int8),
then runs the epilogue on the tile in registers: ``+ bias`` (along rows or columns), the
activation (written from the op's ``"triton"`` lowering, as the elementwise kernels are), the
store in the output dtype. Programs walk the tiles in grouped order (``GROUP_M`` rows of tiles
at a time, Triton's tutorial), so neighbouring programs share A and B tiles in L2.

Operands are read through their strides: a transposed or sliced operand, a broadcast batch dim
(stride 0) and a 1-d operand (a row ``[1, K]`` or a column ``[K, 1]``) are views, never copies.
Batch dims are merged where every operand steps through them evenly; up to three remain in the
kernel's grid, more are launched one leading index at a time. When B does not vary along the
batch and A's batch dims step evenly into its rows (``x [B, S, in] @ w [in, out]``), the batch
folds into M: one GEMM of ``B * S`` rows instead of ``B`` small ones.

- float32 products are IEEE float32 (``input_precision="ieee"``), as the cpu's, unless
  ``oar_triton.kernels.matmul.ALLOW_TF32`` is set: TF32 keeps ~10 bits of mantissa. The GPU
  defaults differ (Paddle multiplies float32 in TF32 on the tensor cores, ``FLAGS_allow_tf32_cublas``;
  PyTorch does not, ``torch.backends.cuda.matmul.allow_tf32 = False``); oar keeps float32 exact
  unless asked. float16 and bfloat16 multiply on the tensor cores into float32 (in Triton's
  interpreter, whose bfloat16 arithmetic is wrong, bfloat16 tiles are widened to float32 first).
- float64 uses ``tl.dot`` too (the DMMA ``m8n8k4`` instructions on sm_80+).
- int8 products run on the int8 tensor cores into int32 (``matmul_int8``, and ``matmul`` of int8,
  whose int32 sum is cut to int8 as numpy's wrapping arithmetic gives; the tensor cores saturate
  an int32 sum instead of wrapping it, which takes K >= 2**17 products); int16, int32, int64 and
  uint8, which have no ``tl.dot``, multiply and add a ``BLOCK_M x BLOCK_K x BLOCK_N`` product per
  step (``tl.sum`` of a broadcast product), in int32 (int64 for int64): wrapping sums, so the
  result cut to the input dtype is numpy's.
- ``linear_grad``'s bias gradient (the column sums of ``g``) is summed by the programs of the
  first row of tiles of ``gw = x^T @ g`` from the ``g`` tiles they load anyway.
- ``quantized_linear`` multiplies the raw int8 values on the tensor cores and applies the zero
  points afterwards: ``sum (x - zx)(w - zw) = sum x w - zw sum x - zx sum w + K zx zw``, the row
  sums of x and column sums of w summed from the tiles the loop loads; all in int32, so exact
  whenever the reference's result fits in int32. Then ``acc * (x_scale * w_scale) + bias`` in
  float32, in the reference's order, launched without FMA contraction so it rounds as numpy does.
- ``dot`` is a row-wise reduction kernel (``BLOCK_R`` rows of ``BLOCK_D`` products per step; a
  1-d dot is one program, which is what a vector of up to a few million elements needs);
  ``outer`` is the elementwise ``multiply`` kernel over a column and a row view (bool: ``and``).

Refused, each with the op, argument, shapes and dtypes: operands of different dtypes (core
promotes them before a kernel runs), dtypes without a product (bool), activations without a
one-input ``"triton"`` lowering (the error lists those that have one), and shapes that do not
contract.
"""

from __future__ import annotations

import itertools
import linecache
from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray, contiguous_strides
from oar_triton.autotune import Autotuner
from oar_triton.backend import contiguous, empty
from oar_triton.kernels.elementwise import HELPERS as LOWERING_HELPERS
from oar_triton.kernels.elementwise import merge_dims, run_elementwise
from oar_triton.kernels.lowerings import LOWERINGS, TRITON
from oar_triton.launch import BFLOAT16, INTERPRETING, cdiv, compute_dtype, launch

from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import fmt_shape, lowering, matmul_shape

# float32 products in TF32 on the tensor cores (10-bit mantissa): several times faster, not
# float32-exact; read at each launch, so setting it takes effect at the next product.
ALLOW_TF32 = False

GROUP_M = 8
BATCH_RANK = 3  # batch dims the GEMM kernel indexes after merging; more are launched one index at a time


class Blocks(NamedTuple):
    m: int
    n: int
    k: int


# Tiles per operand dtype: tensor-core shapes for tl.dot, smaller ones where the K step is a
# broadcast product held in registers (BLOCK_M x BLOCK_K x BLOCK_N values).
DOT_BLOCKS = Blocks(64, 64, 32)
FLOAT64_BLOCKS = Blocks(64, 64, 16)
INT8_BLOCKS = Blocks(64, 64, 64)
FMA_BLOCKS = Blocks(32, 32, 8)
DOT_ROWS, DOT_COLS = 16, 128  # dot: rows per program, products per step

# The tensor-core float products' tiles, chosen per shape on a GPU by timing these with the plugin's
# autotuner (oar_triton.autotune); the first, DOT_BLOCKS, is what Triton's interpreter runs.
GEMM_CONFIGS = [
    dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=3),
    dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, num_warps=4, num_stages=4),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=4),
]
GEMM_TUNER = Autotuner("gemm", GEMM_CONFIGS)

DOT_DTYPES = {np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int8)}
TUNED_DTYPES = {np.dtype(np.float16), BFLOAT16, np.dtype(np.float32)}
PRODUCT_DTYPES = DOT_DTYPES | {np.dtype(d) for d in (np.int16, np.int32, np.int64, np.uint8)}


# -- the kernels ----------------------------------------------------------------------------------
@triton.jit
def _grouped_tile(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    # GROUP_M rows of tiles are walked column by column: the programs running together read
    # GROUP_M tiles of A and a few of B, which stay in L2
    in_group = GROUP_M * tiles_n
    first_m = (tile // in_group) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (tile % in_group) % rows
    pid_n = (tile % in_group) // rows
    return pid_m, pid_n


@triton.jit
def _gemm_kernel(a, b, c, bias, colsum, M, N, K, tiles_m, tiles_n, B1, B2,
                 sa0, sa1, sa2, sam, sak, sb0, sb1, sb2, sbk, sbn, sc0, sc1, sc2, scm, scn, s_bias_m, s_bias_n,
                 p0, p1, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr, DOT: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
                 UPCAST: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, COLSUM: tl.constexpr):
    pid = tl.program_id(0)
    tiles = tiles_m * tiles_n
    batch = pid // tiles
    pid_m, pid_n = _grouped_tile(pid % tiles, tiles_m, tiles_n, GROUP_M)
    i2 = (batch % B2).to(tl.int64)
    i1 = ((batch // B2) % B1).to(tl.int64)
    i0 = (batch // (B2 * B1)).to(tl.int64)
    a += i0 * sa0 + i1 * sa1 + i2 * sa2
    b += i0 * sb0 + i1 * sb1 + i2 * sb2
    c += i0 * sc0 + i1 * sc1 + i2 * sc2

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m, mask_n = offs_m < M, offs_n < N
    a_tile = a + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_tile = b + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    if COLSUM:
        sums = tl.zeros((BLOCK_N,), ACC)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        x = tl.load(a_tile, mask=mask_m[:, None] & mask_k[None, :], other=0)
        y = tl.load(b_tile, mask=mask_k[:, None] & mask_n[None, :], other=0)
        if COLSUM:
            sums += tl.sum(y.to(ACC), axis=0)
        if UPCAST:  # the interpreter multiplies bfloat16 wrongly; bfloat16 -> float32 is exact
            x, y = x.to(tl.float32), y.to(tl.float32)
        if DOT:
            acc = tl.dot(x, y, acc, input_precision=PRECISION, out_dtype=ACC)
        else:
            acc += tl.sum(x.to(ACC)[:, :, None] * y.to(ACC)[None, :, :], axis=1)
        a_tile += BLOCK_K * sak
        b_tile += BLOCK_K * sbk

    mask = mask_m[:, None] & mask_n[None, :]
    if HAS_BIAS:
        acc += tl.load(bias + offs_m[:, None] * s_bias_m + offs_n[None, :] * s_bias_n, mask=mask, other=0).to(ACC)
    if ACT is not None:
        acc = ACT(acc, p0, p1)
    tl.store(c + offs_m[:, None] * scm + offs_n[None, :] * scn, acc.to(c.dtype.element_ty), mask=mask)
    if COLSUM:  # one row of tiles stores the column sums of B
        first_row = tl.full((BLOCK_N,), pid_m, tl.int32) == 0
        tl.store(colsum + offs_n, sums.to(colsum.dtype.element_ty), mask=mask_n & first_row)


@triton.jit
def _quantized_gemm_kernel(x, w, c, x_scale, x_zero, w_scale, w_zero, bias, M, N, K, tiles_m, tiles_n,
                           sxm, sxk, swk, swn, scm, scn, s_scale, s_zero, s_bias, p0, p1, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                           HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    pid_m, pid_n = _grouped_tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m, mask_n = offs_m < M, offs_n < N
    x_tile = x + offs_m[:, None] * sxm + offs_k[None, :] * sxk
    w_tile = w + offs_k[:, None] * swk + offs_n[None, :] * swn
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.int32)
    row_sums = tl.zeros((BLOCK_M,), tl.int32)
    col_sums = tl.zeros((BLOCK_N,), tl.int32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        xq = tl.load(x_tile, mask=mask_m[:, None] & mask_k[None, :], other=0)
        wq = tl.load(w_tile, mask=mask_k[:, None] & mask_n[None, :], other=0)
        acc = tl.dot(xq, wq, acc, out_dtype=tl.int32)
        row_sums += tl.sum(xq.to(tl.int32), axis=1)
        col_sums += tl.sum(wq.to(tl.int32), axis=0)
        x_tile += BLOCK_K * sxk
        w_tile += BLOCK_K * swk
    # the zero points: sum (x - zx)(w - zw) = sum x w - zw sum x - zx sum w + K zx zw
    zx = tl.load(x_zero).to(tl.int32)
    zw = tl.load(w_zero + offs_n * s_zero, mask=mask_n, other=0).to(tl.int32)
    acc += (K * zx) * zw[None, :] - row_sums[:, None] * zw[None, :] - zx * col_sums[None, :]
    scale = tl.load(x_scale) * tl.load(w_scale + offs_n * s_scale, mask=mask_n, other=0)
    y = acc.to(tl.float32) * scale[None, :]
    if HAS_BIAS:
        y = y + tl.load(bias + offs_n * s_bias, mask=mask_n, other=0)[None, :]
    if ACT is not None:
        y = ACT(y, p0, p1)
    tl.store(c + offs_m[:, None] * scm + offs_n[None, :] * scn, y, mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _dot_rows_kernel(x, y, out, R, D, sxr, sxd, syr, syd, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
                     ACC: tl.constexpr):
    offs_r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_d = tl.arange(0, BLOCK_D)
    mask_r = offs_r < R
    acc = tl.zeros((BLOCK_R, BLOCK_D), ACC)
    for d0 in range(0, D, BLOCK_D):
        mask = mask_r[:, None] & (offs_d[None, :] < D - d0)
        u = tl.load(x + offs_r[:, None] * sxr + (d0 + offs_d[None, :]) * sxd, mask=mask, other=0).to(ACC)
        v = tl.load(y + offs_r[:, None] * syr + (d0 + offs_d[None, :]) * syd, mask=mask, other=0).to(ACC)
        acc += u * v
    tl.store(out + offs_r, tl.sum(acc, axis=1).to(out.dtype.element_ty), mask=mask_r)


# -- activation epilogues -------------------------------------------------------------------------
_epilogues: dict[str, object] = {}


def activation_epilogue(op: str, act: str | None):
    """``act``'s epilogue, ``fn(value, p0, p1)``, written from its ``"triton"`` lowering (None: none)."""
    if act is None:
        return None
    fn = _epilogues.get(act)
    if fn is None:
        entry = lowering(TRITON, act)  # (expression, parameters, arity, ...): the float expression is first
        if entry is None or entry[2] != 1 or len(entry[1]({})) > 2:
            usable = sorted(n for n, e in LOWERINGS.items() if e[2] == 1 and len(e[1]({})) <= 2)
            raise ArgumentError(f"{op}: the gpu backend has no epilogue for act={act!r}: it has no one-input "
                                f"'triton' lowering; epilogues exist for activations among {usable}")
        text = f"def epilogue_{act}(v, q0, q1):\n    return {entry[0].format('v', p0='q0', p1='q1')}\n"
        filename = f"<oar_triton matmul epilogue {act}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)  # Triton reads it
        namespace = dict(LOWERING_HELPERS)
        exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - written from the registered lowering
        fn = _epilogues[act] = triton.jit(namespace[f"epilogue_{act}"])
    return fn


def activation_params(act: str | None, act_attrs: dict | None) -> tuple[float, float]:
    if act is None:
        return 0.0, 0.0
    params = tuple(lowering(TRITON, act)[1](dict(act_attrs or {})))
    return (*params, *[0.0] * (2 - len(params)))


# -- the GEMM driver ------------------------------------------------------------------------------
class Matrix(NamedTuple):
    """An operand (or the output) of a batched GEMM: ``array`` seen as ``[*batch, rows, cols]``."""

    array: DeviceArray
    batch: list[int]  # strides along the output's batch dims (0 where it broadcasts)
    rows: int
    cols: int


def _batch_strides(shape, strides, batch: tuple[int, ...]) -> list[int]:
    lead = len(batch) - len(shape)
    return [0] * lead + [0 if size == 1 and batch[lead + d] != 1 else s for d, (size, s) in enumerate(zip(shape, strides))]


def operand(array: DeviceArray, transpose: bool, side: str, batch: tuple[int, ...]) -> Matrix:
    """``array`` as the left (``side="x"``) or right GEMM operand: a 1-d x is a row, a 1-d y a column."""
    if array.ndim == 1:
        return Matrix(array, [0] * len(batch), 0, array.strides[0]) if side == "x" else \
            Matrix(array, [0] * len(batch), array.strides[0], 0)
    rows, cols = array.strides[-2:]
    if transpose:
        rows, cols = cols, rows
    return Matrix(array, _batch_strides(array.shape[:-2], array.strides[:-2], batch), rows, cols)


def _blocks(dtype: np.dtype) -> Blocks:
    if dtype == np.float64:
        return FLOAT64_BLOCKS
    if dtype == np.int8:
        return INT8_BLOCKS
    return DOT_BLOCKS if dtype in DOT_DTYPES else FMA_BLOCKS


def _accumulator(dtype: np.dtype):
    if dtype.kind == "f" or dtype == BFLOAT16:
        return compute_dtype(dtype)
    return tl.int64 if dtype == np.int64 else tl.int32


def gemm_options(dtype: np.dtype) -> dict:
    """The constexprs of ``_gemm_kernel`` for operands of ``dtype``."""
    blocks = _blocks(dtype)
    dot = dtype in DOT_DTYPES
    upcast = INTERPRETING and dtype == BFLOAT16
    precision = ("tf32" if ALLOW_TF32 else "ieee") if dtype == np.float32 or upcast else None
    return dict(BLOCK_M=blocks.m, BLOCK_N=blocks.n, BLOCK_K=blocks.k, GROUP_M=GROUP_M, DOT=dot,
                PRECISION=precision, ACC=_accumulator(dtype), UPCAST=upcast)


def _at(array: DeviceArray, index: tuple[int, ...], strides: list[int]) -> DeviceArray:
    """``array`` moved to the leading batch ``index``."""
    offset = sum(i * s for i, s in zip(index, strides))
    return array.view(array.shape, array.strides, offset) if offset else array


def run_gemm(a: Matrix, b: Matrix, c: Matrix, batch: tuple[int, ...], m: int, n: int, k: int,
             bias: tuple[DeviceArray, int, int] | None = None, act=None, params=(0.0, 0.0),
             colsum: DeviceArray | None = None) -> None:
    """``c = act(a @ b + bias)`` over the batch; ``bias`` is ``(array, stride along M, stride along N)``;
    ``colsum`` (1-d, N) receives the column sums of ``b`` (unbatched products only)."""
    dims, (sa, sb, sc) = merge_dims(batch, [a.batch, b.batch, c.batch])
    # b is one matrix (and the bias is not along M): fold the batch into a's rows where they merge
    if not any(sb) and colsum is None and (bias is None or bias[1] == 0):
        rows, (ra, rc) = merge_dims((*dims, m), [[*sa, a.rows], [*sc, c.rows]])
        if len(rows) == 1:
            m, dims, sa, sb, sc = rows[0], [1], [0], [0], [0]
            a, c = a._replace(rows=ra[0]), c._replace(rows=rc[0])
    count = int(np.prod(dims))
    if (m == 0 and colsum is None) or n == 0 or count == 0:
        return
    pad = max(BATCH_RANK - len(dims), 0)
    dims, sa, sb, sc = [1] * pad + dims, [0] * pad + sa, [0] * pad + sb, [0] * pad + sc
    lead = len(dims) - BATCH_RANK
    bias_array, s_bias_m, s_bias_n = bias if bias is not None else (c.array, 0, 0)

    def run(options: dict) -> None:
        tiles_m, tiles_n = max(cdiv(m, options["BLOCK_M"]), 1), cdiv(n, options["BLOCK_N"])
        grid = (tiles_m * tiles_n * int(np.prod(dims[lead:])),)
        for index in itertools.product(*[range(d) for d in dims[:lead]]):  # one launch when lead == 0
            views = [_at(mat.array, index, strides) for mat, strides in ((a, sa), (b, sb), (c, sc))]
            launch(_gemm_kernel, grid, *views, bias_array,
                   colsum if colsum is not None else c.array, m, n, k, tiles_m, tiles_n, dims[-2], dims[-1],
                   *sa[lead:], a.rows, a.cols, *sb[lead:], b.rows, b.cols, *sc[lead:], c.rows, c.cols,
                   s_bias_m, s_bias_n, *params, **options, HAS_BIAS=bias is not None, ACT=act,
                   COLSUM=colsum is not None)

    dtype = a.array.dtype
    options = gemm_options(dtype)
    if dtype in TUNED_DTYPES and colsum is None:  # (the column sums accumulate: never run twice)
        key = (dtype.str, m, n, k, count, act, bias is not None)
        tiles = GEMM_TUNER.choose(key, lambda config: run({**options, **config}))
        options = {**options, **tiles}
    run(options)


def _check_dtypes(op: str, names: tuple[str, ...], arrays: tuple[DeviceArray, ...]) -> np.dtype:
    dtype = arrays[0].dtype
    if any(a.dtype != dtype for a in arrays):
        given = ", ".join(f"{n} {a.dtype.name}" for n, a in zip(names, arrays))
        raise DTypeError(f"{op}: the gpu kernel multiplies operands of one dtype, got {given}")
    if dtype not in PRODUCT_DTYPES:
        raise DTypeError(f"{op}: the gpu kernel has no {dtype.name} product (it serves "
                         f"{sorted(d.name for d in PRODUCT_DTYPES)})")
    return dtype


def _vector(array: DeviceArray) -> tuple[DeviceArray, int]:
    """Any array's elements in order as ``(array, stride)``: its own memory where the dims merge."""
    if array.ndim == 1:
        return array, array.strides[0]
    dims, (strides,) = merge_dims(array.shape, [list(array.strides)])
    if len(dims) == 1:
        return array, strides[0]
    return contiguous(array), 1


def product(op: str, x: DeviceArray, y: DeviceArray, transpose_x=False, transpose_y=False,
            bias: DeviceArray | None = None, act=None, params=(0.0, 0.0)) -> DeviceArray:
    """matmul's product of ``x`` and ``y`` (numpy's rules), plus ``bias`` along the output's last dim."""
    dtype = _check_dtypes(op, ("x", "y"), (x, y))
    shape = matmul_shape(op, x.shape, y.shape, transpose_x, transpose_y)
    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    m = 1 if x.ndim == 1 else x.shape[-1] if transpose_x else x.shape[-2]
    k = x.shape[0] if x.ndim == 1 else x.shape[-2] if transpose_x else x.shape[-1]
    n = 1 if y.ndim == 1 else y.shape[-2] if transpose_y else y.shape[-1]
    out = empty(shape, dtype)
    c_strides = contiguous_strides((*batch, m, n))
    c = Matrix(out, list(c_strides[:-2]), c_strides[-2], c_strides[-1])
    bias_view = None
    if bias is not None:
        channels = shape[-1] if shape else 1
        if bias.dtype != dtype or bias.size != channels:
            raise ShapeError(f"{op}: bias {bias.dtype.name}{fmt_shape(bias.shape)} must hold {channels} elements of "
                             f"{dtype.name} (one per element of the output's last dim, output {fmt_shape(shape)})")
        vector, stride = _vector(bias)
        bias_view = (vector, 0, stride) if y.ndim > 1 else (vector, stride, 0) if x.ndim > 1 else (vector, 0, 0)
    run_gemm(operand(x, transpose_x, "x", batch), operand(y, transpose_y, "y", batch), c, batch,
             m, n, k, bias=bias_view, act=act, params=params)
    return out


# -- the ops --------------------------------------------------------------------------------------
def matmul(x: DeviceArray, y: DeviceArray, transpose_x=False, transpose_y=False) -> DeviceArray:
    return product("matmul", x, y, transpose_x, transpose_y)


def linear(x: DeviceArray, w: DeviceArray, b: DeviceArray) -> DeviceArray:
    if x.ndim < 2 or w.ndim != 2 or b.ndim != 1:
        raise ShapeError(f"linear: expected x [..., in], weight [in, out] and bias [out], got x {fmt_shape(x.shape)}, "
                         f"weight {fmt_shape(w.shape)} and bias {fmt_shape(b.shape)}")
    _check_dtypes("linear", ("x", "weight", "bias"), (x, w, b))
    return product("linear", x, w, bias=b)


def fused_linear(x: DeviceArray, w: DeviceArray, b: DeviceArray | None = None, transpose_x=False, transpose_y=False,
                 act=None, act_attrs=None) -> DeviceArray:
    epilogue = activation_epilogue("fused_linear", act)
    return product("fused_linear", x, w, transpose_x, transpose_y, bias=b, act=epilogue,
                   params=activation_params(act, act_attrs))


def _rows(array: DeviceArray) -> DeviceArray:
    """``array [..., n]`` as a 2-d ``[rows, n]`` view (a contiguous copy where its leading dims do not merge)."""
    if array.ndim == 2:
        return array
    if array.ndim == 1:
        return array.view((1, array.shape[0]), (0, array.strides[0]), 0)
    lead = array.shape[:-1]
    rows = int(np.prod(lead))
    dims, (strides,) = merge_dims(lead, [list(array.strides[:-1])])
    if len(dims) != 1:
        array = contiguous(array)
        strides = [array.strides[-2]]
    return array.view((rows, array.shape[-1]), (strides[0], array.strides[-1]), 0)


def linear_grad(g: DeviceArray, x: DeviceArray, w: DeviceArray, x_grad=True):
    """(gx, gw, gb) of ``x @ w + b``: ``gw = x^T @ g`` with ``gb`` (g's column sums) from its
    programs, ``gx = g @ w^T``."""
    dtype = _check_dtypes("linear_grad", ("grad", "x", "weight"), (g, x, w))
    if w.ndim != 2 or x.ndim < 1 or g.shape[:-1] != x.shape[:-1] or x.shape[-1] != w.shape[0] \
            or g.shape[-1] != w.shape[1]:
        raise ShapeError(f"linear_grad: grad {fmt_shape(g.shape)} and x {fmt_shape(x.shape)} must be [..., out] and "
                         f"[..., in] for weight [in, out] {fmt_shape(w.shape)}")
    g2, x2 = _rows(g), _rows(x)
    (rows, n_out), n_in = g2.shape, w.shape[0]
    gw, gb = empty(w.shape, dtype), empty((n_out,), dtype)
    xt = Matrix(x2, [], x2.strides[1], x2.strides[0])
    run_gemm(xt, Matrix(g2, [], *g2.strides), Matrix(gw, [], *gw.strides), (), n_in, n_out, rows, colsum=gb)
    if not x_grad:
        return gw, gb
    gx = empty((*g.shape[:-1], n_in), dtype)
    run_gemm(Matrix(g2, [], *g2.strides), Matrix(w, [], w.strides[1], w.strides[0]),
             Matrix(gx, [], n_in, 1), (), rows, n_in, n_out)
    return gx, gw, gb


def matmul_int8(x: DeviceArray, y: DeviceArray) -> DeviceArray:
    """int32 ``x [m, k] @ y [n, k]^T`` of int8 operands."""
    if x.dtype != np.int8 or y.dtype != np.int8:
        raise DTypeError(f"matmul_int8: x and y must be int8, got {x.dtype.name} and {y.dtype.name}")
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ShapeError(f"matmul_int8: x [m, k] and y [n, k] must share k, got {fmt_shape(x.shape)} and "
                         f"{fmt_shape(y.shape)}")
    (m, k), n = x.shape, y.shape[0]
    out = empty((m, n), np.int32)  # the int32 accumulator stored as it is
    run_gemm(Matrix(x, [], *x.strides), Matrix(y, [], y.strides[1], y.strides[0]), Matrix(out, [], n, 1), (), m, n, k)
    return out


def quantized_linear(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None, act=None,
                     act_attrs=None) -> DeviceArray:
    """``act((x - zx) @ (w - zw) * (x_scale * w_scale) + bias)`` in float32 from int8 operands."""
    if x.dtype != np.int8 or weight.dtype != np.int8:
        raise DTypeError(f"quantized_linear: x and weight must be int8, got {x.dtype.name} and {weight.dtype.name}")
    if x.ndim < 1 or weight.ndim != 2 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"quantized_linear: x {fmt_shape(x.shape)} must end in the in_features of the weight "
                         f"[in_features, out_features] {fmt_shape(weight.shape)}")
    k, n = weight.shape
    if x_scale.size != 1 or x_zero_point.size != 1 or weight_scale.size not in (1, n) \
            or weight_zero_point.shape != weight_scale.shape or (bias is not None and bias.size != n):
        raise ShapeError(f"quantized_linear: x_scale {fmt_shape(x_scale.shape)} and x_zero_point "
                         f"{fmt_shape(x_zero_point.shape)} must be scalars, weight_scale {fmt_shape(weight_scale.shape)} "
                         f"and weight_zero_point {fmt_shape(weight_zero_point.shape)} scalars or [{n}]")
    if x_scale.dtype != np.float32 or weight_scale.dtype != np.float32 or (bias is not None and bias.dtype != np.float32):
        raise DTypeError("quantized_linear: the scales and the bias must be float32")
    epilogue = activation_epilogue("quantized_linear", act)
    x2 = _rows(x)
    m = x2.shape[0]
    out = empty((*x.shape[:-1], n), np.float32)
    if m == 0 or n == 0:
        return out
    w_scale, s_scale = _vector(weight_scale) if weight_scale.ndim else (weight_scale, 0)
    w_zero, s_zero = _vector(weight_zero_point) if weight_zero_point.ndim else (weight_zero_point, 0)
    bias_vector, s_bias = _vector(bias) if bias is not None else (out, 0)
    blocks = INT8_BLOCKS
    tiles_m, tiles_n = cdiv(m, blocks.m), cdiv(n, blocks.n)
    # without FMA contraction the epilogue rounds each product and sum as the reference does
    launch(_quantized_gemm_kernel, (tiles_m * tiles_n,), x2, weight, out, x_scale, x_zero_point, w_scale, w_zero,
           bias_vector, m, n, k, tiles_m, tiles_n, *x2.strides, *weight.strides, n, 1, s_scale, s_zero, s_bias,
           *activation_params(act, act_attrs), BLOCK_M=blocks.m, BLOCK_N=blocks.n, BLOCK_K=blocks.k, GROUP_M=GROUP_M,
           HAS_BIAS=bias is not None, ACT=epilogue, enable_fp_fusion=False)
    return out


def dot(x: DeviceArray, y: DeviceArray) -> DeviceArray:
    """``sum(x * y, axis=-1)`` of two vectors or two ``[N, D]`` batches of rows."""
    dtype = _check_dtypes("dot", ("x", "y"), (x, y))
    if x.shape != y.shape or x.ndim not in (1, 2):
        raise ShapeError(f"dot: x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)}: expected two 1-d vectors or two "
                         f"2-d batches of row vectors of one shape")
    out = empty(x.shape[:-1], dtype)
    rows, depth = (1, x.shape[0]) if x.ndim == 1 else x.shape
    sx = (0, x.strides[0]) if x.ndim == 1 else x.strides
    sy = (0, y.strides[0]) if y.ndim == 1 else y.strides
    if rows:
        launch(_dot_rows_kernel, (cdiv(rows, DOT_ROWS),), x, y, out, rows, depth, *sx, *sy, BLOCK_R=DOT_ROWS,
               BLOCK_D=DOT_COLS, ACC=_accumulator(dtype))
    return out


def outer(x: DeviceArray, y: DeviceArray) -> DeviceArray:
    """``x.ravel()[:, None] * y.ravel()[None, :]`` by the elementwise kernel of ``multiply`` (bool: ``and``)."""
    if x.dtype != y.dtype:
        raise DTypeError(f"outer: the gpu kernel multiplies operands of one dtype, got x {x.dtype.name} and "
                         f"y {y.dtype.name}")
    out = empty((x.size, y.size), x.dtype)
    if out.size == 0:
        return out
    (xv, sx), (yv, sy) = _vector(x), _vector(y)
    column, row = xv.view((x.size, 1), (sx, 0), 0), yv.view((1, y.size), (0, sy), 0)
    if x.dtype == np.bool_:
        return run_elementwise("logical_and", out, [column, row], (), [tl.int1, tl.int1])
    compute = compute_dtype(x.dtype)
    return run_elementwise("multiply", out, [column, row], (), [compute, compute])


KERNELS = {"matmul": matmul, "dot": dot, "outer": outer, "linear": linear, "linear_grad": linear_grad,
           "fused_linear": fused_linear, "matmul_int8": matmul_int8, "quantized_linear": quantized_linear}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """The GEMM in each of its paths (tl.dot in float32 IEEE and TF32, bfloat16, float64 and int8;
    the multiply-accumulate step of int64), with the epilogues (bias, an activation, the column sums),
    the quantized GEMM, and the dot kernel."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    gemm_ints = ("M", "N", "K", "tiles_m", "tiles_n", "B1", "B2")
    gemm_strides = ("sa0", "sa1", "sa2", "sam", "sak", "sb0", "sb1", "sb2", "sbk", "sbn", "sc0", "sc1", "sc2",
                    "scm", "scn", "s_bias_m", "s_bias_n")

    def gemm(label, dtype, out=None, bias=False, act=None, colsum=False, tf32=False, tiles=None):
        np_dtype = np.dtype(BFLOAT16 if dtype == "bfloat16" else dtype)
        pointer = POINTER_TYPES[dtype]
        signature = {"a": pointer, "b": pointer, "c": POINTER_TYPES[out or dtype], "bias": pointer,
                     "colsum": pointer, **{p: "i32" for p in gemm_ints}, **{p: "i64" for p in gemm_strides},
                     "p0": "fp32", "p1": "fp32"}
        options = gemm_options(np_dtype)
        options.update(UPCAST=False, HAS_BIAS=bias, ACT=activation_epilogue("aot", act), COLSUM=colsum)
        if tf32:
            options["PRECISION"] = "tf32"
        compile_options = {}
        if tiles is not None:  # one of the autotuner's candidates: its warps and stages are compile options
            tiles = dict(tiles)
            compile_options = {"num_warps": tiles.pop("num_warps"), "num_stages": tiles.pop("num_stages")}
            options.update(tiles)
        signature.update({key: "constexpr" for key in options})
        return (f"matmul.{label}[{dtype}]", _gemm_kernel, signature, options, compile_options)

    found = [gemm("gemm", "float32"), gemm("gemm_tf32", "float32", tf32=True), gemm("gemm", "bfloat16"),
             gemm("gemm", "float64"), gemm("gemm", "int8", out="int32"), gemm("gemm", "int64"),
             gemm("gemm_bias_relu", "float32", bias=True, act="relu"),
             gemm("gemm_bias_gelu", "bfloat16", bias=True, act="gelu"),
             gemm("gemm_colsum", "float32", colsum=True), gemm("gemm_colsum", "bfloat16", colsum=True)]
    found += [gemm(f"gemm_tuned{i}", "bfloat16", tiles=config) for i, config in enumerate(GEMM_CONFIGS[1:], 1)]
    quantized = {"x": "*i8", "w": "*i8", "c": "*fp32", "x_scale": "*fp32", "x_zero": "*i8", "w_scale": "*fp32",
                 "w_zero": "*i8", "bias": "*fp32", **{p: "i32" for p in ("M", "N", "K", "tiles_m", "tiles_n")},
                 **{p: "i64" for p in ("sxm", "sxk", "swk", "swn", "scm", "scn", "s_scale", "s_zero", "s_bias")},
                 "p0": "fp32", "p1": "fp32"}
    constexprs = dict(BLOCK_M=INT8_BLOCKS.m, BLOCK_N=INT8_BLOCKS.n, BLOCK_K=INT8_BLOCKS.k, GROUP_M=GROUP_M,
                      HAS_BIAS=True, ACT=activation_epilogue("aot", "relu"))
    found.append(("matmul.quantized_gemm[int8]", _quantized_gemm_kernel,
                  {**quantized, **{key: "constexpr" for key in constexprs}}, constexprs))
    for dtype in ("float32", "bfloat16", "int64"):
        np_dtype = np.dtype(BFLOAT16 if dtype == "bfloat16" else dtype)
        pointer = POINTER_TYPES[dtype]
        constexprs = dict(BLOCK_R=DOT_ROWS, BLOCK_D=DOT_COLS, ACC=_accumulator(np_dtype))
        signature = {"x": pointer, "y": pointer, "out": pointer, "R": "i32", "D": "i32",
                     **{p: "i64" for p in ("sxr", "sxd", "syr", "syd")}, **{key: "constexpr" for key in constexprs}}
        found.append((f"matmul.dot_rows[{dtype}]", _dot_rows_kernel, signature, constexprs))
    return found


__all__ = ["KERNELS", "ALLOW_TF32", "aot_configs", "run_gemm", "product", "activation_epilogue"]
