"""Op cases of the creation family: ``full_like`` (zeros_like, ones_like, full_like, empty_like).

The other creation functions (zeros, arange, eye, ...) are plain functions, not ops; they are
tested in ``tests/core/test_creation_random.py``.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")

CASES = [
    OpCase("full_like", lambda x: oar.full_like(x, 2.5), lambda x: np.full_like(x, 2.5), [rand(2, 3)],
           dtypes=ALL_FLOATS, grad=False),
    OpCase("full_like", lambda x: oar.full_like(x, 7, dtype="int32"), lambda x: np.full(x.shape, 7, np.int32),
           [rand(3)], grad=False, id="full_like_dtype"),
    OpCase("full_like", oar.zeros_like, np.zeros_like, [rand(2, 0)], grad=False, id="zeros_like_empty"),
    OpCase("full_like", oar.zeros_like, np.zeros_like, [ints(2, 3)], grad=False, id="zeros_like_int"),
    OpCase("full_like", lambda x: oar.ones_like(x, dtype="bool"), lambda x: np.ones(x.shape, bool), [rand()],
           grad=False, id="ones_like_0d_bool"),
    OpCase("full_like", oar.ones_like, np.ones_like, [rand(4, 2)], grad=False, id="ones_like"),
    # empty_like's values are unspecified: compare its shape
    OpCase("full_like", lambda x: oar.to_tensor(oar.empty_like(x).shape), lambda x: np.array(x.shape), [rand(2, 5)],
           grad=False, id="empty_like_shape"),
]
