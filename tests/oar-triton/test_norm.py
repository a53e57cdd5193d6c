"""The gpu's normalisation kernels beyond the op table: float16 and bfloat16, rows wider than one
chunk and more rows and channels than one program takes, several splits of a channel's
elements, non-contiguous inputs, batch_norm's running statistics, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels import norm
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, ShapeError
from oar.ops import dispatch
from oar.plugins import registries

EPS = 1e-5
rng = np.random.default_rng(7)


def run(op: str, arrays, attrs, dtype: str, device: str):
    """Op ``op`` dispatched on ``device`` with float inputs in ``dtype``: its outputs as numpy arrays."""
    target = oar.ops.get_dtype(dtype).np
    tensors = [oar.to_tensor(a.astype(target), place=device) for a in arrays]
    outs = dispatch(registries().ops.lookup(op), tuple(tensors), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for o in outs:
        assert o.place.backend == device
    return [o.numpy() for o in outs]


def check(op: str, arrays, attrs, dtype: str, terms: int) -> None:
    got = run(op, arrays, attrs, dtype, "gpu")
    expected = run(op, arrays, attrs, dtype, "cpu")
    assert_same(got, expected, dtype, f"{op} [{dtype}]", terms=terms)


def stats(x, axes):
    return x.mean(axis=axes), x.var(axis=axes)


HALVES = ["float16", "bfloat16"]


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_layer_norm_rows_wider_than_a_chunk(dtype):
    # 2500 columns: two chunks of 2048 per pass; 3 rows
    x, g = rng.standard_normal((3, 2500)) * 3 + 1, rng.standard_normal((3, 2500))
    w, b = rng.uniform(0.5, 1.5, 2500), rng.standard_normal(2500)
    attrs = {"begin_norm_axis": 1, "epsilon": EPS}
    check("layer_norm", [x, w, b], attrs, dtype, terms=2500)
    mean, var = stats(x, 1)
    check("layer_norm_grad", [x, w, mean, var, g], attrs, dtype, terms=2500)


@pytest.mark.parametrize("dtype", HALVES + ["float64"])
def test_layer_norm_many_rows(dtype):
    # 300 rows of 24: three programs of 128 rows, the last one partly masked
    x, g = rng.standard_normal((3, 100, 24)), rng.standard_normal((3, 100, 24))
    w, b = rng.uniform(0.5, 1.5, 24), rng.standard_normal(24)
    attrs = {"begin_norm_axis": 2, "epsilon": EPS}
    check("layer_norm", [x, w, b], attrs, dtype, terms=300)
    mean, var = stats(x.reshape(300, 24), 1)
    check("layer_norm_grad", [x, w, mean, var, g], attrs, dtype, terms=300)


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_batch_norm_channel_splits(dtype):
    # NCHW with 900 elements per sample and channel: each channel's 4500 elements in 2 splits of 4096
    x, g = rng.standard_normal((5, 2, 30, 30)) + 2, rng.standard_normal((5, 2, 30, 30))
    w, b = rng.uniform(0.5, 1.5, 2), rng.standard_normal(2)
    attrs = {"channel_axis": 1, "epsilon": EPS}
    check("batch_norm", [x, w, b], attrs, dtype, terms=4500)
    mean, var = stats(x, (0, 2, 3))
    check("batch_norm_grad", [x, w, mean, var, g], attrs, dtype, terms=4500)
    check("batch_norm_infer", [x, w, b, mean, var], attrs, dtype, terms=1)


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_batch_norm_channels_last(dtype):
    # NHWC, 300 channels: two channel blocks of 256, 120 elements each in splits of 16
    x, g = rng.standard_normal((2, 6, 10, 300)), rng.standard_normal((2, 6, 10, 300))
    w, b = rng.uniform(0.5, 1.5, 300), rng.standard_normal(300)
    attrs = {"channel_axis": 3, "epsilon": EPS}
    check("batch_norm", [x, w, b], attrs, dtype, terms=120)
    mean, var = stats(x, (0, 1, 2))
    check("batch_norm_grad", [x, w, mean, var, g], attrs, dtype, terms=120)


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_group_norm(dtype):
    x, g = rng.standard_normal((4, 6, 5, 7)), rng.standard_normal((4, 6, 5, 7))
    w, b = rng.uniform(0.5, 1.5, 6), rng.standard_normal(6)
    attrs = {"num_groups": 3, "epsilon": EPS}
    check("group_norm", [x, w, b], attrs, dtype, terms=140)
    mean, var = stats(x.reshape(4, 3, -1), 2)
    check("group_norm_grad", [x, w, mean, var, g], attrs, dtype, terms=140)


def test_non_contiguous_inputs_are_read_through_their_strides():
    a = rng.standard_normal((6, 5)).astype(np.float32)
    w, b = (rng.standard_normal(6).astype(np.float32) for _ in range(2))
    gpu_t = BACKEND.from_numpy(a)
    xt = gpu_t.view((5, 6), (1, 5))  # the transpose, a view of the same block
    y, mean, var = norm.layer_norm(xt, BACKEND.from_numpy(w), BACKEND.from_numpy(b), 1, EPS)
    expected = (a.T - a.T.mean(1, keepdims=True)) / np.sqrt(a.T.var(1, keepdims=True) + EPS) * w + b
    np.testing.assert_allclose(BACKEND.to_numpy(y), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(BACKEND.to_numpy(var), a.T.var(1), rtol=1e-5)
    # batch_norm_infer with channels as a transposed view
    mean_c, var_c = a.T.mean(0), a.T.var(0) + 0.5
    y = norm.batch_norm_infer(xt, *(BACKEND.from_numpy(v) for v in (w, b, mean_c, var_c)), 1, EPS)
    np.testing.assert_allclose(BACKEND.to_numpy(y), (a.T - mean_c) / np.sqrt(var_c + EPS) * w + b, rtol=1e-5,
                               atol=1e-5)


def test_batch_norm_updates_the_running_statistics_as_the_cpu():
    x = rng.standard_normal((4, 3, 5)).astype(np.float32) * 2 + 1
    w, b = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    results = {}
    for device in ("cpu", "gpu"):
        rm = oar.to_tensor(np.full(3, 0.5, np.float32), place=device)
        rv = oar.to_tensor(np.full(3, 2.0, np.float32), place=device)
        y = F.batch_norm(oar.to_tensor(x, place=device), rm, rv, oar.to_tensor(w, place=device),
                         oar.to_tensor(b, place=device), training=True, momentum=0.8)
        results[device] = [y.numpy(), rm.numpy(), rv.numpy()]
    assert_same(results["gpu"], results["cpu"], "float32", "batch_norm running stats", terms=20)
    assert not np.allclose(results["gpu"][1], 0.5)  # the running mean moved


def test_clear_errors():
    x = oar.to_tensor(np.ones((2, 4), np.float32), place="gpu")
    w3 = oar.to_tensor(np.ones(3, np.float32), place="gpu")
    with pytest.raises(ShapeError, match="layer_norm: weight must have shape \\[4\\]"):
        dispatch(registries().ops.lookup("layer_norm"), (x, w3, w3), {"begin_norm_axis": 1, "epsilon": EPS})
    with pytest.raises(ArgumentError, match="group_norm: num_groups 3 must divide the channels"):
        norm.group_norm(BACKEND.from_numpy(np.ones((2, 4, 3), np.float32)), BACKEND.from_numpy(np.ones(4, np.float32)),
                        BACKEND.from_numpy(np.ones(4, np.float32)), 3, EPS)
    with pytest.raises(ShapeError, match="batch_norm_infer: running_var must have shape \\[4\\]"):
        ones = BACKEND.from_numpy(np.ones(4, np.float32))
        norm.batch_norm_infer(BACKEND.from_numpy(np.ones((2, 4), np.float32)), ones, ones, ones,
                              BACKEND.from_numpy(np.ones(2, np.float32)), 1, EPS)
