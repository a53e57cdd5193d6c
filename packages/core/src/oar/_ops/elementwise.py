"""Elementwise ops: arithmetic, powers, math functions, rounding, comparisons, logic, bits, casts.

Each op is defined in adjacent lines: the ``Op`` (name, reference kernel, meta, traits, AMP
category), its gradient rule written with oar ops, and the public function.
"""

from __future__ import annotations

import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.inplace import apply_inplace
from oar._engine.op import AMP_FP32, AMP_PROMOTE, COMPLEX, NUMPY_OUT, Op
from oar._engine.registries import BACKENDS
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    binary_meta,
    binary_operands,
    bool_meta,
    broadcast_shapes,
    compare_meta,
    dispatch,
    float_meta,
    same_meta,
)
from oar._ops.creation import zeros_like
from oar._ops.indexing import nonzero
from oar._ops.reduction import unbroadcast
from oar.errors import ArgumentError, DTypeError, OarError

ELEMENTWISE = ("elementwise",)
BINARY = ("elementwise", "binary")
FUSIBLE = ("fusible",)  # elementwise fusion may chain the op (oar._graph.fusion)
NATIVE_FLOATS = (_dt.float16, _dt.float32, _dt.float64)  # bfloat16 computes in float32
INTS_AND_FLOATS = _dt.INT_DTYPES + NATIVE_FLOATS  # no bool
FLOATS_AND_COMPLEX = NATIVE_FLOATS + _dt.COMPLEX_DTYPES
INTS_AND_BOOL = (_dt.bool_,) + _dt.INT_DTYPES


def _call(op: Op, inputs: tuple, attrs: dict) -> Tensor:
    """``dispatch``, but a dtype without a kernel is explained by the op's meta (which names the
    argument and what it accepts) rather than by the kernel registry."""
    try:
        return dispatch(op, inputs, attrs)
    except DTypeError:
        try:
            op.meta(*(TensorMeta(tuple(t._data.shape), t.dtype) for t in inputs), **attrs)
        except OarError as better:
            raise better from None
        raise


def _unary(op: Op, x, **attrs) -> Tensor:
    return _call(op, (as_tensor(x, "x", op.name),), attrs)


def _binary(op: Op, x, y) -> Tensor:
    return _call(op, binary_operands(x, y, op.name), {})


def _require_numeric(op: str, arg: str, dtype: _dt.DType) -> None:
    if dtype.is_bool:
        raise DTypeError(f"{op}: {arg} must be an integer or floating tensor, got bool; cast it first")


def numeric_meta(op: str):
    """Meta of a unary op on integers and floats (not bool) whose output has the input's dtype."""

    def meta(x: TensorMeta, **attrs) -> TensorMeta:
        _require_numeric(op, "x", x.dtype)
        return x

    return meta


def numeric_binary_meta(op: str):
    """Meta of a broadcasting binary op on integers and floats (the promoted dtype is not bool)."""
    promote = binary_meta(op)

    def meta(x: TensorMeta, y: TensorMeta, **attrs) -> TensorMeta:
        out = promote(x, y)
        _require_numeric(op, "x and y", out.dtype)
        return out

    return meta


def bitwise_meta(op: str):
    """Meta of a bitwise op (one or two inputs): integer or bool tensors only."""
    promote = binary_meta(op)

    def meta(*inputs: TensorMeta, **attrs) -> TensorMeta:
        for arg, m in zip(("x", "y"), inputs):
            if m.dtype.is_floating:
                raise DTypeError(f"{op}: {arg} must be an integer or bool tensor, got {m.dtype.name}")
        return inputs[0] if len(inputs) == 1 else promote(*inputs)

    return meta


def zero_grad(g: Tensor, shape) -> Tensor:
    """The gradient of a piecewise-constant op (floor, sign, ...): zeros of the input's shape."""
    return unbroadcast(zeros_like(g), shape)


# -- cast ---------------------------------------------------------------------------------------
def _cast_kernel(x, dtype):
    target = _dt.get_dtype(dtype).np
    if x.dtype.kind == "c" and target.kind != "c":  # Paddle keeps the real part (numpy would warn)
        return x.real.astype(target)
    return x.astype(target)


def _cast_meta(x: TensorMeta, dtype) -> TensorMeta:
    return TensorMeta(x.shape, _dt.get_dtype(dtype))


cast_op = Op("cast", reference=_cast_kernel, meta=_cast_meta, traits=ELEMENTWISE + COMPLEX)


@cast_op.defgrad
def _cast_grad(ctx, g):
    source = _dt.NP_TO_DTYPE[ctx._inputs[0]._data.dtype]
    # real -> complex: the gradient's real part; complex -> real: a complex gradient with zero imaginary part
    return cast(g, source) if source.is_floating or source.is_complex else None


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


# -- complex conjugate (here, not in the complex family: the arithmetic gradients below need it) --
conj_op = Op("conj", reference=np.conj, meta=same_meta, traits=ELEMENTWISE + COMPLEX)


@conj_op.defgrad
def _conj_grad(ctx, g):
    return conj(g)


def conj(x, name=None) -> Tensor:
    """The complex conjugate, elementwise; a real tensor comes back unchanged (a copy).

    >>> import oar
    >>> oar.conj(oar.to_tensor([1 + 2j])).tolist()
    [(1-2j)]
    """
    return _unary(conj_op, x)


def conj_if_complex(x: Tensor) -> Tensor:
    """``conj(x)`` for a complex tensor, ``x`` itself otherwise: the gradients of holomorphic ops
    (multiply, divide, exp, ...) take the conjugate of their derivative, PyTorch's and Paddle's
    convention (the gradient of a real loss is dL/dRe + i dL/dIm)."""
    return conj(x) if x.dtype.is_complex else x


