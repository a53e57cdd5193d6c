"""Small networks and data for the oar.Model and oar.callbacks tests."""

from __future__ import annotations

import numpy as np

import oar
from oar import nn


class SmallCNN(nn.Layer):
    """A LeNet-shaped network small enough for fast tests: [N, 1, 8, 8] -> [N, classes]."""

    def __init__(self, num_classes: int = 3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2))
        self.fc = nn.Linear(4 * 4 * 4, num_classes)

    def forward(self, x):
        return self.fc(oar.flatten(self.features(x), 1))


def class_blobs(n: int = 48, num_classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Learnable images: each class a fixed random 8x8 template plus noise; labels int64 [n, 1]."""
    rng = np.random.default_rng(seed)
    templates = rng.normal(0.0, 1.0, (num_classes, 1, 8, 8)).astype(np.float32)
    labels = np.arange(n) % num_classes
    x = templates[labels] + 0.5 * rng.normal(0.0, 1.0, (n, 1, 8, 8)).astype(np.float32)
    return x, labels.reshape(-1, 1).astype(np.int64)


def weights(layer: nn.Layer) -> dict[str, np.ndarray]:
    """A copy of every parameter and buffer of ``layer``, by structured name."""
    return {k: v.numpy().copy() for k, v in layer.state_dict().items()}
