"""Activation functions of oar.nn.functional, with Paddle's names, arguments and defaults.

The activations used on hot paths are ops with fused numpy kernels: ``relu``, ``gelu``,
``softmax`` and ``log_softmax`` also have ops for their backward (``relu_grad``, ...), so that a
faster kernel can replace either direction; the other elementwise activations are ops whose
gradient rules are written with oar ops. The rest (``relu6``, ``hardtanh``, ``prelu``, the
shrinks, ...) are compositions of core ops. Every gradient can be differentiated again.

Where oar differs from Paddle on purpose: ``gumbel_softmax(hard=True)`` passes the soft sample's
gradient straight through (Paddle's is zero).

>>> import oar
>>> import oar.nn.functional as F
>>> F.relu(oar.to_tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import math

import numpy as np

import oar
from oar import tanh
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import (
    AMP_FP32,
    NUMPY_OUT,
    Op,
    Tensor,
    TensorMeta,
    apply_inplace,
    as_tensor,
    axis_not_batch,
    check_target,
    dispatch,
    erf_op,
    fmt_shape,
    get_dtype,
    normalize_axis,
    sigmoid,
)

ELEMENTWISE = ("elementwise",)
FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_K = math.sqrt(2.0 / math.pi)  # the tanh approximation of gelu
_TANH_C = 0.044715
SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


# -- shared checks ----------------------------------------------------------------------------
def check_float(fn: str, x: Tensor, arg: str = "x") -> None:
    """Raise a DTypeError naming ``fn`` unless ``x`` is a floating tensor."""
    if not x.dtype.is_floating:
        raise DTypeError(f"{fn}: {arg} must be a floating tensor (float16, bfloat16, float32 or float64), "
                         f"got {x.dtype.name}; cast it first")


def float_input_meta(fn: str):
    """Meta of an elementwise activation: a floating input, an output like it."""

    def meta(x: TensorMeta, **attrs) -> TensorMeta:
        if not x.dtype.is_floating:
            raise DTypeError(f"{fn}: x must be a floating tensor (float16, bfloat16, float32 or float64), "
                             f"got {x.dtype.name}")
        return x

    return meta


def pair_meta(fn: str):
    """Meta of a backward op ``(saved, grad) -> grad``: both floating, of one shape and dtype."""

    def meta(saved: TensorMeta, g: TensorMeta, **attrs) -> TensorMeta:
        if not saved.dtype.is_floating or saved.dtype is not g.dtype:
            raise DTypeError(f"{fn}: expected two floating tensors of one dtype, got {saved.dtype.name} and {g.dtype.name}")
        if tuple(saved.shape) != tuple(g.shape):
            raise ShapeError(f"{fn}: the gradient has shape {fmt_shape(g.shape)}, expected {fmt_shape(saved.shape)}")
        return g

    return meta


def _activation(op: Op, x, fn: str, **attrs) -> Tensor:
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    return dispatch(op, (x,), attrs)


def _number(value, fn: str, arg: str) -> float:
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"{fn}: {arg} must be a number, got {type(value).__name__}")
    return float(value)


def _unary_op(name: str, kernel, *, fusible: bool = False, **kw) -> Op:
    """An activation op; ``fusible``: elementwise fusion may chain it (``oar._graph.fusion``)."""
    traits = ELEMENTWISE + (("fusible",) if fusible else ())
    return Op(name, reference=kernel, meta=float_input_meta(name), traits=traits, dtypes=FLOATS, **kw)


def _pair_op(name: str, kernel, **kw) -> Op:
    return Op(name, reference=kernel, meta=pair_meta(name), traits=ELEMENTWISE, dtypes=FLOATS, **kw)


def _as(out: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.asarray(out).astype(like.dtype, copy=False)


# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), for z >= 0 (Numerical Recipes' erfcc): a relative
# error below 1.2e-7 for every z, so float32 gets erf to a few ulp in one vectorised pass per term.
_ERFC_POLY = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418,
              0.37409196, 1.00002368, -1.26551223)


def erf_array(x: np.ndarray) -> np.ndarray:
    """The error function of a float array: double precision for float64 (core's kernel), the
    rational approximation above for float32."""
    if x.dtype == np.float64:
        return erf_op.reference(x)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(t, _ERFC_POLY[0])
    for c in _ERFC_POLY[1:]:
        poly *= t
        poly += c
    poly -= z * z
    np.exp(poly, out=poly)
    poly *= t  # erfc(|x|)
    return np.copysign(1.0 - poly, x).astype(x.dtype, copy=False)


# -- relu ---------------------------------------------------------------------------------------
def _relu_kernel(x):
    return _as(np.maximum(x, 0), x)


relu_op = _unary_op("relu", _relu_kernel, fusible=True)


@relu_op.lowering(NUMPY_OUT)
def _relu_into(x, out):
    return np.maximum(x, 0, out=out)


@relu_op.defgrad
def _relu_rule(ctx, g):
    return dispatch(relu_grad_op, (ctx.out, g), {})


def _relu_grad_kernel(out, g):
    return _as(np.where(out > 0, g, 0), g)


relu_grad_op = _pair_op("relu_grad", _relu_grad_kernel)


@relu_grad_op.defgrad
def _relu_grad_rule(ctx, gg):
    # Piecewise linear: no gradient to the saved output; the same mask for the incoming gradient.
    return None, dispatch(relu_grad_op, (ctx.input(0), gg), {})


def relu(x, name=None) -> Tensor:
    """``max(x, 0)``, elementwise.

    >>> import oar
    >>> oar.nn.functional.relu(oar.to_tensor([-2.0, 0.0, 3.0])).tolist()
    [0.0, 0.0, 3.0]
    """
    return _activation(relu_op, x, "relu")


def relu_(x, name=None) -> Tensor:
    """``relu`` in place: ``x`` holds the result (returns ``x``)."""
    from oar.ops import apply_inplace

    return apply_inplace(x, relu(x), name="relu_")


def relu6(x, name=None) -> Tensor:
    """``min(max(x, 0), 6)``; the gradient passes where ``0 < x < 6``.

    >>> import oar
    >>> oar.nn.functional.relu6(oar.to_tensor([-1.0, 3.0, 8.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    x = as_tensor(x, "x", "relu6")
    check_float("relu6", x)
    return oar.clip(x, 0.0, 6.0)


# -- gelu ---------------------------------------------------------------------------------------
def _gelu_kernel(x, approximate):
    if approximate:
        inner = _TANH_K * (x + _TANH_C * x * x * x)
        return _as(0.5 * x * (1.0 + np.tanh(inner)), x)
    return _as(0.5 * x * (1.0 + erf_array(x * _SQRT_HALF)), x)


gelu_op = _unary_op("gelu", _gelu_kernel, fusible=True)


@gelu_op.defgrad
def _gelu_rule(ctx, g):
    (x,) = ctx.inputs
    return dispatch(gelu_grad_op, (x, g), dict(ctx.attrs))


def _gelu_grad_kernel(x, g, approximate):
    if approximate:
        x2 = x * x
        t = np.tanh(_TANH_K * (x + _TANH_C * x2 * x))
        du = _TANH_K * (1.0 + 3.0 * _TANH_C * x2)
        return _as(g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du), g)
    cdf = 0.5 * (1.0 + erf_array(x * _SQRT_HALF))
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * x * x)
    return _as(g * (cdf + x * pdf), g)


gelu_grad_op = _pair_op("gelu_grad", _gelu_grad_kernel)


@gelu_grad_op.defgrad
def _gelu_grad_rule(ctx, gg):
    x, g = ctx.inputs
    approximate = ctx.attrs["approximate"]
    gx = None
    if ctx.needs_input_grad[0]:
        if approximate:  # gelu'' = (1 - t^2)(u' - x t u'^2 + x u''/2), u = k(x + c x^3)
            x2 = x * x
            t = oar.tanh((x + x2 * x * _TANH_C) * _TANH_K)
            du = (x2 * (3.0 * _TANH_C) + 1.0) * _TANH_K
            second = (1.0 - t * t) * (du - x * t * du * du + x2 * (3.0 * _TANH_K * _TANH_C))
        else:  # gelu'' = pdf(x) (2 - x^2)
            x2 = x * x
            second = oar.exp(x2 * -0.5) * _INV_SQRT_2PI * (2.0 - x2)
        gx = gg * g * second
    gg_out = dispatch(gelu_grad_op, (x, gg), {"approximate": approximate}) if ctx.needs_input_grad[1] else None
    return gx, gg_out


def gelu(x, approximate: bool = False, name=None) -> Tensor:
    """``x * Phi(x)`` with the exact normal CDF (``approximate=False``, Paddle's default) or its
    tanh approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    >>> import oar
    >>> [round(v, 4) for v in oar.nn.functional.gelu(oar.to_tensor([-1.0, 1.0])).tolist()]
    [-0.1587, 0.8413]
    """
    if not isinstance(approximate, (bool, np.bool_)):
        raise ArgumentError(f"gelu: approximate must be a bool, got {type(approximate).__name__}")
    return _activation(gelu_op, x, "gelu", approximate=bool(approximate))


# -- softmax / log_softmax ----------------------------------------------------------------------
def _softmax_kernel(x, axis):
    ax = axis if x.ndim else None
    shifted = x - np.max(x, axis=ax, keepdims=True)
    e = np.exp(shifted)
    e /= np.sum(e, axis=ax, keepdims=True)
    return _as(e, x)


def _softmax_meta(x: TensorMeta, axis) -> TensorMeta:
    if not x.dtype.is_floating:
        raise DTypeError(f"softmax: x must be a floating tensor, got {x.dtype.name}")
    return x


softmax_op = Op("softmax", reference=_softmax_kernel, meta=_softmax_meta, amp=AMP_FP32, dtypes=FLOATS,
                per_sample=axis_not_batch("axis"))


@softmax_op.defgrad
def _softmax_rule(ctx, g):
    return dispatch(softmax_grad_op, (ctx.out, g), dict(ctx.attrs))


def _softmax_grad_kernel(out, g, axis):
    ax = axis if out.ndim else None
    return _as(out * (g - np.sum(g * out, axis=ax, keepdims=True)), g)


softmax_grad_op = Op("softmax_grad", reference=_softmax_grad_kernel, meta=pair_meta("softmax_grad"), amp=AMP_FP32,
                     dtypes=FLOATS)


@softmax_grad_op.defgrad
def _softmax_grad_rule(ctx, c):
    # dx = y (g - sum(g y)):  d<c, dx>/dg = y (c - sum(c y)),  d<c, dx>/dy = c (g - sum(g y)) - g sum(c y)
    y, g = ctx.inputs
    axis = ctx.attrs["axis"]
    gy = gg = None
    if ctx.needs_input_grad[0]:
        gy = c * (g - oar.sum(g * y, axis=axis, keepdim=True)) - g * oar.sum(c * y, axis=axis, keepdim=True)
    if ctx.needs_input_grad[1]:
        gg = dispatch(softmax_grad_op, (y, c), {"axis": axis})
    return gy, gg


def _log_softmax_kernel(x, axis):
    ax = axis if x.ndim else None
    shifted = x - np.max(x, axis=ax, keepdims=True)
    return _as(shifted - np.log(np.sum(np.exp(shifted), axis=ax, keepdims=True)), x)


def _log_softmax_meta(x: TensorMeta, axis) -> TensorMeta:
    if not x.dtype.is_floating:
        raise DTypeError(f"log_softmax: x must be a floating tensor, got {x.dtype.name}")
    return x


log_softmax_op = Op("log_softmax", reference=_log_softmax_kernel, meta=_log_softmax_meta, amp=AMP_FP32, dtypes=FLOATS,
                    per_sample=axis_not_batch("axis"))


@log_softmax_op.defgrad
def _log_softmax_rule(ctx, g):
    return dispatch(log_softmax_grad_op, (ctx.out, g), dict(ctx.attrs))


def _log_softmax_grad_kernel(out, g, axis):
    ax = axis if out.ndim else None
    return _as(g - np.exp(out) * np.sum(g, axis=ax, keepdims=True), g)


log_softmax_grad_op = Op("log_softmax_grad", reference=_log_softmax_grad_kernel, meta=pair_meta("log_softmax_grad"),
                         amp=AMP_FP32, dtypes=FLOATS)


@log_softmax_grad_op.defgrad
def _log_softmax_grad_rule(ctx, c):
    # dx = g - p sum(g), p = exp(y):  d<c, dx>/dg = c - sum(c p),  d<c, dx>/dy = -c p sum(g)
    y, g = ctx.inputs
    axis = ctx.attrs["axis"]
    p = oar.exp(y)
    gy = -(c * p * oar.sum(g, axis=axis, keepdim=True)) if ctx.needs_input_grad[0] else None
    gg = c - oar.sum(c * p, axis=axis, keepdim=True) if ctx.needs_input_grad[1] else None
    return gy, gg


def _softmax_args(fn: str, x, axis, dtype):
    x = as_tensor(x, "x", fn)
    if dtype is not None:
        x = oar.cast(x, get_dtype(dtype))
    check_float(fn, x)
    return x, normalize_axis(axis, x.ndim, fn)


def softmax(x, axis: int = -1, dtype=None, name=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (computed stably); ``dtype`` casts ``x`` first.

    >>> import oar
    >>> oar.nn.functional.softmax(oar.to_tensor([1.0, 1.0])).tolist()
    [0.5, 0.5]
    """
    x, axis = _softmax_args("softmax", x, axis, dtype)
    return dispatch(softmax_op, (x,), {"axis": axis})


def log_softmax(x, axis: int = -1, dtype=None, name=None) -> Tensor:
    """``log(softmax(x))`` along ``axis``, computed stably; ``dtype`` casts ``x`` first.

    >>> import oar
    >>> [round(v, 4) for v in oar.nn.functional.log_softmax(oar.to_tensor([0.0, 0.0])).tolist()]
    [-0.6931, -0.6931]
    """
    x, axis = _softmax_args("log_softmax", x, axis, dtype)
    return dispatch(log_softmax_op, (x,), {"axis": axis})


# -- elementwise activations with composed gradients --------------------------------------------
def _silu_kernel(x):
    return _as(x * (0.5 + 0.5 * np.tanh(0.5 * x)), x)  # sigmoid(x) = (1 + tanh(x/2)) / 2: no overflow


silu_op = _unary_op("silu", _silu_kernel, fusible=True)


@silu_op.defgrad
def _silu_rule(ctx, g):
    (x,) = ctx.inputs
    s = sigmoid(x)
    return g * (s * (x * (1.0 - s) + 1.0))


def silu(x, inplace: bool = False, name=None) -> Tensor:
    """``x * sigmoid(x)`` (also called swish); with ``inplace`` the result is written into ``x``.

    >>> import oar
    >>> oar.nn.functional.silu(oar.to_tensor([0.0])).tolist()
    [0.0]
    """
    if inplace:
        return _write_into(x, "silu_", silu)
    return _activation(silu_op, x, "silu")


def swish(x, name=None) -> Tensor:
    """``x * sigmoid(x)``, the same function as ``silu`` (Paddle 3's swish has no beta)."""
    return _activation(silu_op, x, "swish")


def _leaky_relu_kernel(x, negative_slope):
    return _as(np.where(x > 0, x, x * negative_slope), x)


leaky_relu_op = _unary_op("leaky_relu", _leaky_relu_kernel, fusible=True)


@leaky_relu_op.defgrad
def _leaky_relu_rule(ctx, g):
    (x,) = ctx.inputs
    return oar.where(x > 0, g, g * ctx.attrs["negative_slope"])


def leaky_relu(x, negative_slope: float = 0.01, name=None) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x``.

    >>> import oar
    >>> oar.nn.functional.leaky_relu(oar.to_tensor([-2.0, 2.0]), 0.5).tolist()
    [-1.0, 2.0]
    """
    return _activation(leaky_relu_op, x, "leaky_relu", negative_slope=_number(negative_slope, "leaky_relu", "negative_slope"))


def _elu_kernel(x, alpha):
    return _as(np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))), x)


elu_op = _unary_op("elu", _elu_kernel, fusible=True)


@elu_op.defgrad
def _elu_rule(ctx, g):
    (x,) = ctx.inputs
    # exp of min(x, 0): the branch where() drops never overflows, so second derivatives stay finite.
    return oar.where(x > 0, g, g * (oar.exp(oar.minimum(x, 0.0)) * ctx.attrs["alpha"]))


def elu(x, alpha: float = 1.0, name=None) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    >>> import oar
    >>> round(oar.nn.functional.elu(oar.to_tensor([-1.0])).item(), 4)
    -0.6321
    """
    return _activation(elu_op, x, "elu", alpha=_number(alpha, "elu", "alpha"))


def _selu_kernel(x, scale, alpha):
    return _as(scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))), x)


selu_op = _unary_op("selu", _selu_kernel)


@selu_op.defgrad
def _selu_rule(ctx, g):
    (x,) = ctx.inputs
    scale, alpha = ctx.attrs["scale"], ctx.attrs["alpha"]
    return oar.where(x > 0, g * scale, g * (oar.exp(oar.minimum(x, 0.0)) * (scale * alpha)))


def selu(x, scale: float = SELU_SCALE, alpha: float = SELU_ALPHA, name=None) -> Tensor:
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))``; Paddle requires ``scale > 1`` and
    ``alpha >= 0``.

    >>> import oar
    >>> round(oar.nn.functional.selu(oar.to_tensor([1.0])).item(), 4)
    1.0507
    """
    scale, alpha = _number(scale, "selu", "scale"), _number(alpha, "selu", "alpha")
    if scale <= 1.0:
        raise ArgumentError(f"selu: scale must be greater than 1.0, got {scale}")
    if alpha < 0:
        raise ArgumentError(f"selu: alpha must be no less than 0, got {alpha}")
    return _activation(selu_op, x, "selu", scale=scale, alpha=alpha)


def celu(x, alpha: float = 1.0, name=None) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; ``alpha`` must not be 0.

    >>> import oar
    >>> oar.nn.functional.celu(oar.to_tensor([2.0])).tolist()
    [2.0]
    """
    alpha = _number(alpha, "celu", "alpha")
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0")
    x = as_tensor(x, "x", "celu")
    check_float("celu", x)
    negative = (oar.exp(oar.minimum(x, 0.0) / alpha) - 1.0) * alpha
    return oar.where(x > 0, x, negative)


