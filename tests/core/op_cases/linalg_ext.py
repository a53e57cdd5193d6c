"""Op cases of ``oar.linalg`` and its top-level aliases (``oar._ops.linalg_ext``).

Inputs are well conditioned (a random matrix plus a multiple of the identity) so that finite
differences in float64 are exact to the harness's tolerance. Decompositions that read one
triangle of a symmetric input (cholesky, eigh) are checked through ``a @ a.T + c * I``, so the
finite differences perturb a symmetric matrix, as the gradient rules assume.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand

L = oar.linalg
LOOSE = {"rtol": 1e-4, "atol": 1e-5}  # float32 decompositions: LAPACK's float32 against float64


def well(*shape) -> np.ndarray:
    """A random square matrix (or batch) with a dominant diagonal: far from singular."""
    n = shape[-1]
    return rand(*shape) + n * np.eye(n)


def spd_np(a: np.ndarray) -> np.ndarray:
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def spd(a):
    return oar.matmul(a, a, transpose_y=True) + a.shape[-1] * oar.eye(a.shape[-1], dtype=a.dtype)


def with_spectrum(values) -> np.ndarray:
    """A non-symmetric matrix with the given real eigenvalues: S diag(values) S^-1."""
    n = len(values)
    s = well(n)
    return s @ np.diag(values) @ np.linalg.inv(s)


def lu_reference(a: np.ndarray, pivot: bool = True):
    """LU with partial pivoting, one matrix at a time in plain loops (LAPACK getf2)."""
    shape = a.shape
    mats = a.reshape(-1, *shape[-2:]).astype(np.float64).copy()
    m, n = shape[-2:]
    k = min(m, n)
    pivots = np.zeros((len(mats), k), np.int32)
    for b, mat in enumerate(mats):
        for j in range(k):
            p = j + int(np.argmax(np.abs(mat[j:, j]))) if pivot else j
            pivots[b, j] = p + 1
            mat[[j, p]] = mat[[p, j]]
            if mat[j, j] != 0:
                for i in range(j + 1, m):
                    mat[i, j] /= mat[j, j]
                    mat[i, j + 1:] -= mat[i, j] * mat[j, j + 1:]
    return mats.reshape(shape), pivots.reshape(*shape[:-2], k)


def unpack_reference(lu: np.ndarray, pivots: np.ndarray):
    m, n = lu.shape[-2:]
    k = min(m, n)
    out_p = []
    for mat_piv in pivots.reshape(-1, k):
        perm = list(range(m))
        for i, p in enumerate(mat_piv):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        out_p.append(np.eye(m)[perm].T)
    p = np.array(out_p).reshape(*lu.shape[:-2], m, m)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    return p, lower, np.triu(lu[..., :k, :])


def lstsq_reference(driver="gelsy", rcond=None):
    def ref(a, b):
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        (m, n), k = a.shape[-2:], b.shape[-1]
        a_, b_ = np.broadcast_to(a, batch + (m, n)), np.broadcast_to(b, batch + (m, k))
        parts = [np.linalg.lstsq(x, y, rcond=rcond) for x, y in zip(a_.reshape(-1, m, n), b_.reshape(-1, m, k))]
        solution = np.array([p[0] for p in parts]).reshape(batch + (n, k))
        residuals = ((a_ @ solution - b_) ** 2).sum(-2) if m > n else np.empty((0,))
        rank = np.array([p[2] for p in parts], np.int32).reshape(batch) if driver != "gels" else \
            np.empty((0,), np.int32)
        values = np.array([p[3] for p in parts]).reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") \
            else np.empty((0,))
        return solution, residuals, rank, values

    return ref


def expm_reference(a: np.ndarray) -> np.ndarray:
    """Taylor series of the scaled matrix, squared back, in float64."""
    scale = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-2).max(), 1e-300)))) + 1)
    x = a / 2.0 ** scale
    term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    total = term.copy()
    for k in range(1, 30):
        term = term @ x / k
        total = total + term
    for _ in range(scale):
        total = total @ total
    return total


def householder_reference(x: np.ndarray, tau: np.ndarray, columns=None) -> np.ndarray:
    m, n = x.shape[-2:]
    q = np.eye(m)
    for i in range(tau.shape[-1]):
        v = np.where(np.arange(m) > i, x[:, i], 0.0) + (np.arange(m) == i)
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :columns] if columns else q


def cross_first_3(a, b):
    return np.cross(a, b, axis=[i for i, d in enumerate(a.shape) if d == 3][0])


def triangular_reference(upper=True, transpose=False, unit=False):
    def ref(a, b):
        t = np.triu(a) if upper else np.tril(a)
        if unit:
            idx = np.arange(t.shape[-1])
            t[..., idx, idx] = 1.0
        return np.linalg.solve(np.swapaxes(t, -1, -2) if transpose else t, b)

    return ref


def embed_reference(offset=0, dim1=-2, dim2=-1):
    def ref(v):
        size = v.shape[-1] + abs(offset)
        out = np.zeros(v.shape[:-1] + (size, size))
        idx = np.arange(v.shape[-1])
        out[..., idx + max(0, -offset), idx + max(0, offset)] = v
        return np.moveaxis(out, (-2, -1), (dim1 % (v.ndim + 1), dim2 % (v.ndim + 1)))

    return ref


def cov_reference(rowvar=True, ddof=True, fweights=False, aweights=False):
    def ref(x, *weights):
        fw = weights[0] if fweights else None
        aw = weights[-1] if aweights else None
        return np.cov(x, rowvar=rowvar, ddof=int(ddof), fweights=fw, aweights=aw)

    return ref


SPECTRUM = with_spectrum([1.0, 2.5, 4.0])
TAU = np.array([1.2, 0.7, 1.5])

CASES = [
    # inverse, det, slogdet
    OpCase("inverse", oar.inverse, np.linalg.inv, [well(3)], dtypes=("float32", "float64", "float16", "bfloat16"),
           rtol=3e-2, atol=3e-2, id="inverse"),
    OpCase("inverse", L.inv, np.linalg.inv, [well(2, 3, 3)], id="linalg_inv_batched"),
    OpCase("inverse", lambda x: x.inverse(), np.linalg.inv, [well(4)], id="inverse_method"),
    OpCase("det", L.det, np.linalg.det, [well(3)], id="det"),
    OpCase("det", L.det, np.linalg.det, [well(2, 1, 3, 3)], id="det_batched"),
    OpCase("det", L.det, np.linalg.det, [rand(3, 3) * 0.1 + np.diag([1.0, -1.0, 2.0])], id="det_negative"),
    OpCase("slogdet", L.slogdet, lambda a: np.stack(np.linalg.slogdet(a)),
           [rand(3, 3) * 0.1 + np.diag([1.0, -1.0, 2.0])], id="slogdet"),
    OpCase("slogdet", L.slogdet, lambda a: np.stack(np.linalg.slogdet(a)), [well(2, 3, 3)], id="slogdet_batched"),
    # cholesky, through a symmetric positive-definite composition
    OpCase("cholesky", lambda a: L.cholesky(spd(a)), lambda a: np.linalg.cholesky(spd_np(a)), [rand(3, 3)],
           id="cholesky"),
    OpCase("cholesky", lambda a: L.cholesky(spd(a), upper=True),
           lambda a: np.swapaxes(np.linalg.cholesky(spd_np(a)), -1, -2),
           [rand(2, 3, 3)], id="cholesky_upper_batched"),
    OpCase("cholesky", lambda a: oar.cholesky(spd(a)), lambda a: np.linalg.cholesky(spd_np(a)), [rand(3, 3)],
           id="cholesky_top_level"),
    OpCase("cholesky", lambda a: spd(a).cholesky(), lambda a: np.linalg.cholesky(spd_np(a)), [rand(2, 2)],
           id="cholesky_method"),
    # triangular_solve: both triangles, transposed, unit diagonal, broadcast batch dims
    OpCase("triangular_solve", L.triangular_solve, triangular_reference(), [well(3), rand(3, 2)],
           id="triangular_solve_upper"),
    OpCase("triangular_solve", lambda a, b: L.triangular_solve(a, b, upper=False), triangular_reference(False),
           [well(3), rand(3, 2)], id="triangular_solve_lower"),
    OpCase("triangular_solve", lambda a, b: L.triangular_solve(a, b, transpose=True),
           triangular_reference(transpose=True),
           [well(3), rand(3, 2)], id="triangular_solve_transpose"),
    OpCase("triangular_solve", lambda a, b: L.triangular_solve(a, b, upper=False, unitriangular=True),
           triangular_reference(False, unit=True), [well(3), rand(3, 1)], id="triangular_solve_unit"),
    OpCase("triangular_solve", lambda a, b: L.triangular_solve(a, b, upper=False, transpose=True),
           triangular_reference(False, True), [well(2, 1, 3, 3), rand(3, 3, 2)], id="triangular_solve_broadcast"),
    # solve: matrices, vectors, batches, from the right
    OpCase("solve", L.solve, np.linalg.solve, [well(3), rand(3, 2)], id="solve"),
    OpCase("solve", L.solve, lambda a, b: np.linalg.solve(a, b[..., None])[..., 0], [well(3), rand(3)],
           id="solve_vector"),
    OpCase("solve", L.solve, np.linalg.solve, [well(2, 1, 3, 3), rand(1, 3, 3, 2)], id="solve_broadcast"),
    OpCase("solve", L.solve, lambda a, b: np.linalg.solve(a, b[..., None])[..., 0], [well(2, 3, 3), rand(2, 3)],
           id="solve_batch_of_vectors"),
    OpCase("solve", lambda a, b: L.solve(a, b, left=False), lambda a, b: b @ np.linalg.inv(a), [well(3), rand(2, 3)],
           id="solve_right"),
    OpCase("solve", lambda a, b: a.solve(b), np.linalg.solve, [well(2), rand(2, 2)], id="solve_method"),
    # qr: tall, square, wide, complete, R only, batched
    OpCase("qr", L.qr, lambda a: np.linalg.qr(a), [rand(4, 3)], **LOOSE, id="qr_tall"),
    OpCase("qr", L.qr, lambda a: np.linalg.qr(a), [well(3)], **LOOSE, id="qr_square"),
    OpCase("qr", L.qr, lambda a: np.linalg.qr(a), [rand(2, 4)], **LOOSE, id="qr_wide"),
    OpCase("qr", L.qr, lambda a: np.linalg.qr(a), [rand(2, 4, 3)], **LOOSE, id="qr_batched"),
    OpCase("qr", lambda a: L.qr(a, mode="complete"), lambda a: np.linalg.qr(a, mode="complete"), [rand(2, 3)],
           **LOOSE, id="qr_complete_wide"),
    OpCase("qr", lambda a: L.qr(a, mode="complete"), lambda a: np.linalg.qr(a, mode="complete"), [rand(4, 3)],
           grad=False, **LOOSE, id="qr_complete_tall_forward"),
    OpCase("qr", lambda a: L.qr(a, mode="r"), lambda a: np.linalg.qr(a, mode="r"), [rand(4, 3)], **LOOSE,
           id="qr_r"),
    OpCase("qr", lambda a: a.qr(), lambda a: np.linalg.qr(a), [rand(3, 2)], **LOOSE, id="qr_method"),
    # svd, svdvals
    OpCase("svd", L.svd, lambda a: np.linalg.svd(a, full_matrices=False), [rand(4, 3)], **LOOSE, id="svd_tall"),
    OpCase("svd", L.svd, lambda a: np.linalg.svd(a, full_matrices=False), [rand(3, 4)], **LOOSE, id="svd_wide"),
    OpCase("svd", L.svd, lambda a: np.linalg.svd(a, full_matrices=False), [rand(2, 3, 3)], **LOOSE,
           id="svd_batched_square"),
    OpCase("svd", lambda a: L.svd(a, full_matrices=True), lambda a: np.linalg.svd(a, full_matrices=True),
           [rand(3, 3)], **LOOSE, id="svd_full_square"),
    OpCase("svd", lambda a: L.svd(a, full_matrices=True), lambda a: np.linalg.svd(a, full_matrices=True),
           [rand(4, 2)], grad=False, **LOOSE, id="svd_full_tall_forward"),
    OpCase("svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [rand(4, 3)], id="svdvals"),
    OpCase("svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [rand(2, 2, 5)],
           id="svdvals_batched_wide"),
    # eigh, eigvalsh (symmetric inputs)
    OpCase("eigh", lambda a: L.eigh(a + a.T), lambda a: np.linalg.eigh(a + a.T), [rand(3, 3)], **LOOSE, id="eigh"),
    OpCase("eigh", lambda a: L.eigh(spd(a), UPLO="U"), lambda a: np.linalg.eigh(spd_np(a), UPLO="U"),
           [rand(2, 3, 3)], **LOOSE, id="eigh_upper_batched"),
    OpCase("eigvalsh", lambda a: L.eigvalsh(a + a.T), lambda a: np.linalg.eigvalsh(a + a.T), [rand(4, 4)],
           id="eigvalsh"),
    OpCase("eigvalsh", lambda a: (a + a.T).eigvalsh(UPLO="U"), lambda a: np.linalg.eigvalsh(a + a.T, UPLO="U"),
           [rand(3, 3)], id="eigvalsh_method"),
    # eig, eigvals (real spectra)
    OpCase("eig", L.eig, np.linalg.eig, [SPECTRUM], **LOOSE, id="eig"),
    OpCase("eig", lambda a: a.eig(), np.linalg.eig, [np.stack([SPECTRUM, with_spectrum([-1.0, 0.5, 3.0])])],
           **LOOSE, id="eig_batched_method"),
    OpCase("eigvals", L.eigvals, np.linalg.eigvals, [SPECTRUM], **LOOSE, id="eigvals"),
    OpCase("eigvals", lambda a: a.eigvals(), np.linalg.eigvals, [with_spectrum([-2.0, 1.0, 2.0])], **LOOSE,
           id="eigvals_method"),
    # lu, lu_unpack, lu_solve
    OpCase("lu", L.lu, lu_reference, [well(3)], **LOOSE, id="lu_square"),
    OpCase("lu", L.lu, lu_reference, [rand(5, 3)], **LOOSE, id="lu_tall"),
    OpCase("lu", L.lu, lu_reference, [rand(3, 5)], **LOOSE, id="lu_wide"),
    OpCase("lu", lambda a: a.lu(get_infos=True), lambda a: (*lu_reference(a), np.zeros(a.shape[:-2], np.int32)),
           [rand(2, 4, 4)], **LOOSE, id="lu_batched_infos"),
    OpCase("lu", lambda a: L.lu(a, pivot=False), lambda a: lu_reference(a, pivot=False), [well(3)], **LOOSE,
           id="lu_no_pivoting"),
    OpCase("lu_unpack", lambda a: L.lu_unpack(*L.lu(a)), lambda a: unpack_reference(*lu_reference(a)), [rand(4, 4)],
           **LOOSE, id="lu_unpack_square"),
    OpCase("lu_unpack", lambda a: L.lu_unpack(*L.lu(a)), lambda a: unpack_reference(*lu_reference(a)),
           [rand(2, 5, 3)], **LOOSE, id="lu_unpack_tall_batched"),
    OpCase("lu_unpack", lambda a: a.lu_unpack(a.lu()[1]), lambda a: unpack_reference(a, lu_reference(a)[1]),
           [rand(3, 4)], grad_inputs=[0], **LOOSE, id="lu_unpack_wide_method"),
    OpCase("triangular_solve", lambda b, a: L.lu_solve(b, *L.lu(a)), lambda b, a: np.linalg.solve(a, b),
           [rand(3, 2), rand(3, 3)], id="lu_solve"),
    OpCase("triangular_solve", lambda b, a: L.lu_solve(b, *L.lu(a), trans="T"),
           lambda b, a: np.linalg.solve(np.swapaxes(a, -1, -2), b), [rand(2, 3, 1), rand(2, 3, 3)],
           id="lu_solve_transposed"),
    # lstsq: over- and underdetermined, every output, batched
    OpCase("lstsq", lambda a, b: L.lstsq(a, b, driver="gelsd"), lstsq_reference("gelsd"), [rand(5, 3), rand(5, 2)],
           **LOOSE, id="lstsq_tall_gelsd"),
    OpCase("lstsq", L.lstsq, lstsq_reference(), [rand(3, 5), rand(3, 2)], **LOOSE, id="lstsq_wide"),
    OpCase("lstsq", lambda a, b: a.lstsq(b, driver="gels"), lstsq_reference("gels"), [rand(2, 4, 2), rand(2, 4, 3)],
           **LOOSE, id="lstsq_batched_gels"),
    OpCase("lstsq", lambda a, b: L.lstsq(a, b, driver="gelss"), lstsq_reference("gelss"), [rand(4, 4), rand(4, 1)],
           **LOOSE, id="lstsq_square_gelss"),
    # matrix_exp: small norms, and a norm that needs squarings
    OpCase("matrix_exp", L.matrix_exp, expm_reference, [rand(3, 3)], id="matrix_exp"),
    OpCase("matrix_exp", L.matrix_exp, expm_reference, [rand(2, 3, 3) * 4.0], id="matrix_exp_scaled_batched"),
    # cross: Paddle's default axis (the first of size 3), an explicit one, linalg's dim
    OpCase("cross", oar.cross, cross_first_3, [rand(4, 3), rand(4, 3)], id="cross_default_axis"),
    OpCase("cross", lambda a, b: a.cross(b, axis=0), lambda a, b: np.cross(a, b, axis=0), [rand(3, 3), rand(3, 3)],
           id="cross_axis_0"),
    OpCase("cross", lambda a, b: L.cross(a, b, axis=-1), lambda a, b: np.cross(a, b), [rand(3, 3), rand(3, 3)],
           id="linalg_cross"),
    OpCase("cross", oar.cross, cross_first_3, [ints(2, 3, low=-3, high=3), ints(2, 3, low=-3, high=3)], grad=False,
           id="cross_int64"),
    # diagonal, trace, diag_embed, diag, diagflat
    OpCase("diagonal", oar.diagonal, lambda a: np.diagonal(a, 0, 0, 1), [rand(3, 4)], id="diagonal"),
    OpCase("diagonal", lambda a: oar.diagonal(a, offset=1), lambda a: np.diagonal(a, 1), [rand(3, 4)],
           id="diagonal_offset"),
    OpCase("diagonal", lambda a: a.diagonal(offset=-1, axis1=2, axis2=0), lambda a: np.diagonal(a, -1, 2, 0),
           [rand(3, 2, 4)], id="diagonal_axes_reversed"),
    OpCase("diagonal", lambda a: L.diagonal(a, offset=2, axis1=-2, axis2=-1), lambda a: np.diagonal(a, 2, -2, -1),
           [rand(2, 3, 5)], id="linalg_diagonal"),
    OpCase("diagonal", lambda a: oar.diagonal(a, offset=7), lambda a: np.diagonal(a, 7), [rand(3, 4)],
           id="diagonal_empty"),
    OpCase("diagonal", oar.trace, np.trace, [rand(3, 3)], id="trace"),
    OpCase("diagonal", lambda a: a.trace(offset=1, axis1=1, axis2=2), lambda a: np.trace(a, 1, 1, 2), [rand(2, 3, 4)],
           id="trace_method"),
    OpCase("diagonal", oar.trace, np.trace, [ints(3, 3)], grad=False, id="trace_int64"),
    OpCase("diag_embed", oar.diag_embed, embed_reference(), [rand(2, 3)], id="diag_embed"),
    OpCase("diag_embed", lambda v: oar.diag_embed(v, offset=-1, dim1=0, dim2=2), embed_reference(-1, 0, 2),
           [rand(2, 3)], id="diag_embed_offset_dims"),
    OpCase("diag_embed", lambda v: oar.diag_embed(v, offset=1, dim1=-1, dim2=0), embed_reference(1, -1, 0),
           [rand(3)], id="diag_embed_dims_reversed"),
    OpCase("diag_embed", oar.diag, np.diag, [rand(3)], id="diag_vector"),
    OpCase("diag_embed", lambda v: oar.diag(v, offset=1, padding_value=2.0),
           lambda v: np.diag(v, 1) + 2.0 * (1 - np.eye(len(v) + 1, k=1)), [rand(3)], id="diag_padding"),
    OpCase("diagonal", lambda a: oar.diag(a, offset=-1), lambda a: np.diag(a, -1), [rand(3, 3)], id="diag_matrix"),
    OpCase("diag_embed", oar.diagflat, np.diagflat, [rand(2, 2)], id="diagflat"),
    # kron, tensordot
    OpCase("multiply", oar.kron, np.kron, [rand(2, 3), rand(3, 2)], id="kron"),
    OpCase("multiply", lambda a, b: a.kron(b), np.kron, [rand(2), rand(2, 3)], id="kron_ranks_differ"),
    OpCase("multiply", oar.kron, np.kron, [ints(2, 2), ints(2, 2)], grad=False, id="kron_int64"),
    OpCase("matmul", oar.tensordot, np.tensordot, [rand(2, 3, 4), rand(3, 4, 2)], id="tensordot"),
    OpCase("matmul", lambda a, b: a.tensordot(b, axes=[[0, 2], [2, 0]]),
           lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0])), [rand(2, 3, 4), rand(4, 5, 2)],
           id="tensordot_axis_lists"),
    OpCase("matmul", lambda a, b: oar.tensordot(a, b, axes=[1]), lambda a, b: np.tensordot(a, b, axes=([1], [1])),
           [rand(2, 3), rand(4, 3)], id="tensordot_same_axes"),
    OpCase("matmul", lambda a, b: oar.tensordot(a, b, axes=0), lambda a, b: np.tensordot(a, b, axes=0),
           [rand(2), rand(3)], id="tensordot_outer"),
    # norms
    OpCase("svdvals", lambda a: L.matrix_norm(a, p="nuc"), lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)),
           [rand(2, 3, 4)], id="matrix_norm_nuclear"),
    OpCase("svdvals", lambda a: L.norm(a, p=2, axis=[0, 1], keepdim=True),
           lambda a: np.linalg.norm(a, 2, axis=(0, 1), keepdims=True), [rand(3, 4, 2)], id="norm_spectral_keepdim"),
    OpCase("svdvals", lambda a: a.norm(p=-2, axis=[-1, -2]), lambda a: np.linalg.norm(a, -2, axis=(-1, -2)),
           [rand(4, 3)], id="norm_smallest_singular_value_method"),
    OpCase("p_norm", L.matrix_norm, lambda a: np.linalg.norm(a, "fro", axis=(-2, -1)), [rand(2, 3, 4)],
           id="matrix_norm_fro"),
    OpCase("p_norm", lambda a: L.matrix_norm(a, p=1, axis=[1, 0]), lambda a: np.linalg.norm(a, 1, axis=(1, 0)),
           [rand(3, 4)], id="matrix_norm_1"),
    OpCase("p_norm", lambda a: L.vector_norm(a, p=3, axis=[0, 2]), lambda a: np.sum(np.abs(a) ** 3, (0, 2)) ** (1 / 3),
           [rand(2, 3, 4)], id="vector_norm_axes"),
    OpCase("p_norm", lambda a: L.vector_norm(a, p=float("inf"), keepdim=True),
           lambda a: np.max(np.abs(a), keepdims=True), [rand(3, 4)], id="vector_norm_inf"),
    OpCase("p_norm", lambda a: L.norm(a, p=1, axis=1), lambda a: np.linalg.norm(a, 1, axis=1), [rand(3, 4)],
           id="linalg_norm_vector"),
    # cond, pinv, matrix_rank
    OpCase("svdvals", L.cond, np.linalg.cond, [well(3)], id="cond"),
    OpCase("svdvals", lambda a: a.cond(p=-2), lambda a: np.linalg.cond(a, -2), [rand(2, 4, 3)], id="cond_min_method"),
    OpCase("inverse", lambda a: L.cond(a, p="fro"), lambda a: np.linalg.cond(a, "fro"), [well(3)], id="cond_fro"),
    OpCase("inverse", lambda a: L.cond(a, p=float("inf")), lambda a: np.linalg.cond(a, np.inf), [well(2, 3, 3)],
           id="cond_inf_batched"),
    OpCase("svd", L.pinv, np.linalg.pinv, [rand(4, 3)], **LOOSE, id="pinv_tall"),
    OpCase("svd", L.pinv, np.linalg.pinv, [rand(2, 2, 4)], **LOOSE, id="pinv_wide_batched"),
    OpCase("eigh", lambda a: L.pinv(spd(a), hermitian=True), lambda a: np.linalg.pinv(spd_np(a), hermitian=True),
           [rand(3, 3)], **LOOSE, id="pinv_hermitian"),
    OpCase("svdvals", L.matrix_rank, lambda a: np.linalg.matrix_rank(a).astype(np.int64),
           [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])], grad=False, id="matrix_rank"),
    OpCase("svdvals", lambda a: L.matrix_rank(a, tol=0.5), lambda a: np.linalg.matrix_rank(a, tol=0.5).astype(np.int64),
           [np.stack([np.diag([3.0, 1.0, 0.25]), np.eye(3)])], grad=False, id="matrix_rank_tol_batched"),
    OpCase("svdvals", lambda a: L.matrix_rank(a, atol=0.5, rtol=0.1),
           lambda a: np.sum(np.linalg.svd(a, compute_uv=False) > 0.5, -1), [np.diag([6.0, 1.0, 0.4])], grad=False,
           id="matrix_rank_atol_rtol"),
    OpCase("eigvalsh", lambda a: L.matrix_rank(a, hermitian=True),
           lambda a: np.linalg.matrix_rank(a, hermitian=True).astype(np.int64), [np.diag([2.0, -1.0, 0.0])], grad=False,
           id="matrix_rank_hermitian"),
    # matrix_power, multi_dot, vecdot, matrix_transpose
    OpCase("matmul", lambda a: L.matrix_power(a, 5), lambda a: np.linalg.matrix_power(a, 5), [rand(2, 3, 3)],
           id="matrix_power"),
    OpCase("inverse", lambda a: a.matrix_power(-2), lambda a: np.linalg.matrix_power(a, -2), [well(3)],
           id="matrix_power_negative_method"),
    OpCase("matmul", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]),
           [rand(4, 2), rand(2, 5), rand(5, 3)], id="multi_dot"),
    OpCase("matmul", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]),
           [rand(3), rand(3, 4), rand(4)], id="multi_dot_vectors"),
    OpCase("multiply", L.vecdot, lambda a, b: np.sum(a * b, -1), [rand(2, 3), rand(3)], id="vecdot"),
    OpCase("multiply", lambda a, b: L.vecdot(a, b, axis=0), lambda a, b: np.sum(a * b, 0), [rand(2, 3), rand(2, 3)],
           id="vecdot_axis"),
    OpCase("transpose", L.matrix_transpose, lambda a: np.swapaxes(a, -1, -2), [rand(2, 3, 4)], id="matrix_transpose"),
    OpCase("transpose", lambda a: a.matrix_transpose(), lambda a: a.T, [rand(3, 2)], id="matrix_transpose_method"),
    OpCase("multiply", oar.vecdot, lambda a, b: np.sum(a * b, -1), [rand(2, 1, 3), rand(4, 3)], id="vecdot_top_level"),
    # mv, inner, dist, cdist
    OpCase("matmul", oar.mv, np.matmul, [rand(3, 4), rand(4)], id="mv"),
    OpCase("matmul", lambda a, v: a.mv(v), np.matmul, [rand(2, 3), rand(3)], id="mv_method"),
    OpCase("matmul", oar.inner, np.inner, [rand(2, 3), rand(4, 3)], id="inner"),
    OpCase("matmul", lambda a, b: a.inner(b), np.inner, [rand(3), rand(2, 2, 3)], id="inner_method"),
    OpCase("multiply", oar.inner, np.inner, [rand(), rand(2, 3)], id="inner_scalar"),
    OpCase("p_norm", oar.dist, lambda a, b: np.linalg.norm((a - b).ravel()), [rand(2, 3), rand(3)], id="dist"),
    OpCase("p_norm", lambda a, b: a.dist(b, p=float("inf")), lambda a, b: np.max(np.abs(a - b)),
           [rand(2, 3), rand(2, 3)], id="dist_inf_method"),
    OpCase("p_norm", lambda a, b: oar.dist(a, b, p=0), lambda a, b: np.sum(a != b).astype(float),
           [rand(4), rand(4)], grad=False, id="dist_zero"),
    OpCase("p_norm", oar.cdist, lambda a, b: np.sqrt(((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1)),
           [rand(3, 2), rand(4, 2)], id="cdist"),
    OpCase("p_norm", lambda a, b: a.cdist(b, p=1.0),
           lambda a, b: np.abs(a[..., :, None, :] - b[..., None, :, :]).sum(-1),
           [rand(2, 3, 4), rand(2, 2, 4)], id="cdist_p1_batched_method"),
    # solvers on factorizations, Householder products
    OpCase("triangular_solve", lambda b, a: L.cholesky_solve(b, L.cholesky(spd(a))),
           lambda b, a: np.linalg.solve(spd_np(a), b), [rand(3, 2), rand(3, 3)], id="cholesky_solve"),
    OpCase("triangular_solve", lambda b, a: b.cholesky_solve(L.cholesky(spd(a), upper=True), upper=True),
           lambda b, a: np.linalg.solve(spd_np(a), b), [rand(2, 3, 1), rand(2, 3, 3)], id="cholesky_solve_upper"),
    OpCase("triangular_solve", lambda a: L.cholesky_inverse(L.cholesky(spd(a))), lambda a: np.linalg.inv(spd_np(a)),
           [rand(3, 3)], id="cholesky_inverse"),
    OpCase("triangular_solve", lambda a: L.cholesky_inverse(L.cholesky(spd(a), upper=True), upper=True),
           lambda a: np.linalg.inv(spd_np(a)), [rand(2, 2, 2)], id="cholesky_inverse_upper"),
    OpCase("matmul", L.householder_product, lambda x, t: householder_reference(x, t, 3), [rand(4, 3), TAU],
           id="householder_product"),
    OpCase("matmul", lambda x, t: x.householder_product(t[:2]), lambda x, t: householder_reference(x, t[:2], 3),
           [rand(3, 3), TAU], id="householder_product_fewer_reflectors"),
    OpCase("matmul", lambda x, t, y: L.ormqr(x, t, y), lambda x, t, y: householder_reference(x, t) @ y,
           [rand(4, 3), TAU, rand(4, 2)], id="ormqr"),
    OpCase("matmul", lambda x, t, y: L.ormqr(x, t, y, left=False, transpose=True),
           lambda x, t, y: y @ householder_reference(x, t).T, [rand(4, 3), TAU, rand(2, 4)],
           id="ormqr_right_transpose"),
    # cov, corrcoef
    OpCase("matmul", L.cov, np.cov, [rand(3, 5)], id="cov"),
    OpCase("matmul", lambda x: x.cov(rowvar=False, ddof=False), cov_reference(False, False), [rand(5, 2)],
           id="cov_columns_biased_method"),
    OpCase("matmul", L.cov, np.cov, [rand(6)], id="cov_1d"),
    OpCase("matmul", lambda x, f, a: L.cov(x, fweights=f, aweights=a), cov_reference(fweights=True, aweights=True),
           [rand(2, 4), ints(4, low=1, high=4), rand(4, low=0.5, high=2.0)], id="cov_weights"),
    OpCase("matmul", lambda x, f: L.cov(x, ddof=False, fweights=f), cov_reference(ddof=False, fweights=True),
           [rand(2, 4), ints(4, low=1, high=4)], id="cov_fweights_biased"),
    OpCase("diagonal", L.corrcoef, np.corrcoef, [rand(3, 6)], id="corrcoef"),
    OpCase("diagonal", lambda x: x.corrcoef(rowvar=False), lambda x: np.corrcoef(x, rowvar=False), [rand(6, 2)],
           id="corrcoef_columns_method"),
]
