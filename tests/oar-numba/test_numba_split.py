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


CONV_ARGS = ((1, 1), (1, 1, 1, 1), (1, 1))  # stride, padding, dilation


def convolutions_at_two_threads_match_the_reference(seed: int) -> None:
    """conv and conv_weight_grad of a small 3x3 problem at oar.set_num_threads(2) equal the
    reference kernels, and BLAS's thread count is as it was afterwards."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((9, 8, 20, 20)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    g = rng.standard_normal((9, 16, 20, 20)).astype(np.float32)
    before = numba.get_num_threads()
    oar.set_num_threads(2)
    try:
        blas_before = blas_threads()
        y = _conv.conv(x, w, *CONV_ARGS, 1)
        dw = _conv.conv_weight_grad(x, g, (3, 3), *CONV_ARGS, 1)
        assert blas_threads() == blas_before
    finally:
        oar.set_num_threads(before)
    np.testing.assert_allclose(y, reference._conv_kernel(x, w, *CONV_ARGS, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, reference._conv_weight_grad_kernel(x, g, (3, 3), *CONV_ARGS, 1), rtol=1e-4,
                               atol=1e-3)


def test_conv_and_weight_grad_split_by_samples_match_the_reference(monkeypatch):
    """The chunked convolutions (grouped ones, or where compiled code cannot call BLAS)."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    monkeypatch.setattr(_conv, "gemm_for", lambda dtype: None)
    parts = []
    on_one_thread = _jit._on_one_thread

    def recorded(work, start, stop):
        parts.append((start, stop))
        on_one_thread(work, start, stop)

    monkeypatch.setattr(_jit, "SPLIT_BELOW", 1)  # split these small convolutions too
    monkeypatch.setattr(_jit, "_on_one_thread", recorded)
    convolutions_at_two_threads_match_the_reference(seed=0)
    # 9 samples in 8 shares (4 per thread), per call, taken in turn by the two threads
    shares = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 9)]
    assert sorted(parts) == sorted(shares * 2)


def test_band_convolutions_in_shares_over_numba_threads_match_the_reference(monkeypatch):
    """The band kernels give each numba thread a share of the samples, BLAS at one thread inside
    and as it was after."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    if _conv.gemm_for(np.float32) is None:
        pytest.skip("numpy's BLAS here cannot be called from compiled code")
    monkeypatch.setattr(_jit, "SPLIT_BELOW", 1)  # these small convolutions in shares too
    calls = []
    for name in ("_conv_band_parts", "_weight_grad_band_parts"):
        kernel = getattr(_conv, name)

        def recorded(*args, kernel=kernel, name=name):
            calls.append(name)
            return kernel(*args)

        monkeypatch.setattr(_conv, name, recorded)
    convolutions_at_two_threads_match_the_reference(seed=1)
    assert calls == ["_conv_band_parts", "_weight_grad_band_parts"]


def test_a_slower_thread_takes_fewer_shares():
    """Shares are taken in turn: while the calling thread is held up on its first share, the
    other thread runs the rest (with fixed halves the caller would then wait for its own)."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    import threading
    import time

    ran = []

    def work(start, stop):
        caller = threading.current_thread() is threading.main_thread()
        ran.append((start, stop, caller))
        time.sleep(0.2 if caller else 0.005)  # the calling thread's share is slow

    before = numba.get_num_threads()
    oar.set_num_threads(2)
    try:
        _jit.split_samples(work, 8, 1 << 30)
    finally:
        oar.set_num_threads(before)
    assert sorted((start, stop) for start, stop, _ in ran) == [(k, k + 1) for k in range(8)]
    assert sum(caller for *_, caller in ran) <= 2  # the caller ran its slow first share, maybe one more


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape, w_shape", [((64, 6, 14, 14), (16, 6, 5, 5)),  # LeNet's second conv
                                              ((5, 3, 9, 7), (4, 3, 2, 3)),  # uneven kernel
                                              ((3, 2, 4, 6), (5, 2, 4, 1 + 2)),  # one output row
                                              ((2, 1, 1, 8), (3, 1, 1, 3))])  # a 1-d conv as 2-d
