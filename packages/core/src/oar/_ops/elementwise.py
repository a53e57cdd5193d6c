"""Elementwise ops: arithmetic, math functions, comparisons, logic, casts.

Each op is defined in adjacent lines: the ``Op`` (name, reference kernel, meta, traits, AMP
category), its gradient rule written with oar ops, and the public function.
"""

from __future__ import annotations

import numpy as np

from oar._core import dtypes as _dt
from oar._core.op import AMP_FP32, Op
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    binary_meta,
    binary_operands,
    compare_meta,
    dispatch,
    float_meta,
    same_meta,
    unbroadcast,
)

ELEMENTWISE = ("elementwise",)
BINARY = ("elementwise", "binary")
NATIVE_FLOATS = (_dt.float16, _dt.float32, _dt.float64)  # bfloat16 computes in float32


def _unary(op: Op, x, **attrs) -> Tensor:
    return dispatch(op, (as_tensor(x, "x", op.name),), attrs)


def _binary(op: Op, x, y) -> Tensor:
    return dispatch(op, binary_operands(x, y, op.name), {})


# -- cast ---------------------------------------------------------------------------------------
def _cast_kernel(x, dtype):
    return x.astype(_dt.get_dtype(dtype).np)


def _cast_meta(x: TensorMeta, dtype) -> TensorMeta:
    return TensorMeta(x.shape, _dt.get_dtype(dtype))


cast_op = Op("cast", reference=_cast_kernel, meta=_cast_meta, traits=ELEMENTWISE)


@cast_op.defgrad
def _cast_grad(ctx, g):
    source = _dt.NP_TO_DTYPE[ctx._inputs[0]._data.dtype]
    return cast(g, source) if source.is_floating else None


