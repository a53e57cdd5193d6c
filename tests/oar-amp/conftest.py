"""The bundled digits (1,433 train / 364 test 28x28 images), for the AMP accuracy targets."""

from __future__ import annotations

import numpy as np
import pytest

import oar.vision.transforms as T
from oar.vision.datasets import Digits


def arrays(mode: str) -> tuple[np.ndarray, np.ndarray]:
    data = Digits(mode=mode, transform=T.Normalize(mean=[127.5], std=[127.5]))
    return np.stack([data[i][0] for i in range(len(data))]), np.asarray(data.labels).reshape(-1)


@pytest.fixture(scope="session")
def digits() -> dict[str, np.ndarray]:
    x_train, y_train = arrays("train")
    x_test, y_test = arrays("test")
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}
