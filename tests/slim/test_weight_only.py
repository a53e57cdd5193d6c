"""Weight-only INT8 Linear layers: int8 weights [out, in] with per-channel scales, float activations."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.quantization import QuantConfigError, WeightOnlyLinear, weight_only_quantize
from oar.static import InputSpec

from .conftest import accuracy


def test_weight_only_linear_matches_the_numpy_dequantized_weight():
    oar.seed(0)
    fc = nn.Linear(32, 8)
    q = WeightOnlyLinear(fc)
    w = fc.weight.numpy()
    scale = np.abs(w).max(0) / 127
    expected_q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8).T
    np.testing.assert_array_equal(q.weight.numpy(), expected_q)
    x = np.random.default_rng(0).normal(0, 1, (4, 32)).astype(np.float32)
    expected = x @ (expected_q.T * scale) + fc.bias.numpy()
    np.testing.assert_allclose(q(oar.to_tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_weight_only_lenet_keeps_its_accuracy_and_saves_int8(float_lenet, digits, tmp_path):
    model = weight_only_quantize(float_lenet)
    assert [type(layer).__name__ for layer in model.fc] == ["WeightOnlyLinear"] * 3
    assert type(model.features[0]) is nn.Conv2D and type(float_lenet.fc[0]) is nn.Linear
    reference = accuracy(float_lenet, digits["x_test"], digits["y_test"])
    assert accuracy(model, digits["x_test"], digits["y_test"]) >= reference - 0.01
    spec = [InputSpec([None, 1, 28, 28], "float32", "image")]
    oar.jit.save(model, str(tmp_path / "w8"), input_spec=spec)
    state = oar.load(str(tmp_path / "w8.pdiparams"), return_numpy=True)["params"]
    assert state["fc.0.weight"].dtype == np.int8 and state["fc.0.weight"].shape == (120, 400)
    loaded = oar.jit.load(str(tmp_path / "w8"))
    x = oar.to_tensor(digits["x_test"][:8])
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_llm_int8_and_skip_quant():
    oar.seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    model[2].skip_quant = True
    q = weight_only_quantize(model, algo="llm.int8")
    assert type(q[0]) is WeightOnlyLinear and q[0].algo == "llm.int8" and type(q[2]) is nn.Linear
    x = oar.randn([3, 16])
    np.testing.assert_allclose(q(x).numpy(), model(x).numpy(), atol=0.05)
    with pytest.raises(QuantConfigError, match="algo must be one of"):
        weight_only_quantize(model, algo="int4")