@pytest.mark.parametrize("threads", [1, 2])
def test_wide_patch_convolutions_match_the_references(monkeypatch, dtype, x_shape, w_shape, threads):
    """Stride 1 without padding runs on wide patches (see _conv): forward, weight gradient and
    input gradient (the full transposed convolution) give the references' results, on one
    thread and split over two."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("numba has one thread here")
    monkeypatch.setattr(_jit, "SPLIT_BELOW", 1)  # split these small convolutions too
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    args = ((1, 1), (0, 0, 0, 0), (1, 1))
    assert _conv._wide(x.ndim, w.shape[2:], args[0], args[1], args[2], 1)
    before = numba.get_num_threads()
    oar.set_num_threads(threads)
    try:
        y = _conv.conv(x, w, *args, 1)
        g = rng.standard_normal(y.shape).astype(dtype)
        dw = _conv.conv_weight_grad(x, g, w.shape[2:], *args, 1)
        dx = _conv.conv_transpose(g, w, (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1)
    finally:
        oar.set_num_threads(before)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-10}
    np.testing.assert_allclose(y, reference._conv_kernel(x, w, *args, 1), **tol)
    np.testing.assert_allclose(dw, reference._conv_weight_grad_kernel(x, g, w.shape[2:], *args, 1), **tol)
    np.testing.assert_allclose(dx, reference._conv_transpose_kernel(g, w, (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1),
                               **tol)
    assert y.dtype == dw.dtype == dx.dtype == x.dtype


def _record_threads(ids):
    for i in numba.prange(ids.size):
        ids[i] = numba.get_thread_id()


def test_the_parallel_compilation_of_a_two_way_kernel_is_parallel():
    """numba's disk cache does not tell compile flags apart: the serial compilation, made first and
    cached, must not be what the parallel one loads (``_jit.cache_variant``)."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    ids = np.full(_jit.SERIAL_BELOW, -1, np.int64)  # no smaller: small calls run on one thread
    _conv._wide_patches.parallel(np.zeros((2, 1, 2, 2)), 1, 1, 4, np.zeros((2, 1, 4)))  # starts the pool
    kernel = _jit.TwoWays(_record_threads)  # (get_thread_id needs the pool started, serial or not)
    kernel.serial(ids)  # compiled first, and cached
    assert set(ids) == {0}
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        kernel.parallel(ids)
    finally:
        numba.set_num_threads(before)
    assert set(ids) == {0, 1}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [64, 37])
def test_linear_in_row_shares_over_threads_matches_the_reference(monkeypatch, dtype, rows):
    """In a program (a node's bound kernel) at 2 threads, a product core keeps on one BLAS thread
    runs in row shares, one per numba thread (each a BLAS GEMM into rows that start as the
    bias); BLAS's count is as it was after. Eager calls keep BLAS's way."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    from oar_numba import KERNELS, _linear

    shares = []
    linear_parts = _linear._linear_parts
    monkeypatch.setattr(_linear, "_linear_parts", lambda x, w, b, parts, *rest: (shares.append(parts),
                                                                                 linear_parts(x, w, b, parts, *rest)))
    rng = np.random.default_rng(rows)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((rows, 400), (400, 120), (120,)))
    before = numba.get_num_threads()
    oar.set_num_threads(2)
    try:
        blas_before = blas_threads()
        eager = KERNELS["linear"](x, w, b)
        assert shares == []
        got = KERNELS["linear"].bind({})(x, w, b)
        assert blas_threads() == blas_before
    finally:
        oar.set_num_threads(before)
    assert shares == [2]
    tol = {"rtol": 1e-5, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(got, x @ w + b, **tol)
    np.testing.assert_allclose(eager, x @ w + b, **tol)


def test_lenet_inference_at_two_threads_runs_its_kernels_in_shares_not_the_executors_parts(monkeypatch):
    """oar-numba's convolutions and linears spread a batch over numba's threads in compiled code
    (``batch_parallel``): the executor leaves its own split (Python threads) out, and the
    results are eager's."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    from oar_numba import _fused

    from oar.static import InputSpec
    from oar.vision.models import LeNet
    from tests.core.static import _threads

    wide_shares = []
    wide_parts = _fused._wide_parts
    monkeypatch.setattr(_fused, "_wide_parts", lambda *args: (wide_shares.append(args[8]), wide_parts(*args)))
    oar.seed(0)
    model = LeNet()
    model.eval()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((64, 1, 28, 28)).astype(np.float32))
    with _threads.two_threads():
        executor_parts = _threads.record_parts(monkeypatch)
        with oar.no_grad():
            expected = model(x).numpy()
            static = oar.jit.to_static(model, input_spec=[InputSpec([None, 1, 28, 28], "float32")])
            static(x[:2])  # captures
            wide_shares.clear()
            got = static(x).numpy()
    assert executor_parts == [] and wide_shares == [2]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
