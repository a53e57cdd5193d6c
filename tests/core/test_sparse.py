"""oar.sparse: COO and CSR tensors against dense numpy references, values recorded from Paddle
3.3.1 (said where), gradients by finite differences, and the errors."""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient, sum_tolerance

sparse = oar.sparse
F32 = TOLERANCES["float32"]


def random_dense(shape, density=0.4, seed=0, dtype="float64"):
    """A dense array with about ``density`` of its entries nonzero (none of them near zero)."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return np.where(rng.random(shape) < density, values, 0.0).astype(dtype)


def coo_of(dense: np.ndarray, stop_gradient=True):
    indices = np.array(np.nonzero(dense))
    return sparse.sparse_coo_tensor(indices, dense[tuple(indices)], dense.shape, stop_gradient=stop_gradient)


def as_format(dense: np.ndarray, fmt: str, stop_gradient=True):
    coo = coo_of(dense, stop_gradient)
    return coo if fmt == "coo" else coo.to_sparse_csr()


def structure(x):
    if x.is_sparse_coo():
        return x.indices().numpy().tolist(), x.values().numpy().tolist()
    return x.crows().numpy().tolist(), x.cols().numpy().tolist(), x.values().numpy().tolist()


# --- construction and conversion ------------------------------------------------------------------

def test_coo_tensor_holds_its_parts_and_densifies():
    x = sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    assert x.is_sparse() and x.is_sparse_coo() and not x.is_sparse_csr()
    assert x.shape == [3, 3] and x.dtype == oar.float32 and x.nnz() == 3 and x.stop_gradient
    assert x.indices().dtype == oar.int64 and x.sparse_dim() == 2 and x.dense_dim() == 0
    np.testing.assert_array_equal(x.to_dense().numpy(), [[0, 1, 0], [0, 0, 2], [3, 0, 0]])
    assert sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0]).shape == [3, 3]  # inferred
    assert sparse.sparse_coo_tensor(np.array([[0, 1]]), np.array([1.0, 2.0]), [2]).dtype == oar.float64
    assert sparse.sparse_coo_tensor([[0]], [1], [2]).dtype == oar.int64
    assert sparse.sparse_coo_tensor([[0]], [1], [2], dtype="float32").dtype == oar.float32


def test_hybrid_coo_has_dense_dims():
    # Paddle 3.3.1: indices [[0, 2]], values [[1, 2], [3, 4]], shape [3, 2] densifies to this
    x = sparse.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], [3, 2])
    assert x.sparse_dim() == 1 and x.dense_dim() == 1 and x.nnz() == 2
    np.testing.assert_array_equal(x.to_dense().numpy(), [[1, 2], [0, 0], [3, 4]])


def test_to_dense_sums_repeated_indices_and_coalesce_sorts():
    x = sparse.sparse_coo_tensor([[2, 0, 2], [0, 1, 0]], [1.0, 2.0, 3.0], [3, 3])
    np.testing.assert_array_equal(x.to_dense().numpy(), [[0, 2, 0], [0, 0, 0], [4, 0, 0]])  # Paddle keeps 3
    assert not x.is_coalesced()
    y = sparse.coalesce(x)
    assert y.is_coalesced() and structure(y) == ([[0, 2], [1, 0]], [2.0, 4.0])  # Paddle 3.3.1's


def test_csr_tensor_2d_3d_and_round_trips():
    x = sparse.sparse_csr_tensor([0, 1, 2, 3], [1, 2, 0], [1.0, 2.0, 3.0], [3, 3])
    assert x.is_sparse_csr() and x.nnz() == 3 and x.shape == [3, 3]
    np.testing.assert_array_equal(x.to_dense().numpy(), [[0, 1, 0], [0, 0, 2], [3, 0, 0]])
    assert sparse.sparse_csr_tensor([0, 1, 2, 3], [1, 2, 0], [1.0, 2.0, 3.0]).shape == [3, 3]
    assert structure(x.to_sparse_coo()) == ([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0])
    dense = random_dense([2, 3, 4], seed=1)
    batched = sparse.to_sparse_csr(oar.to_tensor(dense))
    assert batched.crows().shape == [2 * 4]
    np.testing.assert_array_equal(batched.to_dense().numpy(), dense)
    np.testing.assert_array_equal(batched.to_sparse_coo().to_sparse_csr().to_dense().numpy(), dense)


def test_dense_to_sparse_conversions_match_paddle():
    d = oar.to_tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    # Paddle 3.3.1: d.to_sparse_coo(2), d.to_sparse_csr(), d.to_sparse_coo(1)
    assert structure(sparse.to_sparse_coo(d, 2)) == ([[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0])
    assert structure(sparse.to_sparse_csr(d)) == ([0, 1, 3], [1, 0, 2], [1.0, 2.0, 3.0])
    assert structure(sparse.to_sparse_coo(d, 1)) == ([[0, 1]], [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    x = sparse.to_sparse_coo(d, 2)
    assert x.to_sparse_coo(1).sparse_dim() == 1 and x.to_sparse_csr().to_sparse_coo(2).nnz() == 3


def test_grad_is_sparse_of_the_same_structure():
    x = sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2], stop_gradient=False)
    assert x.grad is None
    oar.sum(x.to_dense() * oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])).backward()
    assert x.grad.is_sparse_coo() and structure(x.grad) == ([[0, 1], [1, 0]], [2.0, 3.0])


# --- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("build, error, words", [
    (lambda: sparse.sparse_coo_tensor([[5], [0]], [1.0], [3, 3]), IndexOutOfRangeError, "indices[0] holds 5"),
    (lambda: sparse.sparse_coo_tensor([[-1], [0]], [1.0], [3, 3]), IndexOutOfRangeError, "holds -1"),
    (lambda: sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], [3]), ShapeError, "same number of entries"),
    (lambda: sparse.sparse_coo_tensor([0, 1], [1.0, 2.0], [3]), ShapeError, "must be 2-D"),
    (lambda: sparse.sparse_coo_tensor([[0.5]], [1.0], [3]), DTypeError, "integers"),
    (lambda: sparse.sparse_coo_tensor([[0]], [1.0], [3, 3]), ShapeError, "does not fit"),
    (lambda: sparse.sparse_csr_tensor([0, 2, 1, 3], [1, 2, 0], [1.0, 2.0, 3.0], [3, 3]), ArgumentError,
     "never decrease"),
    (lambda: sparse.sparse_csr_tensor([1, 2, 3, 3], [1, 2, 0], [1.0, 2.0, 3.0], [3, 3]), ArgumentError, "start"),
    (lambda: sparse.sparse_csr_tensor([0, 1, 2, 3], [1, 5, 0], [1.0, 2.0, 3.0], [3, 3]), IndexOutOfRangeError,
     "cols holds 5"),
    (lambda: sparse.sparse_csr_tensor([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0], [2, 3]), ShapeError, "crows end"),
    (lambda: sparse.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0], [3, 3]), ShapeError, "rows + 1"),
    (lambda: sparse.to_sparse_csr(oar.ones([4])), ShapeError, "2-D or 3-D"),
])
def test_construction_errors(build, error, words):
    with pytest.raises(error, match=re.escape(words)):
        build()


def test_operand_errors():
    x = sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(ShapeError, match=r"add: x \[2, 2\].*y \[3\]"):
        sparse.add(x, sparse.sparse_coo_tensor([[0]], [1.0], [3]))
    with pytest.raises(ArgumentError, match="both be COO or both be CSR"):
        sparse.multiply(x, x.to_sparse_csr())
    with pytest.raises(ArgumentError, match="to_dense"):
        sparse.add(x, oar.ones([2, 2]))
    with pytest.raises(ShapeError, match=r"matmul: x \[2, 2\] and y \[3, 1\]"):
        sparse.matmul(x, oar.ones([3, 1]))
    with pytest.raises(ShapeError, match="mv"):
        sparse.mv(x, oar.ones([3]))
    with pytest.raises(ArgumentError, match="coalesce: x must be a COO"):
        sparse.coalesce(x.to_sparse_csr())
    with pytest.raises(ArgumentError, match="sum: a CSR tensor sums along axis -1"):
        sparse.sum(x.to_sparse_csr(), axis=0)
    with pytest.raises(ShapeError, match="cannot reshape"):
        sparse.reshape(x, [3])
    with pytest.raises(ArgumentError, match="permutation"):
        sparse.transpose(x, [0, 0])
    with pytest.raises(ArgumentError, match="dense dim"):
        sparse.transpose(sparse.sparse_coo_tensor([[0]], [[1.0, 2.0]], [1, 2]), [1, 0])
    with pytest.raises(DTypeError, match="index_dtype"):
        sparse.cast(x, "float32")
    with pytest.raises(ArgumentError, match="must be a sparse"):
        sparse.sin(oar.ones([2]))


# --- unary functions ------------------------------------------------------------------------------

UNARY = {
    "abs": np.abs, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh,
    "deg2rad": np.deg2rad, "expm1": np.expm1, "log1p": np.log1p, "neg": np.negative, "rad2deg": np.rad2deg,
    "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "square": np.square, "tan": np.tan, "tanh": np.tanh,
}


@pytest.mark.parametrize("fmt", ["coo", "csr"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_map_the_values(name, fmt):
    dense = np.abs(random_dense([3, 4], seed=2)) * 0.4  # in every function's domain
    out = getattr(sparse, name)(as_format(dense, fmt))
    assert out.is_sparse_csr() == (fmt == "csr") and out.nnz() == np.count_nonzero(dense)
    np.testing.assert_allclose(out.to_dense().numpy(), UNARY[name](dense), *TOLERANCES["float64"])


def test_pow_cast_isnan():
    x = sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    assert structure(sparse.pow(x, 2)) == ([[0, 1, 2], [1, 2, 0]], [1.0, 4.0, 9.0])  # Paddle 3.3.1's
    y = sparse.cast(x, "int32", "float64")
    assert y.indices().dtype == oar.int32 and y.dtype == oar.float64
    assert sparse.cast(x.to_sparse_csr(), "int32").crows().dtype == oar.int32
    nan = sparse.sparse_coo_tensor([[0, 2]], [np.nan, 1.0], [3])
    assert sparse.isnan(nan).values().numpy().tolist() == [True, False]


# --- elementwise binary functions -----------------------------------------------------------------

def test_binary_functions_match_paddle():
    x = sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    y = sparse.sparse_coo_tensor([[0, 1], [1, 1]], [4.0, 5.0], [3, 3])
    union = [[0, 1, 1, 2], [1, 1, 2, 0]]  # Paddle 3.3.1's results on the union of the entries
    assert structure(sparse.add(x, y)) == (union, [5.0, 5.0, 2.0, 3.0])
    assert structure(sparse.subtract(x, y)) == (union, [-3.0, -5.0, 2.0, 3.0])
    assert structure(sparse.multiply(x, y)) == (union, [4.0, 0.0, 0.0, 0.0])
    assert structure(sparse.multiply(x.to_sparse_csr(), y.to_sparse_csr())) == (
        [0, 1, 3, 4], [1, 1, 2, 0], [4.0, 0.0, 0.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 and 1 / 0, as a dense divide
        quotient = sparse.divide(x, y)  # Paddle 3.3.1 stores every entry, 0 / 0 = nan
    assert quotient.nnz() == 9
    np.testing.assert_array_equal(quotient.values().numpy(),
                                  [np.nan, 0.25, np.nan, np.nan, 0.0, np.inf, np.inf, np.nan, np.nan])
    assert structure(sparse.multiply(x, 2.0))[1] == [2.0, 4.0, 6.0]
    assert structure(sparse.divide(x, 2.0))[1] == [0.5, 1.0, 1.5]


@pytest.mark.parametrize("fmt", ["coo", "csr"])
@pytest.mark.parametrize("name, reference", [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply)])
def test_binary_functions_against_dense(name, reference, fmt):
    a, b = random_dense([2, 3, 4], seed=3), random_dense([2, 3, 4], seed=4)
    out = getattr(sparse, name)(as_format(a, fmt), as_format(b, fmt))
    np.testing.assert_allclose(out.to_dense().numpy(), reference(a, b), *TOLERANCES["float64"])
    assert out.nnz() == np.count_nonzero((a != 0) | (b != 0))


def test_binary_functions_sum_repeated_indices_first():
    x = sparse.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], [2])
    y = sparse.sparse_coo_tensor([[1]], [10.0], [2])
    assert structure(sparse.multiply(x, y)) == ([[0, 1]], [0.0, 40.0])


# --- products -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["coo", "csr"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_matmul_sparse_dense(fmt, batch):
    a, b = random_dense([*batch, 4, 5], seed=5), np.random.default_rng(6).standard_normal([*batch, 5, 3])
    out = sparse.matmul(as_format(a, fmt), oar.to_tensor(b))
    assert not isinstance(out, sparse.SparseTensor)
    np.testing.assert_allclose(out.numpy(), a @ b, *sum_tolerance("float64", 5, np.abs(a @ b).max()))


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_matmul_sparse_sparse_keeps_structural_entries(fmt):
    a, b = random_dense([2, 4, 5], seed=7), random_dense([2, 5, 3], seed=8)
    out = sparse.matmul(as_format(a, fmt), as_format(b, fmt))
    assert out.is_sparse_csr() == (fmt == "csr")
    np.testing.assert_allclose(out.to_dense().numpy(), a @ b, *sum_tolerance("float64", 5, np.abs(a @ b).max()))
    assert out.nnz() == np.count_nonzero((a != 0).astype(int) @ (b != 0).astype(int))


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_masked_matmul_mv_addmm_mask_as(fmt):
    rng = np.random.default_rng(9)
    x, y, m = rng.standard_normal([2, 3, 4]), rng.standard_normal([2, 4, 5]), random_dense([2, 3, 5], seed=10)
    out = sparse.masked_matmul(oar.to_tensor(x), oar.to_tensor(y), as_format(m, fmt))
    np.testing.assert_allclose(out.to_dense().numpy(), np.where(m != 0, x @ y, 0.0), *sum_tolerance("float64", 4))
    a, vec = random_dense([4, 5], seed=11), rng.standard_normal(5)
    np.testing.assert_allclose(sparse.mv(as_format(a, fmt), oar.to_tensor(vec)).numpy(), a @ vec,
                               *sum_tolerance("float64", 5))
    b, c = rng.standard_normal([5, 2]), rng.standard_normal([4, 2])
    dense = sparse.addmm(oar.to_tensor(c), as_format(a, fmt), oar.to_tensor(b), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(dense.numpy(), 0.5 * c + 2.0 * (a @ b), *sum_tolerance("float64", 5))
    bs, cs = random_dense([5, 3], seed=12), random_dense([4, 3], seed=13)
    both = sparse.addmm(as_format(cs, fmt), as_format(a, fmt), as_format(bs, fmt), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(both.to_dense().numpy(), 0.5 * cs + 2.0 * (a @ bs), *sum_tolerance("float64", 5))
    # Paddle 3.3.1: mask_as(arange(9).reshape(3, 3), x) keeps x's structure with values [1, 5, 6]
    mask = sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    masked = sparse.mask_as(oar.arange(9, dtype="float32").reshape([3, 3]), as_format(mask.to_dense().numpy(), fmt))
    assert masked.values().numpy().tolist() == [1.0, 5.0, 6.0]


# --- structure ------------------------------------------------------------------------------------

def test_structure_functions_match_paddle():
    x = sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    xc = x.to_sparse_csr()
    # all of these are Paddle 3.3.1's results
    assert structure(sparse.reshape(x, [9])) == ([[1, 5, 6]], [1.0, 2.0, 3.0])
    assert structure(sparse.reshape(x, [-1, 1])) == ([[1, 5, 6], [0, 0, 0]], [1.0, 2.0, 3.0])
    assert structure(sparse.reshape(xc, [1, 9])) == ([0, 3], [1, 5, 6], [1.0, 2.0, 3.0])
    assert structure(sparse.transpose(x, [1, 0])) == ([[1, 2, 0], [0, 1, 2]], [1.0, 2.0, 3.0])
    assert structure(sparse.transpose(xc, [1, 0])) == ([0, 1, 2, 3], [2, 0, 1], [3.0, 1.0, 2.0])
    sliced = sparse.slice(x, [0, 1], [1, 0], [3, 2])
    assert sliced.shape == [2, 2] and structure(sliced) == ([[1], [0]], [3.0])
    assert structure(sparse.slice(xc, [0], [1], [3])) == ([0, 1, 2], [2, 0], [2.0, 3.0])
    assert structure(sparse.slice(x, [0], [-2], [10])) == ([[0, 1], [2, 0]], [2.0, 3.0])
    assert sparse.sum(x).shape == [1] and sparse.sum(x).values().numpy().tolist() == [6.0]
    assert structure(sparse.sum(x, axis=0)) == ([[0, 1, 2]], [3.0, 1.0, 2.0])
    assert structure(sparse.sum(x, axis=1, keepdim=True)) == ([[0, 1, 2], [0, 0, 0]], [1.0, 2.0, 3.0])
    assert sparse.sum(x, axis=-1, dtype="float64").dtype == oar.float64
    total = sparse.sum(xc)
    assert total.shape == [1, 1] and structure(total) == ([0, 1], [0], [6.0])
    assert structure(sparse.sum(xc, axis=-1)) == ([0, 1, 2, 3], [0, 0, 0], [1.0, 2.0, 3.0])
    assert sparse.is_same_shape(x, oar.ones([3, 3])) and not sparse.is_same_shape(x, oar.ones([3]))


def test_3d_structure_functions_match_paddle():
    x = sparse.sparse_coo_tensor([[0, 1, 1], [1, 0, 2], [0, 1, 1]], [1.0, 2.0, 3.0], [2, 3, 2])
    # Paddle 3.3.1's results
    assert sparse.sum(x, keepdim=True).shape == [1, 1, 1]
    assert structure(sparse.sum(x, axis=1)) == ([[0, 1], [0, 1]], [1.0, 5.0])
    assert structure(sparse.sum(x, axis=0)) == ([[0, 1, 2], [1, 0, 1]], [2.0, 1.0, 3.0])
    assert structure(sparse.sum(x, axis=-1)) == ([[0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0])
    assert structure(sparse.transpose(x, [2, 0, 1])) == ([[0, 1, 1], [0, 1, 1], [1, 0, 2]], [1.0, 2.0, 3.0])
    xc = x.to_sparse_csr()
    assert structure(sparse.transpose(xc, [0, 2, 1])) == ([0, 1, 1, 0, 0, 2], [1, 0, 2], [1.0, 2.0, 3.0])
    assert structure(sparse.transpose(xc, [1, 0, 2])) == ([0, 0, 1, 0, 1, 1, 0, 0, 1], [1, 0, 1], [2.0, 1.0, 3.0])


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_structure_functions_against_dense(fmt):
    dense = random_dense([2, 4, 6], seed=14)
    x = as_format(dense, fmt)
    np.testing.assert_array_equal(sparse.reshape(x, [4, 12]).to_dense().numpy(), dense.reshape(4, 12))
    np.testing.assert_array_equal(sparse.transpose(x, [1, 0, 2]).to_dense().numpy(), dense.transpose(1, 0, 2))
    np.testing.assert_array_equal(sparse.slice(x, [1, 2], [1, -4], [3, 5]).to_dense().numpy(), dense[:, 1:3, 2:5])
    np.testing.assert_allclose(sparse.sum(x, axis=-1).to_dense().numpy(), dense.sum(-1, keepdims=fmt == "csr"),
                               *TOLERANCES["float64"])
    if fmt == "coo":
        for axis in range(3):
            np.testing.assert_allclose(sparse.sum(x, axis=axis).to_dense().numpy(), dense.sum(axis),
                                       *TOLERANCES["float64"])


# --- nn.functional, methods and operators ---------------------------------------------------------

def test_activations_match_paddle():
    functional = sparse.nn.functional
    x = sparse.neg(sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3]))
    # Paddle 3.3.1's results
    assert structure(functional.relu(x))[1] == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(structure(functional.leaky_relu(x, 0.1))[1], [-0.1, -0.2, -0.3], *F32)
    assert structure(functional.relu6(sparse.multiply(x, -3.0)))[1] == [3.0, 6.0, 6.0]
    csr = sparse.sparse_csr_tensor([0, 2, 3, 3], [0, 2, 1], [1.0, 2.0, 3.0], [3, 3])
    np.testing.assert_allclose(structure(functional.softmax(csr))[2], [0.26894143, 0.7310586, 1.0], *F32)
    coo = sparse.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1.0, 2.0, 3.0], [3, 3])
    np.testing.assert_allclose(structure(functional.softmax(coo))[1], [0.26894143, 0.7310586, 1.0], *F32)


def test_methods_and_operators():
    a, b = random_dense([3, 4], seed=15), random_dense([3, 4], seed=16)
    x, y = coo_of(a), coo_of(b)
    np.testing.assert_allclose((x + y).to_dense().numpy(), a + b, *TOLERANCES["float64"])
    np.testing.assert_allclose((x - y).to_dense().numpy(), a - b, *TOLERANCES["float64"])
    np.testing.assert_allclose((x * y).to_dense().numpy(), a * b, *TOLERANCES["float64"])
    np.testing.assert_allclose((2.0 * x).to_dense().numpy(), 2 * a, *TOLERANCES["float64"])
    np.testing.assert_allclose((-x).to_dense().numpy(), -a, *TOLERANCES["float64"])
    w = np.ones([4, 2])
    np.testing.assert_allclose((x @ oar.to_tensor(w)).numpy(), a @ w, *sum_tolerance("float64", 4))
    np.testing.assert_allclose(x.matmul(oar.to_tensor(w)).numpy(), a @ w, *sum_tolerance("float64", 4))
    np.testing.assert_allclose(x.sin().to_dense().numpy(), np.sin(a), *TOLERANCES["float64"])
    assert x.transpose([1, 0]).shape == [4, 3] and x.reshape([12]).shape == [12]
    assert x.astype("float32").dtype == oar.float32 and x.cast("float32").dtype == oar.float32
    np.testing.assert_array_equal(x.numpy(), a)


# --- gradients (float64, finite differences) ------------------------------------------------------

def assert_grads(loss_of, arrays, grads):
    """``grads`` (what backward gave) against finite differences of ``loss_of`` in each array."""
    for position, (array, grad) in enumerate(zip(arrays, grads)):
        def partial(value, position=position):
            return loss_of(*[value if i == position else a for i, a in enumerate(arrays)])
        np.testing.assert_allclose(grad, numeric_gradient(partial, array), rtol=GRAD_RTOL, atol=GRAD_ATOL * 100)


PATTERN = np.array([[0, 0, 1, 1, 2], [1, 3, 0, 2, 3]])  # 5 entries of a [3, 4] matrix


def coo_from_values(values, stop_gradient=True, shape=(3, 4)):
    return sparse.sparse_coo_tensor(PATTERN, oar.to_tensor(values, stop_gradient=stop_gradient), list(shape))


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_matmul_gradients(fmt):
    rng = np.random.default_rng(17)
    values, dense, weights = rng.standard_normal(5), rng.standard_normal([4, 2]), rng.standard_normal([3, 2])

    def loss(v, d, backward=False):
        x = coo_from_values(v, stop_gradient=not backward)
        x = x if fmt == "coo" else x.to_sparse_csr()
        d = oar.to_tensor(d, stop_gradient=not backward)
        out = oar.sum(sparse.matmul(x, d) * oar.to_tensor(weights))
        if backward:
            out.backward()
            return x.values().grad.numpy(), d.grad.numpy()
        return float(out.numpy())

    assert_grads(loss, [values, dense], loss(values, dense, backward=True))


def test_binary_and_to_dense_gradients():
    rng = np.random.default_rng(18)
    a, b, weights = rng.standard_normal(5), rng.standard_normal(3), rng.standard_normal([3, 4])
    other = np.array([[0, 1, 2], [1, 1, 3]])  # overlaps PATTERN at (0, 1) and (2, 3)

    def loss(va, vb, backward=False, fn=sparse.multiply):
        x = coo_from_values(va, stop_gradient=not backward)
        y = sparse.sparse_coo_tensor(other, oar.to_tensor(vb, stop_gradient=not backward), [3, 4])
        out = oar.sum(fn(sparse.sin(x), y).to_dense() * oar.to_tensor(weights))
        if backward:
            out.backward()
            return x.values().grad.numpy(), y.values().grad.numpy()
        return float(out.numpy())

    for fn in (sparse.add, sparse.multiply, sparse.subtract):
        assert_grads(lambda va, vb, fn=fn: loss(va, vb, fn=fn), [a, b], loss(a, b, backward=True, fn=fn))


def test_masked_matmul_and_softmax_gradients():
    rng = np.random.default_rng(19)
    x, y, weights = rng.standard_normal([3, 2]), rng.standard_normal([2, 4]), rng.standard_normal(5)
    mask = coo_from_values(np.ones(5)).to_sparse_csr()

    def loss(xa, ya, backward=False):
        xt, yt = oar.to_tensor(xa, stop_gradient=not backward), oar.to_tensor(ya, stop_gradient=not backward)
        out = sparse.nn.functional.softmax(sparse.masked_matmul(xt, yt, mask))
        total = oar.sum(out.values() * oar.to_tensor(weights))
        if backward:
            total.backward()
            return xt.grad.numpy(), yt.grad.numpy()
        return float(total.numpy())

    assert_grads(loss, [x, y], loss(x, y, backward=True))


def test_empty_tensors():
    empty = sparse.sparse_coo_tensor(np.zeros((2, 0), np.int64), oar.zeros([0]), [3, 3])
    assert empty.nnz() == 0 and not empty.to_dense().numpy().any()
    assert not sparse.matmul(empty, oar.ones([3, 2])).numpy().any()
    assert sparse.add(empty, empty).nnz() == 0 and empty.to_sparse_csr().crows().numpy().tolist() == [0, 0, 0, 0]
    assert sparse.sum(empty).values().numpy().tolist() == [0.0]


def test_docstring_examples():
    import oar.sparse._math
    import oar.sparse._tensor
    import oar.sparse.nn.functional

    for module in (oar.sparse, oar.sparse._tensor, oar.sparse._math, oar.sparse.nn.functional):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_pca_lowrank_factors_the_centered_matrix(fmt):
    dense = random_dense([6, 4], density=0.6, seed=20)
    oar.seed(0)
    u, s, v = sparse.pca_lowrank(as_format(dense, fmt), q=4, niter=4)
    centered = dense - dense.mean(axis=0)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(centered, compute_uv=False), *sum_tolerance("float64", 24))
    reconstruction = u.numpy() @ np.diag(s.numpy()) @ v.numpy().T
    np.testing.assert_allclose(reconstruction, centered, *sum_tolerance("float64", 24))
    with pytest.raises(ShapeError, match="2-D"):
        sparse.pca_lowrank(as_format(random_dense([2, 3, 4]), fmt))
