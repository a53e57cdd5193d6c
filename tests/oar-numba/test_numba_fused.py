"""oar-numba's kernels of the fused inference ops: equal to the references on the paths the op
table's small shapes do not reach (NaN and -inf, the 2x2 fast path, broadcast loop nests), the
generated chain source holds no attribute value, and a to_static LeNet runs them."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from oar_numba import KERNELS, _fused

import oar
from oar.plugins import registries
from oar.static import InputSpec
from oar.vision.models import LeNet


def reference(op: str):
    return registries().ops.get(op).reference


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pool", [([2, 2], [2, 2], [0, 0, 0, 0], False), ([3, 3], [2, 2], [1, 1, 1, 1], True),
                                  ([2, 2], [2, 2], [0, 0, 0, 0], True)])
def test_max_pool_infer_matches_with_nan_and_inf(dtype, pool):
    x = np.random.default_rng(0).standard_normal((3, 4, 9, 10)).astype(dtype)
    x[0, 0, 0, 0] = np.nan
    x[1, 2, 3:5, 4:6] = -np.inf
    x[2, 1, 5, 5] = np.inf
    kernel, stride, padding, ceil_mode = pool
    got = KERNELS["max_pool_infer"](x, kernel, stride, padding, ceil_mode)
    expected = reference("max_pool_infer")(x, kernel, stride, padding, ceil_mode)
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[0, 0, 0, 0]) and got.dtype == x.dtype


@pytest.mark.parametrize("act", ["relu", None, "tanh"])
def test_fused_conv2d_matches_with_nan(act):
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((5, 3, 12, 11)), rng.standard_normal((8, 3, 3, 3)), rng.standard_normal(8)
    x[1, 0, 4, 4] = np.nan
    attrs = {"stride": [1, 2], "padding": [1, 0, 2, 1], "dilation": [1, 1], "groups": 1, "act": act, "act_attrs": {}}
    got = KERNELS["fused_conv2d"](x, w, b, **attrs)
    expected = reference("fused_conv2d")(x, w, b, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert np.isnan(got).sum() == np.isnan(expected).sum() > 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [
    ((3, 1, 28, 28), (6, 1, 3, 3), [1, 1, 1, 1]),  # LeNet's first conv: the direct kernel, channels in pairs
    ((2, 2, 9, 8), (3, 2, 3, 2), [2, 0, 1, 3]),  # direct, uneven padding, an odd channel count
    ((2, 3, 9, 8), (5, 3, 3, 3), [1, 0, 2, 1]),  # direct 3x3 over three channels (RGB), odd sizes
    ((3, 6, 14, 14), (16, 6, 5, 5), [0, 0, 0, 0]),  # LeNet's second: wide patches and BLAS
    ((1, 8, 7, 9), (4, 8, 2, 3), [0, 0, 0, 0]),  # wide, odd output sizes (a pool drops an edge)
    ((2, 8, 7, 9), (4, 8, 2, 3), [1, 0, 0, 1]),  # many taps and padding: conv kernel + epilogue
])
@pytest.mark.parametrize("act, max_pool", [("relu", None), (None, None), ("relu", 2), (None, 2), ("relu", 3)])
def test_fused_conv2d_paths_match_the_reference(dtype, shape, act, max_pool):
    rng = np.random.default_rng(3)
    x_shape, w_shape, padding = shape
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, w_shape[:1]))
    x[0, 0, 2, 3] = np.nan
    attrs = {"stride": [1, 1], "padding": padding, "dilation": [1, 1], "groups": 1, "act": act, "act_attrs": {},
             "max_pool": max_pool}
    got = KERNELS["fused_conv2d"](x, w, b, **attrs)
    expected = reference("fused_conv2d")(x, w, b, **attrs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)
    assert (np.isnan(got) == np.isnan(expected)).all() and np.isnan(got).any()


def without_blas_in_kernels(monkeypatch):
    """The wide way's numpy path: its products through np.matmul, between compiled copies."""
    monkeypatch.setattr(_fused, "gemm_for", lambda dtype: None)
    monkeypatch.setattr(_fused, "_plans", {})


def test_wide_conv_runs_in_chunks(monkeypatch):
    without_blas_in_kernels(monkeypatch)
    monkeypatch.setattr(_fused, "WIDE_CHUNK_BYTES", 1)  # one sample per chunk
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((5, 6, 10, 10)), rng.standard_normal((4, 6, 5, 5)), rng.standard_normal(4)
    attrs = {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1, "act": "relu",
             "act_attrs": {}, "max_pool": 2}
    np.testing.assert_allclose(KERNELS["fused_conv2d"](x, w, b, **attrs), reference("fused_conv2d")(x, w, b, **attrs),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [1, 5])
def test_wide_conv_without_blas_in_kernels_matches_the_reference(monkeypatch, dtype, batch):
    """Where numpy's BLAS cannot be called from compiled code (another BLAS than OpenBLAS)."""
    without_blas_in_kernels(monkeypatch)
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((batch, 6, 14, 14), (16, 6, 5, 5), (16,)))
    attrs = {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1, "act": "relu",
             "act_attrs": {}, "max_pool": 2}
    np.testing.assert_allclose(KERNELS["fused_conv2d"](x, w, b, **attrs), reference("fused_conv2d")(x, w, b, **attrs),
                               rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)