# -- device transfer ------------------------------------------------------------------------------
def _to_device_kernel(x, device):
    """A cpu array on the backend ``device``, through that backend's ``from_numpy``; a backend that
    holds its own memory registers a ``to_device`` kernel of its own for the way back."""
    return BACKENDS.get(device).from_numpy(x)


def _to_device_meta(x: TensorMeta, device) -> TensorMeta:
    return x


to_device_op = Op("to_device", traits=COMPLEX + ("transfer",), paddle=("Tensor.cpu", "Tensor.cuda", "Tensor.to"),
                  reference=_to_device_kernel, meta=_to_device_meta)


@to_device_op.defgrad
def _to_device_grad(ctx, g):
    return to_device(g, ctx.backend)


def to_device(x: Tensor, device: str) -> Tensor:
    """Copy ``x`` to the backend named ``device`` (keeps the tape)."""
    if device == x._backend:
        return x
    BACKENDS.get(device)  # a clear error when that backend is not installed
    out = dispatch(to_device_op, (x,), {"device": device})
    # The engine wraps an op's outputs on its inputs' device (the tape node keeps that one, where the
    # gradient goes back to); a transfer's output lives on the target.
    out._backend = device
    return out


# -- arithmetic ---------------------------------------------------------------------------------
add_op = Op("add", reference=np.add, meta=binary_meta("add"), traits=BINARY + FUSIBLE + COMPLEX, promote=_dt.PROMOTE_FLOATS_0D,
            lowerings={NUMPY_OUT: np.add})


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


def add_n(inputs, name=None) -> Tensor:
    """The elementwise sum of a list of tensors of one shape and dtype (Paddle's ``add_n``); a
    single tensor is returned as it is.

    >>> import oar
    >>> oar.add_n([oar.ones([2]), oar.ones([2]), oar.full([2], 3.0)]).tolist()
    [5.0, 5.0]
    """
    if isinstance(inputs, Tensor):
        return inputs
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ArgumentError(f"add_n: inputs must be a tensor or a non-empty list of tensors, got {inputs!r}")
    first = inputs[0]
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"add_n: inputs[{i}] is a {type(t).__name__}, expected a Tensor")
        if t._data.shape != first._data.shape or t.dtype != first.dtype:
            raise ArgumentError(f"add_n: inputs[{i}] has shape {list(t._data.shape)} and dtype {t.dtype.name}, "
                                f"but inputs[0] has {list(first._data.shape)} and {first.dtype.name} "
                                f"(add_n neither broadcasts nor promotes)")
    total = first
    for t in inputs[1:]:
        total = _binary(add_op, total, t)
    return total


# numpy refuses bool - bool (and so does Paddle): the meta says so in oar's terms
subtract_op = Op("subtract", reference=np.subtract, meta=numeric_binary_meta("subtract"), traits=BINARY + FUSIBLE + COMPLEX,
                 promote=_dt.PROMOTE_FLOATS_0D, lowerings={NUMPY_OUT: np.subtract})


@subtract_op.defgrad
def _subtract_grad(ctx, g):
    xs, ys = ctx.in_shapes
    return unbroadcast(g, xs), unbroadcast(-g, ys)


def subtract(x, y, name=None) -> Tensor:
    """``x - y`` with broadcasting."""
    return _binary(subtract_op, x, y)


multiply_op = Op("multiply", reference=np.multiply, meta=binary_meta("multiply"), traits=BINARY + FUSIBLE + COMPLEX,
                 promote=_dt.PROMOTE_FLOATS_0D, lowerings={NUMPY_OUT: np.multiply})


@multiply_op.defgrad
def _multiply_grad(ctx, g):
    # Each input's gradient reads only the other input, so ``y *= 2`` on a non-leaf stays
    # differentiable: the in-place change of x is no error when only x's gradient is needed.
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    gx = unbroadcast(g * conj_if_complex(ctx.input(1)), xs) if need_x else None
    gy = unbroadcast(g * conj_if_complex(ctx.input(0)), ys) if need_y else None
    return gx, gy


def multiply(x, y, name=None) -> Tensor:
    """``x * y`` with broadcasting."""
    return _binary(multiply_op, x, y)


divide_op = Op(
    "divide", reference=np.true_divide, meta=binary_meta("divide", result="float"), traits=BINARY + FUSIBLE,
    promote=_dt.PROMOTE_FLOATS_0D, float_only=True, dtypes=FLOATS_AND_COMPLEX, lowerings={NUMPY_OUT: np.true_divide},
)


@divide_op.defgrad
def _divide_grad(ctx, g):
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    y = conj_if_complex(ctx.input(1))
    gx = unbroadcast(g / y, xs) if need_x else None
    gy = unbroadcast(-g * conj_if_complex(ctx.out) / y, ys) if need_y else None
    return gx, gy


def divide(x, y, name=None) -> Tensor:
    """``x / y``, true division (integers divide as floats, as in Paddle 3)."""
    return _binary(divide_op, x, y)


def _neg_kernel(x):
    return np.negative(x) if x.dtype != np.bool_ else np.logical_not(x)


neg_op = Op("neg", reference=_neg_kernel, meta=same_meta, traits=ELEMENTWISE + FUSIBLE + COMPLEX, lowerings={NUMPY_OUT: np.negative})


@neg_op.defgrad
def _neg_grad(ctx, g):
    return -g


def neg(x, name=None) -> Tensor:
    """``-x``."""
    return _unary(neg_op, x)


def _check_int_divisor(op: str, y: np.ndarray) -> None:
    # numpy returns 0 for an integer division by zero; Paddle raises, and so does oar.
    if y.dtype.kind in "iu" and not np.all(y):
        raise ArgumentError(f"{op}: integer division by zero (y has a zero element); cast to a float dtype "
                            f"for inf/nan results")


