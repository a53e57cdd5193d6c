"""Models whose inference program is per sample run large batches in parts on several threads
(``oar._graph.executor``): LeNet (convolutions with their pools, flatten, linears) and a small CNN
with batch norm and a softmax head give the results of one piece."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar._graph.executor as executor_module
from oar import nn
from oar.static import InputSpec
from oar.testing import sum_tolerance
from oar.vision.models import LeNet
from tests.core.static import _threads


@pytest.fixture
def two_threads(monkeypatch):
    # the split itself, also where a plugin's kernels would spread the batch on their own
    # (oar-numba's: tests/oar-numba/test_numba_split.py)
    monkeypatch.setattr(executor_module, "_spreads_batch", lambda kernel: False)
    with _threads.two_threads():
        yield _threads.record_parts(monkeypatch)


class SmallCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = self.pool(nn.functional.relu(self.bn(self.conv(x))))
        return nn.functional.softmax(self.fc(y.flatten(1)), axis=-1)


@pytest.mark.parametrize("make, shape", [(LeNet, [1, 28, 28]), (SmallCNN, [3, 16, 16])], ids=["lenet", "cnn_bn"])
def test_a_model_runs_its_batch_in_parts_with_one_pieces_results(two_threads, make, shape):
    oar.seed(0)
    model = make()
    model.eval()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((64, *shape)).astype(np.float32))
    with oar.no_grad():
        expected = model(x).numpy()
        static = oar.jit.to_static(model, input_spec=[InputSpec([None, *shape], "float32")])
        static(x[:2])  # captures
        got = static(x).numpy()
    assert two_threads == [2]
    # A part's GEMMs have fewer rows, so BLAS may block (and add) them differently: the same sums
    # in another order. LeNet's longest sum is its first linear's, 400 terms.
    rtol, atol = sum_tolerance("float32", terms=400, scale=np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