def assert_two_threads_match(x, w, b, attrs):
    """fused_conv2d at oar.set_num_threads(2) equals the reference."""
    before = numba.get_num_threads()
    oar.set_num_threads(2)
    try:
        got = KERNELS["fused_conv2d"](x, w, b, **attrs)
    finally:
        oar.set_num_threads(before)
    np.testing.assert_allclose(got, reference("fused_conv2d")(x, w, b, **attrs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("blas_in_kernels", [True, False])
def test_wide_conv_split_over_threads_matches_the_reference(monkeypatch, blas_in_kernels):
    """With 2 threads a large batch is split in halves, each on its own thread."""
    monkeypatch.setattr(_fused, "SPLIT_MIN", 1)
    if not blas_in_kernels:
        without_blas_in_kernels(monkeypatch)
        monkeypatch.setattr(_fused, "WIDE_CHUNK_BYTES", 1)  # and in chunks
    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal((7, 6, 10, 10)), rng.standard_normal((4, 6, 5, 5)), rng.standard_normal(4)
    attrs = {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1, "act": "relu",
             "act_attrs": {}, "max_pool": 2}
    assert_two_threads_match(x, w, b, attrs)


@pytest.mark.parametrize("kernel_shape", [(6, 1, 3, 3), (5, 2, 3, 2)])
def test_direct_conv_in_parts_over_threads_matches_the_reference(monkeypatch, kernel_shape):
    """A large batch runs the direct kernel's parallel compilation, a share of samples per thread
    with its own padded buffer (7 samples over 2 threads: 3 and 4)."""
    monkeypatch.setattr(_fused, "COMPUTE_SERIAL_BELOW", 1)
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((7, kernel_shape[1], 12, 11)), rng.standard_normal(kernel_shape)
    b = rng.standard_normal(kernel_shape[0])
    attrs = {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1, "act": "relu",
             "act_attrs": {}, "max_pool": 2}
    assert_two_threads_match(x, w, b, attrs)


@pytest.fixture
def compiled_chains(monkeypatch):
    """Small arrays go to the compiled loops too (by default they take the reference)."""
    monkeypatch.setattr(_fused, "REFERENCE_BELOW", 0)


@pytest.mark.parametrize("shapes", [[(4, 5), (4, 5)], [(2, 1, 5), (3, 1)], [(), (6,)], [(7,), ()], [(), ()],
                                    [(64, 1024), (1024,)], [(256, 300), (256, 300)]])
def test_fused_elementwise_matches_the_reference(shapes, compiled_chains):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    arrays[0].reshape(-1)[0] = np.nan
    chain = [["scale", [0], {"scale": 1.5, "bias": -0.25, "bias_after_scale": False}], ["subtract", [2, 1], {}],
             ["relu", [3], {}], ["multiply", [4, 1], {}], ["abs", [5], {}], ["divide", [6, 0], {}]]
    got = KERNELS["fused_elementwise"](*arrays, chain=chain)
    expected = reference("fused_elementwise")(*arrays, chain=chain)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)  # no fast-math: each step rounds as numpy's ufunc


def test_small_results_take_the_reference_and_large_ones_the_loop(monkeypatch):
    compiled = []
    monkeypatch.setattr(_fused, "_loop", lambda *a: compiled.append(a) or (lambda *args: None))
    chain = [["add", [0, 1], {}], ["relu", [2], {}]]
    small = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(KERNELS["fused_elementwise"](small, small, chain=chain), small + small)
    assert compiled == []
    large = np.ones((_fused.REFERENCE_BELOW,), np.float32)
    KERNELS["fused_elementwise"](large, large, chain=chain)
    assert len(compiled) == 1


def test_chains_with_other_ops_take_the_reference():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    chain = [["multiply", [0, 0], {}], ["tanh", [1], {}]]
    assert not _fused.supports(chain)
    np.testing.assert_array_equal(KERNELS["fused_elementwise"](x, chain=chain), reference("fused_elementwise")(x, chain=chain))


def test_the_generated_source_holds_no_attribute_value():
    chain = [["scale", [0], {"scale": 3.25, "bias": 7.5, "bias_after_scale": True}], ["add", [1, 0], {}]]
    source = _fused._source(chain, 1, 2)
    assert "3.25" not in source and "7.5" not in source
    assert "_scale(v0, q0, q1, q2)" in source and "out[i0, i1] = v2" in source


def test_to_static_lenet_runs_the_numba_fused_kernels():
    oar.seed(0)
    model = LeNet()
    model.eval()
    x = oar.rand([4, 1, 28, 28])
    with oar.no_grad():
        expected = model(x).numpy()
    static = oar.jit.to_static(LeNet(), input_spec=[InputSpec([None, 1, 28, 28], "float32")])
    static.set_state_dict(model.state_dict())
    static.eval()
    with oar.no_grad():
        static(x)  # the first call captures
        np.testing.assert_allclose(static(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    executor = static.forward._last.inference_executor
    kernels = {executor.program.nodes[step[-1]].op: step[0] for step in executor._steps}
    assert kernels["fused_conv2d"].__qualname__ == "_bind.<locals>.fused_conv2d_node"  # KERNELS[...].bind
    assert "max_pool_infer" not in kernels  # both pools went into the convolutions
    assert [n.attrs.get("max_pool") for n in executor.program.nodes if n.op == "fused_conv2d"] == [2, 2]
    with oar.no_grad():  # batch 1, the other shape the benchmark runs
        np.testing.assert_allclose(static(x[:1]).numpy(), expected[:1], rtol=1e-5, atol=1e-6)