def _floor_divide_kernel(x, y):
    _check_int_divisor("floor_divide", y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(x, y)


floor_divide_op = Op(
    "floor_divide", reference=_floor_divide_kernel, meta=numeric_binary_meta("floor_divide"), traits=BINARY,
    promote=_dt.PROMOTE_FLOATS_0D, dtypes=INTS_AND_FLOATS,
)


@floor_divide_op.defgrad
def _floor_divide_grad(ctx, g):
    xs, ys = ctx.in_shapes
    return zero_grad(g, xs), zero_grad(g, ys)  # piecewise constant


def floor_divide(x, y, name=None) -> Tensor:
    """``x // y``: the quotient rounded toward negative infinity, as Python's ``//``.

    Integer division by zero raises an ``ArgumentError`` (as Paddle does; numpy would give 0);
    float division by zero gives ``inf``/``nan``. The gradient is zero almost everywhere.

    >>> import oar
    >>> oar.floor_divide(oar.to_tensor([7, -7]), 2).tolist()
    [3, -4]
    """
    return _binary(floor_divide_op, x, y)


def _remainder_kernel(x, y):
    _check_int_divisor("remainder", y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.remainder(x, y)


remainder_op = Op(
    "remainder", reference=_remainder_kernel, meta=numeric_binary_meta("remainder"), traits=BINARY,
    promote=_dt.PROMOTE_FLOATS_0D, dtypes=INTS_AND_FLOATS,
)


@remainder_op.defgrad
def _remainder_grad(ctx, g):
    # x - floor(x / y) * y: d/dx = 1, d/dy = -floor(x / y)
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    gx = unbroadcast(g, xs) if need_x else None
    gy = unbroadcast(-g * floor_divide(ctx.input(0), ctx.input(1)), ys) if need_y else None
    return gx, gy


def remainder(x, y, name=None) -> Tensor:
    """``x % y`` with the sign of ``y``, as Python's ``%`` (``mod`` and ``floor_mod`` are aliases).

    Integer division by zero raises an ``ArgumentError``, as in Paddle.

    >>> import oar
    >>> oar.remainder(oar.to_tensor([7, -7]), 3).tolist()
    [1, 2]
    """
    return _binary(remainder_op, x, y)


mod = remainder
floor_mod = remainder


# -- powers ---------------------------------------------------------------------------------------
def _pow_kernel(x, factor):
    return np.asarray(np.power(x, factor)).astype(x.dtype, copy=False)


def _pow_meta(x: TensorMeta, factor) -> TensorMeta:
    _require_numeric("pow", "x", x.dtype)
    if x.dtype.is_integer and isinstance(factor, int) and factor < 0:
        raise ArgumentError(f"pow: an integer tensor ({x.dtype.name}) cannot be raised to the negative "
                            f"integer power {factor}; cast x to a float dtype first")
    return x


# float32 under autocast, as Paddle's black list keeps ``square`` (this op with factor=2)
pow_op = Op("pow", reference=_pow_kernel, meta=_pow_meta, traits=ELEMENTWISE + FUSIBLE, amp=AMP_FP32,
            dtypes=INTS_AND_FLOATS + _dt.COMPLEX_DTYPES)


@pow_op.defgrad
def _pow_grad(ctx, g):
    factor = ctx.attrs["factor"]
    if factor == 0:
        return zeros_like(g)
    (x,) = ctx.inputs
    return g * conj_if_complex(pow(x, factor - 1) * factor) if factor != 1 else g


def _elementwise_pow_kernel(x, y):
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise ArgumentError("pow: integer tensors cannot be raised to negative integer powers (y has a "
                            "negative element); cast x to a float dtype first")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(x, y)


elementwise_pow_op = Op(
    "elementwise_pow", paddle=("pow", "Tensor.pow", "Tensor.__pow__"), reference=_elementwise_pow_kernel, meta=numeric_binary_meta("pow"), traits=BINARY,
    promote=_dt.PROMOTE_FLOATS_0D, dtypes=INTS_AND_FLOATS,
)


@elementwise_pow_op.defgrad
def _elementwise_pow_grad(ctx, g):
    # d/dx x^y = y x^(y-1); d/dy x^y = x^y log(x), taken as 0 where x == 0 (the limit for y > 0).
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    x, y = ctx.input(0), ctx.input(1)
    gx = unbroadcast(g * y * pow(x, y - 1), xs) if need_x else None
    gy = None
    if need_y:
        safe_x = where(x == 0, 1.0, x)
        gy = unbroadcast(g * ctx.out * log(safe_x), ys)
    return gx, gy


def pow(x, y, name=None) -> Tensor:  # noqa: A001 - Paddle's name
    """``x ** y``: ``y`` is a Python number (the ``pow`` op) or a tensor (``elementwise_pow``).

    An integer tensor to a float power computes in float32, as Paddle's ``**`` does; an integer
    tensor to a negative integer power raises (cast it to float first).

    >>> import oar
    >>> oar.pow(oar.to_tensor([1.0, 2.0, 3.0]), 2).tolist()
    [1.0, 4.0, 9.0]
    >>> (2 ** oar.to_tensor([1, 2, 3])).tolist()
    [2, 4, 8]
    """
    if isinstance(x, Tensor) and isinstance(y, (int, float)) and not isinstance(y, bool):
        x = cast(x, _dt.scalar_operand_dtype(x.dtype, y))  # Paddle's tensor-scalar rule: int ** 0.5 is float32
        return _call(pow_op, (x,), {"factor": y if isinstance(y, int) else float(y)})
    return _binary(elementwise_pow_op, x, y)


def square(x, name=None) -> Tensor:
    """``x * x``, elementwise (the ``pow`` op with ``factor=2``)."""
    return _call(pow_op, (as_tensor(x, "x", "square"),), {"factor": 2})


def _float_unary(name: str, kernel, amp: str = AMP_PROMOTE, *, fusible: bool = False, into=None,
                 dtypes=NATIVE_FLOATS) -> Op:
    """A float op of one input; ``into``: its ufunc that writes into ``out=`` (the numpy_out lowering)."""
    return Op(name, reference=kernel, meta=float_meta, traits=ELEMENTWISE + (FUSIBLE if fusible else ()), amp=amp,
              float_only=True, dtypes=dtypes, lowerings={NUMPY_OUT: into} if into is not None else None)


sqrt_op = _float_unary("sqrt", np.sqrt, fusible=True, into=np.sqrt, dtypes=FLOATS_AND_COMPLEX)


@sqrt_op.defgrad
def _sqrt_grad(ctx, g):
    return g * 0.5 / conj_if_complex(ctx.out)


def sqrt(x, name=None) -> Tensor:
    """Square root, elementwise (``nan`` for negative inputs; integers compute in float32).

    >>> import oar
    >>> oar.sqrt(oar.to_tensor([4.0, 9.0])).tolist()
    [2.0, 3.0]
    """
    return _unary(sqrt_op, x)


def _rsqrt_kernel(x):
    with np.errstate(divide="ignore"):
        return np.asarray(1 / np.sqrt(x)).astype(x.dtype, copy=False)


rsqrt_op = _float_unary("rsqrt", _rsqrt_kernel, fusible=True)


@rsqrt_op.defgrad
def _rsqrt_grad(ctx, g):
    out = ctx.out
    return g * (out * out * out) * -0.5


def rsqrt(x, name=None) -> Tensor:
    """``1 / sqrt(x)``, elementwise."""
    return _unary(rsqrt_op, x)


def _reciprocal_kernel(x):
    with np.errstate(divide="ignore"):
        return np.reciprocal(x)


reciprocal_op = _float_unary("reciprocal", _reciprocal_kernel, fusible=True)


@reciprocal_op.defgrad
def _reciprocal_grad(ctx, g):
    out = ctx.out
    return -g * (out * out)


def reciprocal(x, name=None) -> Tensor:
    """``1 / x``, elementwise (integers compute in float32)."""
    return _unary(reciprocal_op, x)


# -- math functions -----------------------------------------------------------------------------
exp_op = Op("exp", reference=np.exp, meta=float_meta, traits=ELEMENTWISE + FUSIBLE, amp=AMP_FP32, float_only=True,
            dtypes=FLOATS_AND_COMPLEX, lowerings={NUMPY_OUT: np.exp})


@exp_op.defgrad
def _exp_grad(ctx, g):
    return g * conj_if_complex(ctx.out)


def exp(x, name=None) -> Tensor:
    """e to the power ``x``, elementwise.

    >>> import oar
    >>> f"{float(oar.exp(oar.to_tensor(1.0))):.4f}"
    '2.7183'
    """
    return _unary(exp_op, x)


log_op = _float_unary("log", np.log, AMP_FP32, fusible=True, into=np.log)


@log_op.defgrad
def _log_grad(ctx, g):
    (x,) = ctx.inputs
    return g / x


def log(x, name=None) -> Tensor:
    """Natural logarithm, elementwise."""
    return _unary(log_op, x)


log1p_op = _float_unary("log1p", np.log1p, AMP_FP32)


@log1p_op.defgrad
def _log1p_grad(ctx, g):
    (x,) = ctx.inputs
    return g / (x + 1.0)


def log1p(x, name=None) -> Tensor:
    """``log(1 + x)``, accurate for small ``x``."""
    return _unary(log1p_op, x)


log2_op = _float_unary("log2", np.log2, AMP_FP32)


@log2_op.defgrad
def _log2_grad(ctx, g):
    (x,) = ctx.inputs
    return g / (x * math.log(2.0))


def log2(x, name=None) -> Tensor:
    """Base-2 logarithm, elementwise."""
    return _unary(log2_op, x)


log10_op = _float_unary("log10", np.log10, AMP_FP32)


@log10_op.defgrad
def _log10_grad(ctx, g):
    (x,) = ctx.inputs
    return g / (x * math.log(10.0))


def log10(x, name=None) -> Tensor:
    """Base-10 logarithm, elementwise."""
    return _unary(log10_op, x)


tanh_op = _float_unary("tanh", np.tanh, fusible=True, into=np.tanh)


@tanh_op.defgrad
def _tanh_grad(ctx, g):
    out = ctx.out
    return g * (1.0 - out * out)


def tanh(x, name=None) -> Tensor:
    """Hyperbolic tangent, elementwise."""
    return _unary(tanh_op, x)


sin_op = _float_unary("sin", np.sin, fusible=True, into=np.sin)


@sin_op.defgrad
def _sin_grad(ctx, g):
    (x,) = ctx.inputs
    return g * cos(x)


def sin(x, name=None) -> Tensor:
    """Sine (radians), elementwise."""
    return _unary(sin_op, x)


cos_op = _float_unary("cos", np.cos, fusible=True, into=np.cos)


@cos_op.defgrad
def _cos_grad(ctx, g):
    (x,) = ctx.inputs
    return -g * sin(x)


def cos(x, name=None) -> Tensor:
    """Cosine (radians), elementwise."""
    return _unary(cos_op, x)


tan_op = _float_unary("tan", np.tan)


@tan_op.defgrad
def _tan_grad(ctx, g):
    out = ctx.out
    return g * (1.0 + out * out)


def tan(x, name=None) -> Tensor:
    """Tangent (radians), elementwise."""
    return _unary(tan_op, x)


def _sigmoid_kernel(x):
    # exp of a non-positive number only: no overflow for large |x|. The numerator, 1 where
    # x >= 0 and e where not, is max(e, x >= 0) (e <= 1): np.where over a sign pattern that
    # changes from element to element ran at a third of this speed.
    e = np.exp(-np.abs(x))
    denominator = e + 1
    np.maximum(e, x >= 0, out=e)
    e /= denominator
    return e


sigmoid_op = _float_unary("sigmoid", _sigmoid_kernel, fusible=True)


@sigmoid_op.defgrad
def _sigmoid_grad(ctx, g):
    out = ctx.out
    return g * (out * (1.0 - out))


def sigmoid(x, name=None) -> Tensor:
    """``1 / (1 + exp(-x))``, elementwise (``x.sigmoid()``; ``oar.nn.functional.sigmoid`` in nn).

    >>> import oar
    >>> oar._ops.elementwise.sigmoid(oar.to_tensor([0.0])).tolist()
    [0.5]
    """
    return _unary(sigmoid_op, x)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_kernel(x):
    # Vectorised erf to double precision: the positive series
    # erf(a) = 2/sqrt(pi) exp(-a^2) sum_n (2a^2)^n a / (1*3*...*(2n+1)) below 2, and the continued
    # fraction of erfc above (both converge to < 1e-15 in the fixed number of terms used).
    a = np.abs(x.astype(np.float64))
    out = np.empty_like(a)
    small = a < 2.0
    s = a[small]
    term, total, two_s2 = s.copy(), s.copy(), 2.0 * s * s
    for n in range(1, 31):
        term = term * two_s2 / (2 * n + 1)
        total += term
    out[small] = _TWO_OVER_SQRT_PI * np.exp(-s * s) * total
    b = a[~small]
    frac = np.zeros_like(b)
    with np.errstate(invalid="ignore"):
        for k in range(40, 0, -1):
            frac = (k / 2) / (b + frac)
        out[~small] = 1.0 - np.exp(-b * b) / math.sqrt(math.pi) / (b + frac)
    return np.copysign(out, x).astype(x.dtype, copy=False)


erf_op = _float_unary("erf", _erf_kernel, fusible=True)


@erf_op.defgrad
def _erf_grad(ctx, g):
    (x,) = ctx.inputs
    return g * (exp(-(x * x)) * _TWO_OVER_SQRT_PI)


def erf(x, name=None) -> Tensor:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise."""
    return _unary(erf_op, x)


# -- sign, abs, rounding -----------------------------------------------------------------------
def _numeric_unary(name: str, kernel, *, dtypes=INTS_AND_FLOATS, meta=None) -> Op:
    return Op(name, reference=kernel, meta=meta or numeric_meta(name), traits=ELEMENTWISE, dtypes=dtypes)


def _abs_meta(x: TensorMeta) -> TensorMeta:
    _require_numeric("abs", "x", x.dtype)
    return TensorMeta(x.shape, _dt.real_of(x.dtype))  # |complex64| is float32, as in Paddle


abs_op = Op("abs", reference=np.abs, meta=_abs_meta, traits=ELEMENTWISE + FUSIBLE,
            dtypes=INTS_AND_FLOATS + _dt.COMPLEX_DTYPES, lowerings={NUMPY_OUT: np.absolute})


@abs_op.defgrad
def _abs_grad(ctx, g):
    (x,) = ctx.inputs
    if x.dtype.is_complex:  # g * x / |x|, and 0 at x == 0 (the denominator is 1 there)
        return g * x / (ctx.out + cast(x == 0, ctx.out.dtype))
    return g * sign(x)


def abs(x, name=None) -> Tensor:  # noqa: A001 - Paddle's name
    """``|x|``, elementwise (``abs(x)`` on a tensor calls it); the gradient at 0 is 0."""
    return _unary(abs_op, x)


sign_op = _numeric_unary("sign", np.sign)


@sign_op.defgrad
def _sign_grad(ctx, g):
    return zeros_like(g)


def sign(x, name=None) -> Tensor:
    """-1, 0 or 1 by the sign of ``x``, in ``x``'s dtype (``nan`` stays ``nan``); zero gradient."""
    return _unary(sign_op, x)


def _integral_passthrough(fn):
    # floor/ceil/trunc of an integer is itself; numpy would return float64
    def kernel(x):
        return x.copy() if x.dtype.kind in "iu" else fn(x)

    return kernel


floor_op = _numeric_unary("floor", _integral_passthrough(np.floor))
ceil_op = _numeric_unary("ceil", _integral_passthrough(np.ceil))
trunc_op = _numeric_unary("trunc", _integral_passthrough(np.trunc))


def _round_kernel(x, decimals=0):
    return np.round(x, decimals)


round_op = _numeric_unary("round", _round_kernel)


def _zero_rule(ctx, g):
    return zeros_like(g)  # piecewise constant: Paddle's gradient is zeros, not "no gradient"


for _op in (floor_op, ceil_op, trunc_op, round_op):
    _op.defgrad(_zero_rule)


def floor(x, name=None) -> Tensor:
    """The largest integer not greater than ``x``, in ``x``'s dtype; zero gradient."""
    return _unary(floor_op, x)


def ceil(x, name=None) -> Tensor:
    """The smallest integer not less than ``x``, in ``x``'s dtype; zero gradient."""
    return _unary(ceil_op, x)


def trunc(input, name=None) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``x`` rounded toward zero, in ``x``'s dtype; zero gradient."""
    return _unary(trunc_op, input)


def round(x, decimals=0, name=None) -> Tensor:  # noqa: A001 - Paddle's name
    """``x`` rounded to ``decimals`` decimal places, halves to even (as Paddle 3 and numpy).

    >>> import oar
    >>> oar.round(oar.to_tensor([-0.5, 0.5, 1.5, 2.26])).tolist()
    [-0.0, 0.0, 2.0, 2.0]
    """
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise ArgumentError(f"round: decimals must be an int, got {type(decimals).__name__}")
    return _unary(round_op, x, decimals=int(decimals))


# -- clip, scale -----------------------------------------------------------------------------------
def _clip_kernel(x, min=None, max=None):  # noqa: A002
    lo, hi = min, max
    if x.dtype.kind in "iu":  # integer bounds inside x's range (numpy rejects out-of-range ints)
        info = np.iinfo(x.dtype)
        lo = None if lo is None or lo <= info.min else int(np.clip(math.ceil(lo), info.min, info.max))
        hi = None if hi is None or hi >= info.max else int(np.clip(math.floor(hi), info.min, info.max))
    if lo is None and hi is None:
        return x.copy()
    return np.asarray(np.clip(x, lo, hi)).astype(x.dtype, copy=False)


def _clip_meta(x: TensorMeta, min=None, max=None) -> TensorMeta:  # noqa: A002
    _require_numeric("clip", "x", x.dtype)
    if min is not None and max is not None and min > max:
        raise ArgumentError(f"clip: min ({min}) must not be greater than max ({max})")
    return x


clip_op = Op("clip", reference=_clip_kernel, meta=_clip_meta, traits=ELEMENTWISE + FUSIBLE, dtypes=INTS_AND_FLOATS)


@clip_op.defgrad
def _clip_grad(ctx, g):
    # Paddle's rule: the gradient passes where min < x < max (strictly), zero elsewhere.
    (x,) = ctx.inputs
    lo, hi = ctx.attrs["min"], ctx.attrs["max"]
    inside = None
    if lo is not None:
        inside = greater_than(x, lo)
    if hi is not None:
        below = less_than(x, hi)
        inside = below if inside is None else logical_and(inside, below)
    return g if inside is None else where(inside, g, 0.0)


def _bound(value, arg: str, op: str):
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value.size != 1:
            raise ArgumentError(f"{op}: {arg} must be a number or a 1-element tensor, got shape {value.shape}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"{op}: {arg} must be a number, got {type(value).__name__}")
    return float(value)


def clip(x, min=None, max=None, name=None) -> Tensor:  # noqa: A002 - Paddle's argument names
    """``x`` limited to ``[min, max]``; either bound may be None (unbounded).

    ``min``/``max`` may be numbers or 1-element tensors (read once, as constants). The gradient
    passes where ``min < x < max``. For an integer ``x``, float bounds round inward.

    >>> import oar
    >>> oar.clip(oar.to_tensor([-2.0, 0.5, 3.0]), min=-1.0, max=1.0).tolist()
    [-1.0, 0.5, 1.0]
    """
    x = as_tensor(x, "x", "clip")
    lo, hi = _bound(min, "min", "clip"), _bound(max, "max", "clip")
    if lo is not None and hi is not None and lo > hi:
        raise ArgumentError(f"clip: min ({lo}) must not be greater than max ({hi})")
    return _call(clip_op, (x,), {"min": lo, "max": hi})


def _scale_kernel(x, scale=1.0, bias=0.0, bias_after_scale=True):
    if x.dtype.kind in "iu":  # Paddle casts scale and bias to x's dtype (truncation)
        scale, bias = int(scale), int(bias)
    s, b = np.asarray(scale).astype(x.dtype), np.asarray(bias).astype(x.dtype)
    out = x * s + b if bias_after_scale else (x + b) * s
    return np.asarray(out).astype(x.dtype, copy=False)


scale_op = Op("scale", reference=_scale_kernel, meta=numeric_meta("scale"), traits=ELEMENTWISE + FUSIBLE,
              dtypes=INTS_AND_FLOATS)


@scale_op.lowering(NUMPY_OUT)
def _scale_into(x, out, scale=1.0, bias=0.0, bias_after_scale=True):
    s, b = x.dtype.type(scale), x.dtype.type(bias)
    first, second, (p, q) = (np.multiply, np.add, (s, b)) if bias_after_scale else (np.add, np.multiply, (b, s))
    y = np.asarray(first(x, p, out=out))  # a 0-d input gives a numpy scalar: make it an array
    return second(y, q, out=y)


@scale_op.defgrad
def _scale_grad(ctx, g):
    return scale(g, ctx.attrs["scale"])


_SCALE_ACTS = ("relu", "sigmoid", "tanh")


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None) -> Tensor:  # noqa: A002
    """``scale * x + bias`` (or ``scale * (x + bias)`` with ``bias_after_scale=False``).

    ``scale`` may be a 1-element tensor (read once, as a constant). For integer ``x`` the scale
    and bias are cast to ``x``'s dtype first, as in Paddle. ``act`` applies 'relu', 'sigmoid' or
    'tanh' afterwards.

    >>> import oar
    >>> oar.scale(oar.to_tensor([1.0, 2.0]), scale=2.0, bias=1.0).tolist()
    [3.0, 5.0]
    """
    x = as_tensor(x, "x", "scale")
    attrs = {
        "scale": _bound(scale, "scale", "scale"), "bias": _bound(bias, "bias", "scale"),
        "bias_after_scale": bool(bias_after_scale),
    }
    if act is not None and act not in _SCALE_ACTS:
        raise ArgumentError(f"scale: act must be None or one of {list(_SCALE_ACTS)}, got {act!r}")
    out = _call(scale_op, (x,), attrs)
    if act == "relu":
        out = maximum(out, 0)
    elif act == "sigmoid":
        out = sigmoid(out)
    elif act == "tanh":
        out = tanh(out)
    return out


# -- maximum, minimum, where -------------------------------------------------------------------
maximum_op = Op("maximum", reference=np.maximum, meta=binary_meta("maximum"), traits=BINARY + FUSIBLE, promote=True,
                lowerings={NUMPY_OUT: np.maximum})
minimum_op = Op("minimum", reference=np.minimum, meta=binary_meta("minimum"), traits=BINARY + FUSIBLE, promote=True,
                lowerings={NUMPY_OUT: np.minimum})


def _extremum_grad(first_wins):
    # The gradient goes to the winning input; a tie splits it in halves.
    def rule(ctx, g):
        xs, ys = ctx.in_shapes
        need_x, need_y = ctx.needs_input_grad
        x, y = ctx.input(0), ctx.input(1)
        wins, tie = first_wins(x, y), equal(x, y)
        half = g * 0.5
        gx = unbroadcast(where(wins, g, where(tie, half, 0.0)), xs) if need_x else None
        gy = unbroadcast(where(wins, 0.0, where(tie, half, g)), ys) if need_y else None
        return gx, gy

    return rule


maximum_op.defgrad(_extremum_grad(lambda x, y: greater_than(x, y)))
minimum_op.defgrad(_extremum_grad(lambda x, y: less_than(x, y)))


def maximum(x, y, name=None) -> Tensor:
    """The larger of ``x`` and ``y``, elementwise with broadcasting (``nan`` if either is ``nan``).

    >>> import oar
    >>> oar.maximum(oar.to_tensor([1.0, 5.0]), 3.0).tolist()
    [3.0, 5.0]
    """
    return _binary(maximum_op, x, y)


def minimum(x, y, name=None) -> Tensor:
    """The smaller of ``x`` and ``y``, elementwise with broadcasting (``nan`` if either is ``nan``)."""
    return _binary(minimum_op, x, y)


def _where_kernel(x, y, condition):
    return np.where(condition, x, y)


def _where_meta(x: TensorMeta, y: TensorMeta, condition: TensorMeta) -> TensorMeta:
    if not condition.dtype.is_bool:
        raise DTypeError(f"where: condition must be a bool tensor, got {condition.dtype.name}; "
                         f"compare it first (e.g. condition != 0)")
    shape = broadcast_shapes("where", condition.shape, x.shape, y.shape, names=["condition", "x", "y"])
    return TensorMeta(shape, _dt.PROMOTION_TABLE[x.dtype, y.dtype])


# Inputs (x, y, condition): the data comes first because it keys the kernel's dtype.
where_op = Op("where", reference=_where_kernel, meta=_where_meta, traits=ELEMENTWISE + COMPLEX, promote=True, nondiff_inputs=(2,))


@where_op.defgrad
def _where_grad(ctx, g):
    xs, ys, _ = ctx.in_shapes
    need_x, need_y, _ = ctx.needs_input_grad
    condition = ctx.input(2)
    gx = unbroadcast(where(condition, g, 0.0), xs) if need_x else None
    gy = unbroadcast(where(condition, 0.0, g), ys) if need_y else None
    return gx, gy, None


def where(condition, x=None, y=None, name=None):
    """``x`` where ``condition`` is True, else ``y``, with broadcasting of all three.

    ``x`` and ``y`` may be Python numbers. With neither given, ``where(condition)`` is
    ``nonzero(condition, as_tuple=True)``, as in Paddle. ``condition`` must be a bool tensor.

    >>> import oar
    >>> x = oar.to_tensor([-1.0, 2.0, -3.0])
    >>> oar.where(x > 0, x, 0.0).tolist()
    [0.0, 2.0, 0.0]
    """
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise ArgumentError("where: give both x and y, or neither (then where(condition) lists the "
                            "indices where condition is True)")
    condition = as_tensor(condition, "condition", "where")
    if not condition.dtype.is_bool:
        raise DTypeError(f"where: condition must be a bool tensor, got {condition.dtype.name}; "
                         f"compare it first (e.g. condition != 0)")
    x, y = binary_operands(x, y, "where")
    return _call(where_op, (x, y, condition), {})


# -- comparisons (no gradient) -----------------------------------------------------------------
def _comparison(name: str, kernel, traits=()) -> Op:
    return Op(name, reference=kernel, meta=compare_meta(name), traits=BINARY + ("nondiff",) + traits,
              promote=_dt.PROMOTE_FLOATS_0D)


equal_op = _comparison("equal", np.equal, COMPLEX)
not_equal_op = _comparison("not_equal", np.not_equal, COMPLEX)
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


# -- float classification (no gradient) ----------------------------------------------------------
def _classify(fn, integral: bool):
    def kernel(x):
        if x.dtype.kind in "biu":  # integers are finite, never nan or inf
            return np.full(x.shape, integral, np.bool_)
        return fn(x)

    return kernel


isnan_op = Op("isnan", reference=_classify(np.isnan, False), meta=bool_meta, traits=ELEMENTWISE + ("nondiff",) + COMPLEX)
isinf_op = Op("isinf", reference=_classify(np.isinf, False), meta=bool_meta, traits=ELEMENTWISE + ("nondiff",) + COMPLEX)
isfinite_op = Op("isfinite", reference=_classify(np.isfinite, True), meta=bool_meta, traits=ELEMENTWISE + ("nondiff",) + COMPLEX)


def isnan(x, name=None) -> Tensor:
    """Whether each element is ``nan``, a bool tensor."""
    return _unary(isnan_op, x)


def isinf(x, name=None) -> Tensor:
    """Whether each element is ``+inf`` or ``-inf``, a bool tensor."""
    return _unary(isinf_op, x)


def isfinite(x, name=None) -> Tensor:
    """Whether each element is neither ``nan`` nor infinite, a bool tensor."""
    return _unary(isfinite_op, x)


# -- logic and bits (no gradient) ------------------------------------------------------------------
def _into(out, result: Tensor, op: str) -> Tensor:
    """Paddle's ``out=`` argument: write ``result`` into ``out`` in place."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise ArgumentError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    return apply_inplace(out, result, name=op)


def _logical(name: str, kernel) -> Op:
    return Op(name, reference=kernel, meta=compare_meta(name), traits=BINARY + ("nondiff",), promote=True)


logical_and_op = _logical("logical_and", np.logical_and)
logical_or_op = _logical("logical_or", np.logical_or)
logical_xor_op = _logical("logical_xor", np.logical_xor)
logical_not_op = Op("logical_not", reference=np.logical_not, meta=bool_meta, traits=ELEMENTWISE + ("nondiff",))


def logical_and(x, y, out=None, name=None) -> Tensor:
    """``x and y`` elementwise (non-zero is True), a bool tensor."""
    return _into(out, _binary(logical_and_op, x, y), "logical_and")


def logical_or(x, y, out=None, name=None) -> Tensor:
    """``x or y`` elementwise (non-zero is True), a bool tensor."""
    return _into(out, _binary(logical_or_op, x, y), "logical_or")


def logical_xor(x, y, out=None, name=None) -> Tensor:
    """``x xor y`` elementwise (non-zero is True), a bool tensor."""
    return _into(out, _binary(logical_xor_op, x, y), "logical_xor")


def logical_not(x, out=None, name=None) -> Tensor:
    """``not x`` elementwise (non-zero is True), a bool tensor."""
    return _into(out, _unary(logical_not_op, x), "logical_not")


def _bitwise(name: str, kernel) -> Op:
    return Op(name, reference=kernel, meta=bitwise_meta(name), traits=BINARY + ("nondiff",), promote=True,
              dtypes=INTS_AND_BOOL)


bitwise_and_op = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or_op = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor_op = _bitwise("bitwise_xor", np.bitwise_xor)
bitwise_not_op = Op("bitwise_not", reference=np.invert, meta=bitwise_meta("bitwise_not"),
                    traits=ELEMENTWISE + ("nondiff",), dtypes=INTS_AND_BOOL)


def bitwise_and(x, y, out=None, name=None) -> Tensor:
    """``x & y`` on integer or bool tensors (logical and for bool)."""
    return _into(out, _binary(bitwise_and_op, x, y), "bitwise_and")


def bitwise_or(x, y, out=None, name=None) -> Tensor:
    """``x | y`` on integer or bool tensors (logical or for bool)."""
    return _into(out, _binary(bitwise_or_op, x, y), "bitwise_or")


def bitwise_xor(x, y, out=None, name=None) -> Tensor:
    """``x ^ y`` on integer or bool tensors."""
    return _into(out, _binary(bitwise_xor_op, x, y), "bitwise_xor")


def bitwise_not(x, out=None, name=None) -> Tensor:
    """``~x`` on integer or bool tensors (two's complement; logical not for bool)."""
    return _into(out, _unary(bitwise_not_op, x), "bitwise_not")


# -- operators ----------------------------------------------------------------------------------
def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    method.__name__ = f"reflected_{fn.__name__}"
    return method


OPS = [
    cast_op, conj_op, to_device_op, add_op, subtract_op, multiply_op, divide_op, floor_divide_op, remainder_op,
    neg_op, pow_op, elementwise_pow_op, sqrt_op, rsqrt_op, reciprocal_op, exp_op, log_op, log1p_op,
    log2_op, log10_op, tanh_op, sin_op, cos_op, tan_op, sigmoid_op, erf_op, abs_op, sign_op, floor_op,
    ceil_op, trunc_op, round_op, clip_op, scale_op, maximum_op, minimum_op, where_op, equal_op,
    not_equal_op, less_than_op, less_equal_op, greater_than_op, greater_equal_op, isnan_op, isinf_op,
    isfinite_op, logical_and_op, logical_or_op, logical_xor_op, logical_not_op, bitwise_and_op,
    bitwise_or_op, bitwise_xor_op, bitwise_not_op,
]
# ``sigmoid`` is a Tensor method and ``oar.nn.functional.sigmoid``, not ``paddle.sigmoid``.
__all__ = [
    "cast", "conj", "add", "add_n", "subtract", "multiply", "divide", "floor_divide", "remainder", "mod", "floor_mod",
    "neg", "pow", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "log1p", "log2", "log10",
    "tanh", "sin", "cos", "tan", "erf", "abs", "sign", "floor", "ceil", "trunc", "round", "clip",
    "scale", "maximum", "minimum", "where", "equal", "not_equal", "less_than", "less_equal",
    "greater_than", "greater_equal", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
]

METHODS = {
    "astype": cast, "cast": cast, "conj": conj, "add": add, "subtract": subtract, "multiply": multiply,
    "divide": divide, "floor_divide": floor_divide, "remainder": remainder, "mod": mod,
    "floor_mod": floor_mod, "neg": neg, "pow": pow, "square": square, "sqrt": sqrt, "rsqrt": rsqrt,
    "reciprocal": reciprocal, "exp": exp, "log": log, "log1p": log1p, "log2": log2, "log10": log10,
    "tanh": tanh, "sin": sin, "cos": cos, "tan": tan, "sigmoid": sigmoid, "erf": erf, "abs": abs,
    "sign": sign, "floor": floor, "ceil": ceil, "trunc": trunc, "round": round, "clip": clip,
    "scale": scale, "maximum": maximum, "minimum": minimum, "where": where, "equal": equal,
    "not_equal": not_equal, "less_than": less_than, "less_equal": less_equal,
    "greater_than": greater_than, "greater_equal": greater_equal, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "logical_not": logical_not, "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    # operators this family owns (+ - * / and comparisons are bound in tensor_methods)
    "__floordiv__": floor_divide, "__rfloordiv__": _reflected(floor_divide),
    "__mod__": remainder, "__rmod__": _reflected(remainder),
    "__pow__": pow, "__rpow__": _reflected(pow),
    "__and__": bitwise_and, "__rand__": _reflected(bitwise_and),
    "__or__": bitwise_or, "__ror__": _reflected(bitwise_or),
    "__xor__": bitwise_xor, "__rxor__": _reflected(bitwise_xor),
    "__invert__": bitwise_not, "__abs__": abs,
}
