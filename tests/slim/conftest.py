"""Shared data and models: the bundled digits (1,433 train / 364 test 28x28 images) and a LeNet
trained on them for 3 epochs (about a second), the float model every PTQ test starts from."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.vision.transforms as T
from oar import nn
from oar.static import InputSpec
from oar.vision.datasets import Digits
from oar.vision.models import LeNet

LENET_SPEC = [InputSpec([None, 1, 28, 28], "float32", "image")]


def arrays(mode: str) -> tuple[np.ndarray, np.ndarray]:
    data = Digits(mode=mode, transform=T.Normalize(mean=[127.5], std=[127.5]))
    return np.stack([data[i][0] for i in range(len(data))]), np.asarray(data.labels).reshape(-1)


@pytest.fixture(scope="session")
def digits() -> dict[str, np.ndarray]:
    x_train, y_train = arrays("train")
    x_test, y_test = arrays("test")
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


def batches(x: np.ndarray, y: np.ndarray, size: int, seed: int):
    order = np.random.default_rng(seed).permutation(len(x))
    for start in range(0, len(x) - size + 1, size):
        i = order[start:start + size]
        yield oar.to_tensor(x[i]), oar.to_tensor(y[i].reshape(-1, 1).astype(np.int64))


def train(model, forward, x, y, epochs: int, lr: float, seed: int = 0) -> list[float]:
    """Adam + cross-entropy over ``epochs`` of batches of 64; every step's loss."""
    model.train()
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        for xb, yb in batches(x, y, 64, seed + epoch):
            loss = loss_fn(forward(xb), yb)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
    return losses


def accuracy(model, x: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with oar.no_grad():
        return float((model(oar.to_tensor(x)).numpy().argmax(-1) == y).mean())


@pytest.fixture(scope="session")
def float_lenet(digits) -> LeNet:
    """LeNet trained 3 epochs on the digits (about 95% on the test images); tests copy it."""
    oar.seed(0)
    model = LeNet()
    train(model, model, digits["x_train"], digits["y_train"], epochs=3, lr=2e-3)
    model.eval()
    return model
