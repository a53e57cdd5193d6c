"""Op cases of the shape family."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import rand

CASES = [
    OpCase("reshape", lambda x: oar.reshape(x, [3, -1]), lambda x: x.reshape(3, -1), [rand(2, 3, 2)]),
    OpCase("reshape", lambda x: oar.reshape(x, [0, 6]), lambda x: x.reshape(2, 6), [rand(2, 3, 2)], id="reshape_zero_copies_dim"),
    OpCase("broadcast_to", lambda x: oar.broadcast_to(x, [4, 2, 3]), lambda x: np.broadcast_to(x, (4, 2, 3)), [rand(2, 1)]),
]
