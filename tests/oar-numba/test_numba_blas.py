"""oar_numba._blas: numpy's own BLAS GEMM called from compiled kernels equals numpy's product,
for both float dtypes, accumulates with beta, and refuses arrays it cannot pass to BLAS."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError
from oar_numba._blas import gemm, gemm_for


@numba.njit(nogil=True)
def product(address, int_kind, a, b, c, beta):
    gemm(address, int_kind, a, b, c, beta)


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


def test_gemm_refuses_arrays_it_cannot_pass():
    address, int_kind = blas(np.float64)
    a = np.ones((4, 6))
    with pytest.raises(TypingError, match="C-contiguous"):
        product(address, int_kind, a[:, ::2], np.ones((3, 2)), np.ones((4, 2)), 0.0)
    with pytest.raises(TypingError, match="one dtype"):
        product(address, int_kind, a, np.ones((6, 2), np.float32), np.ones((4, 2)), 0.0)


def test_gemm_for_other_dtypes_is_none():
    assert gemm_for(np.int32) is None and gemm_for(np.float16) is None