def cast(x, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (differentiable between float dtypes).

    >>> import oar
    >>> oar.cast(oar.to_tensor([1.7, -1.7]), "int32").tolist()
    [1, -1]
    """
    x = as_tensor(x, "x", "cast")
    target = _dt.get_dtype(dtype)
    if x._data.dtype == target.np:
        return x
    return dispatch(cast_op, (x,), {"dtype": target.name})


# -- device transfer ------------------------------------------------------------------------------
def _to_device_kernel(x, device):
    return x  # on cpu a transfer to cpu is the identity; backends register their own kernels


def _to_device_meta(x: TensorMeta, device) -> TensorMeta:
    return x


to_device_op = Op("to_device", reference=_to_device_kernel, meta=_to_device_meta)


@to_device_op.defgrad
def _to_device_grad(ctx, g):
    return to_device(g, ctx.backend)


def to_device(x: Tensor, device: str) -> Tensor:
    """Copy ``x`` to the backend named ``device`` (keeps the tape)."""
    from oar._core.dispatch import BACKENDS

    if device == x._backend:
        return x
    BACKENDS.get(device)  # a clear error when that backend is not installed
    return dispatch(to_device_op, (x,), {"device": device})


# -- arithmetic ---------------------------------------------------------------------------------
add_op = Op("add", reference=np.add, meta=binary_meta("add"), traits=BINARY, promote=True)


@add_op.defgrad
def _add_grad(ctx, g):
    xs, ys = ctx.in_shapes
    return unbroadcast(g, xs), unbroadcast(g, ys)


def add(x, y, name=None) -> Tensor:
    """``x + y`` with broadcasting.

    >>> import oar
    >>> oar.add(oar.to_tensor([1.0, 2.0]), 1.0).tolist()
    [2.0, 3.0]
    """
    return _binary(add_op, x, y)


subtract_op = Op("subtract", reference=np.subtract, meta=binary_meta("subtract"), traits=BINARY, promote=True)


@subtract_op.defgrad
def _subtract_grad(ctx, g):
    xs, ys = ctx.in_shapes
    return unbroadcast(g, xs), unbroadcast(-g, ys)


def subtract(x, y, name=None) -> Tensor:
    """``x - y`` with broadcasting."""
    return _binary(subtract_op, x, y)


multiply_op = Op("multiply", reference=np.multiply, meta=binary_meta("multiply"), traits=BINARY, promote=True)


@multiply_op.defgrad
def _multiply_grad(ctx, g):
    x, y = ctx.inputs
    return unbroadcast(g * y, x._data.shape), unbroadcast(g * x, y._data.shape)


def multiply(x, y, name=None) -> Tensor:
    """``x * y`` with broadcasting."""
    return _binary(multiply_op, x, y)


divide_op = Op(
    "divide", reference=np.true_divide, meta=binary_meta("divide", result="float"), traits=BINARY,
    promote=True, float_only=True, dtypes=NATIVE_FLOATS,
)


@divide_op.defgrad
def _divide_grad(ctx, g):
    x, y = ctx.inputs
    out = ctx.out
    return unbroadcast(g / y, x._data.shape), unbroadcast(-g * out / y, y._data.shape)


def divide(x, y, name=None) -> Tensor:
    """``x / y``, true division (integers divide as floats, as in Paddle 3)."""
    return _binary(divide_op, x, y)


def _neg_kernel(x):
    return np.negative(x) if x.dtype != np.bool_ else np.logical_not(x)


neg_op = Op("neg", reference=_neg_kernel, meta=same_meta, traits=ELEMENTWISE)


@neg_op.defgrad
def _neg_grad(ctx, g):
    return -g


def neg(x, name=None) -> Tensor:
    """``-x``."""
    return _unary(neg_op, x)


# -- math functions -----------------------------------------------------------------------------
exp_op = Op("exp", reference=np.exp, meta=float_meta, traits=ELEMENTWISE, amp=AMP_FP32, float_only=True, dtypes=NATIVE_FLOATS)


@exp_op.defgrad
def _exp_grad(ctx, g):
    return g * ctx.out


def exp(x, name=None) -> Tensor:
    """e to the power ``x``, elementwise.

    >>> import oar
    >>> round(float(oar.exp(oar.to_tensor(1.0))), 4)
    2.7183
    """
    return _unary(exp_op, x)


log_op = Op("log", reference=np.log, meta=float_meta, traits=ELEMENTWISE, amp=AMP_FP32, float_only=True, dtypes=NATIVE_FLOATS)


@log_op.defgrad
def _log_grad(ctx, g):
    (x,) = ctx.inputs
    return g / x


def log(x, name=None) -> Tensor:
    """Natural logarithm, elementwise."""
    return _unary(log_op, x)


tanh_op = Op("tanh", reference=np.tanh, meta=float_meta, traits=ELEMENTWISE, float_only=True, dtypes=NATIVE_FLOATS)


@tanh_op.defgrad
def _tanh_grad(ctx, g):
    out = ctx.out
    return g * (1.0 - out * out)


def tanh(x, name=None) -> Tensor:
    """Hyperbolic tangent, elementwise."""
    return _unary(tanh_op, x)


# -- comparisons (no gradient) -----------------------------------------------------------------
def _comparison(name: str, kernel) -> Op:
    return Op(name, reference=kernel, meta=compare_meta(name), traits=BINARY + ("nondiff",), promote=True)


equal_op = _comparison("equal", np.equal)
not_equal_op = _comparison("not_equal", np.not_equal)
less_than_op = _comparison("less_than", np.less)
less_equal_op = _comparison("less_equal", np.less_equal)
greater_than_op = _comparison("greater_than", np.greater)
greater_equal_op = _comparison("greater_equal", np.greater_equal)


def equal(x, y, name=None) -> Tensor:
    """``x == y`` elementwise, a bool tensor."""
    return _binary(equal_op, x, y)


def not_equal(x, y, name=None) -> Tensor:
    """``x != y`` elementwise, a bool tensor."""
    return _binary(not_equal_op, x, y)


def less_than(x, y, name=None) -> Tensor:
    """``x < y`` elementwise, a bool tensor."""
    return _binary(less_than_op, x, y)


def less_equal(x, y, name=None) -> Tensor:
    """``x <= y`` elementwise, a bool tensor."""
    return _binary(less_equal_op, x, y)


def greater_than(x, y, name=None) -> Tensor:
    """``x > y`` elementwise, a bool tensor."""
    return _binary(greater_than_op, x, y)


def greater_equal(x, y, name=None) -> Tensor:
    """``x >= y`` elementwise, a bool tensor."""
    return _binary(greater_equal_op, x, y)


OPS = [
    cast_op, to_device_op, add_op, subtract_op, multiply_op, divide_op, neg_op, exp_op, log_op,
    tanh_op, equal_op, not_equal_op, less_than_op, less_equal_op, greater_than_op, greater_equal_op,
]
__all__ = [
    "cast", "add", "subtract", "multiply", "divide", "neg", "exp", "log", "tanh", "equal",
    "not_equal", "less_than", "less_equal", "greater_than", "greater_equal",
]

METHODS = {
    "astype": cast, "cast": cast, "add": add, "subtract": subtract, "multiply": multiply,
    "divide": divide, "neg": neg, "exp": exp, "log": log, "tanh": tanh, "equal": equal,
    "not_equal": not_equal, "less_than": less_than, "less_equal": less_equal,
    "greater_than": greater_than, "greater_equal": greater_equal,
}
