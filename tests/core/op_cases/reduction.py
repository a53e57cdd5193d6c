"""Op cases of the reduction family."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import rand

CASES = [
    OpCase("sum", oar.sum, np.sum, [rand(2, 3)], id="sum_all"),
    OpCase("sum", lambda x: oar.sum(x, axis=1, keepdim=True), lambda x: np.sum(x, axis=1, keepdims=True), [rand(2, 3, 4)], id="sum_keepdim"),
    OpCase("sum", lambda x: oar.sum(x, axis=[0, 2]), lambda x: np.sum(x, axis=(0, 2)), [rand(2, 3, 4)], id="sum_axes"),
    OpCase("sum", lambda x: oar.sum(x, axis=0), lambda x: np.sum(x, axis=0), [rand(0, 3)], id="sum_empty"),
    OpCase("mean", oar.mean, np.mean, [rand(2, 3)], id="mean_all"),
    OpCase("mean", lambda x: oar.mean(x, axis=-1), lambda x: np.mean(x, axis=-1), [rand(2, 3, 4)], id="mean_last"),
]
