"""oar-numba as a plugin: found through its entry point, listed, blockable, sized by
``oar.set_num_threads``, safe in forked children; and its kernels agree with the references on
the benchmark shapes and on the paths the small op-table shapes do not reach (chunked
convolutions, many-row reductions, NaN and -inf windows, bad indices)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
import threadpoolctl
from numba_test_support import bench_module
from oar_numba import ALTERNATIVES, KERNEL_DTYPES, KERNELS, _conv, _qgemm

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError
from oar.plugins import plugin_infos, registries

REFERENCE_SOURCE = "nn"


def run_python(code: str, **env_vars: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OAR_DISABLE_PLUGINS", "OAR_TRACE_PLUGINS")}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)


def reference(op: str):
    return registries().ops.get(op).reference


# -- discovery, listing, blocking ----------------------------------------------------------------
def test_the_plugin_is_loaded_through_its_entry_point():
    (info,) = [i for i in plugin_infos() if i.name == "numba"]
    assert (info.status, info.module, info.version) == ("loaded", "oar_numba.plugin", "0.1.0")
    assert info.registered["kernels"] == sorted({f"{op}@cpu" for op in {**KERNELS, **_qgemm.KERNELS}}
                                                | {f"{op}@cpu:{name}" for op, named in ALTERNATIVES.items()
                                                   for name, _ in named})  # autotune's alternatives
    assert info.registered["thread_controls"] == ["numba"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_numba_kernel_serves_float32_and_float64_above_the_reference(dtype):
    kernels = registries().kernels
    for op, fn in KERNELS.items():
        # the int8-first ops (oar.nn.quant) are served under their first input's dtype
        served = KERNEL_DTYPES.get(op, (dtype,))[0]
        entry = kernels.lookup(op, "cpu", getattr(oar, served))
        assert (entry.source, entry.fn) == ("numba", fn), op
        sources = {e.source: e.priority for e in kernels.candidates(op, "cpu")}
        reference_source = registries().ops.source_of(op)  # "nn", or core for fused_elementwise
        assert reference_source in (REFERENCE_SOURCE, "oar.core"), op
        assert sources["numba"] > sources[reference_source], op


def test_a_layer_call_dispatches_the_numba_kernel():
    from oar.nn.functional.conv import conv_op

    conv_op._kernels.clear()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32))
    F.conv2d(x, oar.ones([4, 3, 3, 3]), padding=1)
    assert conv_op._kernels[("cpu", np.dtype("float32"))] is KERNELS["conv"]


def test_python_m_oar_plugins_lists_it():
    result = subprocess.run([sys.executable, "-m", "oar", "plugins"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "numba 0.1.0 [loaded] (oar_numba.plugin)" in lines
    at = lines.index("numba 0.1.0 [loaded] (oar_numba.plugin)")
    assert lines[at + 1].startswith("    kernels: adaptive_avg_pool_grad@cpu, adaptive_max_pool@cpu,")
    assert lines[at + 2].startswith("    lowerings: numba:add, numba:subtract,")  # fused_elementwise's templates
    assert lines[at + 3] == "    thread_controls: numba"


def test_disabled_the_references_run_and_numba_is_never_imported():
    result = run_python("""
        import json, sys
        import numpy as np
        import oar, oar.nn.functional as F
        from oar.plugins import plugin_infos, registries
        ops = ["conv", "conv_transpose", "conv_weight_grad", "max_pool", "batch_norm", "layer_norm_grad",
               "softmax_with_cross_entropy", "embedding_grad", "relu", "relu_grad", "gelu", "softmax_grad"]
        y = F.conv2d(oar.ones([1, 2, 4, 4]), oar.ones([3, 2, 3, 3]), padding=1)
        print(json.dumps({
            "sources": {op: registries().kernels.lookup(op, "cpu", oar.float32).source for op in ops},
            "status": [i.status for i in plugin_infos() if i.name == "numba"],
            "imported": sorted(m for m in ("numba", "oar_numba", "oar_numba.plugin") if m in sys.modules),
            "center": float(y.numpy()[0, 0, 1, 1]),
        }))
    """, OAR_DISABLE_PLUGINS="numba")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["sources"].values()) == {REFERENCE_SOURCE}
    assert report["status"] == ["blocked"]
    assert report["imported"] == []
    assert report["center"] == 18.0


# -- threads ---------------------------------------------------------------------------------------
def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def restore_threads():
    numba_before = numba.get_num_threads()
    blas_before = threadpoolctl.threadpool_info()
    yield
    numba.set_num_threads(numba_before)
    threadpoolctl.threadpool_limits(limits={lib["prefix"]: lib["num_threads"] for lib in blas_before})
    registries().thread_controls.num_threads = None


def test_set_num_threads_sizes_numba_and_blas_together(restore_threads):
    most = numba.config.NUMBA_NUM_THREADS
    assert _blas_threads(), "numpy's BLAS is not visible to threadpoolctl"
    for n in (1, most):
        oar.set_num_threads(n)
        assert (numba.get_num_threads(), _blas_threads()) == (n, {n})
    oar.set_num_threads(most + 3)  # more than numba launched: numba's pool is used whole
    assert numba.get_num_threads() == most


def test_set_num_threads_rejects_what_is_not_a_positive_int():
    for bad in (0, -2, 1.5, "2", True):
        with pytest.raises(ArgumentError, match="set_num_threads"):
            oar.set_num_threads(bad)


def test_set_num_threads_before_the_first_op_reaches_numba():
    # A fresh process: the call itself loads the plugins, so numba's control is there to apply.
    result = run_python("""
        import numba, oar
        oar.set_num_threads(1)
        print(numba.get_num_threads())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() exists on POSIX only")
