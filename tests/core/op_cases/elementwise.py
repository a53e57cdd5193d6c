"""Op cases of the elementwise family."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import positive, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")

CASES = [
    OpCase("add", oar.add, np.add, [rand(2, 3), rand(3)], dtypes=ALL_FLOATS, id="add_broadcast"),
    OpCase("add", oar.add, np.add, [rand(), rand()], id="add_0d"),
    OpCase("add", oar.add, np.add, [rand(0, 3), rand(3)], id="add_empty"),
    OpCase("subtract", oar.subtract, np.subtract, [rand(4, 1), rand(1, 5)], dtypes=ALL_FLOATS),
    OpCase("multiply", oar.multiply, np.multiply, [rand(2, 3, 4), rand(3, 1)], dtypes=ALL_FLOATS),
    OpCase("divide", oar.divide, np.divide, [rand(2, 3), positive(2, 1)], dtypes=ALL_FLOATS),
    OpCase("neg", oar.neg, np.negative, [rand(3, 2)]),
    OpCase("exp", oar.exp, np.exp, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("log", oar.log, np.log, [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("tanh", oar.tanh, np.tanh, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("cast", lambda x: oar.cast(x, "float64"), lambda x: x.astype(np.float64), [rand(2, 3)], dtypes=("float32",)),
    OpCase("cast", lambda x: oar.cast(x, "int32"), lambda x: x.astype(np.int32), [rand(2, 3) * 10], grad=False, id="cast_to_int"),
    OpCase("equal", oar.equal, np.equal, [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])], grad=False),
    OpCase("not_equal", oar.not_equal, np.not_equal, [np.array([1.0, 2.0]), np.array([1.0, 0.0])], grad=False),
    OpCase("less_than", oar.less_than, np.less, [rand(2, 3), rand(3)], grad=False),
    OpCase("less_equal", oar.less_equal, np.less_equal, [rand(2, 3), rand(3)], grad=False),
    OpCase("greater_than", oar.greater_than, np.greater, [rand(2, 3), rand(3)], grad=False),
    OpCase("greater_equal", oar.greater_equal, np.greater_equal, [rand(2, 3), rand(3)], grad=False),
]
