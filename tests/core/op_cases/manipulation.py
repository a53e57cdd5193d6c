"""Op cases of the manipulation family: ``view_dtype``, its one op (the rest compose other
families' ops and are tested in ``tests/core/test_manipulation.py``)."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand

CASES = [
    OpCase("view_dtype", lambda x: oar.view(x, "int32"), lambda x: x.astype(np.float32).view(np.int32),
           [rand(2, 4)], grad=False, dtypes=("float32",), id="view_dtype_float_as_int32"),
    OpCase("view_dtype", lambda x: oar.view(x, "uint8"), lambda x: np.ascontiguousarray(x).view(np.uint8),
           [rand(3)], grad=False, dtypes=("float64",), id="view_dtype_float_as_bytes"),
    OpCase("view_dtype", lambda x: oar.view(x, "int16"), lambda x: np.ascontiguousarray(x).view(np.int16),
           [ints(2, 3, dtype=np.int64)], grad=False, dtypes=("int64",), id="view_dtype_int64_as_int16"),
    OpCase("view_dtype", lambda x: oar.view(x, "float32"), lambda x: np.ascontiguousarray(x).view(np.float32),
           [ints(2, 2, high=1000, dtype=np.int32)], grad=False, dtypes=("int32",), id="view_dtype_same_item_size"),
]
