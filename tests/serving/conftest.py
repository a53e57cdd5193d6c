"""Models saved as users save them, a model repository, and real server processes.

The shared repository holds models whose configs exercise one behaviour each, so that one
server process serves most tests:

- ``lenet`` (versions 1 and 2, default batching): the everyday model;
- ``lookup`` (an Embedding over int64 ids): an id out of range makes its kernel raise;
- ``slow`` (a stack of large Linears, slow on a request of many rows; no batching, one slot, a queue of 2): bursts overflow;
- ``hasty`` (``slow`` with a timeout of 0): every request times out before it runs;
- ``truncated`` (its program file cut in half) and ``foreign`` (not a saved model): fail to load;
- ``misconfigured`` (a negative max_batch_size in its config.json): refused with the reason.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import oar
from oar.serving import ServerProcess, write_repository
from oar.static import InputSpec
from oar.testing import sum_tolerance

LENET_SPEC = [InputSpec([None, 1, 28, 28], "float32", "image")]


def lenet_docs() -> oar.nn.Layer:
    """LeNet as Paddle's documentation writes it: 5x5 convolutions, the first padded by 2."""
    nn = oar.nn
    return nn.Sequential(
        nn.Conv2D(1, 6, 5, stride=1, padding=2), nn.ReLU(), nn.MaxPool2D(2, 2),
        nn.Conv2D(6, 16, 5, stride=1), nn.ReLU(), nn.MaxPool2D(2, 2),
        nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))


class Lookup(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = oar.nn.Embedding(8, 4)

    def forward(self, ids):
        return self.embedding(ids).sum(axis=1)


def save(layer, prefix: str, input_spec) -> str:
    layer.eval()
    oar.jit.save(layer, prefix, input_spec=input_spec)
    return prefix


@pytest.fixture(scope="session")
def saved(tmp_path_factory) -> dict[str, str]:
    """Prefixes of saved models: ``lenet``, ``lenet_v2`` (other weights), ``lookup``, ``slow``."""
    root = tmp_path_factory.mktemp("saved")
    oar.seed(7)
    prefixes = {
        "lenet": save(lenet_docs(), str(root / "lenet"), LENET_SPEC),
        "lenet_v2": save(lenet_docs(), str(root / "lenet_v2"), LENET_SPEC),
        "lookup": save(Lookup(), str(root / "lookup"), [InputSpec([None, 3], "int64", "ids")]),
        "slow": save(oar.nn.Sequential(*[oar.nn.Linear(512, 512) for _ in range(8)]), str(root / "slow"),
                     [InputSpec([None, 512], "float32", "x")]),
    }
    return prefixes


@pytest.fixture(scope="session")
def repository(saved, tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("models"))
    write_repository(saved["lenet"], root, "lenet", 1)
    write_repository(saved["lenet_v2"], root, "lenet", 2)
    write_repository(saved["lookup"], root, "lookup", 1, config={"max_queue_delay_ms": 20})
    write_repository(saved["slow"], root, "slow", 1,
                     config={"max_batch_size": 0, "max_concurrency": 1, "max_queue_size": 2})
    write_repository(saved["slow"], root, "hasty", 1, config={"max_batch_size": 0, "timeout_ms": 0})
    truncated = write_repository(saved["lenet"], root, "truncated", 1)
    with open(os.path.join(truncated, "model.json"), "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.truncate(size // 2)
    write_repository(saved["lenet"], root, "misconfigured", 1)
    with open(os.path.join(root, "misconfigured", "config.json"), "w") as f:
        json.dump({"max_batch_size": -1}, f)
    foreign = os.path.join(root, "foreign", "1")
    os.makedirs(foreign)
    with open(os.path.join(foreign, "model.json"), "w") as f:
        json.dump({"format": "onnx", "graph": []}, f)
    shutil.copyfile(saved["lenet"] + ".pdiparams", os.path.join(foreign, "model.pdiparams"))
    return root


@pytest.fixture(scope="module")
def server(repository):
    """One server over the shared repository, for a test module."""
    process = ServerProcess(repository)
    try:
        process.start()
        yield process
    finally:
        code = process.stop()
        assert code == 0, f"the server exited with {code}:\n{process.log()}"


def assert_close(got, expected, terms: int = 400) -> None:
    """Two runs of the same model, whose sums may be blocked differently (another batch size, a
    batch split over threads): ``oar.testing.sum_tolerance`` for ``terms``-long sums."""
    expected = np.asarray(expected)
    rtol, atol = sum_tolerance("float32", terms, float(np.abs(expected).max()))
    np.testing.assert_allclose(np.asarray(got, dtype=expected.dtype).reshape(expected.shape), expected,
                               rtol=rtol, atol=atol)


def lenet_input(batch: int = 1, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((batch, 1, 28, 28), dtype=np.float32)