def _hardsigmoid_kernel(x, slope, offset):
    return _as(np.clip(x * slope + offset, 0.0, 1.0), x)


hardsigmoid_op = _unary_op("hardsigmoid", _hardsigmoid_kernel, fusible=True)


@hardsigmoid_op.defgrad
def _hardsigmoid_rule(ctx, g):
    out = ctx.out
    inside = oar.logical_and(out > 0, out < 1)
    return oar.where(inside, g * ctx.attrs["slope"], 0.0)


def hardsigmoid(x, slope: float = 0.1666667, offset: float = 0.5, name=None) -> Tensor:
    """``clip(slope * x + offset, 0, 1)`` with Paddle's defaults ``slope=0.1666667, offset=0.5``.

    >>> import oar
    >>> oar.nn.functional.hardsigmoid(oar.to_tensor([-5.0, 0.0, 5.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return _activation(hardsigmoid_op, x, "hardsigmoid", slope=_number(slope, "hardsigmoid", "slope"),
                       offset=_number(offset, "hardsigmoid", "offset"))


def _hardswish_kernel(x):
    return _as(x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, x)


hardswish_op = _unary_op("hardswish", _hardswish_kernel, fusible=True)


@hardswish_op.defgrad
def _hardswish_rule(ctx, g):
    (x,) = ctx.inputs
    slope = oar.where(x < 3.0, (x * 2.0 + 3.0) / 6.0, 1.0)
    return oar.where(x > -3.0, g * slope, 0.0)


def hardswish(x, name=None) -> Tensor:
    """``x * min(max(x + 3, 0), 6) / 6``.

    >>> import oar
    >>> oar.nn.functional.hardswish(oar.to_tensor([-4.0, 0.0, 4.0])).tolist()
    [-0.0, 0.0, 4.0]
    """
    return _activation(hardswish_op, x, "hardswish")


def _softplus_kernel(x, beta, threshold):
    bx = x * beta
    soft = np.log1p(np.exp(np.minimum(bx, threshold))) / beta
    return _as(np.where(bx > threshold, x, soft), x)


softplus_op = _unary_op("softplus", _softplus_kernel, fusible=True, amp=AMP_FP32)


@softplus_op.defgrad
def _softplus_rule(ctx, g):
    (x,) = ctx.inputs
    bx = x * ctx.attrs["beta"]
    return oar.where(bx > ctx.attrs["threshold"], g, g * sigmoid(bx))


def softplus(x, beta: float = 1, threshold: float = 20, name=None) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``.

    >>> import oar
    >>> round(oar.nn.functional.softplus(oar.to_tensor([0.0])).item(), 4)
    0.6931
    """
    beta = _number(beta, "softplus", "beta")
    if beta == 0:
        raise ArgumentError("softplus: beta must not be 0")
    return _activation(softplus_op, x, "softplus", beta=beta, threshold=_number(threshold, "softplus", "threshold"))


