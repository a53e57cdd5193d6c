"""Linear algebra beyond products: what ``paddle.linalg`` holds, and its top-level aliases.

The decompositions (cholesky, qr, svd and svdvals, eigh and eigvalsh, eig and eigvals, lu and
lu_unpack), the solvers (solve, triangular_solve, lstsq), inverse, det, slogdet, matrix_exp,
cross, diagonal and diag_embed are ops: a numpy reference kernel batched over the leading dims,
a meta, and a gradient rule written with oar ops, so that it runs on any backend and
differentiates again. The rules are the published ones: Murray (2016) for cholesky, Walter &
Lehmann (2018) for qr, the spectral rules for svd, eigh and eig (as PyTorch writes them), Golub &
Pereyra (1973) for lstsq, the block-matrix Frechet derivative for matrix_exp. Everything else --
pinv, cond, the norms, matrix_power, multi_dot, cholesky_solve, lu_solve, householder_product,
ormqr, cov, kron, tensordot, the randomized low-rank SVD -- is composed of ops and so
differentiable without a rule of its own.

Where oar differs from Paddle:

- ``eig``/``eigvals`` return real tensors (Paddle: complex64; oar's linear algebra is real) and
  raise an ``ArgumentError`` for a matrix whose eigenvalues are complex.
- ``lstsq`` computes the residuals whenever m > n; Paddle leaves them empty for a rank-deficient
  matrix. ``diagonal`` returns a copy, not a view.
- ``lu(pivot=False)`` factorizes on the CPU too (Paddle's CPU kernel refuses it); ``cdist``
  computes every ``compute_mode`` from the differences.
- ``fp8_fp8_half_gemm_fused`` (a float8 GPU kernel) is not provided: oar has no float8 dtype.
- Gradients are refused (``GradientError``) where they are not unique: ``qr(mode='complete')``
  of a tall matrix, ``svd(full_matrices=True)`` of a non-square one.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.op import COMPLEX, Op
from oar._ops._common import Tensor, TensorMeta, as_tensor, broadcast_shapes, dispatch, fmt_shape, normalize_axis
from oar._ops.assign import assign
from oar._ops.creation import eye, zeros, zeros_like
from oar._ops.elementwise import abs as _abs
from oar._ops.elementwise import cast, clip, maximum, sqrt, where
from oar._ops.linalg import matmul
from oar._ops.random import randn
from oar._ops.reduction import amax, amin, mean, p_norm_op, reduce_axes, unbroadcast
from oar._ops.reduction import norm as _basic_norm
from oar._ops.reduction import sum as _sum
from oar._ops.shape import (
    _pad_axis,
    _slice_axis,
    concat,
    flatten,
    moveaxis,
    reshape_to,
    squeeze,
    transpose,
    tril,
    triu,
    unsqueeze,
)
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

LINALG_DTYPES = (_dt.float32, _dt.float64)  # LAPACK's; float16/bfloat16 compute in float32


# -- checks and small helpers -------------------------------------------------------------------
def _check_matrix(op: str, name: str, meta: TensorMeta, square: bool = False) -> tuple:
    """The shape of a matrix (or batch of them) argument, or an error in the user's terms."""
    shape = tuple(meta.shape)
    if len(shape) < 2:
        what = "a square matrix (or a batch of them) [..., n, n]" if square else \
            "a matrix (or a batch of them) [..., m, n]"
        raise ShapeError(f"{op}: {name} must be {what}, got {fmt_shape(shape)}")
    if square and None not in shape[-2:] and shape[-1] != shape[-2]:
        raise ShapeError(f"{op}: {name} must be a square matrix (or a batch of them) [..., n, n], got "
                         f"{fmt_shape(shape)}")
    if not meta.dtype.is_floating:
        raise DTypeError(f"{op}: {name} must be a float tensor (float32 or float64), got {meta.dtype.name}; "
                         f"cast it first, e.g. {name}.astype('float32')")
    return shape


def _meta(t: Tensor) -> TensorMeta:
    return TensorMeta(tuple(t._data.shape), t.dtype)


def _matrix_arg(x, op: str, name: str = "x", square: bool = False) -> Tensor:
    x = as_tensor(x, name, op)
    _check_matrix(op, name, _meta(x), square)
    return x


def _mT(x: Tensor) -> Tensor:
    """The transpose of the last two dims (of every matrix in a batch)."""
    n = len(x.shape)
    return transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def _column(v: Tensor) -> Tensor:  # [..., n] -> [..., n, 1]
    return unsqueeze(v, -1)


def _row(v: Tensor) -> Tensor:  # [..., n] -> [..., 1, n]
    return unsqueeze(v, -2)


def _part(x: Tensor, axis: int, start: int, end: int) -> Tensor:
    """``x[start:end]`` along ``axis`` (negative counts from the end)."""
    return _slice_axis(x, axis % len(x.shape), start, end)


def _pad_after(x: Tensor, axis: int, count: int) -> Tensor:
    return _pad_axis(x, axis % len(x.shape), 0, count) if count else x


def _batch_of(op: str, a: tuple, b: tuple, names=("x", "y")) -> tuple:
    return broadcast_shapes(op, a[:-2], b[:-2], names=[f"{names[0]} batch dims", f"{names[1]} batch dims"])


def _singular(op: str, what: str = "x is singular (not invertible)"):
    return ArgumentError(f"{op}: {what}")


# -- inverse ------------------------------------------------------------------------------------
def _inverse_kernel(x):
    try:
        return np.linalg.inv(x)
    except np.linalg.LinAlgError:
        raise _singular("inverse") from None


def _square_meta(op: str):
    def meta(x: TensorMeta) -> TensorMeta:
        _check_matrix(op, "x", x, square=True)
        return x

    return meta


inverse_op = Op("inverse", paddle=("inverse", "linalg.inv", "Tensor.inverse"), reference=_inverse_kernel,
                meta=_square_meta("inverse"), dtypes=LINALG_DTYPES)


@inverse_op.defgrad
def _inverse_grad(ctx, g):
    inv = ctx.out  # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-T g A^-T
    return -matmul(matmul(inv, g, transpose_x=True), inv, transpose_y=True)


