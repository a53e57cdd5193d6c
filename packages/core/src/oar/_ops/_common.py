"""Shared pieces of op definitions: meta-function factories, operand conversion, unbroadcast."""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.dispatch import dispatch
from oar._engine.op import TensorMeta, fmt_shape
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor, to_tensor
from oar.errors import ArgumentError, ShapeError

__all__ = [
    "TensorMeta", "Tensor", "dispatch", "as_tensor", "scalar_like", "binary_operands",
    "broadcast_shapes", "same_meta", "float_meta", "binary_meta", "compare_meta", "bool_meta",
    "normalize_axis", "normalize_axes", "fmt_shape",
]


def as_tensor(value, name: str = "x", op: str = "") -> Tensor:
    """A Tensor as is; numpy arrays and Python data become tensors (no gradient)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic, list, tuple, int, float, bool, complex)):
        return to_tensor(value)
    raise ArgumentError(f"{op or 'op'}: argument {name!r} must be a Tensor, got {type(value).__name__}")


# numpy scalars count as Python numbers
_NUMBERS = (int, float, bool, complex, np.bool_, np.integer, np.floating, np.complexfloating)


def scalar_like(value, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor of the dtype Paddle computes ``tensor <op> number`` in.

    That dtype is ``scalar_operand_dtype``: the tensor's, except that a float number with an
    int or bool tensor gives float32 and an int number with a bool tensor gives int64.
    """
    if not isinstance(value, _NUMBERS):
        return as_tensor(value)
    target = _dt.scalar_operand_dtype(_dt.NP_TO_DTYPE[like._data.dtype], value)
    array = np.asarray(value, dtype=target.np)
    if like._backend != "cpu":
        array = BACKENDS.get(like._backend).from_numpy(array)
    return Tensor._wrap(array, like._backend, True, None, 0, None)


def _scalar_operands(tensor: Tensor, number) -> tuple[Tensor, Tensor]:
    """(tensor, number) both in the dtype of Paddle's Tensor-Scalar rule: as Paddle does, the
    tensor is cast first where the number is of a wider broad type (``int_tensor + 0.5``)."""
    scalar = scalar_like(number, tensor)
    if scalar._data.dtype != tensor._data.dtype:
        tensor = dispatch(OPS.get("cast"), (tensor,), {"dtype": _dt.NP_TO_DTYPE[scalar._data.dtype].name})
    return tensor, scalar


def binary_operands(x, y, op: str):
    """Two tensors from a binary call where either side may be a Python number or array.

    A number is Paddle's scalar operand: it adopts the tensor's dtype, or the tensor is cast to
    the number's broad type (``scalar_operand_dtype``), so the two come out of one dtype. An
    array becomes a tensor of its own dtype, which meets the other by the tensor-tensor rule.
    """
    if type(x) is Tensor or isinstance(x, Tensor):
        if isinstance(y, Tensor):
            return x, y
        if isinstance(y, _NUMBERS):
            return _scalar_operands(x, y)
        return x, as_tensor(y, "y", op)
    if isinstance(y, Tensor):
        if isinstance(x, _NUMBERS):
            y, x = _scalar_operands(y, x)
            return x, y
        return as_tensor(x, "x", op), y
    return as_tensor(x, "x", op), as_tensor(y, "y", op)


def broadcast_shapes(op: str, *shapes, names=None) -> tuple:
    """Broadcast shapes (``None`` = dynamic dim) or raise a ShapeError naming the op and inputs."""
    names = names or [f"input {i}" for i in range(len(shapes))]
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        dim = 1
        for s in shapes:
            d = s[axis] if -axis <= len(s) else 1
            if d == 1:
                continue
            if dim == 1 or dim is None:
                dim = d if dim == 1 else (d if d is not None else None)
            elif d is not None and d != dim:
                shown = " with ".join(f"{n} {fmt_shape(s)}" for n, s in zip(names, shapes))
                raise ShapeError(f"{op}: cannot broadcast {shown} (dimension {axis}: {dim} vs {d})")
        out.append(dim)
    return tuple(out)


def same_meta(x: TensorMeta, *rest, **attrs) -> TensorMeta:
    return x


def float_meta(x: TensorMeta, *rest, **attrs) -> TensorMeta:
    keeps = x.dtype.is_floating or x.dtype.is_complex
    return TensorMeta(x.shape, x.dtype if keeps else _dt.default_float())


def binary_meta(op: str, *, result: str = "promote"):
    """Meta of a broadcasting binary op: ``result`` is 'promote', 'bool' or 'float'."""

    def meta(x: TensorMeta, y: TensorMeta, **attrs) -> TensorMeta:
        shape = broadcast_shapes(op, x.shape, y.shape, names=["x", "y"])
        if result == "bool":
            return TensorMeta(shape, _dt.bool_)
        dtype = _dt.PROMOTION_TABLE[x.dtype, y.dtype]
        if result == "float" and not (dtype.is_floating or dtype.is_complex):
            dtype = _dt.default_float()
        return TensorMeta(shape, dtype)

    return meta


def compare_meta(op: str):
    return binary_meta(op, result="bool")


def bool_meta(x: TensorMeta, *rest, **attrs) -> TensorMeta:
    return TensorMeta(x.shape, _dt.bool_)


def normalize_axis(axis: int, ndim: int, op: str, name: str = "axis") -> int:
    """A non-negative axis, or an ArgumentError saying the valid range."""
    if isinstance(axis, Tensor):
        axis = int(axis)
    if not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"{op}: {name} must be an int, got {type(axis).__name__}")
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= axis <= hi:
        raise ArgumentError(f"{op}: {name}={axis} is out of range for a {ndim}-d tensor (expected {lo}..{hi})")
    return int(axis) % max(ndim, 1)


def normalize_axes(axis, ndim: int, op: str) -> tuple | None:
    """``None`` (all axes), an int, or a list/tuple of ints -> a sorted tuple of axes or None."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.tolist()
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    axes = tuple(sorted({normalize_axis(a, ndim, op) for a in axis}))
    return axes if axes or ndim == 0 else axes
