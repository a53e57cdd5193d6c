"""Convolutions split by samples over threads (``_jit.split_samples``): the reference's results,
and BLAS's thread count as it was afterwards."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import threadpoolctl
from oar_numba import _conv, _jit

import oar
from oar.nn.functional import conv as reference


def blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_conv_and_weight_grad_split_by_samples_match_the_reference(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    parts = []
    on_one_thread = _jit._on_one_thread

    def recorded(work, start, stop):
        parts.append((start, stop))
        on_one_thread(work, start, stop)

    monkeypatch.setattr(_jit, "SPLIT_BELOW", 1)  # split these small convolutions too
    monkeypatch.setattr(_jit, "_on_one_thread", recorded)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 8, 20, 20)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    g = rng.standard_normal((9, 16, 20, 20)).astype(np.float32)
    args = ((1, 1), (1, 1, 1, 1), (1, 1))
    before = numba.get_num_threads()
    oar.set_num_threads(2)
    try:
        blas_before = blas_threads()
        y = _conv.conv(x, w, *args, 1)
        dw = _conv.conv_weight_grad(x, g, (3, 3), *args, 1)
        assert blas_threads() == blas_before
    finally:
        oar.set_num_threads(before)
    assert sorted(parts) == [(0, 4), (0, 4), (4, 9), (4, 9)]  # 9 samples in two parts, per call
    np.testing.assert_allclose(y, reference._conv_kernel(x, w, *args, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, reference._conv_weight_grad_kernel(x, g, (3, 3), *args, 1), rtol=1e-4, atol=1e-3)