def _softsign_kernel(x):
    return _as(x / (1.0 + np.abs(x)), x)


softsign_op = _unary_op("softsign", _softsign_kernel)


@softsign_op.defgrad
def _softsign_rule(ctx, g):
    (x,) = ctx.inputs
    return g / oar.square(oar.abs(x) + 1.0)


def softsign(x, name=None) -> Tensor:
    """``x / (1 + |x|)``.

    >>> import oar
    >>> oar.nn.functional.softsign(oar.to_tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    return _activation(softsign_op, x, "softsign")


_MISH_THRESHOLD = 20.0  # softplus inside mish is x itself beyond this, as in Paddle's kernel


def _mish_kernel(x):
    sp = np.where(x > _MISH_THRESHOLD, x, np.log1p(np.exp(np.minimum(x, _MISH_THRESHOLD))))
    return _as(x * np.tanh(sp), x)


mish_op = _unary_op("mish", _mish_kernel, fusible=True)


@mish_op.defgrad
def _mish_rule(ctx, g):
    (x,) = ctx.inputs
    t = oar.tanh(dispatch(softplus_op, (x,), {"beta": 1.0, "threshold": _MISH_THRESHOLD}))
    dsp = oar.where(x > _MISH_THRESHOLD, oar.ones_like(x), sigmoid(x))
    return g * (t + x * (1.0 - t * t) * dsp)


def mish(x, name=None) -> Tensor:
    """``x * tanh(softplus(x))``.

    >>> import oar
    >>> round(oar.nn.functional.mish(oar.to_tensor([1.0])).item(), 4)
    0.8651
    """
    return _activation(mish_op, x, "mish")


# -- compositions of core ops ---------------------------------------------------------------------
def _composed_input(fn: str, x) -> Tensor:
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    return x


def hardtanh(x, min: float = -1.0, max: float = 1.0, name=None) -> Tensor:  # noqa: A002 - Paddle's names
    """``x`` clipped to ``[min, max]``; the gradient passes where ``min < x < max``.

    >>> import oar
    >>> oar.nn.functional.hardtanh(oar.to_tensor([-3.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    lo, hi = _number(min, "hardtanh", "min"), _number(max, "hardtanh", "max")
    if lo > hi:
        raise ArgumentError(f"hardtanh: min ({lo}) must not be greater than max ({hi})")
    return oar.clip(_composed_input("hardtanh", x), lo, hi)


def hardshrink(x, threshold: float = 0.5, name=None) -> Tensor:
    """``x`` where ``|x| > threshold``, else 0.

    >>> import oar
    >>> oar.nn.functional.hardshrink(oar.to_tensor([-1.0, 0.3, 1.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    x = _composed_input("hardshrink", x)
    return oar.where(oar.abs(x) > _number(threshold, "hardshrink", "threshold"), x, 0.0)


def softshrink(x, threshold: float = 0.5, name=None) -> Tensor:
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0
    (``threshold >= 0``).

    >>> import oar
    >>> oar.nn.functional.softshrink(oar.to_tensor([-1.0, 0.3, 1.0])).tolist()
    [-0.5, 0.0, 0.5]
    """
    t = _number(threshold, "softshrink", "threshold")
    if t < 0:
        raise ArgumentError(f"softshrink: threshold must be no less than 0, got {t}")
    x = _composed_input("softshrink", x)
    return oar.where(x > t, x - t, oar.where(x < -t, x + t, 0.0))


def tanhshrink(x, name=None) -> Tensor:
    """``x - tanh(x)``."""
    x = _composed_input("tanhshrink", x)
    return x - oar.tanh(x)


def log_sigmoid(x, name=None) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably.

    >>> import oar
    >>> round(oar.nn.functional.log_sigmoid(oar.to_tensor([0.0])).item(), 4)
    -0.6931
    """
    x = _composed_input("log_sigmoid", x)
    return -dispatch(softplus_op, (-x,), {"beta": 1.0, "threshold": 20.0})


def thresholded_relu(x, threshold: float = 1.0, value: float = 0.0, name=None) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``.

    >>> import oar
    >>> oar.nn.functional.thresholded_relu(oar.to_tensor([0.5, 2.0])).tolist()
    [0.0, 2.0]
    """
    x = _composed_input("thresholded_relu", x)
    return oar.where(x > _number(threshold, "thresholded_relu", "threshold"), x,
                     _number(value, "thresholded_relu", "value"))


def glu(x, axis: int = -1, name=None) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` where ``a, b`` are the halves of ``x`` along ``axis``.

    >>> import oar
    >>> oar.nn.functional.glu(oar.ones([2, 4])).shape
    [2, 2]
    """
    x = _composed_input("glu", x)
    axis = normalize_axis(axis, x.ndim, "glu")
    if x.shape[axis] % 2:
        raise ShapeError(f"glu: the size of axis {axis} of x {x.shape} must be even, got {x.shape[axis]}")
    a, b = oar.split(x, 2, axis=axis)
    return a * sigmoid(b)


def maxout(x, groups: int, axis: int = 1, name=None) -> Tensor:
    """The maximum over each run of ``groups`` consecutive channels along ``axis`` (1 or -1):
    ``[N, C, H, W] -> [N, C / groups, H, W]``.

    >>> import oar
    >>> oar.nn.functional.maxout(oar.ones([1, 4, 2, 2]), groups=2).shape
    [1, 2, 2, 2]
    """
    x = _composed_input("maxout", x)
    if axis not in (1, -1, 3):
        raise ArgumentError(f"maxout: axis must be 1 or -1 (or 3 for a 4-d input), got {axis}")
    axis = normalize_axis(axis, x.ndim, "maxout")
    channels = x.shape[axis]
    if not isinstance(groups, int) or groups <= 0 or channels % groups:
        raise ArgumentError(f"maxout: groups must be a positive int that divides the {channels} channels of x "
                            f"(axis {axis}), got {groups!r}")
    shape = x.shape[:axis] + [channels // groups, groups] + x.shape[axis + 1:]
    return oar.max(oar.reshape(x, shape), axis=axis + 1)


_CHANNEL_LAST = ("NLC", "NHWC", "NDHWC")
_CHANNEL_FIRST = ("NC", "NCL", "NCHW", "NCDHW")


def prelu(x, weight, data_format: str = "NCHW", name=None) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has 1 element (shared), one per
    channel (the axis ``data_format`` names), or ``x.shape[1:]`` elements (one per element).

    >>> import oar
    >>> x = oar.to_tensor([[-2.0, 3.0]])
    >>> oar.nn.functional.prelu(x, oar.to_tensor([0.25])).tolist()
    [[-0.5, 3.0]]
    """
    x = _composed_input("prelu", x)
    weight = as_tensor(weight, "weight", "prelu")
    check_float("prelu", weight, "weight")
    if data_format not in _CHANNEL_FIRST + _CHANNEL_LAST:
        raise ArgumentError(f"prelu: data_format must be one of {list(_CHANNEL_FIRST + _CHANNEL_LAST)}, got {data_format!r}")
    if x.ndim < 1:
        raise ShapeError("prelu: x must have at least 1 dimension, got a 0-d tensor")
    if weight.dtype is not x.dtype:
        weight = oar.cast(weight, x.dtype)
    size = weight.size
    if size == 1:
        slope = oar.reshape(weight, [])
    else:
        channel_axis = x.ndim - 1 if data_format in _CHANNEL_LAST else min(1, x.ndim - 1)
        if size == x.shape[channel_axis]:
            shape = [1] * x.ndim
            shape[channel_axis] = size
            slope = oar.reshape(weight, shape)
        elif x.ndim > 1 and size == int(np.prod(x.shape[1:])):
            slope = oar.reshape(weight, [1] + x.shape[1:])
        else:
            raise ShapeError(f"prelu: weight has {size} elements; expected 1, the {x.shape[channel_axis]} channels "
                             f"of x {x.shape} (data_format {data_format!r}), or one per element of x.shape[1:]")
    return oar.where(x > 0, x, x * slope)


def logsigmoid(x, name=None) -> Tensor:
    """``log(sigmoid(x))``: Paddle 3.3's name for ``log_sigmoid``.

    >>> import oar
    >>> round(oar.nn.functional.logsigmoid(oar.to_tensor([0.0])).item(), 4)
    -0.6931
    """
    return log_sigmoid(x)


def rrelu(x, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, training: bool = True, name=None) -> Tensor:
    """The randomized leaky ReLU (Xu et al., 2015): ``x`` where ``x >= 0``, else ``a * x``, with
    ``a`` drawn uniformly from ``[lower, upper]`` for each element in training and ``(lower +
    upper) / 2`` in evaluation.

    >>> import oar
    >>> oar.nn.functional.rrelu(oar.to_tensor([-1.0, 2.0]), training=False).tolist()
    [-0.2291666716337204, 2.0]
    """
    fn = "rrelu"
    lower, upper = _number(lower, fn, "lower"), _number(upper, fn, "upper")
    if not 0.0 <= lower <= upper <= 1.0:
        raise ArgumentError(f"{fn}: expected 0 <= lower <= upper <= 1, got lower={lower}, upper={upper}")
    x = _composed_input(fn, x)
    if training:
        slope = oar.uniform(x.shape, dtype=x.dtype, min=lower, max=upper)
    else:
        slope = (lower + upper) / 2.0
    return oar.where(x >= 0, x, x * slope)


def gumbel_softmax(x, temperature: float = 1.0, hard: bool = False, axis: int = -1, name=None) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: ``softmax((x + g) / temperature)``
    with ``g`` standard Gumbel noise. With ``hard`` the result is the one-hot of its argmax.

    Unlike Paddle, whose hard gradient is zero (its backward reads the one-hot as the softmax),
    ``hard=True`` passes the gradient of the soft sample straight through, as the estimator of
    Jang et al. (2017) intends.

    >>> import oar
    >>> y = oar.nn.functional.gumbel_softmax(oar.zeros([2, 3]), hard=True)
    >>> y.sum(axis=-1).tolist()
    [1.0, 1.0]
    """
    fn = "gumbel_softmax"
    x = _composed_input(fn, x)
    temperature = _number(temperature, fn, "temperature")
    if not temperature > 0:
        raise ArgumentError(f"{fn}: temperature must be positive, got {temperature}")
    axis = normalize_axis(axis, x.ndim, fn)
    # -log(-log(u)) with u in (0, 1]: a u of 0 would give -inf noise; drawn in float32 at least
    noise_dtype = "float64" if x.dtype is oar.float64 else "float32"
    uniform = oar.uniform(x.shape, dtype=noise_dtype, min=float(np.finfo(noise_dtype).tiny), max=1.0)
    noise = -oar.log(-oar.log(uniform))
    soft = softmax((x + (noise if x.dtype is noise.dtype else oar.cast(noise, x.dtype))) / temperature, axis=axis)
    if not hard:
        return soft
    one_hot = oar.cast(oar.equal(soft, oar.max(soft, axis=axis, keepdim=True)), soft.dtype)
    first = oar.cast(oar.equal(oar.cumsum(one_hot, axis=axis), 1.0), soft.dtype) * one_hot  # one hit on ties
    return first - soft.detach() + soft


def swiglu(x, y=None, name=None) -> Tensor:
    """``silu(x) * y``; without ``y``, ``x`` is split in two halves along its last axis,
    ``silu(first) * second``.

    >>> import oar
    >>> [round(v, 4) for v in oar.nn.functional.swiglu(oar.to_tensor([1.0, 2.0, 3.0, 4.0])).tolist()]
    [2.1932, 7.0464]
    """
    fn = "swiglu"
    x = _composed_input(fn, x)
    if y is None:
        if x.ndim == 0 or x.shape[-1] % 2:
            raise ShapeError(f"swiglu: without y, the last axis of x must have an even size, got shape {x.shape}")
        x, y = oar.split(x, 2, axis=-1)
    else:
        y = as_tensor(y, "y", fn)
        check_float(fn, y, "y")
        if tuple(y.shape) != tuple(x.shape):
            raise ShapeError(f"swiglu: y shape {fmt_shape(y.shape)} must equal x shape {fmt_shape(x.shape)}")
    return silu(x) * y


# -- in-place variants: ``x`` holds the result (and is returned) ------------------------------
def _write_into(x, name: str, compute) -> Tensor:
    """``x`` becomes ``compute(x)``. The gradient rules of these activations read their input,
    which the write replaces, so a tensor on the tape is computed from a copy."""
    check_target(x, name)
    source = x if x.stop_gradient else x.clone()
    return apply_inplace(x, compute(source), name=name)


def elu_(x, alpha: float = 1.0, name=None) -> Tensor:
    """``elu`` in place."""
    return _write_into(x, "elu_", lambda t: elu(t, alpha))


def hardtanh_(x, min: float = -1.0, max: float = 1.0, name=None) -> Tensor:  # noqa: A002 - Paddle's names
    """``hardtanh`` in place."""
    return _write_into(x, "hardtanh_", lambda t: hardtanh(t, min, max))


def leaky_relu_(x, negative_slope: float = 0.01, name=None) -> Tensor:
    """``leaky_relu`` in place."""
    return _write_into(x, "leaky_relu_", lambda t: leaky_relu(t, negative_slope))


def softmax_(x, axis: int = -1, dtype=None, name=None) -> Tensor:
    """``softmax`` in place (``dtype``, if given, must be ``x``'s: the result is written into ``x``)."""
    return _write_into(x, "softmax_", lambda t: softmax(t, axis, dtype))


def tanh_(x, name=None) -> Tensor:
    """``tanh`` in place.

    >>> import oar
    >>> x = oar.to_tensor([0.0])
    >>> oar.nn.functional.tanh_(x) is x
    True
    """
    return _write_into(x, "tanh_", tanh)


def thresholded_relu_(x, threshold: float = 1.0, value: float = 0.0, name=None) -> Tensor:
    """``thresholded_relu`` in place."""
    return _write_into(x, "thresholded_relu_", lambda t: thresholded_relu(t, threshold, value))

OPS = [
    relu_op, relu_grad_op, gelu_op, gelu_grad_op, softmax_op, softmax_grad_op, log_softmax_op,
    log_softmax_grad_op, silu_op, leaky_relu_op, elu_op, selu_op, hardsigmoid_op, hardswish_op,
    softplus_op, softsign_op, mish_op,
]
__all__ = [
    "relu", "relu_", "relu6", "gelu", "softmax", "log_softmax", "silu", "swish", "leaky_relu", "elu",
    "selu", "celu", "hardsigmoid", "hardswish", "softplus", "softsign", "mish", "sigmoid", "tanh",
    "hardtanh", "hardshrink", "softshrink", "tanhshrink", "log_sigmoid", "thresholded_relu", "glu",
    "maxout", "prelu", "logsigmoid", "rrelu", "gumbel_softmax", "swiglu", "elu_", "hardtanh_", "leaky_relu_",
    "softmax_", "tanh_", "thresholded_relu_",
]
