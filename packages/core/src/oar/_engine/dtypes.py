"""oar's dtypes and the one table of type promotion.

A ``DType`` wraps a numpy dtype (bfloat16 comes from ml_dtypes). Everything that accepts a
dtype accepts a ``DType``, its name as a string (``"float32"``), or a numpy dtype, as Paddle does.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from oar.errors import DTypeError


class DType:
    """A tensor element type, e.g. ``oar.float32``.

    >>> import oar
    >>> oar.float32.name, oar.float32.itemsize
    ('float32', 4)
    """

    __slots__ = ("name", "np", "itemsize", "is_floating", "is_integer", "is_bool", "kind")

    def __init__(self, name: str, np_dtype, kind: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.kind = kind  # "bool" < "int" < "float": the promotion categories
        self.is_floating = kind == "float"
        self.is_integer = kind == "int"
        self.is_bool = kind == "bool"

    def __repr__(self) -> str:
        return f"oar.{self.name}"

    def __str__(self) -> str:
        return f"oar.{self.name}"

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self is other
        if isinstance(other, str):
            return other == self.name or other == f"oar.{self.name}" or other == f"paddle.{self.name}"
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):  # copy/deepcopy of a DType returns the singleton
        return (get_dtype, (self.name,))


bool_ = DType("bool", np.bool_, "bool")
uint8 = DType("uint8", np.uint8, "int")
int8 = DType("int8", np.int8, "int")
int16 = DType("int16", np.int16, "int")
int32 = DType("int32", np.int32, "int")
int64 = DType("int64", np.int64, "int")
float16 = DType("float16", np.float16, "float")
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, "float")
float32 = DType("float32", np.float32, "float")
float64 = DType("float64", np.float64, "float")

ALL_DTYPES: tuple[DType, ...] = (
    bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
)
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
INT_DTYPES = (uint8, int8, int16, int32, int64)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({
    "float": float32, "double": float64, "half": float16, "int": int64, "long": int64,
    "bool_": bool_, "fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
})
# numpy dtype -> DType; the dispatcher keys kernels by numpy dtype, so this is a hot lookup.
NP_TO_DTYPE: dict[np.dtype, DType] = {d.np: d for d in ALL_DTYPES}

_default_dtype = float32


def get_dtype(dtype) -> DType:
    """Normalise a dtype given as DType, string, numpy dtype or Python type to a ``DType``."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        key = dtype.removeprefix("paddle.").removeprefix("oar.")
        found = _BY_NAME.get(key)
        if found is not None:
            return found
        raise DTypeError(f"unknown dtype {dtype!r}; expected one of {sorted(d.name for d in ALL_DTYPES)}")
    if dtype is bool:
        return bool_
    if dtype is int:
        return int64
    if dtype is float:
        return _default_dtype
    try:
        found = NP_TO_DTYPE.get(np.dtype(dtype))
    except TypeError:
        found = None
    if found is None:
        raise DTypeError(f"unsupported dtype {dtype!r}; expected one of {sorted(d.name for d in ALL_DTYPES)}")
    return found


def set_default_dtype(dtype) -> None:
    """Set the dtype that Python floats become (``float32`` by default), as ``paddle.set_default_dtype``."""
    global _default_dtype
    d = get_dtype(dtype)
    if not d.is_floating:
        raise DTypeError(f"set_default_dtype: expected a floating dtype, got {d.name}")
    _default_dtype = d


def get_default_dtype() -> str:
    """The name of the default floating dtype, e.g. ``'float32'``."""
    return _default_dtype.name


def default_float() -> DType:
    return _default_dtype


# ---------------------------------------------------------------------------------------------
# Type promotion: one table, computed once from Paddle's (and PyTorch's) rules.
# The result takes the highest category among the operands (bool < int < float); within that
# category, the operands of that category promote as numpy does, except that float16 with
# bfloat16 gives float32. So int64 + float16 -> float16 (not numpy's float64).
# ---------------------------------------------------------------------------------------------
_KIND_RANK = {"bool": 0, "int": 1, "float": 2}


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    ra, rb = _KIND_RANK[a.kind], _KIND_RANK[b.kind]
    if ra != rb:
        return a if ra > rb else b
    if {a, b} == {float16, bfloat16}:
        return float32
    if a is bfloat16 or b is bfloat16:
        return float64 if float64 in (a, b) else float32 if float32 in (a, b) else bfloat16
    return NP_TO_DTYPE[np.promote_types(a.np, b.np)]


PROMOTION_TABLE: dict[tuple[DType, DType], DType] = {
    (a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES
}


def promote_types(a, b) -> DType:
    """The dtype two operands of a binary op compute in: ``promote_types('int32', 'float16')``."""
    return PROMOTION_TABLE[get_dtype(a), get_dtype(b)]
