"""Fixtures of the oar.Model and oar.callbacks tests."""

from __future__ import annotations

import pytest

import oar
from oar import nn
from oar.io import TensorDataset

from .helpers import SmallCNN, class_blobs


@pytest.fixture
def blobs() -> TensorDataset:
    x, y = class_blobs()
    return TensorDataset([oar.to_tensor(x), oar.to_tensor(y)])


@pytest.fixture
def make_model():
    """``make_model(optimizer='adam', lr=0.01, metrics=True, seed=0)``: a prepared Model over a SmallCNN."""

    def make(optimizer: str = "adam", lr=0.01, metrics: bool = True, seed: int = 0, network=None, **kwargs):
        oar.seed(seed)
        net = network if network is not None else SmallCNN()
        model = oar.Model(net, **kwargs)
        opt_cls = {"adam": oar.optimizer.Adam, "sgd": oar.optimizer.SGD}[optimizer]
        model.prepare(opt_cls(learning_rate=lr, parameters=net.parameters()), nn.CrossEntropyLoss(),
                      oar.metric.Accuracy() if metrics else None)
        return model

    return make
