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

    __slots__ = ("name", "np", "itemsize", "is_floating", "is_integer", "is_bool", "is_complex", "kind")

    def __init__(self, name: str, np_dtype, kind: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.kind = kind  # "bool" < "int" < "float" < "complex": the promotion categories
        self.is_floating = kind == "float"  # real floating types only; complex is its own kind
        self.is_integer = kind == "int"
        self.is_bool = kind == "bool"
        self.is_complex = kind == "complex"

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
complex64 = DType("complex64", np.complex64, "complex")
complex128 = DType("complex128", np.complex128, "complex")

REAL_DTYPES: tuple[DType, ...] = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128)
ALL_DTYPES: tuple[DType, ...] = REAL_DTYPES + COMPLEX_DTYPES
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
INT_DTYPES = (uint8, int8, int16, int32, int64)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({
    "float": float32, "double": float64, "half": float16, "int": int64, "long": int64,
    "bool_": bool_, "fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
    "cfloat": complex64, "cdouble": complex128,
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
# Type promotion: Paddle 3's rules (docs/core.md, "Type promotion", says where each comes from).
#
# PROMOTION_TABLE is Paddle's ``promoteTypes`` lookup (paddle/phi/common/type_promotion.h): the
# highest category among the operands (bool < int < float), within it numpy's widening, except
# that float16 with bfloat16 gives float32; so int64 with float16 gives float16. Which operands
# may be promoted at all is a second question, answered by ``promoted_dtype``: tensors of two
# dtypes meet only when both are floating (Paddle raises otherwise), and a Python number adopts
# the tensor's dtype (``scalar_operand_dtype``). Complex is the exception, as in Paddle 3.3.1:
# a complex tensor promotes with a tensor (or number) of any dtype, to complex128 where either
# side is float64 or complex128 and to complex64 otherwise.
# ---------------------------------------------------------------------------------------------
_KIND_RANK = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def complex_of(d: DType) -> DType:
    """The complex dtype with ``d``'s precision: complex128 for float64 and complex128, else
    complex64 (Paddle: float64 with complex64 is complex128, any other real type complex64)."""
    return complex128 if d in (float64, complex128) else complex64


def real_of(d: DType) -> DType:
    """The real dtype of a complex dtype's parts (float32 or float64); other dtypes as they are."""
    return {complex64: float32, complex128: float64}.get(d, d)


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.is_complex or b.is_complex:  # Paddle promotes any dtype with a complex one
        return complex128 if complex128 in (a, b) or float64 in (a, b) else complex64
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
    """Paddle's promotion table: the dtype ``a`` and ``b`` compute in where they may meet.

    Whether two *tensors* of these dtypes may meet at all is ``promoted_dtype``'s question
    (Paddle 3 mixes only floating tensors).

    >>> import oar
    >>> oar.promote_types('float16', 'float32'), oar.promote_types('int32', 'float16')
    (oar.float32, oar.float16)
    """
    return PROMOTION_TABLE[get_dtype(a), get_dtype(b)]


# What an op does with tensor inputs of different dtypes, declared as ``Op(promote=...)``:
PROMOTE_FLOATS = "floats"  # floating inputs promote to the wider; any other mix raises DTypeError
PROMOTE_FLOATS_0D = "floats_0d"  # as PROMOTE_FLOATS, and a 0-d tensor operand counts as a scalar
SAME_DTYPE = "same"  # no promotion: inputs of different dtypes raise DTypeError
PROMOTION_RULES = (PROMOTE_FLOATS, PROMOTE_FLOATS_0D, SAME_DTYPE)


def _broad_type(d: DType) -> str | None:
    """Paddle's broad types for 0-d operands: ints, floats; bool is of neither."""
    return "int" if d.is_integer else "float" if d.is_floating else None


def _mix_error(op: str, rule: str, dtypes, names) -> DTypeError:
    target = dtypes[0]
    for d in dtypes[1:]:
        target = PROMOTION_TABLE[target, d]
    shown = ", ".join(f"{n} is {d.name}" for n, d in zip(names, dtypes))
    cast = [n for n, d in zip(names, dtypes) if d is not target]
    fix = " and ".join(f"{n}.astype('{target.name}')" for n in cast)
    if rule == SAME_DTYPE:
        why = f"{op} does no type promotion (as in Paddle): its inputs need one dtype"
    else:
        why = ("Paddle 3 promotes tensors of different dtypes only between floating types "
               "(float16, bfloat16, float32, float64), and raises for this mix")
    return DTypeError(f"{op}: {shown}; {why}. Cast explicitly first, e.g. {fix}")


def promoted_dtype(op: str, rule: str, dtypes, ndims=None, names=None) -> DType:
    """The dtype that tensor inputs of ``dtypes`` compute in under ``rule``, or a DTypeError.

    ``rule`` is an op's ``promote`` (``PROMOTE_FLOATS``, ``PROMOTE_FLOATS_0D``, ``SAME_DTYPE``);
    ``ndims`` the inputs' ranks, which ``PROMOTE_FLOATS_0D`` reads: there, as in Paddle, a 0-d
    tensor beside an n-d one of its broad type (int with int, float with float) takes the n-d
    one's dtype, and of different broad types (or both 0-d) the two follow the promotion table
    without raising.

    >>> import oar
    >>> from oar.ops import PROMOTE_FLOATS, promoted_dtype
    >>> promoted_dtype("add", PROMOTE_FLOATS, [oar.float16, oar.float32])
    oar.float32
    >>> try:
    ...     promoted_dtype("add", PROMOTE_FLOATS, [oar.int64, oar.float32])
    ... except oar.errors.DTypeError as err:
    ...     print(str(err).split(";")[0], "...", str(err).split("e.g. ")[1])
    add: x is int64, y is float32 ... x.astype('float32')
    """
    dtypes = list(dtypes)
    first = dtypes[0]
    if all(d is first for d in dtypes[1:]):
        return first
    if rule != SAME_DTYPE and any(d.is_complex for d in dtypes):
        # Paddle promotes any dtype (0-d or not) with a complex tensor: float64 and complex64 give
        # complex128, every other mix the complex operand's dtype.
        out = first
        for d in dtypes[1:]:
            out = PROMOTION_TABLE[out, d]
        return out
    names = names or (["x", "y"] if len(dtypes) == 2 else [f"x[{i}]" for i in range(len(dtypes))])
    if rule == PROMOTE_FLOATS_0D and ndims is not None and len(dtypes) == 2 and 0 in ndims:
        a, b = dtypes
        if _broad_type(a) is not None and _broad_type(a) == _broad_type(b) and list(ndims) != [0, 0]:
            return b if ndims[0] == 0 else a
        return PROMOTION_TABLE[a, b]
    if rule != SAME_DTYPE and all(d.is_floating for d in dtypes):
        out = first
        for d in dtypes[1:]:
            out = PROMOTION_TABLE[out, d]
        return out
    raise _mix_error(op, rule, dtypes, names)


def scalar_operand_dtype(tensor_dtype: DType, scalar) -> DType:
    """The dtype a tensor and a Python number compute in (Paddle's Tensor-Scalar rule).

    The number adopts the tensor's dtype when both are of one broad type (a bool number goes
    with any tensor); otherwise an int number makes a bool tensor int64 and a float number makes
    an int or bool tensor float32. Paddle casts to float32 here whatever the default dtype.

    >>> import oar
    >>> from oar.ops import scalar_operand_dtype
    >>> scalar_operand_dtype(oar.float16, 2.5), scalar_operand_dtype(oar.int32, 2.5)
    (oar.float16, oar.float32)
    """
    if isinstance(scalar, (bool, np.bool_)):
        return tensor_dtype
    if isinstance(scalar, (int, np.integer)):
        return int64 if tensor_dtype.is_bool else tensor_dtype
    if isinstance(scalar, (complex, np.complexfloating)):  # x * 1j: Paddle's complex of x's precision
        return complex_of(tensor_dtype)
    return tensor_dtype if tensor_dtype.is_floating or tensor_dtype.is_complex else float32
