"""Op cases of the assign family (assign, clone)."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")

CASES = [
    OpCase("assign", oar.assign, lambda x: x.copy(), [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("assign", oar.clone, lambda x: x.copy(), [rand(3, 1, 2)], id="clone"),
    OpCase("assign", lambda x: x.clone(), lambda x: x.copy(), [rand()], id="clone_method_0d"),
    OpCase("assign", oar.assign, lambda x: x.copy(), [rand(0, 4)], id="assign_empty"),
    OpCase("assign", oar.assign, lambda x: x.copy(), [ints(2, 5)], grad=False, id="assign_int64"),
    OpCase("assign", lambda x: oar.assign(x) * 2.0, lambda x: x * 2.0, [rand(4)], id="assign_in_graph"),
    OpCase("assign", oar.assign, lambda x: x.copy(), [np.array([True, False])], grad=False, id="assign_bool"),
]
