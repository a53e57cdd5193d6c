"""``oar.set_default_dtype`` reaches the parameters layers create (issue #24), as in Paddle, whose
``create_parameter`` without a dtype takes the global default: a float64 default gives float64
weights (and batch norm's running statistics), so a float64 input does not silently meet
float32 weights. Batch norm keeps float32 under a float16 default (Paddle's rule)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn


@pytest.fixture
def default_dtype():
    """``set(dtype)`` changes the default dtype for one test; the old one comes back after it."""
    before = oar.get_default_dtype()
    yield oar.set_default_dtype
    oar.set_default_dtype(before)


LAYERS = {
    "Linear": lambda: nn.Linear(4, 3),
    "Bilinear": lambda: nn.Bilinear(2, 3, 4),
    "Conv2D": lambda: nn.Conv2D(2, 3, 3),
    "Conv1DTranspose": lambda: nn.Conv1DTranspose(2, 3, 2),
    "Embedding": lambda: nn.Embedding(5, 3),
    "LSTM": lambda: nn.LSTM(4, 8),
    "GRUCell": lambda: nn.GRUCell(4, 8),
    "BatchNorm2D": lambda: nn.BatchNorm2D(3),
    "LayerNorm": lambda: nn.LayerNorm(4),
    "GroupNorm": lambda: nn.GroupNorm(2, 4),
    "InstanceNorm2D": lambda: nn.InstanceNorm2D(3),
    "MultiHeadAttention": lambda: nn.MultiHeadAttention(8, 2),
    "PReLU": lambda: nn.PReLU(),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_parameters_and_buffers_follow_the_default_dtype(name, default_dtype):
    default_dtype("float64")
    layer = LAYERS[name]()
    tensors = dict(layer.named_parameters()) | dict(layer.named_buffers())
    assert tensors
    assert {key: t.dtype.name for key, t in tensors.items()} == {key: "float64" for key in tensors}
    default_dtype("float32")
    layer = LAYERS[name]()
    assert {t.dtype.name for t in layer.parameters()} == {"float32"}


def test_a_float64_model_trains_on_float64_inputs(default_dtype):
    default_dtype("float64")
    net = nn.Sequential(nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 1, 6, 6)))  # float64
    y = net(x)
    assert y.dtype == oar.float64
    y.sum().backward()
    assert all(p.grad.dtype == oar.float64 for p in net.parameters())


def test_batch_norm_keeps_float32_under_a_float16_default(default_dtype):
    default_dtype("float16")
    bn = nn.BatchNorm1D(3)
    assert {t.dtype.name for t in (bn.weight, bn.bias, bn._mean, bn._variance)} == {"float32"}
    assert nn.Linear(2, 2).weight.dtype == oar.float16
    assert nn.BatchNorm(3).weight.dtype == oar.float32  # the legacy layer: its dtype argument, float32


def test_an_explicit_dtype_still_wins(default_dtype):
    default_dtype("float64")
    layer = nn.Layer(dtype="float32")
    assert layer.create_parameter([2]).dtype == oar.float32
    assert layer.create_parameter([2], dtype="float16").dtype == oar.float16
    assert nn.Linear(2, 2).to(dtype="float32").weight.dtype == oar.float32