def test_a_forked_child_runs_the_ops_on_the_references():
    # With numba's OpenMP layer a child cannot start threads again; it must not be killed.
    result = run_python("""
        import json, multiprocessing as mp
        import numba, numpy as np
        import oar, oar.nn.functional as F
        from oar.plugins import registries
        x = oar.to_tensor(np.linspace(-1, 1, 4096, dtype=np.float32))
        parent = float(F.relu(x).sum())
        def child(queue):
            total = float(F.relu(x).sum())
            queue.put([total, registries().kernels.lookup("relu", "cpu", oar.float32).source])
        context = mp.get_context("fork")
        queue = context.Queue()
        process = context.Process(target=child, args=(queue,))
        process.start()
        process.join(120)
        print(json.dumps({"layer": numba.threading_layer(), "exit": process.exitcode, "parent": parent,
                          "child": queue.get(timeout=5) if process.exitcode == 0 else None}))
    """)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["exit"] == 0, result.stderr
    assert report["child"][0] == pytest.approx(report["parent"], rel=1e-6)
    expected_source = REFERENCE_SOURCE if report["layer"] == "omp" else "numba"
    assert report["child"][1] == expected_source


# -- agreement with the references beyond the op table ---------------------------------------------
def assert_same(got, expected, dtype):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    tol = {"float32": (2e-4, 1e-4), "float64": (1e-10, 1e-10)}[dtype]
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        if e.dtype.kind in "iu":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=tol[0], atol=tol[1] * max(1.0, float(np.abs(e).max(initial=0))))


BENCH = bench_module()


@pytest.mark.parametrize("case", BENCH.cases(), ids=lambda c: f"{c.op}-{c.label}")
def test_kernels_agree_with_the_references_on_the_benchmark_shapes(case):
    # also the measured but unregistered candidates (bench_kernels.CANDIDATES)
    assert_same(BENCH.numba_kernel(case.op)(*case.inputs, **case.attrs),
                reference(case.op)(*case.inputs, **case.attrs), "float32")


def test_the_benchmark_covers_every_kernel():
    assert {c.op for c in BENCH.cases()} == set(KERNELS) | set(BENCH.CANDIDATES)


