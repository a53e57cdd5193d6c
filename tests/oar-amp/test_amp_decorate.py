"""``oar.amp.decorate``: O2 casts the parameters (the batch norms keep float32, and for float16 the
layer and instance norms too; ``excluded_layers`` keep theirs), the optimizers keep float32
master weights, and ``save_dtype`` is what ``state_dict`` and ``oar.save`` write."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.errors import ArgumentError


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 2, 3)
        self.bn = nn.BatchNorm2D(2)
        self.ln = nn.LayerNorm(4)
        self.fc = nn.Linear(4, 3)
        self.scale = self.create_parameter([3])

    def forward(self, x):
        h = self.ln(self.bn(self.conv(x)))  # [N, 2, 4, 4]
        return self.fc(h).mean(axis=[1, 2]) * self.scale


def dtypes(model) -> dict[str, str]:
    return {name: p.dtype.name for name, p in model.named_parameters()}


@pytest.mark.parametrize(("dtype", "norm_dtype"), [("float16", "float32"), ("bfloat16", "bfloat16")])
def test_o2_casts_the_parameters_but_the_norms_paddle_keeps(dtype, norm_dtype):
    model = oar.amp.decorate(Block(), level="O2", dtype=dtype)
    assert dtypes(model) == {
        "conv.weight": dtype, "conv.bias": dtype, "bn.weight": "float32", "bn.bias": "float32",
        "ln.weight": norm_dtype, "ln.bias": norm_dtype, "fc.weight": dtype, "fc.bias": dtype, "scale": dtype}
    assert model.bn._mean.dtype == oar.float32  # the running statistics too
    with oar.amp.auto_cast(level="O2", dtype=dtype):
        out = model(oar.rand([2, 1, 6, 6]))
    assert out.dtype.name == dtype


def test_excluded_layers_by_instance_and_by_type():
    model = Block()
    oar.amp.decorate(model, level="O2", dtype="bfloat16", excluded_layers=model.fc)
    assert dtypes(model)["fc.weight"] == "float32" and dtypes(model)["conv.weight"] == "bfloat16"
    model = Block()
    oar.amp.decorate(model, level="O2", dtype="bfloat16", excluded_layers=[nn.Conv2D, nn.LayerNorm])
    assert dtypes(model)["conv.weight"] == "float32" and dtypes(model)["ln.weight"] == "float32"
    assert dtypes(model)["scale"] == "bfloat16"  # Block's own parameter: Block is not excluded
    with pytest.raises(ArgumentError, match="excluded_layers must be"):
        oar.amp.decorate(Block(), level="O2", excluded_layers=["fc"])


def test_o1_changes_nothing_and_returns_what_was_passed():
    model = Block()
    optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    assert oar.amp.decorate(model, level="O1") is model
    assert oar.amp.decorate(model, optimizer, level="O1") == (model, optimizer)
    assert set(dtypes(model).values()) == {"float32"}
    models, optimizers = oar.amp.decorate([model], [optimizer], level="O2", dtype="bfloat16")
    assert models == [model] and optimizers == [optimizer]
    with pytest.raises(ArgumentError, match="level should be O1 or O2"):
        oar.amp.decorate(model, level="OD")
    with pytest.raises(ArgumentError, match="dtype only support float16 or bfloat16"):
        oar.amp.decorate(model, level="O2", dtype="float32")
    with pytest.raises(ArgumentError, match="save_dtype can only be"):
        oar.amp.decorate(model, level="O2", save_dtype="int8")


def test_master_weights_keep_the_updates_that_the_low_dtype_cannot_hold():
    """bfloat16 holds 8 significant bits: 1.0 - 1e-4 rounds back to 1.0. A thousand such steps
    move the float32 master weight by 0.1, and the bfloat16 parameter with it."""
    def train(master_weight):
        layer = nn.Linear(1, 1, bias_attr=False)
        layer.weight.set_value(np.ones([1, 1], np.float32))
        optimizer = oar.optimizer.SGD(learning_rate=1e-4, parameters=layer.parameters())
        layer, optimizer = oar.amp.decorate(layer, optimizer, level="O2", dtype="bfloat16",
                                            master_weight=master_weight)
        for _ in range(1000):
            with oar.amp.auto_cast(level="O2", dtype="bfloat16"):
                loss = layer(oar.ones([1, 1])).astype("float32").sum()  # d loss / d w = 1
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
        return layer, optimizer

    layer, optimizer = train(None)
    assert layer.weight.dtype == oar.bfloat16
    masters = optimizer.state_dict()["master_weights"]
    assert list(masters) == [layer.weight.name] and masters[layer.weight.name].dtype == oar.float32
    np.testing.assert_allclose(masters[layer.weight.name].numpy(), [[0.9]], rtol=1e-4)
    np.testing.assert_allclose(layer.weight.astype("float32").numpy(), [[0.9]], rtol=1e-2)
    layer, optimizer = train(False)
    assert layer.weight.astype("float32").numpy().tolist() == [[1.0]]  # each update rounded away
    assert "master_weights" not in optimizer.state_dict()


def test_save_dtype_is_what_state_dict_and_oar_save_write(tmp_path):
    model = oar.amp.decorate(Block(), level="O2", dtype="float16", save_dtype="float32")
    assert model.fc.weight.dtype == oar.float16
    state = model.state_dict()
    assert {t.dtype.name for t in state.values()} == {"float32"}
    assert model.fc.state_dict()["weight"].dtype == oar.float32  # a sublayer's own state_dict too
    np.testing.assert_array_equal(state["fc.weight"].numpy(), model.fc.weight.astype("float32").numpy())
    path = str(tmp_path / "model.pdparams")
    oar.save(state, path)
    assert {k: v.dtype.name for k, v in oar.load(path).items()}["fc.weight"] == "float32"
    assert model.fc.weight.dtype == oar.float16  # the parameters keep theirs
    restored = Block()
    restored.set_state_dict(oar.load(path))
    np.testing.assert_array_equal(restored.fc.weight.numpy(), state["fc.weight"].numpy())
