"""Launching a Triton kernel on ``DeviceArray`` arguments, and what kernels share.

``launch(kernel, grid, *args, **constexprs)`` hands each ``DeviceArray`` to Triton as a ``Pointer``
and every other argument as it is (Python ints and floats; numpy scalars must be converted first,
Triton rejects them). Grids are tuples of ints.

``TRITON_DTYPES`` maps numpy dtypes to Triton's, for ``tl.constexpr`` dtype arguments (the type a
kernel computes in: float16 and bfloat16 compute in float32, see ``compute_dtype``; Triton's
interpreter does bfloat16 arithmetic wrongly, so a kernel must never compute in it).
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray, Pointer
from oar_triton.driver import interpreting

from oar.ops import get_dtype

BFLOAT16 = get_dtype("bfloat16").np
INTERPRETING = interpreting()

TRITON_DTYPES = {
    np.dtype(np.float16): tl.float16,
    BFLOAT16: tl.bfloat16,
    np.dtype(np.float32): tl.float32,
    np.dtype(np.float64): tl.float64,
    np.dtype(np.int8): tl.int8,
    np.dtype(np.int16): tl.int16,
    np.dtype(np.int32): tl.int32,
    np.dtype(np.int64): tl.int64,
    np.dtype(np.uint8): tl.uint8,
    np.dtype(np.bool_): tl.int1,
}
HALF = (np.dtype(np.float16), BFLOAT16)


def compute_dtype(np_dtype) -> tl.dtype:
    """The Triton type a kernel computes values of ``np_dtype`` in: float32 for the half types."""
    dtype = np.dtype(np_dtype)
    return tl.float32 if dtype in HALF else TRITON_DTYPES[dtype]


def launch(kernel, grid, *args, **constexprs) -> None:
    """Run ``kernel`` over ``grid`` (a tuple of ints); ``DeviceArray`` arguments become pointers."""
    args = [Pointer(a) if type(a) is DeviceArray else a for a in args]
    if INTERPRETING:  # masked-off lanes hold whatever was in memory: numpy must not warn about them
        with np.errstate(all="ignore"):
            kernel[grid](*args, **constexprs)
    else:
        kernel[grid](*args, **constexprs)


def cdiv(a: int, b: int) -> int:
    return triton.cdiv(a, b)