CONV_PROBLEMS = [  # (x shape, w shape, stride, padding, dilation, groups)
    ((7, 4, 9, 8), (6, 2, 3, 2), [2, 1], [1, 2, 0, 1], [1, 2], 2),
    ((5, 3, 11, 6), (4, 3, 3, 3), [1, 2], [2, -1, 1, 0], [2, 1], 1),
    ((6, 4, 13), (8, 1, 4), [3], [2, 1], [2], 4),
    ((3, 5, 9, 8), (5, 1, 3, 3), [2, 1], [1, 1, 0, 2], [1, 2], 5),  # depthwise: the direct kernel
    ((2, 6, 7, 7), (6, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 6),  # MobileNet's depthwise 3x3, im2col
    ((2, 3, 5, 60), (3, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 3),  # rows wide enough for the direct kernel
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("problem", CONV_PROBLEMS, ids=["2d_groups", "2d_cropping", "1d_depthwise",
                                                                  "2d_depthwise", "2d_depthwise_same",
                                                                  "2d_depthwise_wide"])
@pytest.mark.parametrize("chunk_bytes", [1, 3000, 1 << 20], ids=["sample_chunks", "uneven_chunks", "one_chunk"])
@pytest.mark.parametrize("blas_in_kernels", [True, False], ids=["blas_in_kernels", "numpy_products"])
def test_convolutions_in_chunks_agree_with_the_references(monkeypatch, dtype, problem, chunk_bytes, blas_in_kernels):
    """The chunked path: grouped convolutions, and every one where compiled code cannot call BLAS."""
    monkeypatch.setattr(_conv, "CHUNK_BYTES", chunk_bytes)
    if not blas_in_kernels:
        monkeypatch.setattr(_conv, "gemm_for", lambda dtype: None)
    x_shape, w_shape, stride, padding, dilation, groups = problem
    rng = np.random.default_rng(3)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    y = reference("conv")(x, w, **attrs)
    assert_same(KERNELS["conv"](x, w, **attrs), y, dtype)
    g = rng.standard_normal(y.shape).astype(dtype)
    assert_same(KERNELS["conv_weight_grad"](x, g, kernel_size=list(w_shape[2:]), **attrs),
                reference("conv_weight_grad")(x, g, kernel_size=list(w_shape[2:]), **attrs), dtype)
    # the transposed convolution of g back to x's channels, with an output padding where strided
    w_t = rng.standard_normal((y.shape[1], x_shape[1] // groups, *w_shape[2:])).astype(dtype)
    t_attrs = {**attrs, "output_padding": [1 if s > 1 else 0 for s in stride]}
    assert_same(KERNELS["conv_transpose"](g, w_t, **t_attrs), reference("conv_transpose")(g, w_t, **t_attrs), dtype)


BAND_PROBLEMS = [  # (x shape, w shape, stride, padding, dilation): groups 1, BLAS inside the kernels
    ((3, 4, 9, 8), (5, 4, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1]),  # stride 1, padded: a band's rows as one run
    ((2, 3, 7, 7), (4, 3, 2, 3), [1, 1], [2, 0, 0, 2], [1, 1]),  # uneven padding, rows past the input
    ((5, 3, 11, 6), (4, 3, 3, 3), [1, 2], [2, -1, 1, 0], [2, 1]),  # strided, dilated, cropped: row by row
    ((4, 3, 13), (6, 3, 4), [2], [2, 1], [1]),  # 1-d, as 2-d of height 1
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("problem", BAND_PROBLEMS, ids=["padded", "uneven_padding", "strided_cropping", "1d"])
@pytest.mark.parametrize("band_bytes", [1, 700, 1 << 20], ids=["row_bands", "uneven_bands", "one_band"])
def test_convolutions_in_bands_agree_with_the_references(monkeypatch, dtype, problem, band_bytes):
    if _conv.gemm_for(dtype) is None:
        pytest.skip("numpy's BLAS here cannot be called from compiled code: the chunked path runs (tested above)")
    monkeypatch.setattr(_conv, "BAND_BYTES", band_bytes)
    x_shape, w_shape, stride, padding, dilation = problem
    rng = np.random.default_rng(4)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": 1}
    y = reference("conv")(x, w, **attrs)
    assert_same(KERNELS["conv"](x, w, **attrs), y, dtype)
    g = rng.standard_normal(y.shape).astype(dtype)
    assert_same(KERNELS["conv_weight_grad"](x, g, kernel_size=list(w_shape[2:]), **attrs),
                reference("conv_weight_grad")(x, g, kernel_size=list(w_shape[2:]), **attrs), dtype)


def test_band_rows_are_nearly_equal_and_within_the_budget():
    assert _conv._band_rows(288, 32, 32, 4) == 11  # ResNet's block conv: 11, 11, 10 rows (at most 14 in 512 KB)
    assert _conv._band_rows(288, 32, 32, 4 << 20) == 1  # a row at least
    assert _conv._band_rows(27, 32, 32, 4) == 32  # a stem's patches: the whole sample in one band


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norms_over_many_rows_and_channels_last_agree_with_the_references(dtype):
    rng = np.random.default_rng(5)
    for x_shape, axis in (((3, 5, 4, 7), 1), ((6, 5, 4, 9), 3), ((257, 3), 1)):  # NCHW, NHWC, NC
        x = (rng.standard_normal(x_shape) * 3 + 2).astype(dtype)
        c = x_shape[axis]
        w, b = rng.uniform(0.5, 1.5, c).astype(dtype), rng.standard_normal(c).astype(dtype)
        attrs = {"channel_axis": axis, "epsilon": 1e-5}
        y, mean, var = reference("batch_norm")(x, w, b, **attrs)
        assert_same(KERNELS["batch_norm"](x, w, b, **attrs), (y, mean, var), dtype)
        g = rng.standard_normal(x_shape).astype(dtype)
        assert_same(KERNELS["batch_norm_grad"](x, w, mean, var, g, **attrs),
                    reference("batch_norm_grad")(x, w, mean, var, g, **attrs), dtype)
    x = rng.standard_normal((37, 11, 24)).astype(dtype)  # more rows than chunks, uneven split
    w, b = rng.uniform(0.5, 1.5, 24).astype(dtype), rng.standard_normal(24).astype(dtype)
    attrs = {"begin_norm_axis": 2, "epsilon": 1e-5}
    y, mean, var = reference("layer_norm")(x, w, b, **attrs)
    assert_same(KERNELS["layer_norm"](x, w, b, **attrs), (y, mean, var), dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    assert_same(KERNELS["layer_norm_grad"](x, w, mean, var, g, **attrs),
                reference("layer_norm_grad")(x, w, mean, var, g, **attrs), dtype)


def test_max_pools_follow_the_references_on_nan_inf_and_padding_windows():
    x = np.array([[[[np.nan, 1.0, 2.0, -np.inf], [3.0, np.nan, -np.inf, -np.inf], [5.0, 5.0, 0.5, 7.0]]]],
                 dtype=np.float32)
    attrs = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True}
    assert_same(KERNELS["max_pool"](x, **attrs), reference("max_pool")(x, **attrs), "float32")
    for output_size in ([2, 2], [1, 3], [3, 4]):
        assert_same(KERNELS["adaptive_max_pool"](x, output_size=output_size),
                    reference("adaptive_max_pool")(x, output_size=output_size), "float32")
    relu_input = np.array([np.nan, -np.inf, -0.5, 0.0, 2.0], np.float32)
    np.testing.assert_array_equal(KERNELS["relu"](relu_input), reference("relu")(relu_input))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, ceil_mode", [((3, 4, 8, 10), False), ((2, 3, 9, 7), False), ((2, 3, 9, 7), True)])
def test_2x2_max_pool_fast_path_picks_the_references_winner(dtype, shape, ceil_mode):
    """Ties, NaN (the first wins) and -inf windows: the same values and the same argmax mask
    (which max_pool_grad scatters through) as the reference; odd sizes leave the last row or
    column out, or (ceil_mode) go through the general loop."""
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, shape).astype(dtype)  # small integers: many ties
    x[0, 0, 0, :4] = np.nan
    x[0, 1, 2:4, 2:4] = -np.inf
    x[1, 0, 1, 1] = np.nan
    x[1, 1, 4, 4] = np.inf
    attrs = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0, 0, 0], "ceil_mode": ceil_mode}
    (out, mask), (ref_out, ref_mask) = KERNELS["max_pool"](x, **attrs), reference("max_pool")(x, **attrs)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(mask, ref_mask)
    g = rng.standard_normal(out.shape).astype(dtype)
    np.testing.assert_array_equal(KERNELS["max_pool_grad"](g, mask, list(shape[2:])),
                                  reference("max_pool_grad")(g, ref_mask, list(shape[2:])))


def test_bad_indices_get_the_references_answers():
    logits = np.zeros((2, 3), np.float32)
    with pytest.raises(ArgumentError, match="label value 3 is out of range"):
        KERNELS["softmax_with_cross_entropy"](logits, np.array([[0], [3]]))
    loss, prob = KERNELS["softmax_with_cross_entropy"](logits, np.array([[-100], [2]]))
    np.testing.assert_allclose(loss.ravel(), [0.0, np.log(3.0)], rtol=1e-6)
    g = np.ones((3, 2), np.float32)
    ids = np.array([0, 5, 1])  # 5 is past a table of 4 rows: the reference decides (it raises)
    with pytest.raises(IndexError):
        reference("embedding_grad")(g, ids, num_embeddings=4, padding_idx=-1)
    with pytest.raises(IndexError):
        KERNELS["embedding_grad"](g, ids, num_embeddings=4, padding_idx=-1)
    mask = np.array([[[0, 9]]], np.int32)  # 9 is past a 2x2 plane: never written out of bounds
    for fn in (KERNELS["max_pool_grad"], reference("max_pool_grad")):
        with pytest.raises(ValueError):
            fn(np.ones((1, 1, 2), np.float32), mask, input_size=[2, 2])


def test_embedding_grad_adds_repeated_ids_and_zeroes_the_padding_row():
    rng = np.random.default_rng(9)
    g = rng.standard_normal((40, 100)).astype(np.float32)
    ids = rng.integers(0, 7, 40)
    assert_same(KERNELS["embedding_grad"](g, ids, num_embeddings=7, padding_idx=3),
                reference("embedding_grad")(g, ids, num_embeddings=7, padding_idx=3), "float32")


def _threads_inside(a):
    for i in numba.prange(a.size):
        a[i] = numba.get_thread_id()
    return a.max() + 1  # the threads that ran a share of the loop (numba splits a prange evenly)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a pool of two threads or more")
@pytest.mark.filterwarnings("ignore::numba.NumbaWarning")  # a probe defined here need not be cached
def test_small_calls_run_on_the_calling_thread_alone(restore_threads):
    from oar_numba._jit import SERIAL_BELOW, ParallelKernel

    probe = ParallelKernel(_threads_inside)
    oar.set_num_threads(2)
    probe.jitted(np.zeros(2))  # starts the pool: get_thread_id needs it, serial code or not
    assert probe(np.zeros(SERIAL_BELOW - 1)) == 1
    assert numba.get_num_threads() == 2  # the pool's size untouched
    assert probe(np.zeros(SERIAL_BELOW)) == 2
    oar.set_num_threads(1)
    assert probe(np.zeros(SERIAL_BELOW)) == 1


def test_openmp_spins_briefly_unless_the_user_chose():
    """oar-numba bounds GNU OpenMP's spin after a region (GOMP_SPINCOUNT, _jit.SPIN_ROUNDS) where
    the user set neither variable; a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is."""
    script = """
        import os, oar
        oar.plugins.registries()
        print(os.environ.get("OMP_WAIT_POLICY", "-"), os.environ.get("GOMP_SPINCOUNT", "-"))
    """
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    from oar_numba._jit import SPIN_ROUNDS

    assert result.stdout.split() == ["-", str(SPIN_ROUNDS)]
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    passive = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                             timeout=120)
    assert passive.stdout.split() == ["PASSIVE", "-"], passive.stderr
    chosen = run_python(script, GOMP_SPINCOUNT="7")
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split()[1] == "7"


def test_docstring_examples_run():
    import doctest

    import oar_numba

    result = doctest.testmod(oar_numba)
    assert result.attempted >= 2 and result.failed == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 16, 7, 6), (2, 16, 9)], ids=["2d", "1d"])
@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_same_convolution_input_gradients_run_as_convolutions_and_agree(dtype, shape, kernel):
    # conv_transpose of a stride-1 "same" convolution with few channels runs as a convolution
    # with the flipped kernel; it must give the reference's transposed convolution.
    nd = len(shape) - 2
    rng = np.random.default_rng(5)
    g = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((shape[1], 8, *[kernel] * nd)).astype(dtype)
    attrs = {"stride": [1] * nd, "padding": [(kernel - 1) // 2] * 2 * nd, "output_padding": [0] * nd,
             "dilation": [1] * nd, "groups": 1}
    assert _conv._same_adjoint(g, w, **attrs)
    assert_same(KERNELS["conv_transpose"](g, w, **attrs), reference("conv_transpose")(g, w, **attrs), dtype)
