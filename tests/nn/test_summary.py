"""oar.summary (paddle.summary): the per-layer table from one forward pass, the parameter totals it
prints and returns, and the ways of giving inputs."""

from __future__ import annotations

import doctest
import importlib
import re

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError


class Tanh(nn.Layer):
    def forward(self, x):
        return oar.tanh(x)


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.act = Tanh()
        self.fc2 = nn.Linear(128, 10)
        self.unused = nn.Linear(2, 2)  # never called by forward

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def row_label(layer) -> str:
    return f"{type(layer).__name__}-{int(layer.full_name().rsplit('_', 1)[1]) + 1}"


def table_rows(text: str) -> list[list[str]]:
    """The cells of each layer row: the lines between the two '=' rules, split on 2+ spaces."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line and set(line) == {"="}]
    assert len(rules) == 2, text
    return [re.split(r"\s{2,}", line.strip()) for line in lines[rules[0] + 1:rules[1]]]


def test_mlp_counts_shapes_and_format(capsys):
    net = MLP()
    net.fc2.bias.trainable = False
    info = oar.summary(net, (None, 784))
    assert info == {"total_params": 784 * 128 + 128 + 128 * 10 + 10 + 6, "trainable_params": 784 * 128 + 128 + 1280 + 6}
    assert all(isinstance(v, int) for v in info.values())
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "-" * 75 and set(lines[2]) == {"="} and len(lines[2]) == 75
    assert re.split(r"\s{2,}", lines[1].strip()) == ["Layer (type)", "Input Shape", "Output Shape", "Param #"]
    assert table_rows(text) == [
        [row_label(net.fc1), "[[1, 784]]", "[1, 128]", "100,480"],
        [row_label(net.act), "[[1, 128]]", "[1, 128]", "0"],
        [row_label(net.fc2), "[[1, 128]]", "[1, 10]", "1,290"],
    ]
    assert "Total params: 101,776" in lines
    assert "Trainable params: 101,766" in lines
    assert "Non-trainable params: 10" in lines
    assert "Params size (MB): 0.39" in lines
    assert any(line.startswith("Forward/backward pass size (MB): ") for line in lines)
    assert any(line.startswith("Estimated Total Size (MB): ") for line in lines)


def test_sequential_rows_skip_the_containers(capsys):
    inner = nn.Sequential(nn.Linear(8, 4), Tanh())
    net = nn.Sequential(nn.Linear(3, 8), Tanh(), inner, nn.LayerList([nn.Linear(4, 4)])[0])
    info = oar.summary(net, input_size=(2, 3))
    assert info == {"total_params": 32 + 36 + 20, "trainable_params": 88}
    rows = table_rows(capsys.readouterr().out)
    assert [r[0].split("-")[0] for r in rows] == ["Linear", "Tanh", "Linear", "Tanh", "Linear"]
    assert [r[2] for r in rows] == ["[2, 8]", "[2, 8]", "[2, 4]", "[2, 4]", "[2, 4]"]
    assert [r[3] for r in rows] == ["32", "0", "36", "0", "20"]


def test_a_layer_without_sublayers_is_its_own_row(capsys):
    fc = nn.Linear(3, 5)
    assert oar.summary(fc, 3) == {"total_params": 20, "trainable_params": 20}  # an int is a 1-D input
    assert table_rows(capsys.readouterr().out) == [[row_label(fc), "[[3]]", "[5]", "20"]]


def test_input_tensors_and_several_inputs(capsys):
    class TwoInputs(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(4, 6)
            self.proj = nn.Linear(6, 2)

        def forward(self, x, ids):
            assert ids.dtype == oar.int64
            return self.proj(self.embed(x) + ids.astype("float32"))

    net = TwoInputs()
    info = oar.summary(net, [(None, 4), (1, 6)], dtypes=["float32", "int64"])
    assert info["total_params"] == 30 + 14
    rows = table_rows(capsys.readouterr().out)
    assert rows[0][1:3] == ["[[1, 4]]", "[1, 6]"] and rows[1][1:3] == ["[[1, 6]]", "[1, 2]"]

    class ListInput(nn.Layer):  # given input=, the network gets it as its one argument, as in Paddle
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 1)

        def forward(self, inputs):
            return self.fc(inputs[0] + inputs[1])

    oar.summary(ListInput(), input=[oar.rand([7, 3]), oar.rand([7, 3])])
    assert table_rows(capsys.readouterr().out)[0][1:] == ["[[7, 3]]", "[7, 1]", "4"]


def test_summary_restores_the_mode_records_no_gradients_and_removes_its_hooks():
    net = MLP()
    modes = []
    net.fc1.register_forward_post_hook(lambda layer, inputs, output: modes.append((layer.training, oar.is_grad_enabled())))
    oar.summary(net, (2, 784))
    assert modes == [(False, False)]  # the forward ran in eval mode without gradients
    assert net.training and net.fc1.training
    assert all(len(layer._forward_post_hooks) == 0 for layer in net.sublayers() if layer is not net.fc1)
    assert len(net.fc1._forward_post_hooks) == 1
    net.eval()
    oar.summary(net, (2, 784))
    assert not net.training


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ArgumentError, match="input_size or input"):
        oar.summary(MLP())
    with pytest.raises(ArgumentError, match="only the batch dimension"):
        oar.summary(MLP(), (None, None))
    with pytest.raises(ArgumentError, match="positive"):
        oar.summary(MLP(), (0, 784))
    with pytest.raises(ArgumentError, match="2 dtypes for 1 inputs"):
        oar.summary(MLP(), (1, 784), dtypes=["float32", "float32"])
    with pytest.raises(ArgumentError, match="must be an oar.nn.Layer"):
        oar.summary(lambda x: x, (1, 2))


def test_oar_summary_is_the_hapi_function_and_its_example_runs():
    summary_module = importlib.import_module("oar.hapi.summary")  # the attribute is the function

    assert oar.summary is oar.hapi.summary
    for module in (oar.hapi, summary_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_float64_models_report_their_real_parameter_size(capsys):
    net = nn.Sequential(nn.Linear(256, 512)).to(dtype="float64")
    oar.summary(net, (1, 256), dtypes="float64")
    size = (256 * 512 + 512) * 8 / 1024**2
    assert f"Params size (MB): {size:.2f}" in capsys.readouterr().out.splitlines()
    np.testing.assert_allclose(size, 1.0, atol=0.01)
