"""``oar.linalg`` as Paddle 3.3.1's ``paddle.linalg``, and its top-level aliases: names and
signatures (read from a real Paddle 3.3.1), Paddle's documented results, errors in the user's
terms, and what the op table does not check (random low-rank SVDs, ``out=``, higher order).

The op table (``tests/core/op_cases/linalg_ext.py``) checks every op against numpy, by finite
differences and under to_static.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

L = oar.linalg

# inspect.signature of Paddle 3.3.1's functions (annotations removed); None where Paddle's is C++.
PADDLE_LINALG = {
    "cholesky": "(x, upper=False, name=None)",
    "cholesky_inverse": "(x, upper=False, name=None)",
    "cholesky_solve": "(x, y, upper=False, name=None)",
    "cond": "(x, p=None, name=None)",
    "corrcoef": "(x, rowvar=True, name=None)",
    "cov": "(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None)",
    "cross": "(x, y, axis=9, name=None)",
    "det": "(x, name=None)",
    "diagonal": None,
    "eig": "(x, name=None)",
    "eigh": "(x, UPLO='L', name=None)",
    "eigvals": "(x, name=None)",
    "eigvalsh": "(x, UPLO='L', name=None)",
    "householder_product": "(x, tau, name=None)",
    "inv": "(x, name=None)",
    "lstsq": "(x, y, rcond=None, driver=None, name=None)",
    "lu": "(x, pivot=True, get_infos=False, name=None)",
    "lu_solve": "(b, lu, pivots, trans='N', name=None)",
    "lu_unpack": "(x, y, unpack_ludata=True, unpack_pivots=True, name=None)",
    "matmul": None,
    "matrix_exp": "(x, name=None)",
    "matrix_norm": "(x, p='fro', axis=[-2, -1], keepdim=False, name=None)",
    "matrix_power": "(x, n, name=None)",
    "matrix_rank": "(x, tol=None, hermitian=False, atol=None, rtol=None, name=None)",
    "matrix_transpose": "(x, name=None)",
    "multi_dot": "(x, name=None)",
    "norm": "(x, p=None, axis=None, keepdim=False, out=None, dtype=None, name=None)",
    "ormqr": "(x, tau, y, left=True, transpose=False, name=None)",
    "pca_lowrank": "(x, q=None, center=True, niter=2, name=None)",
    "pinv": "(x, rcond=1e-15, hermitian=False, name=None)",
    "qr": "(x, mode='reduced', name=None)",
    "slogdet": "(x, name=None)",
    "solve": "(x, y, left=True, name=None, *, out=None)",
    "svd": "(x, full_matrices=False, name=None, *, out=None)",
    "svd_lowrank": "(x, q=None, niter=2, M=None, name=None)",
    "svdvals": "(x, name=None)",
    "triangular_solve": "(x, y, upper=True, transpose=False, unitriangular=False, name=None)",
    "vecdot": "(x, y, axis=-1, name=None)",
    "vector_norm": "(x, p=2.0, axis=None, keepdim=False, name=None, *, dtype=None, out=None)",
}
NOT_PROVIDED = {"fp8_fp8_half_gemm_fused"}  # a float8 GPU kernel: oar has no float8 dtype
PADDLE_TOP_LEVEL = {
    "cross": "(x, y, axis=9, name=None)",
    "trace": "(x, offset=0, axis1=0, axis2=1, name=None)",
    "kron": "(x, y, name=None)",
    "tensordot": "(x, y, axes=2, name=None)",
    "diag": "(x, offset=0, padding_value=0, name=None)",
    "diagonal": "(x, offset=0, axis1=0, axis2=1, name=None)",
    "diag_embed": "(input, offset=0, dim1=-2, dim2=-1)",
    "diagflat": "(x, offset=0, name=None)",
    "vecdot": "(x, y, axis=-1, name=None)",
    "matrix_transpose": "(x, name=None)",
    "mv": "(x, vec, name=None)",
    "dist": "(x, y, p=2, name=None)",
    "cdist": "(x, y, p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary', name=None)",
    "inner": "(x, y, name=None)",
}
# Paddle 3.3.1's Tensor methods of this family, which take the tensor as x.
PADDLE_TENSOR_METHODS = [
    "norm", "inverse", "cross", "trace", "kron", "tensordot", "diag", "diagonal", "diag_embed", "diagflat", "cholesky",
    "cholesky_solve", "cholesky_inverse", "cond", "cov", "corrcoef", "slogdet", "qr", "eig", "eigvals", "eigvalsh",
    "lstsq", "lu", "lu_unpack", "pinv", "solve", "matrix_power", "multi_dot", "householder_product",
    "matrix_transpose", "mv", "dist", "cdist", "inner", "svd_lowrank", "pca_lowrank", "ormqr",
]


def signature(fn) -> str:
    return str(inspect.signature(fn).replace(return_annotation=inspect.Signature.empty))


def t(values, dtype="float64", grad=False):
    return oar.to_tensor(np.asarray(values, dtype=dtype), stop_gradient=not grad)


# -- names and signatures -------------------------------------------------------------------------
def test_the_namespace_has_paddles_names_and_only_those():
    assert set(L.__all__) == set(PADDLE_LINALG)
    public = {name for name in dir(L) if not name.startswith("_") and name.isidentifier()}  # (pytest's rewriting)
    assert public == set(PADDLE_LINALG), f"oar.linalg shows more than its API: {sorted(public - set(PADDLE_LINALG))}"
    assert not NOT_PROVIDED & public


@pytest.mark.parametrize("name", sorted(n for n, s in PADDLE_LINALG.items() if s is not None))
def test_linalg_signatures_are_paddles(name):
    assert signature(getattr(L, name)) == PADDLE_LINALG[name]


@pytest.mark.parametrize("name", sorted(PADDLE_TOP_LEVEL))
def test_top_level_aliases_have_paddles_signatures(name):
    assert signature(getattr(oar, name)) == PADDLE_TOP_LEVEL[name]


def test_linalg_reaches_the_same_functions_as_the_top_level():
    assert L.diagonal is oar.diagonal and L.cross is oar.cross and L.norm is oar.norm and L.matmul is oar.matmul
    assert oar.inverse(t([[2.0]])).tolist() == L.inv(t([[2.0]])).tolist() == [[0.5]]


@pytest.mark.parametrize("name", PADDLE_TENSOR_METHODS)
def test_tensor_methods_are_bound(name):
    assert getattr(oar.Tensor, name) is (getattr(L, name, None) or getattr(oar, name))


# -- Paddle's documented results ----------------------------------------------------------------
def test_lstsq_matches_paddles_example():
    x = t([[1, 3], [3, 2], [5, 6.0]], "float32")
    y = t([[3, 4, 6], [5, 3, 4], [1, 2, 1.0]], "float32")
    solution, residuals, rank, values = L.lstsq(x, y, driver="gelsd")
    np.testing.assert_allclose(solution.numpy(), [[0.78350395, -0.22165027, -0.62371236],
                                                  [-0.11340097, 0.78866047, 1.14948535]], rtol=1e-5)
    np.testing.assert_allclose(residuals.numpy(), [19.81443405, 10.43814468, 30.56185532], rtol=1e-5)
    assert rank.dtype == oar.int32 and rank.shape == [] and int(rank) == 2
    np.testing.assert_allclose(values.numpy(), [9.03455734, 1.54167950], rtol=1e-5)


def test_lstsq_leaves_what_the_driver_does_not_compute_empty():
    x, y = t(np.random.default_rng(0).normal(size=(3, 5))), t(np.ones((3, 2)))
    solution, residuals, rank, values = L.lstsq(x, y)  # gelsy, wide: no residuals, no singular values
    assert solution.shape == [5, 2] and residuals.shape == [0] and rank.shape == [] and values.shape == [0]
    _, _, rank, _ = L.lstsq(x, y, driver="gels")
    assert rank.shape == [0]


def test_lu_matches_paddles_example_and_unpacks():
    x = t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    lu, pivots, infos = L.lu(x, get_infos=True)
    np.testing.assert_allclose(lu.numpy(), [[5.0, 6.0], [0.2, 0.8], [0.6, 0.5]], atol=1e-12)
    assert pivots.dtype == oar.int32 and pivots.tolist() == [3, 3]
    assert infos.dtype == oar.int32 and infos.shape == [] and int(infos) == 0
    p, lower, upper = L.lu_unpack(lu, pivots)
    np.testing.assert_allclose((p @ lower @ upper).numpy(), x.numpy(), atol=1e-12)
    assert L.lu_unpack(lu, pivots, unpack_ludata=False)[1:] == (None, None)
    assert L.lu_unpack(lu, pivots, unpack_pivots=False)[0] is None


def test_lu_reports_a_singular_matrix_in_infos():
    _, _, infos = L.lu(t([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]]), get_infos=True)
    assert infos.tolist() == [2, 0]


def test_lu_solve_matches_paddles_example():
    a, b = t([[3, 1], [1, 2.0]]), t([[9, 8], [9, 8.0]])
    np.testing.assert_allclose(L.lu_solve(b, *L.lu(a)).numpy(), [[1.8, 1.6], [3.6, 3.2]], rtol=1e-12)


def test_svdvals_and_solve_match_paddles_examples():
    np.testing.assert_allclose(L.svdvals(t([[1.0, 2.0], [1.0, 3.0], [4.0, 6.0]])).numpy(), [8.14753819, 0.78589684],
                               rtol=1e-7)
    assert L.solve(t([[3, 1], [1, 2.0]]), t([9, 8.0])).tolist() == pytest.approx([2.0, 3.0])


def test_slogdet_stacks_sign_and_log_as_paddle():
    x = np.random.default_rng(1).normal(size=(3, 3, 3))
    out = L.slogdet(t(x))
    sign, logabs = np.linalg.slogdet(x)
    assert out.shape == [2, 3]
    np.testing.assert_allclose(out.numpy(), np.stack([sign, logabs]), rtol=1e-12)
    assert L.slogdet(t([[0.0, 0.0], [0.0, 1.0]])).tolist() == [0.0, -np.inf]


def test_matrix_rank_matches_paddles_examples():
    rank = L.matrix_rank(oar.eye(10))
    assert rank.dtype == oar.int64 and int(rank) == 10
    assert L.matrix_rank(oar.ones([3, 4, 5, 5]), tol=0.01, hermitian=True).tolist() == [[1] * 4] * 3


def test_matrix_rank_tolerances():
    x = t(np.diag([10.0, 1.0, 1e-3]))
    assert int(L.matrix_rank(x)) == 3
    assert int(L.matrix_rank(x, atol=0.5)) == 2  # a positive atol alone: rtol is 0
    assert int(L.matrix_rank(x, rtol=0.2)) == 1
    assert int(L.matrix_rank(x, atol=t(2e-3), rtol=t(1e-5))) == 2
    assert int(L.matrix_rank(x, atol=t(0.5))) == 2 and int(L.matrix_rank(x, atol=t(0.0))) == 3
    assert L.matrix_rank(t(np.stack([np.diag([10.0, 1.0, 1e-3])] * 2)), tol=t([0.5, 1e-4])).tolist() == [2, 3]
    with pytest.raises(ArgumentError, match="matrix_rank: give tol alone"):
        L.matrix_rank(x, tol=1.0, atol=1.0)


def test_cov_and_corrcoef_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 7))
    f, a = rng.integers(1, 5, size=7), rng.uniform(0.5, 2, size=7)
    np.testing.assert_allclose(L.cov(t(x), fweights=oar.to_tensor(f), aweights=t(a)).numpy(),
                               np.cov(x, fweights=f, aweights=a), rtol=1e-12)
    np.testing.assert_allclose(L.corrcoef(t(x.T), rowvar=False).numpy(), np.corrcoef(x), rtol=1e-12)
    assert L.cov(t(x[0])).shape == [] and float(L.corrcoef(t(x[0]))) == 1.0


def test_cov_refuses_float_frequency_weights():
    with pytest.raises(DTypeError, match="cov: fweights must be an integer tensor"):
        L.cov(oar.ones([2, 3]), fweights=oar.ones([3]))


def test_householder_product_and_ormqr_rebuild_numpys_qr():
    a = np.random.default_rng(3).normal(size=(5, 3))
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's reflectors (h is transposed, Fortran order)
    q = L.householder_product(t(h.T), t(tau))
    q_np, _ = np.linalg.qr(a)
    np.testing.assert_allclose(q.numpy(), q_np, atol=1e-12)
    y = np.random.default_rng(4).normal(size=(5, 2))
    full_q = np.linalg.qr(a, mode="complete")[0]
    np.testing.assert_allclose(L.ormqr(t(h.T), t(tau), t(y), transpose=True).numpy(), full_q.T @ y, atol=1e-12)


def test_low_rank_svd_and_pca_recover_a_low_rank_matrix():
    oar.seed(5)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(30, 2)) @ rng.normal(size=(2, 8))
    u, s, v = L.svd_lowrank(t(x), q=4)
    assert u.shape == [30, 4] and s.shape == [4] and v.shape == [8, 4]
    np.testing.assert_allclose((u * s @ v.T).numpy(), x, atol=1e-9)
    np.testing.assert_allclose(s.numpy()[:2], np.linalg.svd(x, compute_uv=False)[:2], rtol=1e-9)
    wide_u, _, wide_v = L.svd_lowrank(t(x.T), q=3)
    assert wide_u.shape == [8, 3] and wide_v.shape == [30, 3]
    u, s, v = L.pca_lowrank(t(x), q=2)
    centered = x - x.mean(axis=0)
    np.testing.assert_allclose((u * s @ v.T).numpy(), centered, atol=1e-9)
    mean = t(x.mean(axis=0, keepdims=True))
    u, s, v = L.svd_lowrank(t(x), q=3, M=mean)
    np.testing.assert_allclose((u * s @ v.T).numpy(), centered, atol=1e-9)


def test_pinv_is_a_pseudo_inverse():
    x = np.arange(15.0).reshape(3, 5)  # rank 2: Paddle's example
    out = L.pinv(t(x)).numpy()
    np.testing.assert_allclose(out, np.linalg.pinv(x), atol=1e-12)
    np.testing.assert_allclose(x @ out @ x, x, atol=1e-10)


def test_matrix_power_zero_and_multi_dot_order():
    x = t(np.random.default_rng(6).normal(size=(2, 3, 3)))
    assert L.matrix_power(x, 0).tolist() == [np.eye(3).tolist()] * 2
    a, b, c = (np.random.default_rng(7).normal(size=s) for s in [(10, 100), (100, 5), (5, 50)])
    np.testing.assert_allclose(L.multi_dot([t(a), t(b), t(c)]).numpy(), a @ b @ c, rtol=1e-10)


def test_cond_and_matrix_norm_match_numpy():
    x = np.random.default_rng(8).normal(size=(2, 4, 4))
    for p in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        np.testing.assert_allclose(L.cond(t(x), p).numpy(), np.linalg.cond(x, p), rtol=1e-9, err_msg=str(p))
    for p in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        np.testing.assert_allclose(L.matrix_norm(t(x), p).numpy(), np.linalg.norm(x, p, axis=(-2, -1)), rtol=1e-9,
                                   err_msg=str(p))


def test_the_top_level_norm_takes_singular_value_norms_too():
    x = np.random.default_rng(9).normal(size=(3, 4))
    assert float(oar.norm(t(x), p="nuc", axis=[0, 1])) == pytest.approx(np.linalg.norm(x, "nuc"))
    assert float(t(x).norm(p=2, axis=[0, 1])) == pytest.approx(np.linalg.norm(x, 2))


def test_out_and_dtype_arguments():
    x = t([[3.0, 0.0], [0.0, 4.0]])
    out = oar.zeros([])
    assert L.norm(x, out=out) is out and float(out) == 5.0
    assert L.vector_norm(x, dtype="float32").dtype == oar.float32
    solved = oar.zeros([2, 1], "float64")
    assert L.solve(x, t([[3.0], [4.0]]), out=solved) is solved and solved.tolist() == [[1.0], [1.0]]
    parts = (oar.zeros([2, 2], "float64"), oar.zeros([2], "float64"), oar.zeros([2, 2], "float64"))
    assert L.svd(x, out=parts) == parts and parts[1].tolist() == [4.0, 3.0]


def test_cross_default_axis_diag_padding_and_trace():
    a, b = np.random.default_rng(10).normal(size=(2, 4, 3))
    np.testing.assert_allclose(oar.cross(t(a), t(b)).numpy(), np.cross(a, b), rtol=1e-12)
    assert oar.diag(oar.to_tensor([1, 2, 3]), offset=1, padding_value=6).tolist() == [
        [6, 1, 6, 6], [6, 6, 2, 6], [6, 6, 6, 3], [6, 6, 6, 6]]
    assert int(oar.to_tensor([[1, 2], [3, 4]]).trace()) == 5
    assert oar.diag_embed(oar.to_tensor([[1, 2]]), offset=1).tolist() == [[[0, 1, 0], [0, 0, 2], [0, 0, 0]]]


def test_empty_batches():
    assert oar.inverse(oar.zeros([0, 3, 3])).shape == [0, 3, 3]
    assert L.det(oar.zeros([0, 2, 2])).shape == [0]
    assert L.svdvals(oar.zeros([0, 2, 3])).shape == [0, 2]


def test_float16_computes_in_float32_and_comes_back():
    x = oar.to_tensor([[2.0, 1.0], [1.0, 3.0]], dtype="float16")
    out = oar.inverse(x)
    assert out.dtype == oar.float16
    np.testing.assert_allclose(out.numpy().astype(np.float64), np.linalg.inv(x.numpy().astype(np.float64)), rtol=2e-3)


# -- gradients beyond the op table ----------------------------------------------------------------
def _numeric_grad(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        out[i] = (f(plus) - f(minus)) / (2 * eps)
    return out


@pytest.mark.parametrize("name, fn", [
    ("inverse", lambda a: oar.inverse(a).sum()),
    ("det", lambda a: L.det(a)),
    ("matrix_exp", lambda a: (L.matrix_exp(a) * L.matrix_exp(a)).sum()),
    ("svdvals", lambda a: L.svdvals(a).sum()),
    ("solve", lambda a: L.solve(a, a).sum() + L.solve(a, oar.ones([3, 1], "float64")).sum()),
])
def test_second_derivatives_match_finite_differences(name, fn):
    """The gradient rules are written with oar ops: their gradients are right too."""
    x0 = np.random.default_rng(11).normal(size=(3, 3)) + 3 * np.eye(3)
    direction = t(np.random.default_rng(12).normal(size=(3, 3)))

    def directional_gradient(x):
        (g,) = oar.grad(fn(x), x, create_graph=True)
        return (g * direction).sum()

    x = t(x0, grad=True)
    (hessian_times_direction,) = oar.grad(directional_gradient(x), x)
    expected = _numeric_grad(lambda v: float(directional_gradient(t(v, grad=True))), x0)
    np.testing.assert_allclose(hessian_times_direction.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_lstsq_gradients_reach_x_and_y():
    rng = np.random.default_rng(13)
    x0, y0 = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))

    def loss(x, y):
        solution, residuals, _, values = L.lstsq(x, y, driver="gelsd")
        return (solution * solution).sum() + residuals.sum() + values.sum()

    x, y = t(x0, grad=True), t(y0, grad=True)
    loss(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(lambda v: float(loss(t(v), t(y0))), x0), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(y.grad.numpy(), _numeric_grad(lambda v: float(loss(t(x0), t(v))), y0), rtol=1e-5,
                               atol=1e-7)


def test_gradients_that_are_not_unique_are_refused():
    x = t(np.random.default_rng(14).normal(size=(4, 2)), grad=True)
    q, _ = L.qr(x, mode="complete")
    with pytest.raises(GradientError, match=r"qr: the gradient of mode='complete' is not defined for a tall matrix"):
        q.sum().backward()
    u, _, _ = L.svd(x, full_matrices=True)
    with pytest.raises(GradientError, match=r"svd: the gradient of full_matrices=True is not defined for a 4 x 2"):
        u.sum().backward()


# -- errors in the user's terms -------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: L.inv(oar.ones([3, 4])), ShapeError,
     r"^inv: x must be a square matrix \(or a batch of them\) \[\.\.\., n, n\], got \[3, 4\]$"),
    (lambda: oar.inverse(oar.ones([3])), ShapeError, r"^inverse: x must be a square matrix .* got \[3\]$"),
    (lambda: L.det(oar.ones([2, 2], "int64")), DTypeError, r"^det: x must be a float tensor .* got int64"),
    (lambda: oar.inverse(oar.zeros([2, 2])), ArgumentError, r"^inverse: x is singular"),
    (lambda: L.solve(oar.ones([2, 2]) + oar.eye(2), oar.ones([3, 1])), ShapeError,
     r"^solve: x \[2, 2\] and y \[3, 1\]: y must have as many rows as x \(3 vs 2\)$"),
    (lambda: L.solve(oar.ones([2, 2, 2]), oar.ones([3, 2, 1])), ShapeError,
     r"^solve: cannot broadcast x batch dims \[2\] with y batch dims \[3\]"),
    (lambda: L.solve(oar.ones([2, 2]), oar.ones([2, 1], "float64")), DTypeError,
     r"solve: .*float32.*float64"),
    (lambda: L.cholesky(-oar.eye(2)), ArgumentError, r"^cholesky: x is not symmetric positive definite"),
    (lambda: L.eig(oar.to_tensor([[0.0, -1.0], [1.0, 0.0]])), ArgumentError,
     r"^eig: x has complex eigenvalues, and oar.s eig returns real ones only"),
    (lambda: L.eigh(oar.eye(2), UPLO="X"), ArgumentError, r"^eigh: UPLO must be 'L' or 'U', got 'X'$"),
    (lambda: L.qr(oar.eye(2), mode="full"), ArgumentError, r"^qr: mode must be 'reduced', 'complete' or 'r'"),
    (lambda: L.lstsq(oar.ones([3, 2]), oar.ones([3, 1]), driver="lapack"), ArgumentError,
     r"^lstsq: driver must be one of \['gels', 'gelsy', 'gelsd', 'gelss'\] or None, got 'lapack'$"),
    (lambda: L.lstsq(oar.ones([3, 2]), oar.ones([4, 1])), ShapeError,
     r"^lstsq: x \[3, 2\] and y \[4, 1\]: y must have as many rows as x \(4 vs 3\)$"),
    (lambda: L.lu_unpack(oar.eye(2), oar.to_tensor([3, 3], dtype="int32")), ArgumentError,
     r"^lu_unpack: the pivots must lie in 1\.\.2"),
    (lambda: L.lu_unpack(oar.eye(2), oar.ones([2])), DTypeError, r"^lu_unpack: y \(the pivots\) must be an integer"),
    (lambda: oar.cross(oar.ones([2, 4]), oar.ones([2, 4])), ShapeError, r"^cross: x \[2, 4\] has no axis of size 3"),
    (lambda: oar.cross(oar.ones([3, 4]), oar.ones([3, 4]), axis=1), ShapeError,
     r"^cross: x \[3, 4\] has 4 elements along axis 1; the cross product needs 3$"),
    (lambda: oar.cross(oar.ones([3]), oar.ones([3, 1])), ShapeError, r"^cross: x \[3\] and y \[3, 1\] must have the"),
    (lambda: oar.diagonal(oar.ones([3])), ShapeError, r"^diagonal: x must have at least 2 dimensions, got shape \[3\]"),
    (lambda: oar.diagonal(oar.ones([3, 3]), axis1=1, axis2=-1), ArgumentError,
     r"^diagonal: axis1 and axis2 must differ"),
    (lambda: oar.diag(oar.ones([2, 2, 2])), ShapeError, r"^diag: x must be 1-d .* or 2-d .*, got shape \[2, 2, 2\]"),
    (lambda: oar.tensordot(oar.ones([2, 3]), oar.ones([4, 3])), ShapeError,
     r"^tensordot: x \[2, 3\] axis 0 and y \[4, 3\] axis 0 differ in size \(2 vs 4\)$"),
    (lambda: oar.tensordot(oar.ones([2]), oar.ones([2]), axes=3), ArgumentError,
     r"^tensordot: axes=3 must lie in 0\.\.1"),
    (lambda: L.matrix_norm(oar.ones([2, 2]), p=3), ArgumentError, r"^matrix_norm: p must be 'fro', 'nuc', 1, -1, 2"),
    (lambda: L.matrix_power(oar.eye(2), 1.5), ArgumentError, r"^matrix_power: n must be an int, got float$"),
    (lambda: L.multi_dot([oar.ones([2, 3]), oar.ones([2, 3])]), ShapeError,
     r"^multi_dot: x\[0\] \[2, 3\] and x\[1\] \[2, 3\] cannot be multiplied$"),
    (lambda: L.multi_dot([oar.ones([2, 3])]), ArgumentError, r"^multi_dot: x must be a list of at least two tensors$"),
    (lambda: L.householder_product(oar.ones([2, 3]), oar.ones([2])), ShapeError,
     r"^householder_product: x must have at least as many rows as columns, got \[2, 3\]$"),
    (lambda: L.householder_product(oar.ones([3, 2]), oar.ones([3])), ShapeError,
     r"^householder_product: tau \[3\] must be \[\.\.\., k\] with the batch dims of x \[3, 2\] and k <= min"),
    (lambda: L.cov(oar.ones([2, 2, 2])), ShapeError, r"^cov: x must be 1-d or 2-d, got shape \[2, 2, 2\]$"),
    (lambda: L.pca_lowrank(oar.ones([4, 3]), q=5), ArgumentError, r"^pca_lowrank: q must be an int in 0\.\.3"),
    (lambda: oar.cdist(oar.ones([3, 2]), oar.ones([3, 2]), compute_mode="fast"), ArgumentError,
     r"^cdist: compute_mode must be one of"),
    (lambda: oar.mv(oar.ones([2, 2]), oar.ones([2, 1])), ShapeError, r"^mv: x must be 2-d and vec 1-d"),
    (lambda: L.lu_solve(oar.ones([3, 1]), *L.lu(oar.eye(3)), trans="H"), ArgumentError,
     r"^lu_solve: trans must be 'N', 'T' or 'C', got 'H'$"),
])
def test_errors_name_the_function_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()
