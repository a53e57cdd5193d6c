"""oar_numba._blas: numpy's own BLAS GEMM called from compiled kernels equals numpy's product,
for both float dtypes, on bands of columns and with b transposed, accumulates with beta, and
refuses arrays it cannot pass to BLAS."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError
from oar_numba._blas import gemm, gemm_for, gemm_nt


@numba.njit(nogil=True)
def product(address, int_kind, a, b, c, beta):
    gemm(address, int_kind, a, b, c, beta)


@numba.njit(nogil=True)
def product_nt(address, int_kind, a, b, c, beta):
    gemm_nt(address, int_kind, a, b, c, beta)


def blas(dtype):
    found = gemm_for(dtype)
    if found is None:  # the kernels then take their numpy path (tests/oar-numba/test_numba_fused.py)
        pytest.skip("numpy's BLAS here is not an OpenBLAS whose GEMM compiled code can call")
    return found


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m, k, n", [(16, 150, 136), (1, 4, 4), (7, 1, 3)])
def test_gemm_equals_numpy(dtype, m, k, n):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    c = np.full((m, n), np.nan, dtype)  # beta 0: what c held does not count, NaN included
    product(*blas(dtype), a, b, c, 0.0)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
    before = c.copy()
    product(*blas(dtype), a, b, c, 1.0)  # beta 1: accumulates
    np.testing.assert_allclose(c, before + a @ b, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_on_bands_of_columns(dtype):
    """A band of an output's columns (a convolution's rows of positions) as a, b and c: each
    array's row stride is its leading dimension, and nothing outside the band is touched."""
    rng = np.random.default_rng(1)
    a_full, b_full = rng.standard_normal((5, 30)).astype(dtype), rng.standard_normal((12, 40)).astype(dtype)
    c_full = np.zeros((5, 40), dtype)
    a, b, c = a_full[:, 3:15], b_full[:, 8:24], c_full[:, 8:24]
    product(*blas(dtype), a, b, c, 0.0)
    expected = np.zeros_like(c_full)
    expected[:, 8:24] = a @ b
    np.testing.assert_allclose(c_full, expected, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_nt_reads_b_transposed(dtype):
    rng = np.random.default_rng(2)
    a, b_full = rng.standard_normal((9, 20)).astype(dtype), rng.standard_normal((4, 50)).astype(dtype)
    b = b_full[:, 10:30]  # [n, k], a band of columns
    c = np.ones((9, 4), dtype)
    product_nt(*blas(dtype), a, b, c, 1.0)  # beta 1: onto what c holds
    np.testing.assert_allclose(c, 1.0 + a @ b.T, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)


def test_gemm_refuses_arrays_it_cannot_pass():
    address, int_kind = blas(np.float64)
    a = np.ones((4, 6))
    with pytest.raises(ValueError, match="not adjacent"):  # a row BLAS cannot read: at run time
        product(address, int_kind, a[:, ::2], np.ones((3, 2)), np.ones((4, 2)), 0.0)
    with pytest.raises(ValueError, match="do not agree"):  # BLAS would write past c
        product(address, int_kind, a, np.ones((6, 5)), np.ones((4, 2)), 0.0)
    with pytest.raises(ValueError, match="do not agree"):
        product_nt(address, int_kind, a, np.ones((2, 5)), np.ones((4, 2)), 0.0)
    with pytest.raises(TypingError, match="rows"):  # an F-ordered array: at compile time
        product(address, int_kind, np.asfortranarray(a), np.ones((6, 2)), np.ones((4, 2)), 0.0)
    with pytest.raises(TypingError, match="one dtype"):
        product(address, int_kind, a, np.ones((6, 2), np.float32), np.ones((4, 2)), 0.0)


def test_gemm_for_other_dtypes_is_none():
    assert gemm_for(np.int32) is None and gemm_for(np.float16) is None
