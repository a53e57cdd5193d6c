"""The rest of Paddle's model zoo in oar.vision.models (AlexNet, DenseNet, GoogLeNet, InceptionV3,
MobileNetV1/V3, ShuffleNetV2, SqueezeNet): state-dict keys and shapes, and output shapes, equal to
those recorded from Paddle 3.3.1; Paddle's own weights give Paddle's outputs; pretrained=True
is the clear error; the docstring examples run.

The fixtures under ``data/`` were made with real Paddle 3.3.1 by ``data/make_model_zoo_fixtures.py``
(its docstring says how to rerun it)."""

from __future__ import annotations

import doctest
import gzip
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.vision.models
from oar.errors import ArgumentError
from oar.nn.initializer import Constant, set_global_initializer
from oar.testing import sum_tolerance
from oar.vision import models

DATA = Path(__file__).parent / "data"
with gzip.open(DATA / "model_zoo_state_dicts.json.gz", "rt") as f:
    PADDLE = json.load(f)  # name -> {ctor, kwargs, input, output, state: [[key, shape], ...]} from Paddle 3.3.1

# Forward passes left out to keep the file fast: AlexNet's classifier needs 224x224 (its features
# are run at 64x64 as "alexnet_features"), and DenseNet-169/201/264 run the code of DenseNet-121
# and -161 with more layers (their keys and shapes are still checked).
SLOW_FORWARD = {"alexnet", "densenet169", "densenet201", "densenet264"}


@pytest.fixture
def cheap_init(monkeypatch):
    """Constant initial values: the shapes and keys do not depend on them, and random ones for
    AlexNet's 58M classifier weights take seconds. The models that set Paddle's uniform
    initializers in their ParamAttrs (which win over the global one) get a constant instead."""
    monkeypatch.setattr(oar.nn.initializer, "Uniform", lambda low=-1.0, high=1.0, name=None: Constant(0.01))
    set_global_initializer(Constant(0.01), Constant(0.0))
    yield
    set_global_initializer(None)


def build(name: str):
    entry = PADDLE[name]
    return getattr(models, entry["ctor"])(**entry["kwargs"])


@pytest.mark.parametrize("name", sorted(PADDLE))
def test_state_dict_keys_and_shapes_are_paddles(cheap_init, name):
    state = build(name).state_dict()
    assert [[key, list(value.shape)] for key, value in state.items()] == PADDLE[name]["state"]


@pytest.mark.parametrize("name", sorted(set(PADDLE) - SLOW_FORWARD))
def test_output_shapes_are_paddles(cheap_init, name):
    model = build(name).eval()
    with oar.no_grad():
        out = model(oar.rand(PADDLE[name]["input"]))
    shapes = [o.shape for o in out] if isinstance(out, tuple) else out.shape
    assert shapes == PADDLE[name]["output"]


def test_googlenet_returns_three_outputs_in_training_too(cheap_init):
    model = models.googlenet(num_classes=0)
    assert model.training
    out = model(oar.rand([1, 3, 96, 96]))
    assert isinstance(out, tuple) and [o.shape for o in out] == [[1, 1024, 1, 1], [1, 512, 1, 1], [1, 528, 1, 1]]


@pytest.mark.parametrize("name", ["squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x0_25"])
def test_paddle_weights_give_paddles_output(name):
    """Paddle's randomly initialized weights (batch-norm statistics drawn at random so they
    count), loaded with set_state_dict, give Paddle's eval-mode output on the same input."""
    with np.load(DATA / f"{name}_weights.npz") as data:
        model = getattr(models, str(data["ctor"]))(**json.loads(str(data["kwargs"])))
        state = {key[len("state/"):]: oar.to_tensor(data[key]) for key in data.files if key.startswith("state/")}
        x, expected = data["x"], data["y"]
    assert sorted(state) == sorted(model.state_dict())
    model.set_state_dict(state)
    model.eval()
    with oar.no_grad():
        got = model(oar.to_tensor(x)).numpy()
    assert got.shape == expected.shape
    # the longest sums are 3x3 convolutions over a few hundred channels, in another order than Paddle's
    rtol, atol = sum_tolerance("float32", terms=5000, scale=np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_constructor_errors():
    with pytest.raises(ArgumentError, match=r"SqueezeNet: version must be one of \['1.0', '1.1'\], got '1.2'"):
        models.SqueezeNet("1.2")
    with pytest.raises(ArgumentError, match="ShuffleNetV2: scale must be one of .* got 0.75"):
        models.ShuffleNetV2(scale=0.75)
    with pytest.raises(ArgumentError, match="ShuffleNetV2: act must be"):
        models.ShuffleNetV2(act="gelu")
    with pytest.raises(ArgumentError, match=r"DenseNet: layers must be one of \[121, 161, 169, 201, 264\], got 100"):
        models.DenseNet(layers=100)


def test_densenet_dropout_layers_are_paddles(cheap_init):
    model = models.densenet121(dropout=0.2, num_classes=0)
    layer = model.db_conv_2.conv2_1
    assert layer.dropout_func.p == 0.2 and layer.dropout_func.mode == "downscale_in_infer"
    assert [k for k in model.state_dict()] == [k for k in models.densenet121(num_classes=0).state_dict()]


NEW_CONSTRUCTORS = ["alexnet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264", "googlenet",
                    "inception_v3", "mobilenet_v1", "mobilenet_v3_small", "mobilenet_v3_large",
                    "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
                    "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish", "squeezenet1_0",
                    "squeezenet1_1"]


def test_exports():
    names = set(NEW_CONSTRUCTORS) | {"AlexNet", "DenseNet", "GoogLeNet", "InceptionV3", "MobileNetV1",
                                     "MobileNetV3Small", "MobileNetV3Large", "ShuffleNetV2", "SqueezeNet"}
    assert names <= set(models.__all__)
    for name in names:
        assert getattr(oar.vision, name) is getattr(models, name)  # Paddle re-exports them at paddle.vision


@pytest.mark.parametrize("module", ["_conv_norm", "alexnet", "densenet", "googlenet", "inceptionv3", "mobilenetv1",
                                    "mobilenetv3", "shufflenetv2", "squeezenet"])
def test_docstring_examples(module):
    # by name: ``oar.vision.models.alexnet`` is the constructor, which hides the module of that name
    result = doctest.testmod(importlib.import_module(f"oar.vision.models.{module}"), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
