"""oar.incubate.autotune over oar-numba's alternatives: the convolution's paths (bands, im2col,
wide patches, numpy's reference) and numpy's max pooling agree with the registered kernels, and
with tuning on one of them is chosen per shape and recorded in the cache file."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.incubate import autotune
from oar.plugins import registries

CONVS = [  # (x shape, w shape, attributes): the ResNet block's, LeNet's second (wide), a depthwise one
    ((4, 16, 12, 12), (16, 16, 3, 3), {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1}),
    ((8, 6, 14, 14), (16, 6, 5, 5), {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1}),
    ((2, 8, 20, 20), (8, 1, 3, 3), {"stride": [2, 2], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 8}),
    ((3, 4, 30), (6, 4, 3), {"stride": [1], "padding": [1, 1], "dilation": [1], "groups": 1}),
]


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path / "autotune.json"))
    autotune.clear_cache()
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [0, 100]}})
    yield
    autotune.set_config({"kernel": {"enable": False, "tuning_range": [1, 10]}})
    autotune.clear_cache()


def alternatives(op: str, dtype: str = "float32"):
    return registries().kernels.alternatives(op, "cpu", oar.ops.get_dtype(dtype))


def test_numba_registers_the_conv_paths_and_numpy_max_pool():
    names = {op: [n for n, _ in alternatives(op)] for op in ("conv", "conv_weight_grad", "max_pool")}
    assert names["conv"] == ["default", "numba.bands", "numba.im2col", "numpy.reference"]
    assert names["conv_weight_grad"] == ["default", "numba.bands", "numba.channels_last", "numba.im2col", "numpy.reference"]
    assert names["max_pool"] == ["default", "numpy.reference"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape, w_shape, attrs", CONVS)
def test_conv_alternatives_agree(x_shape, w_shape, attrs, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    outs = {name: kernel(x, w, **attrs) for name, kernel in alternatives("conv", dtype)}
    reference = outs["numpy.reference"]
    tolerance = autotune.TOLERANCE[dtype] * np.abs(reference).max()
    for name, out in outs.items():
        np.testing.assert_allclose(out, reference, rtol=autotune.TOLERANCE[dtype], atol=tolerance, err_msg=name)
    g = rng.standard_normal(reference.shape).astype(dtype)
    grads = {name: kernel(x, g, w_shape[2:], **attrs) for name, kernel in alternatives("conv_weight_grad", dtype)}
    for name, dw in grads.items():
        np.testing.assert_allclose(dw, grads["numpy.reference"], rtol=autotune.TOLERANCE[dtype],
                                   atol=autotune.TOLERANCE[dtype] * np.abs(grads["numpy.reference"]).max(), err_msg=name)


def test_a_choice_is_made_per_conv_shape_and_recorded(tuning):
    rng = np.random.default_rng(1)
    plain = []
    autotune.set_config({"kernel": {"enable": False}})
    cases = [(rng.standard_normal(xs).astype("float32"), rng.standard_normal(ws).astype("float32"), a)
             for xs, ws, a in CONVS[:3]]
    for x, w, a in cases:
        plain.append(F.conv2d(oar.to_tensor(x), oar.to_tensor(w), stride=a["stride"], padding=a["padding"][::2],
                              groups=a["groups"]).numpy())
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [0, 100]}})
    for (x, w, a), expected in zip(cases, plain):
        xt, wt = oar.to_tensor(x), oar.to_tensor(w, stop_gradient=False)
        y = F.conv2d(xt, wt, stride=a["stride"], padding=a["padding"][::2], groups=a["groups"])
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
        y.sum().backward()
        y2 = F.max_pool2d(y, 2)
        assert y2.shape[2] == y.shape[2] // 2
    choices = autotune.choices()
    ops = [key.split("|")[0] for key in choices]
    assert ops.count("conv") == 3 and ops.count("conv_weight_grad") == 3 and ops.count("max_pool") == 3
    names = {"default", "numba.bands", "numba.channels_last", "numba.im2col", "numpy.reference"}
    for value in choices.values():
        assert value["chosen"] in names and value["chosen"] in value["ms"]
    section = json.loads(autotune.cache_path().read_text())["machines"][autotune.machine_key()]
    assert {k: v["chosen"] for k, v in choices.items()} == section