def inverse(x, name=None) -> Tensor:
    """The inverse of a square matrix, or of each matrix in a batch ``[..., n, n]``.

    >>> import oar
    >>> oar.inverse(oar.to_tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return dispatch(inverse_op, (_matrix_arg(x, "inverse", square=True),), {})


def inv(x, name=None) -> Tensor:
    """``paddle.linalg.inv``: the inverse of a square matrix (or batch of them), as ``inverse``.

    >>> import oar
    >>> oar.linalg.inv(oar.to_tensor([[1.0, 1.0], [0.0, 1.0]])).tolist()
    [[1.0, -1.0], [0.0, 1.0]]
    """
    return dispatch(inverse_op, (_matrix_arg(x, "inv", square=True),), {})


# -- det / slogdet ------------------------------------------------------------------------------
def _det_meta(x: TensorMeta) -> TensorMeta:
    return TensorMeta(_check_matrix("det", "x", x, square=True)[:-2], x.dtype)


det_op = Op("det", paddle=("linalg.det",), reference=lambda x: np.asarray(np.linalg.det(x)), meta=_det_meta,
            dtypes=LINALG_DTYPES)


@det_op.defgrad
def _det_grad(ctx, g):
    (x,) = ctx.inputs  # d det(A) = det(A) tr(A^-1 dA)
    scale = reshape_to(g * ctx.out, list(g.shape) + [1, 1])
    return scale * _mT(dispatch(inverse_op, (x,), {}))


def det(x, name=None) -> Tensor:
    """The determinant of a square matrix, or of each matrix of a batch ``[..., n, n] -> [...]``
    (its gradient, ``det * inverse(x).T``, needs ``x`` invertible).

    >>> import oar
    >>> float(oar.linalg.det(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])))
    -2.0
    """
    return dispatch(det_op, (_matrix_arg(x, "det", square=True),), {})


def _slogdet_kernel(x):
    sign, logabs = np.linalg.slogdet(x)
    return np.stack([sign, logabs]).astype(x.dtype)


def _slogdet_meta(x: TensorMeta) -> TensorMeta:
    return TensorMeta((2,) + _check_matrix("slogdet", "x", x, square=True)[:-2], x.dtype)


slogdet_op = Op("slogdet", paddle=("linalg.slogdet", "Tensor.slogdet"), reference=_slogdet_kernel, meta=_slogdet_meta,
                dtypes=LINALG_DTYPES)


@slogdet_op.defgrad
def _slogdet_grad(ctx, g):
    (x,) = ctx.inputs  # the sign is piecewise constant; d log|det A| = tr(A^-1 dA)
    g_log = g[1]
    return reshape_to(g_log, list(g_log.shape) + [1, 1]) * _mT(dispatch(inverse_op, (x,), {}))


def slogdet(x, name=None) -> Tensor:
    """Sign and natural log of the absolute determinant, stacked as Paddle does: a tensor of
    shape ``[2, ...]`` whose row 0 is the sign and row 1 ``log|det|`` (``det = sign * exp(log)``).

    >>> import oar
    >>> oar.linalg.slogdet(oar.to_tensor([[2.0, 0.0], [0.0, -3.0]])).tolist()[0]
    -1.0
    """
    return dispatch(slogdet_op, (_matrix_arg(x, "slogdet", square=True),), {})


# -- cholesky -----------------------------------------------------------------------------------
def _cholesky_kernel(x, upper):
    try:
        return np.linalg.cholesky(x, upper=upper)
    except np.linalg.LinAlgError:
        raise ArgumentError("cholesky: x is not symmetric positive definite (the factorization failed)") from None


def _cholesky_meta(x: TensorMeta, upper) -> TensorMeta:
    _check_matrix("cholesky", "x", x, square=True)
    return x


cholesky_op = Op("cholesky", paddle=("linalg.cholesky", "Tensor.cholesky"), reference=_cholesky_kernel,
                 meta=_cholesky_meta, dtypes=LINALG_DTYPES)


@cholesky_op.defgrad
def _cholesky_grad(ctx, g):
    # Murray (2016): with A = L L^T, gA = L^-T Phi(L^T gL) L^-1, symmetrised (A is symmetric).
    factor = ctx.out
    lower, g_lower = (_mT(factor), _mT(g)) if ctx.attrs["upper"] else (factor, g)
    phi = tril(matmul(lower, g_lower, transpose_x=True))
    phi = (phi + _mT(tril(phi, -1))) * 0.5
    left = _triangular(lower, phi, upper=False, transpose=True)  # L^-T phi
    return _mT(_triangular(lower, _mT(left), upper=False, transpose=True))  # (L^-T left^T)^T = left L^-1


def cholesky(x, upper=False, name=None) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite matrix (or batch of them): lower
    ``L`` with ``x = L @ L.T``, or upper ``U`` with ``x = U.T @ U`` when ``upper``. Only the
    lower triangle of ``x`` is read.

    >>> import oar
    >>> oar.linalg.cholesky(oar.to_tensor([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    return dispatch(cholesky_op, (_matrix_arg(x, "cholesky", square=True),), {"upper": bool(upper)})


# -- triangular_solve ---------------------------------------------------------------------------
def _triangular_solve_kernel(x, y, upper, transpose, unitriangular):
    a = np.triu(x) if upper else np.tril(x)
    if unitriangular:
        n = a.shape[-1]
        a[..., np.arange(n), np.arange(n)] = 1
    if transpose:
        a = np.swapaxes(a, -1, -2)
    try:
        return np.linalg.solve(a, y)
    except np.linalg.LinAlgError:
        raise _singular("triangular_solve", "x has a zero on its diagonal (singular)") from None


def _solve_meta(op: str, x: TensorMeta, y: TensorMeta) -> TensorMeta:
    xs = _check_matrix(op, "x", x, square=True)
    ys = _check_matrix(op, "y", y)
    if None not in (xs[-1], ys[-2]) and xs[-1] != ys[-2]:
        raise ShapeError(f"{op}: x {fmt_shape(xs)} and y {fmt_shape(ys)}: y must have as many rows as x "
                         f"({ys[-2]} vs {xs[-1]})")
    if x.dtype is not y.dtype:
        raise DTypeError(f"{op}: x and y must have one dtype, got {x.dtype.name} and {y.dtype.name}")
    return TensorMeta(_batch_of(op, xs, ys) + (xs[-1], ys[-1]), x.dtype)


triangular_solve_op = Op(
    "triangular_solve", paddle=("linalg.triangular_solve", "linalg.cholesky_solve", "linalg.cholesky_inverse",
                                "linalg.lu_solve"),
    reference=_triangular_solve_kernel, dtypes=LINALG_DTYPES, promote=_dt.SAME_DTYPE,
    meta=lambda x, y, **attrs: _solve_meta("triangular_solve", x, y),
)


def _triangular(x: Tensor, y: Tensor, upper: bool, transpose: bool = False, unitriangular: bool = False) -> Tensor:
    attrs = {"upper": upper, "transpose": transpose, "unitriangular": unitriangular}
    return dispatch(triangular_solve_op, (x, y), attrs)


@triangular_solve_op.defgrad
def _triangular_solve_grad(ctx, g):
    x, y = ctx.inputs
    upper, transposed, unit = ctx.attrs["upper"], ctx.attrs["transpose"], ctx.attrs["unitriangular"]
    gy = _triangular(x, g, upper, not transposed, unit)  # op(A)^-T g
    gx = None
    if ctx.needs_input_grad[0]:  # out = op(A)^-1 B: g op(A) = -gy out^T; only the triangle is read
        full = -matmul(ctx.out, gy, transpose_y=True) if transposed else -matmul(gy, ctx.out, transpose_y=True)
        gx = triu(full, 1 if unit else 0) if upper else tril(full, -1 if unit else 0)
        gx = unbroadcast(gx, ctx.in_shapes[0])
    return gx, unbroadcast(gy, ctx.in_shapes[1]) if ctx.needs_input_grad[1] else None


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None) -> Tensor:
    """Solve ``x @ out = y`` for a triangular ``x [..., m, m]`` and ``y [..., m, k]`` (batch dims
    broadcast): ``upper`` says which triangle of ``x`` is read, ``transpose`` solves with
    ``x.T`` instead, ``unitriangular`` takes the diagonal of ``x`` as ones.

    >>> import oar
    >>> a = oar.to_tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> oar.linalg.triangular_solve(a, oar.to_tensor([[3.0], [4.0]])).tolist()
    [[1.0], [1.0]]
    """
    x, y = _matrix_arg(x, "triangular_solve", square=True), _matrix_arg(y, "triangular_solve", "y")
    _solve_meta("triangular_solve", _meta(x), _meta(y))
    return _triangular(x, y, bool(upper), bool(transpose), bool(unitriangular))


# -- solve --------------------------------------------------------------------------------------
def _solve_kernel(x, y):
    try:
        return np.linalg.solve(x, y)
    except np.linalg.LinAlgError:
        raise _singular("solve") from None


solve_op = Op("solve", paddle=("linalg.solve", "Tensor.solve"), reference=_solve_kernel, dtypes=LINALG_DTYPES,
              promote=_dt.SAME_DTYPE, meta=lambda x, y: _solve_meta("solve", x, y))


@solve_op.defgrad
def _solve_grad(ctx, g):
    x, _ = ctx.inputs
    gy = dispatch(solve_op, (_mT(x), g), {})  # A^-T g
    gx = unbroadcast(-matmul(gy, ctx.out, transpose_y=True), ctx.in_shapes[0]) if ctx.needs_input_grad[0] else None
    return gx, unbroadcast(gy, ctx.in_shapes[1]) if ctx.needs_input_grad[1] else None


def solve(x, y, left=True, name=None, *, out=None) -> Tensor:
    """Solve ``x @ out = y`` (``left``) or ``out @ x = y`` for a square ``x [..., m, m]``; ``y``
    is ``[..., m, k]``, or a batch of vectors ``[..., m]`` when it has one dim fewer than ``x``.
    Batch dims broadcast; ``out`` receives the result.

    >>> import oar
    >>> x = oar.to_tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> oar.linalg.solve(x, oar.to_tensor([9.0, 8.0])).tolist()
    [2.0, 3.0]
    """
    x = _matrix_arg(x, "solve", square=True)
    y = as_tensor(y, "y", "solve")
    vector = y._data.ndim == x._data.ndim - 1
    if vector:
        y = _column(y) if left else _row(y)
    _check_matrix("solve", "y", _meta(y))
    if left:
        _solve_meta("solve", _meta(x), _meta(y))
        solution = dispatch(solve_op, (x, y), {})
    else:
        if y.shape[-1] != x.shape[-1]:
            raise ShapeError(f"solve: x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)} with left=False: y must "
                             f"have as many columns as x ({y.shape[-1]} vs {x.shape[-1]})")
        solution = _mT(dispatch(solve_op, (_mT(x), _mT(y)), {}))  # out x = y  <=>  x^T out^T = y^T
    return _into(out, squeeze(solution, -1 if left else -2) if vector else solution)


# -- qr -----------------------------------------------------------------------------------------
def _qr_kernel(x, mode):
    return tuple(np.linalg.qr(x, mode=mode))


def _qr_meta(x: TensorMeta, mode):
    shape = _check_matrix("qr", "x", x)
    m, n = shape[-2:]
    k = None if None in (m, n) else builtins.min(m, n)
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return TensorMeta(shape[:-2] + (m, q_cols), x.dtype), TensorMeta(shape[:-2] + (r_rows, n), x.dtype)


qr_op = Op("qr", paddle=("linalg.qr", "Tensor.qr"), reference=_qr_kernel, meta=_qr_meta, dtypes=LINALG_DTYPES,
           num_outputs=2)


def _times_inverse_transpose(x: Tensor, upper_r: Tensor) -> Tensor:
    """``x @ R^-T`` for an upper triangular ``R``: ``(R^-1 x^T)^T``."""
    return _mT(_triangular(upper_r, _mT(x), upper=True))


def _qr_grad_tall(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """The gradient of A = QR for m >= n (Walter & Lehmann 2018, as TensorFlow writes it)."""
    qdq = matmul(q, gq, transpose_x=True)
    rdr = matmul(r, gr, transpose_y=True)
    lower = tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    from_r = matmul(q, gr + _times_inverse_transpose(lower, r))
    return from_r + _times_inverse_transpose(gq - matmul(q, qdq), r)


@qr_op.defgrad
def _qr_grad(ctx, gq, gr):
    (x,) = ctx.inputs
    q, r = ctx.outputs
    m, n = ctx.in_shapes[0][-2:]
    if ctx.attrs["mode"] == "complete" and m > n:
        raise GradientError(f"qr: the gradient of mode='complete' is not defined for a tall matrix ({m} x {n}: "
                            f"Q's last {m - n} columns are not unique); use mode='reduced'")
    if m >= n:
        return _qr_grad_tall(q, r, gq, gr)
    # Wide: A = [X | Y] with X square; R = [U | V] where V = Q^T Y.
    y, u = _part(x, -1, m, n), _part(r, -1, 0, m)
    gu, gv = _part(gr, -1, 0, m), _part(gr, -1, m, n)
    gx = _qr_grad_tall(q, u, gq + matmul(y, gv, transpose_y=True), gu)
    return concat([gx, matmul(q, gv)], axis=-1)


def qr(x, mode="reduced", name=None):
    """The QR decomposition ``x = Q @ R`` of a matrix (or batch) ``[..., m, n]``, ``k = min(m, n)``:
    ``mode='reduced'`` gives ``Q [..., m, k]`` and ``R [..., k, n]``, ``'complete'`` gives
    ``Q [..., m, m]`` and ``R [..., m, n]``, ``'r'`` gives ``R`` alone (reduced).

    >>> import oar
    >>> q, r = oar.linalg.qr(oar.to_tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> [round(v, 6) for v in r.tolist()[0]]
    [-5.0, -2.2]
    """
    x = _matrix_arg(x, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    q, r = dispatch(qr_op, (x,), {"mode": "complete" if mode == "complete" else "reduced"})
    return r if mode == "r" else (q, r)


# -- svd / svdvals ------------------------------------------------------------------------------
def _svd_kernel(x, full_matrices):
    return tuple(np.linalg.svd(x, full_matrices=full_matrices))


def _svd_meta(x: TensorMeta, full_matrices):
    shape = _check_matrix("svd", "x", x)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = None if None in (m, n) else builtins.min(m, n)
    u, v = (m, n) if full_matrices else (k, k)
    return (TensorMeta(batch + (m, u), x.dtype), TensorMeta(batch + (k,), x.dtype),
            TensorMeta(batch + (v, n), x.dtype))


svd_op = Op("svd", paddle=("linalg.svd", "linalg.pinv", "linalg.svd_lowrank", "linalg.pca_lowrank"),
            reference=_svd_kernel, meta=_svd_meta, dtypes=LINALG_DTYPES, num_outputs=3)


def _off_diagonal_ones(n: int, like: Tensor) -> Tensor:
    return 1.0 - eye(n, dtype=like.dtype)


@svd_op.defgrad
def _svd_grad(ctx, gu, gs, gvh):
    m, n = ctx.in_shapes[0][-2:]
    k = builtins.min(m, n)
    if ctx.attrs["full_matrices"] and m != n:
        raise GradientError(f"svd: the gradient of full_matrices=True is not defined for a {m} x {n} matrix (the "
                            f"extra singular vectors are not unique); use full_matrices=False")
    u, s, vh = ctx.outputs
    v, gv = _mT(vh), _mT(gvh)
    # gA = U [skew(U^T gU) S / E + S skew(V^T gV) / E + diag(gS)] V^T, E_jk = s_k^2 - s_j^2, plus
    # the parts of gU and gV outside the span of U and V (PyTorch's svd_backward).
    s2 = s * s
    off = _off_diagonal_ones(k, s)
    e = _row(s2) - _column(s2) + (1.0 - off)  # ones on the diagonal, which `off` zeroes below
    utgu, vtgv = matmul(u, gu, transpose_x=True), matmul(v, gv, transpose_x=True)
    inner = ((utgu - _mT(utgu)) * _row(s) + _column(s) * (vtgv - _mT(vtgv))) / e * off
    inner = inner + eye(k, dtype=s.dtype) * _row(gs)
    if m > k:  # + (I - U U^T) gU S^-1 V^T
        gus = gu / _row(s)
        return matmul(matmul(u, inner) + gus - matmul(u, matmul(u, gus, transpose_x=True)), vh)
    if n > k:  # + U S^-1 gV^T (I - V V^T)
        gvs = gv / _row(s)
        return matmul(u, matmul(inner, vh) + _mT(gvs) - matmul(matmul(gvs, v, transpose_x=True), vh))
    return matmul(u, matmul(inner, vh))


def svd(x, full_matrices=False, name=None, *, out=None):
    """The singular value decomposition ``x = U @ diag(S) @ VH`` of a matrix (or batch)
    ``[..., m, n]``: ``(U, S, VH)`` with ``S [..., k]`` descending, ``k = min(m, n)``; ``U`` is
    ``[..., m, k]`` and ``VH [..., k, n]``, or square with ``full_matrices``. ``out``, a tuple of
    three tensors, receives them.

    >>> import oar
    >>> u, s, vh = oar.linalg.svd(oar.to_tensor([[3.0, 0.0], [0.0, -4.0]]))
    >>> s.tolist()
    [4.0, 3.0]
    """
    return _into(out, dispatch(svd_op, (_matrix_arg(x, "svd"),), {"full_matrices": bool(full_matrices)}))


def _svdvals_meta(x: TensorMeta) -> TensorMeta:
    return _svd_meta(x, False)[1]


svdvals_op = Op("svdvals", paddle=("linalg.svdvals", "linalg.matrix_rank", "linalg.cond"),
                reference=lambda x: np.linalg.svd(x, compute_uv=False), meta=_svdvals_meta, dtypes=LINALG_DTYPES)


@svdvals_op.defgrad
def _svdvals_grad(ctx, g):
    u, _, vh = dispatch(svd_op, (ctx.input(0),), {"full_matrices": False})  # gA = U diag(g) V^T
    return matmul(u * _row(g), vh)


def svdvals(x, name=None) -> Tensor:
    """The singular values of a matrix (or batch) ``[..., m, n]``, descending: ``[..., min(m, n)]``.

    >>> import oar
    >>> oar.linalg.svdvals(oar.to_tensor([[0.0, 2.0], [1.0, 0.0]])).tolist()
    [2.0, 1.0]
    """
    return dispatch(svdvals_op, (_matrix_arg(x, "svdvals"),), {})


# -- eigh / eigvalsh ----------------------------------------------------------------------------
def _uplo(op: str, value) -> str:
    if value not in ("L", "U"):
        raise ArgumentError(f"{op}: UPLO must be 'L' or 'U', got {value!r}")
    return value


def _eigh_meta(x: TensorMeta, UPLO):
    shape = _check_matrix("eigh", "x", x, square=True)
    return TensorMeta(shape[:-1], x.dtype), x


eigh_op = Op("eigh", paddle=("linalg.eigh",), reference=lambda x, UPLO: tuple(np.linalg.eigh(x, UPLO=UPLO)),
             meta=_eigh_meta, dtypes=LINALG_DTYPES, num_outputs=2)


def _spectral_inner(w: Tensor, projected: Tensor, gw: Tensor) -> Tensor:
    """``projected / E`` off the diagonal (``E_ij = w_j - w_i``) and ``gw`` on it."""
    n = w.shape[-1]
    off = _off_diagonal_ones(n, w)
    e = _row(w) - _column(w) + (1.0 - off)
    return projected / e * off + eye(n, dtype=w.dtype) * _row(gw)


@eigh_op.defgrad
def _eigh_grad(ctx, gw, gv):
    w, v = ctx.outputs  # gA = V (skew(V^T gV) / 2E + diag(gw)) V^T: symmetric, as A is
    vtgv = matmul(v, gv, transpose_x=True)
    inner = _spectral_inner(w, (vtgv - _mT(vtgv)) * 0.5, gw)
    return matmul(matmul(v, inner), v, transpose_y=True)


def eigh(x, UPLO="L", name=None):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (or batch) ``[..., n, n]``:
    ``(w [..., n], v [..., n, n])`` with ``x = v @ diag(w) @ v.T``; only the triangle ``UPLO``
    (``'L'`` or ``'U'``) is read.

    >>> import oar
    >>> w, v = oar.linalg.eigh(oar.to_tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(e, 6) for e in w.tolist()]
    [1.0, 3.0]
    """
    return dispatch(eigh_op, (_matrix_arg(x, "eigh", square=True),), {"UPLO": _uplo("eigh", UPLO)})


eigvalsh_op = Op("eigvalsh", paddle=("linalg.eigvalsh", "Tensor.eigvalsh"),
                 reference=lambda x, UPLO: np.linalg.eigvalsh(x, UPLO=UPLO), dtypes=LINALG_DTYPES,
                 meta=lambda x, UPLO: _eigh_meta(x, UPLO)[0])


@eigvalsh_op.defgrad
def _eigvalsh_grad(ctx, g):
    _, v = dispatch(eigh_op, (ctx.input(0),), ctx.attrs)  # gA = V diag(g) V^T
    return matmul(v * _row(g), v, transpose_y=True)


def eigvalsh(x, UPLO="L", name=None) -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix (or batch) ``[..., n, n]``.

    >>> import oar
    >>> [round(e, 6) for e in oar.linalg.eigvalsh(oar.to_tensor([[2.0, 1.0], [1.0, 2.0]])).tolist()]
    [1.0, 3.0]
    """
    return dispatch(eigvalsh_op, (_matrix_arg(x, "eigvalsh", square=True),), {"UPLO": _uplo("eigvalsh", UPLO)})


# -- eig / eigvals ------------------------------------------------------------------------------
def _real_spectrum(op: str, values, x):
    if np.iscomplexobj(values):
        raise ArgumentError(f"{op}: x has complex eigenvalues, and oar's eig returns real ones only; for a symmetric "
                            f"matrix use oar.linalg.eigh / eigvalsh")
    return values.astype(x.dtype, copy=False)


def _eig_kernel(x):
    w, v = np.linalg.eig(x)
    return _real_spectrum("eig", w, x), _real_spectrum("eig", v, x)


eig_op = Op("eig", paddle=("linalg.eig", "Tensor.eig"), reference=_eig_kernel, dtypes=LINALG_DTYPES, num_outputs=2,
            meta=lambda x: (TensorMeta(_check_matrix("eig", "x", x, square=True)[:-1], x.dtype), x))


@eig_op.defgrad
def _eig_grad(ctx, gw, gv):
    w, v = ctx.outputs
    # gA = V^-T (diag(gw) + (V^T gV - V^T V diag(V^T gV)) / E) V^T; the projection keeps gV off
    # the direction that only changes each eigenvector's norm (they are unit vectors).
    vtgv = matmul(v, gv, transpose_x=True)
    n = w.shape[-1]
    projected = vtgv - matmul(matmul(v, v, transpose_x=True), eye(n, dtype=w.dtype) * vtgv)
    inner = _spectral_inner(w, projected, gw)
    return dispatch(solve_op, (_mT(v), matmul(inner, v, transpose_y=True)), {})


def eig(x, name=None):
    """Eigenvalues and right eigenvectors of a square matrix (or batch) ``[..., n, n]``:
    ``(w [..., n], v [..., n, n])`` with ``x @ v = v * w``, unit eigenvectors. oar has no complex
    dtype: both are real, and a matrix with complex eigenvalues raises (Paddle returns complex64).

    >>> import oar
    >>> w, v = oar.linalg.eig(oar.to_tensor([[2.0, 0.0], [1.0, 3.0]]))
    >>> sorted(w.tolist())
    [2.0, 3.0]
    """
    return dispatch(eig_op, (_matrix_arg(x, "eig", square=True),), {})


eigvals_op = Op("eigvals", paddle=("linalg.eigvals", "Tensor.eigvals"), dtypes=LINALG_DTYPES,
                reference=lambda x: _real_spectrum("eigvals", np.linalg.eigvals(x), x),
                meta=lambda x: TensorMeta(_check_matrix("eigvals", "x", x, square=True)[:-1], x.dtype))


@eigvals_op.defgrad
def _eigvals_grad(ctx, g):
    _, v = dispatch(eig_op, (ctx.input(0),), {})  # gA = V^-T diag(g) V^T
    return dispatch(solve_op, (_mT(v), _column(g) * _mT(v)), {})


def eigvals(x, name=None) -> Tensor:
    """The eigenvalues of a square matrix (or batch) ``[..., n, n]``, real (as ``eig``).

    >>> import oar
    >>> sorted(oar.linalg.eigvals(oar.to_tensor([[1.0, 2.0], [0.0, 3.0]])).tolist())
    [1.0, 3.0]
    """
    return dispatch(eigvals_op, (_matrix_arg(x, "eigvals", square=True),), {})


# -- lu / lu_unpack -----------------------------------------------------------------------------
def _lu_kernel(x, pivot):
    """LU with partial pivoting (LAPACK getrf's algorithm), vectorised over the batch."""
    *batch, m, n = x.shape
    k = builtins.min(m, n)
    a = np.array(x, dtype=x.dtype).reshape(-1, m, n)
    count = a.shape[0]
    rows = np.arange(count)
    pivots = np.zeros((count, k), dtype=np.int32)
    infos = np.zeros(count, dtype=np.int32)
    for j in range(k):
        p = j + np.argmax(np.abs(a[:, j:, j]), axis=1) if pivot else np.full(count, j)
        pivots[:, j] = p + 1  # LAPACK's pivots count from 1
        row_j = a[rows, j].copy()
        a[rows, j] = a[rows, p]
        a[rows, p] = row_j
        d = a[:, j, j]
        zero = d == 0
        infos[(infos == 0) & zero] = j + 1
        a[:, j + 1:, j] /= np.where(zero, 1, d)[:, None]
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j:j + 1] * a[:, j:j + 1, j + 1:]
    return a.reshape(x.shape), pivots.reshape(*batch, k), infos.reshape(batch)


def _lu_meta(x: TensorMeta, pivot):
    shape = _check_matrix("lu", "x", x)
    batch, (m, n) = shape[:-2], shape[-2:]
    k = None if None in (m, n) else builtins.min(m, n)
    return x, TensorMeta(batch + (k,), _dt.int32), TensorMeta(batch, _dt.int32)


lu_op = Op("lu", paddle=("linalg.lu", "Tensor.lu"), reference=_lu_kernel, meta=_lu_meta, dtypes=LINALG_DTYPES,
           num_outputs=3)


@lu_op.defgrad
def _lu_grad(ctx, g_lu, _pivots, _infos):
    # PyTorch's linalg_lu_backward for A = P L U, with gL and gU the triangles of g(LU).
    m, n = ctx.in_shapes[0][-2:]
    k = builtins.min(m, n)
    p, lower, upper = dispatch(lu_unpack_op, (ctx.output(0), ctx.output(1)), {})
    gl, gu = tril(_part(g_lu, -1, 0, k), -1), triu(_part(g_lu, -2, 0, k))

    def right_solve_ut(t, r):  # t @ r^-T for upper triangular r
        return _times_inverse_transpose(t, r)

    def left_solve_lt(t, lo):  # lo^-T @ t for unit lower triangular lo
        return _triangular(lo, t, upper=False, transpose=True, unitriangular=True)

    if m == n:
        ga = tril(matmul(lower, gl, transpose_x=True), -1) + triu(matmul(gu, upper, transpose_y=True))
        ga = left_solve_lt(right_solve_ut(ga, upper), lower)
    elif m < n:  # wide: U = [U1 | U2]
        u1 = _part(upper, -1, 0, m)
        ga = matmul(lower, gl, transpose_x=True) - matmul(gu, upper, transpose_y=True)
        ga = right_solve_ut(tril(ga, -1), u1)
        ga = concat([ga + _part(gu, -1, 0, m), _part(gu, -1, m, n)], axis=-1)
        ga = left_solve_lt(ga, lower)
    else:  # tall: L = [L1; L2]
        l1 = _part(lower, -2, 0, n)
        ga = matmul(gu, upper, transpose_y=True) - matmul(lower, gl, transpose_x=True)
        ga = left_solve_lt(triu(ga), l1)
        ga = concat([ga + _part(gl, -2, 0, n), _part(gl, -2, n, m)], axis=-2)
        ga = right_solve_ut(ga, upper)
    return matmul(p, ga)


def lu(x, pivot=True, get_infos=False, name=None):
    """The LU factorization with partial pivoting of a matrix (or batch) ``[..., m, n]``:
    ``(LU, pivots)`` -- ``L`` (unit lower, below the diagonal) and ``U`` packed in one tensor,
    and the 1-based row interchanges ``[..., min(m, n)]`` (int32) -- plus ``infos [...]`` (0 where
    the factorization succeeded, ``j`` where ``U[j-1, j-1]`` is zero) with ``get_infos``.
    ``lu_unpack`` gives ``P, L, U`` with ``x = P @ L @ U``.

    >>> import oar
    >>> lu, p = oar.linalg.lu(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> p.tolist()
    [2, 2]
    """
    out = dispatch(lu_op, (_matrix_arg(x, "lu"),), {"pivot": bool(pivot)})
    return out if get_infos else out[:2]


def _lu_unpack_kernel(x, y):
    *batch, m, n = x.shape
    k = builtins.min(m, n)
    if y.shape != (*batch, k):
        raise ShapeError(f"lu_unpack: y (the pivots) must have shape {list(batch) + [k]} for x {list(x.shape)}, "
                         f"got {list(y.shape)}")
    piv = y.reshape(-1, k).astype(np.int64) - 1
    if piv.size and (piv.min() < 0 or piv.max() >= m):
        raise ArgumentError(f"lu_unpack: the pivots must lie in 1..{m} (LAPACK's 1-based rows)")
    perm = np.tile(np.arange(m), (piv.shape[0], 1))
    rows = np.arange(piv.shape[0])
    for i in range(k):  # replay the interchanges: row i of P^T A is row perm[i] of A
        j = piv[:, i]
        held = perm[rows, i].copy()
        perm[rows, i] = perm[rows, j]
        perm[rows, j] = held
    p = (perm[:, None, :] == np.arange(m)[None, :, None]).astype(x.dtype).reshape(*batch, m, m)
    lower = np.tril(x[..., :, :k], -1) + np.eye(m, k, dtype=x.dtype)
    return p, lower, np.triu(x[..., :k, :])


def _lu_unpack_meta(x: TensorMeta, y: TensorMeta):
    shape = _check_matrix("lu_unpack", "x", x)
    if not y.dtype.is_integer:
        raise DTypeError(f"lu_unpack: y (the pivots) must be an integer tensor, got {y.dtype.name}")
    batch, (m, n) = shape[:-2], shape[-2:]
    k = None if None in (m, n) else builtins.min(m, n)
    return (TensorMeta(batch + (m, m), x.dtype), TensorMeta(batch + (m, k), x.dtype),
            TensorMeta(batch + (k, n), x.dtype))


lu_unpack_op = Op("lu_unpack", paddle=("linalg.lu_unpack", "Tensor.lu_unpack"), reference=_lu_unpack_kernel,
                  meta=_lu_unpack_meta, dtypes=LINALG_DTYPES, num_outputs=3, nondiff_inputs=(1,))


@lu_unpack_op.defgrad
def _lu_unpack_grad(ctx, _gp, gl, gu):
    m, n = ctx.in_shapes[0][-2:]
    k = builtins.min(m, n)
    # L fills the first k columns of x, U its first k rows.
    return _pad_after(tril(gl, -1), -1, n - k) + _pad_after(triu(gu), -2, m - k), None


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """``(P, L, U)`` from ``lu``'s packed factorization ``x [..., m, n]`` and pivots
    ``y [..., k]``: ``P [..., m, m]`` a permutation, ``L [..., m, k]`` unit lower, ``U [..., k, n]``
    upper, with ``P @ L @ U`` the factorized matrix. What is not unpacked is None.

    >>> import oar
    >>> a = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> p, l, u = oar.linalg.lu_unpack(*oar.linalg.lu(a))
    >>> (p @ l @ u).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    x, y = _matrix_arg(x, "lu_unpack"), as_tensor(y, "y", "lu_unpack")
    _lu_unpack_meta(_meta(x), _meta(y))
    p, lower, upper = dispatch(lu_unpack_op, (x, y), {})
    return (p if unpack_pivots else None, lower if unpack_ludata else None, upper if unpack_ludata else None)


# -- lstsq --------------------------------------------------------------------------------------
LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_kernel(x, y, rcond, driver):
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    (m, n), k = x.shape[-2:], y.shape[-1]
    xs = np.broadcast_to(x, batch + (m, n)).reshape(-1, m, n)
    ys = np.broadcast_to(y, batch + (m, k)).reshape(-1, m, k)
    solution = np.empty((xs.shape[0], n, k), x.dtype)
    ranks = np.empty(xs.shape[0], np.int32)
    values = np.empty((xs.shape[0], builtins.min(m, n)), x.dtype)
    for i, (a, b) in enumerate(zip(xs, ys)):
        solution[i], _, ranks[i], values[i] = np.linalg.lstsq(a, b, rcond=rcond)
    solution = solution.reshape(batch + (n, k))
    residuals = np.empty((0,), x.dtype)
    if m > n:  # the squared norm of each column of y - x @ solution
        residuals = np.sum((np.matmul(x, solution) - y) ** 2, axis=-2).astype(x.dtype)
    empty = np.empty((0,), x.dtype)
    rank = ranks.reshape(batch) if driver != "gels" else np.empty((0,), np.int32)
    values = values.reshape(batch + (builtins.min(m, n),)) if driver in ("gelsd", "gelss") else empty
    return solution, residuals, rank, values


def _lstsq_meta(x: TensorMeta, y: TensorMeta, rcond, driver):
    xs, ys = _check_matrix("lstsq", "x", x), _check_matrix("lstsq", "y", y)
    if None not in (xs[-2], ys[-2]) and xs[-2] != ys[-2]:
        raise ShapeError(f"lstsq: x {fmt_shape(xs)} and y {fmt_shape(ys)}: y must have as many rows as x "
                         f"({ys[-2]} vs {xs[-2]})")
    batch, (m, n), k = _batch_of("lstsq", xs, ys), xs[-2:], ys[-1]
    known = None not in (m, n)
    residuals = batch + (k,) if known and m > n else (0,)
    values = batch + ((builtins.min(m, n),) if known else (None,)) if driver in ("gelsd", "gelss") else (0,)
    return (TensorMeta(batch + (n, k), x.dtype), TensorMeta(residuals, x.dtype),
            TensorMeta(batch if driver != "gels" else (0,), _dt.int32), TensorMeta(values, x.dtype))


lstsq_op = Op("lstsq", paddle=("linalg.lstsq", "Tensor.lstsq"), reference=_lstsq_kernel, meta=_lstsq_meta,
              dtypes=LINALG_DTYPES, promote=_dt.SAME_DTYPE, num_outputs=4)


@lstsq_op.defgrad
def _lstsq_grad(ctx, g, g_residuals, _g_rank, g_values):
    # solution = A^+ B; with dA^+ = -A^+ dA A^+ + A^+ A^+T dA^T (I - A A^+) + (I - A^+ A) dA^T A^+T A^+
    # (Golub & Pereyra), exact wherever the rank is constant.
    a, b = ctx.inputs
    solution = ctx.output(0)
    m, n = ctx.in_shapes[0][-2:]
    rcond = ctx.attrs["rcond"]
    a_plus = pinv(a, rcond=rcond if rcond is not None else np.finfo(a.dtype.np).eps * builtins.max(m, n))
    residual = b - matmul(a, solution)
    gb = matmul(a_plus, g, transpose_x=True)
    ga = -matmul(gb, solution, transpose_y=True)
    ga = ga + matmul(matmul(matmul(residual, g, transpose_y=True), a_plus), a_plus, transpose_y=True)
    away = eye(n, dtype=a.dtype) - matmul(a_plus, a)
    ga = ga + matmul(matmul(matmul(a_plus, solution, transpose_x=True), g, transpose_y=True), away)
    if m > n:  # residuals_j = |A x_j - b_j|^2, where A^T (A x - b) = 0 removes the path through x
        weighted = residual * _row(g_residuals) * 2.0
        ga, gb = ga - matmul(weighted, solution, transpose_y=True), gb + weighted
    if ctx.attrs["driver"] in ("gelsd", "gelss"):
        u, _, vh = dispatch(svd_op, (a,), {"full_matrices": False})
        ga = ga + matmul(u * _row(g_values), vh)
    return unbroadcast(ga, ctx.in_shapes[0]), unbroadcast(gb, ctx.in_shapes[1])


def lstsq(x, y, rcond=None, driver=None, name=None):
    """The least-squares solution of ``x @ solution = y`` for ``x [..., m, n]``, ``y [..., m, k]``:
    ``(solution [..., n, k], residuals, rank, singular_values)``. ``residuals`` (the squared norm
    of each column of ``y - x @ solution``, ``[..., k]``) when m > n, else empty; ``rank``
    (int32) unless ``driver='gels'``; ``singular_values [..., min(m, n)]`` for ``'gelsd'`` and
    ``'gelss'``. ``driver`` None is ``'gelsy'``; singular values below ``rcond`` times the largest
    count as zero (None: machine epsilon times max(m, n)). Gradients reach x and y through the solution.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> sol, res, rank, sv = oar.linalg.lstsq(x, oar.to_tensor([[1.0], [1.0], [2.0]]))
    >>> [round(v, 6) for v in sol.flatten().tolist()], int(rank)
    ([1.0, 1.0], 2)
    """
    x, y = _matrix_arg(x, "lstsq"), _matrix_arg(y, "lstsq", "y")
    driver = "gelsy" if driver is None else driver
    if driver not in LSTSQ_DRIVERS:
        raise ArgumentError(f"lstsq: driver must be one of {list(LSTSQ_DRIVERS)} or None, got {driver!r}")
    attrs = {"rcond": None if rcond is None else float(rcond), "driver": driver}
    _lstsq_meta(_meta(x), _meta(y), **attrs)
    return dispatch(lstsq_op, (x, y), attrs)


# -- matrix_exp ---------------------------------------------------------------------------------
PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
THETA_13 = 5.371920351148152  # the largest 1-norm for which Pade [13/13] is accurate to double precision


def _matrix_exp_kernel(x):
    """Scaling and squaring with a [13/13] Pade approximant (Higham 2005), in float64."""
    a = np.asarray(x, dtype=np.float64)
    n = a.shape[-1]
    norm1 = np.abs(a).sum(axis=-2).max(axis=-1, initial=0.0)
    squarings = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, 1e-300) / THETA_13))).astype(np.int64)
    a = a / (2.0 ** squarings)[..., None, None]
    b, ident = PADE_13, np.eye(n)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    out = np.linalg.solve(v - u, v + u)
    for step in range(int(squarings.max(initial=0))):
        out = np.where((step < squarings)[..., None, None], out @ out, out)
    return out.astype(x.dtype)


matrix_exp_op = Op("matrix_exp", paddle=("linalg.matrix_exp",), reference=_matrix_exp_kernel,
                   meta=_square_meta("matrix_exp"), dtypes=LINALG_DTYPES)


@matrix_exp_op.defgrad
def _matrix_exp_grad(ctx, g):
    # The adjoint of the Frechet derivative: gA = the top-right block of exp([[A^T, g], [0, A^T]]).
    at = _mT(ctx.input(0))
    n = at.shape[-1]
    block = concat([concat([at, g], axis=-1), concat([zeros_like(at), at], axis=-1)], axis=-2)
    return _part(_part(dispatch(matrix_exp_op, (block,), {}), -2, 0, n), -1, n, 2 * n)


def matrix_exp(x, name=None) -> Tensor:
    """The matrix exponential ``sum_k x^k / k!`` of a square matrix (or batch) ``[..., n, n]``.

    >>> import oar
    >>> [round(v, 6) for v in oar.linalg.matrix_exp(oar.to_tensor([[0.0, 1.0], [0.0, 0.0]])).flatten().tolist()]
    [1.0, 1.0, 0.0, 1.0]
    """
    return dispatch(matrix_exp_op, (_matrix_arg(x, "matrix_exp", square=True),), {})


# -- cross --------------------------------------------------------------------------------------
def _cross_meta(x: TensorMeta, y: TensorMeta, axis) -> TensorMeta:
    if tuple(x.shape) != tuple(y.shape):
        raise ShapeError(f"cross: x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)} must have the same shape")
    if x.shape[axis] not in (3, None):
        raise ShapeError(f"cross: x {fmt_shape(x.shape)} has {x.shape[axis]} elements along axis {axis}; the cross "
                         f"product needs 3")
    return TensorMeta(tuple(x.shape), _dt.PROMOTION_TABLE[x.dtype, y.dtype])


cross_op = Op("cross", paddle=("cross", "linalg.cross", "Tensor.cross"), meta=_cross_meta, promote=_dt.SAME_DTYPE,
              reference=lambda x, y, axis: np.cross(x, y, axis=axis))


@cross_op.defgrad
def _cross_grad(ctx, g):
    x, y = ctx.inputs  # d(x x y) = dx x y + x x dy; <g, a x b> = <b x g, a> = <g x a, b>
    axis = ctx.attrs
    gx = dispatch(cross_op, (y, g), axis) if ctx.needs_input_grad[0] else None
    gy = dispatch(cross_op, (g, x), axis) if ctx.needs_input_grad[1] else None
    return gx, gy


def cross(x, y, axis=9, name=None) -> Tensor:
    """The cross product of 3-vectors along ``axis`` of two tensors of one shape. ``axis`` 9 (the
    default, Paddle's) means the first axis of size 3.

    >>> import oar
    >>> oar.cross(oar.to_tensor([1.0, 0.0, 0.0]), oar.to_tensor([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    x, y = as_tensor(x, "x", "cross"), as_tensor(y, "y", "cross")
    shape = x.shape
    if axis == 9 and (len(shape) <= 9 or shape[9] != 3):  # K_DEFAULT_DIM: 9 is out of range for < 10 dims
        found = [i for i, d in enumerate(shape) if d == 3]
        if not found:
            raise ShapeError(f"cross: x {fmt_shape(shape)} has no axis of size 3; the cross product needs one")
        axis = found[0]
    axis = normalize_axis(axis, len(shape), "cross")
    _cross_meta(_meta(x), _meta(y), axis)
    return dispatch(cross_op, (x, y), {"axis": axis})


# -- diagonal / diag_embed ----------------------------------------------------------------------
def _diagonal_length(n1, n2, offset: int):
    if None in (n1, n2):
        return None
    return builtins.max(0, builtins.min(n1 - builtins.max(0, -offset), n2 - builtins.max(0, offset)))


def _diagonal_meta(x: TensorMeta, offset, axis1, axis2) -> TensorMeta:
    shape = tuple(x.shape)
    rest = tuple(d for i, d in enumerate(shape) if i not in (axis1, axis2))
    return TensorMeta(rest + (_diagonal_length(shape[axis1], shape[axis2], offset),), x.dtype)


diagonal_op = Op("diagonal", traits=COMPLEX, paddle=("diagonal", "linalg.diagonal", "trace", "diag", "Tensor.diagonal"),
                 reference=lambda x, offset, axis1, axis2: np.diagonal(x, offset, axis1, axis2).copy(),
                 meta=_diagonal_meta)


@diagonal_op.defgrad
def _diagonal_grad(ctx, g):
    attrs = ctx.attrs
    shape = ctx.in_shapes[0]
    embed = {"offset": attrs["offset"], "dim1": attrs["axis1"], "dim2": attrs["axis2"]}
    embedded = dispatch(diag_embed_op, (g,), embed)
    for axis in (attrs["axis1"], attrs["axis2"]):  # the embedded square holds zeros beyond x's own sizes
        size, want = embedded.shape[axis], shape[axis]
        embedded = _part(embedded, axis, 0, want) if size > want else _pad_after(embedded, axis, want - size)
    return embedded


def _diagonal_axes(op: str, x: Tensor, axis1, axis2) -> tuple[int, int]:
    ndim = x._data.ndim
    if ndim < 2:
        raise ShapeError(f"{op}: x must have at least 2 dimensions, got shape {fmt_shape(x.shape)}")
    a1, a2 = normalize_axis(axis1, ndim, op, "axis1"), normalize_axis(axis2, ndim, op, "axis2")
    if a1 == a2:
        raise ArgumentError(f"{op}: axis1 and axis2 must differ, got {axis1} and {axis2}")
    return a1, a2


def diagonal(x, offset=0, axis1=0, axis2=1, name=None) -> Tensor:
    """The diagonal ``offset`` (> 0 above the main one) of the 2-d planes over ``axis1`` and
    ``axis2``; those axes go, and the diagonal becomes the last axis. A copy (Paddle: a view).

    >>> import oar
    >>> oar.diagonal(oar.to_tensor([[1, 2, 3], [4, 5, 6]]), offset=1).tolist()
    [2, 6]
    """
    x = as_tensor(x, "x", "diagonal")
    a1, a2 = _diagonal_axes("diagonal", x, axis1, axis2)
    return dispatch(diagonal_op, (x,), {"offset": int(offset), "axis1": a1, "axis2": a2})


def _diag_embed_kernel(x, offset, dim1, dim2):
    length = x.shape[-1]
    size = length + abs(offset)
    out = np.zeros(x.shape[:-1] + (size, size), dtype=x.dtype)
    index = np.arange(length)
    out[..., index + builtins.max(0, -offset), index + builtins.max(0, offset)] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _diag_embed_meta(x: TensorMeta, offset, dim1, dim2) -> TensorMeta:
    shape = list(x.shape[:-1])
    size = None if x.shape[-1] is None else x.shape[-1] + abs(offset)
    for d in sorted((dim1, dim2)):
        shape.insert(d, size)
    return TensorMeta(tuple(shape), x.dtype)


diag_embed_op = Op("diag_embed", traits=COMPLEX, paddle=("diag_embed", "diag", "diagflat"), reference=_diag_embed_kernel,
                   meta=_diag_embed_meta)


@diag_embed_op.defgrad
def _diag_embed_grad(ctx, g):
    a = ctx.attrs
    return dispatch(diagonal_op, (g,), {"offset": a["offset"], "axis1": a["dim1"], "axis2": a["dim2"]})


def diag_embed(input, offset=0, dim1=-2, dim2=-1) -> Tensor:  # noqa: A002 - Paddle's argument name
    """Matrices whose diagonal ``offset`` is the last axis of ``input``: a tensor with one more
    dim, the new planes on ``dim1`` and ``dim2`` of the result, zeros elsewhere.

    >>> import oar
    >>> oar.diag_embed(oar.to_tensor([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    x = as_tensor(input, "input", "diag_embed")
    ndim = x._data.ndim + 1
    if ndim < 2:
        raise ShapeError("diag_embed: input must have at least 1 dimension, got a 0-d tensor")
    d1, d2 = normalize_axis(dim1, ndim, "diag_embed", "dim1"), normalize_axis(dim2, ndim, "diag_embed", "dim2")
    if d1 == d2:
        raise ArgumentError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    return dispatch(diag_embed_op, (x,), {"offset": int(offset), "dim1": d1, "dim2": d2})


def diag(x, offset=0, padding_value=0, name=None) -> Tensor:
    """A 1-d ``x`` becomes a square matrix with ``x`` on its diagonal ``offset`` and
    ``padding_value`` elsewhere; of a 2-d ``x`` the diagonal ``offset`` is returned.

    >>> import oar
    >>> oar.diag(oar.to_tensor([1, 2]), padding_value=7).tolist()
    [[1, 7], [7, 2]]
    >>> oar.diag(oar.to_tensor([[1, 2], [3, 4]]), offset=-1).tolist()
    [3]
    """
    x = as_tensor(x, "x", "diag")
    if x._data.ndim == 2:
        return dispatch(diagonal_op, (x,), {"offset": int(offset), "axis1": 0, "axis2": 1})
    if x._data.ndim != 1:
        raise ShapeError(f"diag: x must be 1-d (a diagonal to place) or 2-d (a matrix to read), got shape "
                         f"{fmt_shape(x.shape)}")
    out = dispatch(diag_embed_op, (x,), {"offset": int(offset), "dim1": 0, "dim2": 1})
    if padding_value == 0:
        return out
    size = out.shape[0]
    on_diagonal = np.eye(size, k=int(offset), dtype=bool)
    return where(as_tensor(on_diagonal), out, as_tensor(np.full((size, size), padding_value, x.dtype.np)))


def diagflat(x, offset=0, name=None) -> Tensor:
    """A square matrix with the elements of ``x`` (flattened) on its diagonal ``offset``.

    >>> import oar
    >>> oar.diagflat(oar.to_tensor([[1, 2], [3, 4]])).shape
    [4, 4]
    """
    x = flatten(as_tensor(x, "x", "diagflat"))
    return dispatch(diag_embed_op, (x,), {"offset": int(offset), "dim1": 0, "dim2": 1})


def trace(x, offset=0, axis1=0, axis2=1, name=None) -> Tensor:
    """The sum of the diagonal ``offset`` of the planes over ``axis1`` and ``axis2``.

    >>> import oar
    >>> int(oar.trace(oar.to_tensor([[1, 2], [3, 4]])))
    5
    """
    return _sum(diagonal(x, offset, axis1, axis2), axis=-1)


# -- composed: kron, tensordot ------------------------------------------------------------------
def kron(x, y, name=None) -> Tensor:
    """The Kronecker product: blocks ``x[i, j] * y``; the tensor with fewer dims gets leading 1s.

    >>> import oar
    >>> oar.kron(oar.to_tensor([[1, 2]]), oar.to_tensor([[1], [10]])).tolist()
    [[1, 2], [10, 20]]
    """
    x, y = as_tensor(x, "x", "kron"), as_tensor(y, "y", "kron")
    ndim = builtins.max(x._data.ndim, y._data.ndim)
    xs = [1] * (ndim - x._data.ndim) + list(x.shape)
    ys = [1] * (ndim - y._data.ndim) + list(y.shape)
    # x as [a0, 1, a1, 1, ...] times y as [1, b0, 1, b1, ...] is [a0, b0, a1, b1, ...]
    wide = reshape_to(x, [d for a in xs for d in (a, 1)]) * reshape_to(y, [d for b in ys for d in (1, b)])
    return reshape_to(wide, [a * b for a, b in zip(xs, ys)])


def _tensordot_axes(axes, nx: int, ny: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, Tensor):
        axes = axes.tolist()
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= builtins.min(nx, ny):
            raise ArgumentError(f"tensordot: axes={axes} must lie in 0..{builtins.min(nx, ny)} for operands of "
                                f"{nx} and {ny} dims")
        return list(range(nx - axes, nx)), list(range(axes))
    axes = list(axes)
    if axes and all(isinstance(a, (int, np.integer)) for a in axes):
        axes = [axes, axes]  # one list: the same axes of x and y
    if len(axes) == 1:
        axes = [axes[0], axes[0]]
    ax, ay = [list(a.tolist() if isinstance(a, Tensor) else a) for a in axes[:2]]
    if len(ax) != len(ay):
        raise ArgumentError(f"tensordot: axes {ax} of x and {ay} of y must have the same length")
    return ([normalize_axis(a, nx, "tensordot", "axes") for a in ax],
            [normalize_axis(a, ny, "tensordot", "axes") for a in ay])


def tensordot(x, y, axes=2, name=None) -> Tensor:
    """Sum the products of ``x`` and ``y`` over pairs of axes: ``axes`` an int n (the last n of x
    with the first n of y), one list (those axes of both), or two lists ``[axes_x, axes_y]``.

    >>> import oar
    >>> oar.tensordot(oar.ones([2, 3, 4]), oar.ones([3, 4, 5])).shape
    [2, 5]
    >>> oar.tensordot(oar.ones([3, 2]), oar.ones([3, 4]), axes=[[0], [0]]).shape
    [2, 4]
    """
    x, y = as_tensor(x, "x", "tensordot"), as_tensor(y, "y", "tensordot")
    ax, ay = _tensordot_axes(axes, x._data.ndim, y._data.ndim)
    for a, b in zip(ax, ay):
        if x.shape[a] != y.shape[b]:
            raise ShapeError(f"tensordot: x {fmt_shape(x.shape)} axis {a} and y {fmt_shape(y.shape)} axis {b} differ "
                             f"in size ({x.shape[a]} vs {y.shape[b]})")
    free_x = [i for i in range(x._data.ndim) if i not in ax]
    free_y = [i for i in range(y._data.ndim) if i not in ay]
    summed = math.prod(x.shape[a] for a in ax)
    xm = reshape_to(transpose(x, free_x + ax), [math.prod(x.shape[i] for i in free_x), summed])
    ym = reshape_to(transpose(y, ay + free_y), [summed, math.prod(y.shape[i] for i in free_y)])
    return reshape_to(matmul(xm, ym), [x.shape[i] for i in free_x] + [y.shape[i] for i in free_y])


# -- composed: norms ----------------------------------------------------------------------------
def _matrix_axes(x: Tensor, axis, op: str) -> tuple[int, int]:
    ndim = x._data.ndim
    axis = list(axis.tolist() if isinstance(axis, Tensor) else axis)
    if len(axis) != 2:
        raise ArgumentError(f"{op}: axis must be a list of two axes, got {axis!r}")
    rows, cols = (normalize_axis(a, ndim, op) for a in axis)
    if rows == cols:
        raise ArgumentError(f"{op}: the two axes of a matrix norm must differ, got {axis!r}")
    return rows, cols


def _last_two(x: Tensor, rows: int, cols: int) -> Tensor:
    return moveaxis(x, [rows, cols], [-2, -1])


def _keep(out: Tensor, rows: int, cols: int, keepdim: bool) -> Tensor:
    return unsqueeze(out, sorted((rows, cols))) if keepdim else out


def matrix_norm(x, p="fro", axis=[-2, -1],  # noqa: B006 - Paddle's default, never mutated
                keepdim=False, name=None) -> Tensor:
    """The matrix norm over the two axes ``axis``: ``p`` 'fro' (Frobenius), 'nuc' (sum of the
    singular values), 2 / -2 (largest / smallest singular value), 1 / -1 (largest / smallest
    absolute column sum), inf / -inf (the same of the rows).

    >>> import oar
    >>> x = oar.to_tensor([[3.0, 0.0], [0.0, 4.0]])
    >>> float(oar.linalg.matrix_norm(x)), float(oar.linalg.matrix_norm(x, p="nuc"))
    (5.0, 7.0)
    """
    return _matrix_norm(as_tensor(x, "x", "matrix_norm"), p, axis, keepdim, "matrix_norm")


def _matrix_norm(x: Tensor, p, axis, keepdim: bool, op: str) -> Tensor:
    rows, cols = _matrix_axes(x, axis, op)
    if isinstance(p, str) and p not in ("fro", "nuc") or p not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise ArgumentError(f"{op}: p must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf for a matrix norm, got {p!r}")
    if p in ("nuc", 2, -2):
        values = dispatch(svdvals_op, (_matrix_arg(_last_two(x, rows, cols), op),), {})
        out = _sum(values, axis=-1) if p == "nuc" else (amax if p > 0 else amin)(values, axis=-1)
        return _keep(out, rows, cols, keepdim)
    return _basic_norm(x, p=p, axis=[rows, cols], keepdim=keepdim)


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None, *, dtype=None, out=None) -> Tensor:
    """The vector p-norm of the elements over ``axis`` (an int, a list of axes, or None for all):
    ``sum(|x|^p)^(1/p)``; ``p`` inf / -inf give the largest / smallest ``|x|``, 0 counts nonzeros.
    ``dtype`` casts ``x`` first; ``out`` receives the result.

    >>> import oar
    >>> float(oar.linalg.vector_norm(oar.to_tensor([[3.0, 0.0], [0.0, -4.0]])))
    5.0
    """
    x = _as_dtype(as_tensor(x, "x", "vector_norm"), dtype)
    ndim = x._data.ndim
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    axes = None if axis is None else sorted({normalize_axis(a, ndim, "vector_norm") for a in
                                             ([axis] if isinstance(axis, (int, np.integer)) else axis)})
    porder = _norm_order(p, "vector_norm")
    attrs = {"porder": porder, "axis": reduce_axes(axes, ndim, "vector_norm"), "keepdim": bool(keepdim)}
    return _into(out, dispatch(p_norm_op, (x,), attrs))


def _norm_order(p, op: str):
    if isinstance(p, Tensor):
        p = p.item()
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)) or math.isnan(p):
        raise ArgumentError(f"{op}: p must be a real number (inf and -inf included), got {p!r}")
    if math.isinf(p):
        return "inf" if p > 0 else "-inf"
    return int(p) if float(p).is_integer() else float(p)


def norm(x, p=None, axis=None, keepdim=False, out=None, dtype=None, name=None) -> Tensor:
    """Vector or matrix norm, as ``paddle.linalg.norm``: with ``axis`` None or an int, the vector
    norm (``vector_norm``; ``p`` None or 'fro' is the 2-norm); with ``axis`` two axes, the matrix
    norm (``matrix_norm``; ``p`` None is 'fro', 'nuc' and 2 / -2 use the singular values).
    ``dtype`` casts ``x`` first; ``out`` receives the result.

    >>> import oar
    >>> x = oar.to_tensor([[3.0, -4.0], [0.0, 0.0]])
    >>> float(oar.norm(x)), oar.norm(x, p=1, axis=1).tolist(), float(oar.norm(x, p=2, axis=[0, 1]))
    (5.0, [7.0, 0.0], 5.0)
    """
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    x = _as_dtype(as_tensor(x, "x", "norm"), dtype)
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        return _into(out, _matrix_norm(x, "fro" if p is None else p, axis, bool(keepdim), "norm"))
    return _into(out, _basic_norm(x, p=p, axis=axis, keepdim=keepdim))


def _as_dtype(x: Tensor, dtype) -> Tensor:
    return x if dtype is None or _dt.get_dtype(dtype) is x.dtype else cast(x, dtype)


def cond(x, p=None, name=None) -> Tensor:
    """The condition number of a matrix (or batch): for ``p`` None, 2 or -2 the ratio of its
    largest to smallest singular value (or the inverse for -2); for 'fro', 'nuc', 1, -1, inf and
    -inf, ``norm(x, p) * norm(inv(x), p)`` of a square ``x``.

    >>> import oar
    >>> float(oar.linalg.cond(oar.to_tensor([[2.0, 0.0], [0.0, 0.5]])))
    4.0
    """
    x = _matrix_arg(x, "cond")
    if p in (None, 2, -2):
        values = dispatch(svdvals_op, (x,), {})
        ratio = amax(values, axis=-1) / amin(values, axis=-1)
        return ratio if p != -2 else 1.0 / ratio
    _check_matrix("cond", "x", _meta(x), square=True)
    return _matrix_norm(x, p, [-2, -1], False, "cond") * _matrix_norm(inv(x), p, [-2, -1], False, "cond")


# -- composed: pseudo-inverse, rank -------------------------------------------------------------
def pinv(x, rcond=1e-15, hermitian=False, name=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``[..., n, m]`` of a matrix (or batch) ``[..., m, n]``
    by SVD (by ``eigh`` when ``hermitian``); singular values at most ``rcond`` times the largest
    count as zero.

    >>> import oar
    >>> oar.linalg.pinv(oar.to_tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    x = _matrix_arg(x, "pinv", square=bool(hermitian))
    rcond = rcond if isinstance(rcond, Tensor) else float(rcond)
    if hermitian:
        w, v = dispatch(eigh_op, (x,), {"UPLO": "L"})
        magnitude = _abs(w)
        keep = magnitude > _column(amax(magnitude, axis=-1)) * rcond if isinstance(rcond, float) else \
            magnitude > _column(amax(magnitude, axis=-1)) * _column(cast(rcond, x.dtype))
        inverted = where(keep, 1.0 / where(keep, w, 1.0), 0.0)
        return matmul(v * _row(inverted), v, transpose_y=True)
    u, s, vh = dispatch(svd_op, (x,), {"full_matrices": False})
    limit = _column(amax(s, axis=-1)) * (rcond if isinstance(rcond, float) else _column(cast(rcond, x.dtype)))
    keep = s > limit
    inverted = where(keep, 1.0 / where(keep, s, 1.0), 0.0)  # no 1/0 even where the value is dropped
    return matmul(_mT(vh) * _row(inverted), u, transpose_y=True)


def matrix_rank(x, tol=None, hermitian=False, atol=None, rtol=None, name=None) -> Tensor:
    """The numerical rank (int64) of a matrix (or batch): the count of singular values (of
    ``|eigenvalues|`` when ``hermitian``) above a threshold -- ``tol`` alone, or
    ``max(atol, rtol * largest)`` with ``rtol`` defaulting to ``max(m, n) * eps`` (0 when only a
    positive ``atol`` is given); with neither, ``largest * max(m, n) * eps``.

    >>> import oar
    >>> int(oar.linalg.matrix_rank(oar.to_tensor([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    x = _matrix_arg(x, "matrix_rank", square=bool(hermitian))
    if tol is not None and (atol is not None or rtol is not None):
        raise ArgumentError("matrix_rank: give tol alone, or atol and rtol (not both)")
    if hermitian:
        values = _abs(dispatch(eigvalsh_op, (x,), {"UPLO": "L"}))
    else:
        values = dispatch(svdvals_op, (x,), {})
    largest = amax(values, axis=-1, keepdim=True)
    eps = float(np.finfo(x.dtype.np if x.dtype.np != _dt.bfloat16.np else np.float32).eps) * builtins.max(x.shape[-2:])

    def tensor(value):
        return _column(cast(value, x.dtype)) if isinstance(value, Tensor) else value

    if tol is not None:
        threshold = tensor(tol)
    elif atol is None and rtol is None:
        threshold = largest * eps
    else:
        absolute = 0.0 if atol is None else tensor(atol)
        if rtol is not None:
            relative = tensor(rtol)
        elif isinstance(absolute, Tensor):
            relative = where(absolute > 0, 0.0, eps)
        else:
            relative = 0.0 if absolute > 0 else eps
        threshold = maximum(largest * relative, absolute) if isinstance(absolute, Tensor) else \
            maximum(largest * relative, as_tensor(np.asarray(absolute, x.dtype.np)))
    return _sum(values > threshold, axis=-1, dtype="int64")


# -- composed: products and powers --------------------------------------------------------------
def matrix_power(x, n, name=None) -> Tensor:
    """``x`` to the integer power ``n`` (square matrices, batched): repeated squaring; ``n = 0``
    gives identities, ``n < 0`` powers of the inverse.

    >>> import oar
    >>> oar.linalg.matrix_power(oar.to_tensor([[1.0, 1.0], [0.0, 1.0]]), 3).tolist()
    [[1.0, 3.0], [0.0, 1.0]]
    """
    x = _matrix_arg(x, "matrix_power", square=True)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ArgumentError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        return zeros_like(x) + eye(x.shape[-1], dtype=x.dtype)
    base = inv(x) if n < 0 else x
    result, n = None, abs(int(n))
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The cheapest parenthesisation of a matrix chain (dims[i] x dims[i+1] for matrix i)."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j], split[i][j] = builtins.min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k) for k in range(i, j))
    return split


def multi_dot(x, name=None) -> Tensor:
    """The product of a list of matrices in the cheapest order; the first may be a 1-d row
    vector and the last a 1-d column vector (their dim is dropped again).

    >>> import oar
    >>> oar.linalg.multi_dot([oar.ones([2, 3]), oar.ones([3, 4]), oar.ones([4])]).tolist()
    [12.0, 12.0]
    """
    if not isinstance(x, (list, tuple)) or len(x) < 2:
        raise ArgumentError("multi_dot: x must be a list of at least two tensors")
    mats = [as_tensor(t, f"x[{i}]", "multi_dot") for i, t in enumerate(x)]
    first_vector, last_vector = mats[0]._data.ndim == 1, mats[-1]._data.ndim == 1
    if first_vector:
        mats[0] = _row(mats[0])
    if last_vector:
        mats[-1] = _column(mats[-1])
    for i, t in enumerate(mats):
        if t._data.ndim != 2:
            raise ShapeError(f"multi_dot: x[{i}] must be 2-d (the first and last may be 1-d), got shape "
                             f"{fmt_shape(x[i].shape)}")
        if i and t.shape[0] != mats[i - 1].shape[1]:
            raise ShapeError(f"multi_dot: x[{i - 1}] {fmt_shape(mats[i - 1].shape)} and x[{i}] {fmt_shape(t.shape)} "
                             f"cannot be multiplied")
    split = _chain_order([mats[0].shape[0]] + [t.shape[1] for t in mats])

    def product(i: int, j: int) -> Tensor:
        return mats[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    out = product(0, len(mats) - 1)
    if first_vector:
        out = squeeze(out, 0)
    return squeeze(out, -1) if last_vector else out


def vecdot(x, y, axis=-1, name=None) -> Tensor:
    """The dot product of ``x`` and ``y`` (broadcast) along ``axis``.

    >>> import oar
    >>> oar.linalg.vecdot(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), oar.to_tensor([1.0, 1.0])).tolist()
    [3.0, 7.0]
    """
    x, y = as_tensor(x, "x", "vecdot"), as_tensor(y, "y", "vecdot")
    return _sum(x * y, axis=axis)


def matrix_transpose(x, name=None) -> Tensor:
    """The transpose of the last two dims (of each matrix in a batch).

    >>> import oar
    >>> oar.linalg.matrix_transpose(oar.ones([5, 2, 3])).shape
    [5, 3, 2]
    """
    x = as_tensor(x, "x", "matrix_transpose")
    if x._data.ndim < 2:
        raise ShapeError(f"matrix_transpose: x must have at least 2 dimensions, got shape {fmt_shape(x.shape)}")
    return _mT(x)


def mv(x, vec, name=None) -> Tensor:
    """The product of a matrix ``[m, n]`` and a vector ``[n]``: ``[m]``.

    >>> import oar
    >>> oar.mv(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), oar.to_tensor([1.0, 1.0])).tolist()
    [3.0, 7.0]
    """
    x, vec = as_tensor(x, "x", "mv"), as_tensor(vec, "vec", "mv")
    if x._data.ndim != 2 or vec._data.ndim != 1:
        raise ShapeError(f"mv: x must be 2-d and vec 1-d, got shapes {fmt_shape(x.shape)} and {fmt_shape(vec.shape)}")
    return matmul(x, vec)


def inner(x, y, name=None) -> Tensor:
    """The inner product over the last axes: ``out[i..., j...] = sum(x[i..., :] * y[j..., :])``
    (a product when either is 0-d).

    >>> import oar
    >>> oar.inner(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), oar.to_tensor([[1.0, 0.0]])).tolist()
    [[1.0], [3.0]]
    """
    x, y = as_tensor(x, "x", "inner"), as_tensor(y, "y", "inner")
    if x._data.ndim == 0 or y._data.ndim == 0:
        return x * y
    return tensordot(x, y, axes=[[x._data.ndim - 1], [y._data.ndim - 1]])


def dist(x, y, p=2, name=None) -> Tensor:
    """The p-norm of ``x - y`` (broadcast) over all elements, a 0-d tensor; ``p`` 0 counts the
    differing elements, inf / -inf give the largest / smallest ``|x - y|``.

    >>> import oar
    >>> float(oar.dist(oar.to_tensor([3.0, 4.0]), oar.to_tensor([0.0, 0.0])))
    5.0
    """
    x, y = as_tensor(x, "x", "dist"), as_tensor(y, "y", "dist")
    return vector_norm(x - y, p=p)


CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None) -> Tensor:
    """The p-norm distances between the rows of ``x [..., P, M]`` and of ``y [..., R, M]``:
    ``[..., P, R]``. ``compute_mode`` chooses Paddle's algorithm for p = 2; oar computes every
    mode from the differences (the results agree, and the gradient is finite at distance 0).

    >>> import oar
    >>> oar.cdist(oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [[5.0, 1.0]]
    """
    x, y = as_tensor(x, "x", "cdist"), as_tensor(y, "y", "cdist")
    if compute_mode not in CDIST_MODES:
        raise ArgumentError(f"cdist: compute_mode must be one of {list(CDIST_MODES)}, got {compute_mode!r}")
    if x._data.ndim < 2 or y._data.ndim < 2 or x.shape[-1] != y.shape[-1]:
        raise ShapeError(f"cdist: x [..., P, M] and y [..., R, M] need matrices with as many columns, got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(y.shape)}")
    return vector_norm(unsqueeze(x, -2) - unsqueeze(y, -3), p=p, axis=-1)


def _into(out, result):
    """``result`` written into the tensor(s) ``out`` (Paddle's ``out=`` argument), which is returned."""
    if out is None:
        return result
    if isinstance(result, tuple):
        return tuple(assign(r, output=o) for r, o in zip(result, out))
    return assign(result, output=out)


# -- composed: solvers on factorizations --------------------------------------------------------
def cholesky_solve(x, y, upper=False, name=None) -> Tensor:
    """Solve ``A @ out = x`` given the Cholesky factor ``y`` of ``A`` (lower, or upper with
    ``upper``): two triangular solves. ``x [..., n, k]``, ``y [..., n, n]``.

    >>> import oar
    >>> factor = oar.linalg.cholesky(oar.to_tensor([[4.0, 2.0], [2.0, 2.0]]))
    >>> oar.linalg.cholesky_solve(oar.to_tensor([[6.0], [4.0]]), factor).tolist()
    [[1.0], [1.0]]
    """
    b, factor = _matrix_arg(x, "cholesky_solve", "x"), _matrix_arg(y, "cholesky_solve", "y", square=True)
    _solve_meta("cholesky_solve", _meta(factor), _meta(b))
    upper = bool(upper)  # A = U^T U: U^T z = b, then U out = z (and the same with L = U^T)
    return _triangular(factor, _triangular(factor, b, upper, transpose=upper), upper, transpose=not upper)


def cholesky_inverse(x, upper=False, name=None) -> Tensor:
    """The inverse of ``A`` from its Cholesky factor ``x`` (``A = x @ x.T``, or ``x.T @ x`` when
    ``upper``).

    >>> import oar
    >>> oar.linalg.cholesky_inverse(oar.to_tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
    [[0.25, 0.0], [0.0, 1.0]]
    """
    factor = _matrix_arg(x, "cholesky_inverse", square=True)
    identity = zeros_like(factor) + eye(factor.shape[-1], dtype=factor.dtype)
    return cholesky_solve(identity, factor, upper=upper)


def lu_solve(b, lu, pivots, trans="N", name=None) -> Tensor:
    """Solve ``A @ x = b`` (``trans='N'``) or ``A.T @ x = b`` (``'T'``, ``'C'``) given ``lu`` and
    ``pivots`` from ``lu(A)``; ``b [..., m, k]``, ``lu [..., m, m]``.

    >>> import oar
    >>> a = oar.to_tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> [round(v, 6) for v in oar.linalg.lu_solve(oar.to_tensor([[9.0], [8.0]]), *oar.linalg.lu(a)).flatten().tolist()]
    [2.0, 3.0]
    """
    b, lu = _matrix_arg(b, "lu_solve", "b"), _matrix_arg(lu, "lu_solve", "lu", square=True)
    if trans not in ("N", "T", "C"):
        raise ArgumentError(f"lu_solve: trans must be 'N', 'T' or 'C', got {trans!r}")
    _solve_meta("lu_solve", _meta(lu), _meta(b))
    p, lower, upper = lu_unpack(lu, pivots)
    if trans == "N":  # A = P L U: x = U^-1 L^-1 P^T b
        inner = _triangular(lower, matmul(p, b, transpose_x=True), upper=False, unitriangular=True)
        return _triangular(upper, inner, upper=True)
    inner = _triangular(upper, b, upper=True, transpose=True)  # A^T = U^T L^T P^T: x = P L^-T U^-T b
    return matmul(p, _triangular(lower, inner, upper=False, transpose=True, unitriangular=True))


# -- composed: Householder reflectors -----------------------------------------------------------
def _householder_q(x: Tensor, tau: Tensor, op: str) -> Tensor:
    """``H_1 H_2 ... H_k`` ``[..., m, m]``, ``H_i = I - tau_i v_i v_i^T`` with ``v_i`` the column
    ``i`` of ``x`` below the diagonal and 1 on it (LAPACK's geqrf storage)."""
    m, n = x.shape[-2:]
    k = tau.shape[-1]
    if tau.shape[:-1] != x.shape[:-2] or k > builtins.min(m, n):
        raise ShapeError(f"{op}: tau {fmt_shape(tau.shape)} must be [..., k] with the batch dims of x "
                         f"{fmt_shape(x.shape)} and k <= min(m, n)")
    q = zeros(list(x.shape[:-2]) + [m, m], dtype=x.dtype) + eye(m, dtype=x.dtype)
    for i in range(k):
        below = np.arange(m) > i
        v = x[..., i] * as_tensor(below.astype(x.dtype.np)) + as_tensor((np.arange(m) == i).astype(x.dtype.np))
        q = q - matmul(q, _column(v)) * _row(v) * _column(tau[..., i : i + 1])
    return q


def householder_product(x, tau, name=None) -> Tensor:
    """The first n columns of ``H_1 ... H_k`` for Householder vectors ``x [..., m, n]`` (below its
    diagonal, as ``geqrf`` stores them) and scales ``tau [..., k]``; m >= n >= k.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 0.0], [0.5, 1.0], [0.0, 0.0]])
    >>> oar.linalg.householder_product(x, oar.to_tensor([0.0, 0.0])).tolist()
    [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """
    x, tau = _matrix_arg(x, "householder_product"), as_tensor(tau, "tau", "householder_product")
    m, n = x.shape[-2:]
    if m < n:
        raise ShapeError(f"householder_product: x must have at least as many rows as columns, got {fmt_shape(x.shape)}")
    return _part(_householder_q(x, tau, "householder_product"), -1, 0, n)


def ormqr(x, tau, y, left=True, transpose=False, name=None) -> Tensor:
    """``Q @ y`` (``left``) or ``y @ Q`` for the ``Q = H_1 ... H_k`` of Householder vectors ``x``
    and scales ``tau`` (as ``householder_product``, all m columns); ``Q.T`` with ``transpose``.

    >>> import oar
    >>> x = oar.to_tensor([[1.0], [1.0]])
    >>> oar.linalg.ormqr(x, oar.to_tensor([1.0]), oar.to_tensor([[1.0], [0.0]])).tolist()
    [[0.0], [-1.0]]
    """
    x, tau, y = _matrix_arg(x, "ormqr"), as_tensor(tau, "tau", "ormqr"), _matrix_arg(y, "ormqr", "y")
    q = _householder_q(x, tau, "ormqr")
    m = x.shape[-2]
    if (y.shape[-2] if left else y.shape[-1]) != m:
        raise ShapeError(f"ormqr: y {fmt_shape(y.shape)} must have {m} {'rows' if left else 'columns'} (x has "
                         f"{m} rows)")
    return matmul(q, y, transpose_x=transpose) if left else matmul(y, q, transpose_y=transpose)


# -- composed: statistics -----------------------------------------------------------------------
def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``x`` (the columns when not
    ``rowvar``), as numpy's ``cov``: ``ddof`` True divides by N - 1; ``fweights`` (integer
    repeat counts) and ``aweights`` weight the observations. A 1-d ``x`` gives a 0-d variance.

    >>> import oar
    >>> oar.linalg.cov(oar.to_tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    x = as_tensor(x, "x", "cov")
    if x._data.ndim not in (1, 2):
        raise ShapeError(f"cov: x must be 1-d or 2-d, got shape {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        x = cast(x, _dt.default_float())
    data = reshape_to(x, [1, -1]) if x._data.ndim == 1 else x
    if not rowvar and data.shape[0] != 1:
        data = _mT(data)
    count = data.shape[1]
    weights = None
    for name_, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        w = as_tensor(w, name_, "cov")
        if w._data.ndim != 1 or w.shape[0] != count:
            raise ShapeError(f"cov: {name_} must be 1-d with one weight per observation ({count}), got shape "
                             f"{fmt_shape(w.shape)}")
        if name_ == "fweights" and not w.dtype.is_integer:
            raise DTypeError(f"cov: fweights must be an integer tensor, got {w.dtype.name}")
        w = cast(w, data.dtype)
        weights = w if weights is None else weights * w
    ddof = int(ddof)
    if weights is None:
        centered = data - mean(data, axis=1, keepdim=True)
        factor = builtins.max(count - ddof, 0)
        out = matmul(centered, centered, transpose_y=True) / factor
    else:
        total = _sum(weights)
        centered = data - _sum(data * weights, axis=1, keepdim=True) / total
        if ddof and aweights is not None:
            factor = total - _sum(weights * cast(as_tensor(aweights), data.dtype)) * ddof / total
        else:
            factor = total - ddof
        out = matmul(centered * weights, centered, transpose_y=True) / maximum(factor, zeros_like(factor))
    return squeeze(out)


def corrcoef(x, rowvar=True, name=None) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``x`` (columns when not
    ``rowvar``): ``cov`` scaled by the standard deviations, clipped to [-1, 1].

    >>> import oar
    >>> oar.linalg.corrcoef(oar.to_tensor([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    c = cov(x, rowvar)
    if c._data.ndim == 0:
        return c / c
    stddev = sqrt(dispatch(diagonal_op, (c,), {"offset": 0, "axis1": 0, "axis2": 1}))
    return clip(c / _column(stddev) / _row(stddev), -1.0, 1.0)


# -- composed: low-rank SVD / PCA ---------------------------------------------------------------
def _approximate_basis(a: Tensor, q: int, niter: int, m_mean: Tensor | None) -> Tensor:
    """Q with q orthonormal columns with Q Q^T (A - M) close to A - M (Halko et al. 2009, 4.4)."""

    def times(t, matrix, mean_, transpose_a=False):
        product = matmul(matrix, t, transpose_x=transpose_a)
        return product if mean_ is None else product - matmul(mean_, t, transpose_x=transpose_a)

    r = randn(list(a.shape[:-2]) + [a.shape[-1], q], dtype=a.dtype)
    basis = qr(times(r, a, m_mean))[0]
    for _ in range(niter):
        basis = qr(times(basis, a, m_mean, transpose_a=True))[0]
        basis = qr(times(basis, a, m_mean))[0]
    return basis


def svd_lowrank(x, q=None, niter=2, M=None, name=None):  # noqa: N803 - Paddle's argument name
    """A randomized SVD of a low-rank matrix (or batch) ``x [..., m, n]`` (or of ``x - M``):
    ``(U [..., m, q], S [..., q], V [..., n, q])`` with ``x ~ U diag(S) V^T``; ``q`` (default 6)
    slightly overestimates the rank, ``niter`` subspace iterations refine it (Halko et al. 2009).

    >>> import oar
    >>> x = oar.ones([5, 1]) @ oar.ones([1, 4])
    >>> u, s, v = oar.linalg.svd_lowrank(x, q=2)
    >>> round(float(s[0]), 5)
    4.47214
    """
    x = _matrix_arg(x, "svd_lowrank")
    q = 6 if q is None else int(q)
    m, n = x.shape[-2:]
    mean_ = None if M is None else as_tensor(M, "M", "svd_lowrank") + zeros_like(x)
    a, mean_t = (x, mean_) if m >= n else (_mT(x), None if mean_ is None else _mT(mean_))
    basis = _approximate_basis(a, builtins.min(q, a.shape[-2], a.shape[-1]), int(niter), mean_t)
    b = matmul(basis, a, transpose_x=True)
    if mean_t is not None:
        b = b - matmul(basis, mean_t, transpose_x=True)
    u, s, vh = svd(b)
    u, v = matmul(basis, u), _mT(vh)
    return (u, s, v) if m >= n else (v, s, u)


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """Principal component analysis of a matrix (or batch) ``x [..., m, n]`` by ``svd_lowrank``:
    ``(U, S, V)`` of ``x`` with its column means removed (when ``center``); ``q`` defaults to
    ``min(6, m, n)``.

    >>> import oar
    >>> u, s, v = oar.linalg.pca_lowrank(oar.randn([20, 3]), q=2)
    >>> v.shape
    [3, 2]
    """
    x = _matrix_arg(x, "pca_lowrank")
    m, n = x.shape[-2:]
    q = builtins.min(6, m, n) if q is None else q
    if not isinstance(q, (int, np.integer)) or not 0 <= q <= builtins.min(m, n):
        raise ArgumentError(f"pca_lowrank: q must be an int in 0..{builtins.min(m, n)} for x {fmt_shape(x.shape)}, "
                            f"got {q!r}")
    if int(niter) < 0:
        raise ArgumentError(f"pca_lowrank: niter must be >= 0, got {niter}")
    centered = x - mean(x, axis=-2, keepdim=True) if center else x
    return svd_lowrank(centered, q, niter=niter)


OPS = [inverse_op, det_op, slogdet_op, cholesky_op, triangular_solve_op, solve_op, qr_op, svd_op, svdvals_op,
       eigh_op, eigvalsh_op, eig_op, eigvals_op, lu_op, lu_unpack_op, lstsq_op, matrix_exp_op, cross_op,
       diagonal_op, diag_embed_op]

# Top-level names (``oar.inverse`` as ``paddle.inverse``); the rest is ``oar.linalg``'s.
__all__ = ["inverse", "cross", "trace", "kron", "tensordot", "diag", "diagonal", "diag_embed", "diagflat", "cholesky",
           "norm", "vecdot", "matrix_transpose", "mv", "inner", "dist", "cdist"]

# Paddle 3.3.1's Tensor methods of this family.
METHODS = {
    "norm": norm, "inverse": inverse, "cross": cross, "trace": trace, "kron": kron, "tensordot": tensordot,
    "diag": diag, "diagonal": diagonal, "diag_embed": diag_embed, "diagflat": diagflat, "cholesky": cholesky,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "cond": cond, "cov": cov,
    "corrcoef": corrcoef, "slogdet": slogdet, "qr": qr, "eig": eig, "eigvals": eigvals, "eigvalsh": eigvalsh,
    "lstsq": lstsq, "lu": lu, "lu_unpack": lu_unpack, "pinv": pinv, "solve": solve, "matrix_power": matrix_power,
    "multi_dot": multi_dot, "householder_product": householder_product, "matrix_transpose": matrix_transpose,
    "mv": mv, "dist": dist, "cdist": cdist, "inner": inner, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank,
    "ormqr": ormqr,
}
