"""Special functions and the rest of the elementwise math: inverse and hyperbolic trigonometry, gamma
functions and their kin, Bessel functions, and the binary ops Paddle 3 adds (atan2, hypot, ...).

Each op is defined in adjacent lines as in ``elementwise``: the ``Op`` with its numpy reference
kernel, its gradient rule written with oar ops, then the public function. Functions that are a
few existing ops (``lerp``, ``nan_to_num``, ``multigammaln``, ``ldexp``, ``frac``, ``stanh``, ...)
are composed, so their gradients come from their parts. The in-place variants (``acos_``,
``lgamma_``, ``gcd_``, ...) are the out-of-place function plus ``apply_inplace``, as in ``inplace``.

There is no scipy: the special functions are numpy code, every one computed in float64 (float32
and the half types compute through it and round once):

- ``lgamma``: ``math.lgamma`` per element (correctly rounded to a few ulp).
- ``digamma`` and ``polygamma``: the recurrence ``psi(x) = psi(x + 1) - 1/x`` (and its derivatives)
  up to ``x >= 10 + 2n``, then the asymptotic (Bernoulli) series; ``x < 1/2`` by the reflection
  formula with the n-th derivative of ``cot`` as a polynomial in ``cot``. Relative error about
  1e-14 away from the poles (checked for n <= 20).
- ``erfinv``: Giles' (2010) single-precision approximation, then two Newton steps on ``erf``:
  about 1e-15 absolute error.
- ``i0``, ``i0e``, ``i1``, ``i1e``: the power series (all terms positive, so no cancellation) for
  ``|x| <= 30``, and the asymptotic series of ``exp(-x) I_v(x)`` beyond, whose error there is
  below 1e-20: about 1e-15 relative.
- ``gammainc``/``gammaincc``: the series of P for ``y < x + 1``, Lentz's continued fraction of Q
  otherwise (Numerical Recipes 6.2), each to a relative 1e-15 of its sum, times the prefactor
  ``exp(-y + x log y - lgamma(x))``, whose rounding grows with ``x``: about 1e-12 relative for
  ``x`` up to 1e3. A tiny P is computed, not flushed to 0 as Paddle's kernel does.

Where oar differs from Paddle 3.3.1:

- ``erfinv`` of ``|x| > 1`` is ``nan`` (Paddle's CPU kernel gives ``+-inf``).
- ``logaddexp(-inf, -inf)`` is ``-inf`` and ``logaddexp(inf, inf)`` is ``inf`` (numpy's; Paddle: ``nan``).
- ``gammainc(0, y)`` is 1 for ``y > 0`` (the limit; Paddle: 0), and ``gammaincc`` accordingly 0.
- ``frexp`` of ``inf``/``nan`` gives the exponent 0 (C's ``frexp``; Paddle: 1 and ``nan``).
- ``gcd``/``lcm`` take integer tensors only (Paddle also runs a float loop); ``multigammaln``
  takes an integer ``p`` only; ``gammaln`` and ``sinc`` of an integer tensor compute in float32
  (Paddle refuses them); the binary functions (``hypot``, ``fmax``, the shifts, ...) accept a
  Python number for ``y`` (Paddle: tensors only).
- ``lerp`` differentiates in ``weight`` too (Paddle's rule gives ``weight`` no gradient).
"""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.inplace import inplace_variant as _inplace
from oar._engine.op import AMP_FP32, AMP_PROMOTE, Op
from oar._ops._common import Tensor, TensorMeta, as_tensor, binary_meta, binary_operands, bool_meta, float_meta
from oar._ops.creation import zeros_like
from oar._ops.elementwise import (
    BINARY,
    ELEMENTWISE,
    INTS_AND_FLOATS,
    NATIVE_FLOATS,
    _binary,
    _call,
    _erf_kernel,
    _into,
    _require_numeric,
    _unary,
    bitwise_not,
    cast,
    cos,
    equal,
    exp,
    greater_equal,
    isinf,
    isnan,
    less_equal,
    less_than,
    log,
    logical_and,
    logical_or,
    numeric_binary_meta,
    pow,
    sign,
    sqrt,
    tanh,
    trunc,
    where,
    zero_grad,
)
from oar._ops.reduction import unbroadcast
from oar.errors import ArgumentError, DTypeError

SPECIAL_DTYPES = (_dt.float32, _dt.float64)  # the kernels compute in float64; half types go through float32
NONDIFF = ("nondiff",)


def _float_unary(name: str, kernel, *, dtypes=NATIVE_FLOATS, amp: str = AMP_FP32, paddle=None) -> Op:
    """A float op of one input (integers compute in the default float, as Paddle's autocast)."""
    return Op(name, reference=kernel, meta=float_meta, traits=ELEMENTWISE, amp=amp, float_only=True, dtypes=dtypes,
              paddle=paddle)


def _in_float64(fn):
    """A kernel that computes ``fn`` on float64 and returns the input's dtype."""

    def kernel(x, **attrs):
        out = np.asarray(fn(x.astype(np.float64).reshape(-1), **attrs)).reshape(x.shape)  # 1-d: masks index it
        with np.errstate(over="ignore"):  # beyond float32's range is inf, as intended
            return out.astype(x.dtype, copy=False)

    kernel.__name__ = f"{fn.__name__}_kernel"
    return kernel


def _safe_nonzero(x: Tensor) -> Tensor:
    """``x`` with its zeros replaced by ones: a divisor whose quotient ``where`` then discards."""
    return where(equal(x, 0.0), 1.0, x)


# -- inverse and hyperbolic trigonometry -----------------------------------------------------------
def _quiet(ufunc):
    """``ufunc`` without numpy's warnings: out of the domain is ``nan`` and overflow ``inf``, as intended."""

    def kernel(x):
        with np.errstate(all="ignore"):
            return ufunc(x)

    kernel.__name__ = f"{ufunc.__name__}_kernel"
    return kernel


acos_op = _float_unary("acos", _quiet(np.arccos), amp=AMP_PROMOTE)
asin_op = _float_unary("asin", _quiet(np.arcsin), amp=AMP_PROMOTE)
atan_op = _float_unary("atan", np.arctan, amp=AMP_PROMOTE)
acosh_op = _float_unary("acosh", _quiet(np.arccosh), amp=AMP_PROMOTE)
asinh_op = _float_unary("asinh", np.arcsinh, amp=AMP_PROMOTE)
atanh_op = _float_unary("atanh", _quiet(np.arctanh), amp=AMP_PROMOTE)
cosh_op = _float_unary("cosh", _quiet(np.cosh), amp=AMP_PROMOTE)
sinh_op = _float_unary("sinh", _quiet(np.sinh), amp=AMP_PROMOTE)
expm1_op = _float_unary("expm1", _quiet(np.expm1))


@acos_op.defgrad
def _acos_grad(ctx, g):
    (x,) = ctx.inputs
    return -g / sqrt(1.0 - x * x)


@asin_op.defgrad
def _asin_grad(ctx, g):
    (x,) = ctx.inputs
    return g / sqrt(1.0 - x * x)


@atan_op.defgrad
def _atan_grad(ctx, g):
    (x,) = ctx.inputs
    return g / (1.0 + x * x)


@acosh_op.defgrad
def _acosh_grad(ctx, g):
    (x,) = ctx.inputs
    return g / sqrt(x * x - 1.0)


@asinh_op.defgrad
def _asinh_grad(ctx, g):
    (x,) = ctx.inputs
    return g / sqrt(x * x + 1.0)


@atanh_op.defgrad
def _atanh_grad(ctx, g):
    (x,) = ctx.inputs
    return g / (1.0 - x * x)


@cosh_op.defgrad
def _cosh_grad(ctx, g):
    (x,) = ctx.inputs
    return g * sinh(x)


@sinh_op.defgrad
def _sinh_grad(ctx, g):
    (x,) = ctx.inputs
    return g * cosh(x)


@expm1_op.defgrad
def _expm1_grad(ctx, g):
    return g * (ctx.out + 1.0)


def acos(x, name=None, *, out=None) -> Tensor:
    """Arc cosine (radians, in ``[0, pi]``), elementwise; ``nan`` outside ``[-1, 1]``. Integer
    tensors compute in float32, as in Paddle.

    >>> import oar
    >>> oar.acos(oar.to_tensor([1.0, 0.0, -1.0], dtype="float64")).numpy().round(4).tolist()
    [0.0, 1.5708, 3.1416]
    """
    return _into(out, _unary(acos_op, x), "acos")


def asin(x, name=None) -> Tensor:
    """Arc sine (radians, in ``[-pi/2, pi/2]``), elementwise; ``nan`` outside ``[-1, 1]``."""
    return _unary(asin_op, x)


def atan(x, name=None) -> Tensor:
    """Arc tangent (radians, in ``(-pi/2, pi/2)``), elementwise."""
    return _unary(atan_op, x)


def acosh(x, name=None, *, out=None) -> Tensor:
    """Inverse hyperbolic cosine, elementwise; ``nan`` below 1."""
    return _into(out, _unary(acosh_op, x), "acosh")


def asinh(x, name=None) -> Tensor:
    """Inverse hyperbolic sine, elementwise."""
    return _unary(asinh_op, x)


def atanh(x, name=None, *, out=None) -> Tensor:
    """Inverse hyperbolic tangent, elementwise (``+-inf`` at ``+-1``, ``nan`` beyond)."""
    return _into(out, _unary(atanh_op, x), "atanh")


def cosh(x, name=None, *, out=None) -> Tensor:
    """Hyperbolic cosine, elementwise."""
    return _into(out, _unary(cosh_op, x), "cosh")


def sinh(x, name=None, *, out=None) -> Tensor:
    """Hyperbolic sine, elementwise."""
    return _into(out, _unary(sinh_op, x), "sinh")


def expm1(x, name=None, *, out=None) -> Tensor:
    """``exp(x) - 1``, accurate for small ``x``.

    >>> import oar
    >>> float(oar.expm1(oar.to_tensor(1e-10, dtype="float64")))
    1.00000000005e-10
    """
    return _into(out, _unary(expm1_op, x), "expm1")


def _atan2_grad(ctx, g):
    # d/dx atan2(x, y) = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2); nan at (0, 0), as Paddle.
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    x, y = ctx.input(0), ctx.input(1)
    scaled = g / (x * x + y * y)
    return (unbroadcast(scaled * y, xs) if need_x else None, unbroadcast(-scaled * x, ys) if need_y else None)


atan2_op = Op("atan2", reference=np.arctan2, meta=binary_meta("atan2", result="float"), traits=BINARY,
              promote=_dt.PROMOTE_FLOATS, float_only=True, dtypes=NATIVE_FLOATS, grad=_atan2_grad)


def atan2(x, y, name=None) -> Tensor:
    """The angle of the point ``(y, x)`` -- ``arctan(x / y)`` in the right quadrant, in
    ``(-pi, pi]`` -- elementwise with broadcasting. Integer tensors compute in float64, as in
    Paddle.

    >>> import oar
    >>> oar.atan2(oar.to_tensor([1, -1]), oar.to_tensor([-1, -1])).numpy().round(4).tolist()
    [2.3562, -2.3562]
    """
    x, y = as_tensor(x, "x", "atan2"), as_tensor(y, "y", "atan2")
    if x.dtype.is_integer and y.dtype.is_integer:
        x, y = cast(x, "float64"), cast(y, "float64")
    return _binary(atan2_op, x, y)


# -- gamma functions -----------------------------------------------------------------------------
def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...): Paddle gives inf
        return math.inf


_lgamma64 = np.vectorize(_lgamma_scalar, otypes=[np.float64])

lgamma_op = _float_unary("lgamma", _in_float64(_lgamma64), dtypes=SPECIAL_DTYPES,
                         paddle=("lgamma", "gammaln", "Tensor.lgamma", "Tensor.gammaln"))


@lgamma_op.defgrad
def _lgamma_grad(ctx, g):
    (x,) = ctx.inputs
    return g * digamma(x)


def lgamma(x, name=None) -> Tensor:
    """``log|Gamma(x)|``, elementwise (``inf`` at the poles 0, -1, -2, ...).

    >>> import oar
    >>> round(float(oar.lgamma(oar.to_tensor(5.0, dtype="float64"))), 10)  # log(4!)
    3.1780538303
    """
    return _unary(lgamma_op, x)


def gammaln(x, name=None) -> Tensor:
    """``log|Gamma(x)|``, elementwise (Paddle's other name of ``lgamma``)."""
    return _unary(lgamma_op, x)


# psi^(n)(w) ~ (-1)^(n+1) [(n-1)!/w^n + n!/(2 w^(n+1)) + sum_k B_2k (2k+n-1)!/((2k)! w^(2k+n))]
_BERNOULLI_2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)


@functools.cache
def _cot_derivative(n: int) -> np.ndarray:
    """The coefficients (lowest first) of the polynomial P_n with ``d^n/dy^n cot(y) = P_n(cot(y))``,
    from ``cot' = -(1 + cot^2)``."""
    poly = np.array([0.0, 1.0])
    for _ in range(n):
        poly = np.polynomial.polynomial.polymul(np.polynomial.polynomial.polyder(poly), [-1.0, 0.0, -1.0])
    return poly


def _polygamma_at_least_half(z: np.ndarray, n: int) -> np.ndarray:
    """``psi^(n)(z)`` for ``z >= 1/2`` (or nan/inf): recurrence up to ``10 + 2n``, then the series."""
    w = z.copy()
    shifted = np.zeros_like(z)  # sum of (w + k)^-(n+1) over the steps taken
    while True:
        small = w < 10 + 2 * n
        if not small.any():
            break
        shifted[small] += w[small] ** -(n + 1)
        w[small] += 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv2 = 1.0 / (w * w)
        if n == 0:
            series = np.zeros_like(w)
            for k in range(len(_BERNOULLI_2K), 0, -1):  # Horner in 1/w^2
                series = (series + _BERNOULLI_2K[k - 1] / (2 * k)) * inv2
            return np.log(w) - 0.5 / w - series - shifted
        series = np.zeros_like(w)
        for k in range(len(_BERNOULLI_2K), 0, -1):
            coefficient = _BERNOULLI_2K[k - 1] * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
            series = (series + coefficient) * inv2
        tail = (math.factorial(n - 1) + math.factorial(n) / (2 * w) + series) / w ** n
        return (-1.0) ** (n + 1) * (tail + math.factorial(n) * shifted)


def _polygamma64(x: np.ndarray, n: int = 0) -> np.ndarray:
    """``psi^(n)(x)`` of a float64 array (``n = 0``: digamma); see the module docstring."""
    x = np.asarray(x, np.float64)
    pole = (x <= 0) & (x == np.floor(x))
    reflect = (x < 0.5) & ~pole
    out = _polygamma_at_least_half(np.where(reflect | pole, 1.0 - x, x), n)
    if reflect.any():
        # psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x); cot's argument reduced exactly
        r = x[reflect] - np.round(x[reflect])
        with np.errstate(over="ignore", invalid="ignore"):
            cot = np.cos(math.pi * r) / np.sin(math.pi * r)
            term = math.pi ** (n + 1) * np.polynomial.polynomial.polyval(cot, _cot_derivative(n))
            out[reflect] = (-1.0) ** n * out[reflect] - term
    if n == 0:  # Paddle's values at the poles: -inf at 0, nan at the negative integers
        out[pole] = np.where(x[pole] == 0, -np.inf, np.nan)
    else:
        out[pole] = (-1.0) ** (n + 1) * np.inf
    return out


digamma_op = _float_unary("digamma", _in_float64(_polygamma64), dtypes=SPECIAL_DTYPES)


@digamma_op.defgrad
def _digamma_grad(ctx, g):
    (x,) = ctx.inputs
    return g * polygamma(x, 1)


def digamma(x, name=None) -> Tensor:
    """The digamma function ``psi(x) = d/dx log Gamma(x)``, elementwise (``-inf`` at 0, ``nan``
    at the negative integers, as Paddle).

    >>> import oar
    >>> round(float(oar.digamma(oar.to_tensor(1.0, dtype="float64"))), 10)  # minus Euler's gamma
    -0.5772156649
    """
    return _unary(digamma_op, x)


def _polygamma_meta(x: TensorMeta, n: int) -> TensorMeta:
    return float_meta(x)


polygamma_op = Op("polygamma", reference=_in_float64(_polygamma64), meta=_polygamma_meta, traits=ELEMENTWISE,
                  amp=AMP_FP32, float_only=True, dtypes=SPECIAL_DTYPES)


@polygamma_op.defgrad
def _polygamma_grad(ctx, g):
    (x,) = ctx.inputs
    return g * polygamma(x, ctx.attrs["n"] + 1)


def polygamma(x, n, name=None) -> Tensor:
    """The n-th derivative of the digamma function, elementwise (``n = 0`` is ``digamma``).

    ``n`` is a non-negative Python int. At the poles (0, -1, ...) the result is
    ``(-1)^(n+1) * inf``, as in Paddle.

    >>> import oar
    >>> round(float(oar.polygamma(oar.to_tensor(1.0, dtype="float64"), 1)), 10)  # pi^2 / 6
    1.6449340668
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ArgumentError(f"polygamma: n must be a non-negative int, got {type(n).__name__} {n!r}")
    if n < 0:
        raise ArgumentError(f"polygamma: n must be a non-negative int, got {n}")
    if n == 0:
        return _unary(digamma_op, x)
    return _unary(polygamma_op, x, n=int(n))


def multigammaln(x, p, name=None) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p(p-1)/4 log(pi) + sum_{j<p} lgamma(x - j/2)``, elementwise (composed of ``lgamma``).

    >>> import oar
    >>> round(float(oar.multigammaln(oar.to_tensor(2.5, dtype="float64"), 3)), 6)  # Paddle 3.3.1: 1.88099546
    1.880995
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise ArgumentError(f"multigammaln: p must be an int >= 1, got {p!r}")
    x = as_tensor(x, "x", "multigammaln")
    total = lgamma(x)
    for j in range(1, int(p)):
        total = total + lgamma(x - j / 2)
    return total + 0.25 * p * (p - 1) * math.log(math.pi)


# -- erfinv --------------------------------------------------------------------------------------
def _erfinv64(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        # Giles (2010), "Approximating the erfinv function": two polynomials in w, rel. error < 4e-7
        central = w - 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                  0.246640727, 1.50140941):
            p = c + p * central
        tail = np.sqrt(w) - 3.0
        q = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                  1.00167406, 2.83297682):
            q = c + q * tail
        y = np.where(w < 5.0, p, q) * x
        finite = np.isfinite(y)
        for _ in range(2):  # Newton on erf(y) = x: each step doubles the correct digits
            step = (_erf_kernel(y[finite]) - x[finite]) / (2.0 / math.sqrt(math.pi) * np.exp(-y[finite] ** 2))
            y[finite] -= step
        y = np.where(np.abs(x) == 1.0, np.copysign(np.inf, x), y)
        return np.where(np.abs(x) > 1.0, np.nan, y)


erfinv_op = _float_unary("erfinv", _in_float64(_erfinv64), dtypes=SPECIAL_DTYPES)


@erfinv_op.defgrad
def _erfinv_grad(ctx, g):
    out = ctx.out
    return g * (math.sqrt(math.pi) / 2) * exp(out * out)


def erfinv(x, name=None) -> Tensor:
    """The inverse of ``erf``, elementwise: ``+-inf`` at ``+-1`` and ``nan`` beyond (Paddle: ``+-inf``).

    >>> import oar
    >>> round(float(oar.erfinv(oar.to_tensor(0.5, dtype="float64"))), 10)
    0.4769362762
    """
    return _unary(erfinv_op, x)


# -- modified Bessel functions of the first kind ---------------------------------------------------
_BESSEL_SERIES_LIMIT = 30.0


def _bessel_scaled(x: np.ndarray, order: int) -> np.ndarray:
    """``exp(-|x|) I_order(|x|)`` (order 0 or 1) of a float64 array."""
    a = np.abs(x)
    out = np.empty_like(a)
    near = a <= _BESSEL_SERIES_LIMIT
    if near.any():
        half = a[near] / 2
        q = half * half
        term = half.copy() if order == 1 else np.ones_like(half)
        total = term.copy()
        for k in range(1, 200):  # all terms positive: sum until they no longer change it
            term = term * q / (k * (k + order))
            total += term
            if np.all(term <= 1e-17 * total):
                break
        out[near] = total * np.exp(-a[near])
    far = ~near
    if far.any():
        b = a[far]  # exp(-b) I_v(b) ~ sum_k (-1)^k prod_{j<=k} (4v^2 - (2j-1)^2) / (k! (8b)^k) / sqrt(2 pi b)
        term = np.ones_like(b)
        total = term.copy()
        mu = 4.0 * order * order
        for k in range(1, 40):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * b)
            total += term
        with np.errstate(invalid="ignore"):
            out[far] = np.where(np.isinf(b), 0.0, total / np.sqrt(2 * math.pi * b))
    return out


def _i0e64(x):
    return _bessel_scaled(x, 0)


def _i1e64(x):
    return np.copysign(_bessel_scaled(x, 1), x)


def _i0_64(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isinf(x), np.inf, _bessel_scaled(x, 0) * np.exp(np.abs(x)))


def _i1_64(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isinf(x), x, np.copysign(_bessel_scaled(x, 1) * np.exp(np.abs(x)), x))


i0_op = _float_unary("i0", _in_float64(_i0_64), dtypes=SPECIAL_DTYPES)
i0e_op = _float_unary("i0e", _in_float64(_i0e64), dtypes=SPECIAL_DTYPES)
i1_op = _float_unary("i1", _in_float64(_i1_64), dtypes=SPECIAL_DTYPES)
i1e_op = _float_unary("i1e", _in_float64(_i1e64), dtypes=SPECIAL_DTYPES)


def _i1_over_x(x: Tensor, i1x: Tensor) -> Tensor:
    """``I1(x) / x`` (or the scaled ``I1e(x) / x``), 1/2 at 0: its limit."""
    return where(equal(x, 0.0), 0.5, i1x / _safe_nonzero(x))


@i0_op.defgrad
def _i0_grad(ctx, g):
    (x,) = ctx.inputs
    return g * i1(x)


@i0e_op.defgrad
def _i0e_grad(ctx, g):
    (x,) = ctx.inputs  # d/dx exp(-|x|) I0(x) = I1e(x) - sign(x) I0e(x); at the kink x = 0, -1 as Paddle
    return g * (i1e(x) - where(less_than(x, 0.0), -1.0, 1.0) * ctx.out)


@i1_op.defgrad
def _i1_grad(ctx, g):
    (x,) = ctx.inputs  # I1' = I0 - I1 / x
    return g * (i0(x) - _i1_over_x(x, ctx.out))


@i1e_op.defgrad
def _i1e_grad(ctx, g):
    (x,) = ctx.inputs  # d/dx exp(-|x|) I1(x) = I0e(x) - I1e(x) / x - sign(x) I1e(x)
    out = ctx.out
    return g * (i0e(x) - _i1_over_x(x, out) - sign(x) * out)


def i0(x, name=None) -> Tensor:
    """The modified Bessel function of the first kind of order 0, elementwise.

    >>> import oar
    >>> round(float(oar.i0(oar.to_tensor(1.0, dtype="float64"))), 10)
    1.2660658778
    """
    return _unary(i0_op, x)


def i0e(x, name=None) -> Tensor:
    """``exp(-|x|) * i0(x)``, elementwise (no overflow for large ``|x|``)."""
    return _unary(i0e_op, x)


def i1(x, name=None) -> Tensor:
    """The modified Bessel function of the first kind of order 1, elementwise (odd in ``x``)."""
    return _unary(i1_op, x)


def i1e(x, name=None) -> Tensor:
    """``exp(-|x|) * i1(x)``, elementwise."""
    return _unary(i1e_op, x)


# -- regularized incomplete gamma functions ----------------------------------------------------------
_TINY = 1e-300


def _gammainc_parts(op: str, a: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q), the regularized lower and upper incomplete gamma functions, of float64 arrays."""
    with np.errstate(invalid="ignore"):
        if not np.all(a >= 0):
            raise ArgumentError(f"{op}: x must be >= 0 (and not nan), got {a[~(a >= 0)].flat[0]}")
        if not np.all(y >= 0):
            raise ArgumentError(f"{op}: y must be >= 0 (and not nan), got {y[~(y >= 0)].flat[0]}")
    a, y = np.broadcast_arrays(a, y)
    p, q = np.zeros(a.shape), np.ones(a.shape)
    inner = (y > 0) & (a > 0) & np.isfinite(y)
    p[(y > 0) & ~inner], q[(y > 0) & ~inner] = 1.0, 0.0  # a == 0 (the limit) or y == inf
    series = inner & (y < a + 1)
    fraction = inner & ~series
    if series.any():
        aa, yy = a[series], y[series]
        term = 1.0 / aa
        total = term.copy()
        denominator = aa.copy()
        active = np.ones(aa.shape, bool)
        for _ in range(100_000):
            denominator[active] += 1.0
            term[active] *= yy[active] / denominator[active]
            total[active] += term[active]
            active &= np.abs(term) > np.abs(total) * 1e-16
            if not active.any():
                break
        lower = total * np.exp(-yy + aa * np.log(yy) - _lgamma64(aa))
        p[series], q[series] = lower, 1.0 - lower
    if fraction.any():  # modified Lentz for the continued fraction of Q
        aa, yy = a[fraction], y[fraction]
        b = yy + 1.0 - aa
        c = np.full(aa.shape, 1.0 / _TINY)
        d = 1.0 / b
        h = d.copy()
        active = np.ones(aa.shape, bool)
        for i in range(1, 100_000):
            an = -i * (i - aa[active])
            b[active] += 2.0
            d_new = an * d[active] + b[active]
            d_new = np.where(np.abs(d_new) < _TINY, _TINY, d_new)
            c_new = b[active] + an / c[active]
            c_new = np.where(np.abs(c_new) < _TINY, _TINY, c_new)
            d[active] = 1.0 / d_new
            c[active] = c_new
            delta = c_new * d[active]
            h[active] *= delta
            done = np.abs(delta - 1.0) <= 1e-16
            indices = np.flatnonzero(active)
            active[indices[done]] = False
            if not active.any():
                break
        upper = h * np.exp(-yy + aa * np.log(yy) - _lgamma64(aa))
        p[fraction], q[fraction] = 1.0 - upper, upper
    return p, q


def _gammainc_kernel(x, y):
    return _gammainc_parts("gammainc", x.astype(np.float64), y.astype(np.float64))[0].astype(x.dtype)


def _gammaincc_kernel(x, y):
    return _gammainc_parts("gammaincc", x.astype(np.float64), y.astype(np.float64))[1].astype(x.dtype)


def _gammainc_density(x: Tensor, y: Tensor) -> Tensor:
    """``d/dy P(x, y) = exp(-y) y^(x-1) / Gamma(x)``."""
    return exp(-y + (x - 1.0) * log(y) - lgamma(x))


def _gammainc_rule(sign_of_derivative: float):
    # Paddle's rule: a gradient for y only (x, the shape parameter, gets none)
    def rule(ctx, g):
        _, ys = ctx.in_shapes
        if not ctx.needs_input_grad[1]:
            return None, None
        return None, unbroadcast(g * _gammainc_density(ctx.input(0), ctx.input(1)) * sign_of_derivative, ys)

    return rule


gammainc_op = Op("gammainc", reference=_gammainc_kernel, meta=binary_meta("gammainc", result="float"), traits=BINARY,
                 amp=AMP_FP32, promote=_dt.PROMOTE_FLOATS, float_only=True, dtypes=SPECIAL_DTYPES,
                 grad=_gammainc_rule(1.0))
gammaincc_op = Op("gammaincc", reference=_gammaincc_kernel, meta=binary_meta("gammaincc", result="float"),
                  traits=BINARY, amp=AMP_FP32, promote=_dt.PROMOTE_FLOATS, float_only=True, dtypes=SPECIAL_DTYPES,
                  grad=_gammainc_rule(-1.0))


def gammainc(x, y, name=None) -> Tensor:
    """The regularized lower incomplete gamma function ``P(x, y) = gamma(x, y) / Gamma(x)``,
    elementwise with broadcasting; ``x`` and ``y`` must be >= 0 (an ``ArgumentError`` otherwise).

    The gradient flows to ``y`` only, as in Paddle.

    >>> import oar
    >>> round(float(oar.gammainc(oar.to_tensor(1.0, dtype="float64"), oar.to_tensor(0.5, dtype="float64"))), 8)
    0.39346934
    """
    return _binary(gammainc_op, x, y)


def gammaincc(x, y, name=None) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(x, y) = 1 - P(x, y)``, elementwise with
    broadcasting; ``x`` and ``y`` must be >= 0. The gradient flows to ``y`` only, as in Paddle."""
    return _binary(gammaincc_op, x, y)


# -- sinc, logit ---------------------------------------------------------------------------------
sinc_op = _float_unary("sinc", np.sinc, amp=AMP_PROMOTE)


@sinc_op.defgrad
def _sinc_grad(ctx, g):
    (x,) = ctx.inputs  # (cos(pi x) - sinc(x)) / x, 0 at 0
    return g * where(equal(x, 0.0), 0.0, (cos(x * math.pi) - ctx.out) / _safe_nonzero(x))


def sinc(x, name=None) -> Tensor:
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0, elementwise.

    >>> import oar
    >>> oar.sinc(oar.to_tensor([0.0, 0.5], dtype="float64")).numpy().round(4).tolist()
    [1.0, 0.6366]
    """
    return _unary(sinc_op, x)


def _logit_kernel(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1.0 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x / (1.0 - x)).astype(x.dtype, copy=False)


def _logit_meta(x: TensorMeta, eps=None) -> TensorMeta:
    return float_meta(x)


logit_op = Op("logit", reference=_logit_kernel, meta=_logit_meta, traits=ELEMENTWISE, amp=AMP_FP32, float_only=True,
              dtypes=NATIVE_FLOATS)


@logit_op.defgrad
def _logit_grad(ctx, g):
    (x,) = ctx.inputs
    eps = ctx.attrs["eps"]
    slope = g / (x * (1.0 - x))
    if eps is None:  # nan outside [0, 1], where the forward is nan too (Paddle's rule)
        return where(logical_and(greater_equal(x, 0.0), less_equal(x, 1.0)), slope, math.nan)
    # Paddle's rule: zero where x was clipped, the boundaries eps and 1 - eps included in the slope
    return where(logical_or(less_than(x, eps), less_than(1.0 - eps, x)), 0.0, slope)


def logit(x, eps=None, name=None) -> Tensor:
    """``log(x / (1 - x))``, elementwise; with ``eps``, ``x`` is first clipped to ``[eps, 1 - eps]``
    (and the gradient is zero where it was). Without, ``x`` outside ``[0, 1]`` gives ``nan``.

    >>> import oar
    >>> oar.logit(oar.to_tensor([0.5, 0.0], dtype="float64"), eps=0.25).numpy().round(4).tolist()
    [0.0, -1.0986]
    """
    if eps is not None:
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
            raise ArgumentError(f"logit: eps must be a float or None, got {type(eps).__name__}")
        eps = float(eps)
    return _unary(logit_op, x, eps=eps)


# -- binary float functions ----------------------------------------------------------------------
def _hypot_grad(ctx, g):
    # x / hypot(x, y): nan at (0, 0), as Paddle's
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    scaled = g / ctx.out
    return (unbroadcast(scaled * ctx.input(0), xs) if need_x else None,
            unbroadcast(scaled * ctx.input(1), ys) if need_y else None)


hypot_op = Op("hypot", reference=np.hypot, meta=binary_meta("hypot", result="float"), traits=BINARY,
              promote=_dt.PROMOTE_FLOATS, float_only=True, dtypes=NATIVE_FLOATS, grad=_hypot_grad)


def hypot(x, y, name=None) -> Tensor:
    """``sqrt(x^2 + y^2)`` without overflow in the squares, elementwise with broadcasting.

    >>> import oar
    >>> oar.hypot(oar.to_tensor([3.0]), oar.to_tensor([4.0])).tolist()
    [5.0]
    """
    return _binary(hypot_op, x, y)


def _logaddexp_grad(ctx, g):
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    out = ctx.out
    return (unbroadcast(g * exp(ctx.input(0) - out), xs) if need_x else None,
            unbroadcast(g * exp(ctx.input(1) - out), ys) if need_y else None)


logaddexp_op = Op("logaddexp", reference=np.logaddexp, meta=binary_meta("logaddexp", result="float"), traits=BINARY,
                  amp=AMP_FP32, promote=_dt.PROMOTE_FLOATS, float_only=True, dtypes=NATIVE_FLOATS,
                  grad=_logaddexp_grad)


def logaddexp(x, y, name=None) -> Tensor:
    """``log(exp(x) + exp(y))`` without overflow, elementwise with broadcasting.

    >>> import oar
    >>> oar.logaddexp(oar.to_tensor([1e3], dtype="float64"), oar.to_tensor([1e3], dtype="float64")).numpy().round(4).tolist()
    [1000.6931]
    """
    return _binary(logaddexp_op, x, y)


def _copysign_kernel(x, y):
    if x.dtype.kind in "iu":  # integer arithmetic: float64 would round large int64 values
        magnitude = np.abs(x)
        return np.where(y < 0, -magnitude, magnitude).astype(x.dtype, copy=False)
    return np.copysign(x, y)


def _copysign_grad(ctx, g):
    # d/dx = +-1 (out / x), 0 at x == 0 as in Paddle; y only chooses a sign
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    x = ctx.input(0)
    gx = unbroadcast(g * where(equal(x, 0.0), 0.0, ctx.out / _safe_nonzero(x)), xs) if need_x else None
    return gx, zero_grad(g, ys) if need_y else None


copysign_op = Op("copysign", reference=_copysign_kernel, meta=numeric_binary_meta("copysign"), traits=BINARY,
                 promote=_dt.PROMOTE_FLOATS, dtypes=INTS_AND_FLOATS, grad=_copysign_grad)


def copysign(x, y, name=None) -> Tensor:
    """The magnitude of ``x`` with the sign of ``y`` (``-0.0`` counts as negative), elementwise
    with broadcasting; integer tensors stay integers.

    >>> import oar
    >>> oar.copysign(oar.to_tensor([1.0, -2.0]), oar.to_tensor([-0.0, 3.0])).tolist()
    [-1.0, 2.0]
    """
    return _binary(copysign_op, x, y)


def _nextafter_meta(x: TensorMeta, y: TensorMeta) -> TensorMeta:
    out = binary_meta("nextafter")(x, y)
    if out.dtype not in SPECIAL_DTYPES:  # the next float16 is not the next float32 rounded
        raise DTypeError(f"nextafter: x and y must be float32 or float64 tensors, got {x.dtype.name} and {y.dtype.name}")
    return out


nextafter_op = Op("nextafter", reference=np.nextafter, meta=_nextafter_meta, traits=BINARY + NONDIFF,
                  promote=_dt.PROMOTE_FLOATS, dtypes=SPECIAL_DTYPES)


def nextafter(x, y, name=None) -> Tensor:
    """The next representable float after ``x`` in the direction of ``y``, elementwise with
    broadcasting (float32 or float64; no gradient).

    >>> import oar
    >>> x = oar.to_tensor([1.0], dtype="float64")
    >>> float((oar.nextafter(x, oar.to_tensor([2.0], dtype="float64")) - x)[0]) == 2.0 ** -52
    True
    """
    x, y = binary_operands(x, y, "nextafter")
    _nextafter_meta(TensorMeta(tuple(x.shape), x.dtype), TensorMeta(tuple(y.shape), y.dtype))  # before float16 goes through float32
    return _call(nextafter_op, (x, y), {})


def _heaviside_kernel(x, y):
    # 0 below zero (and for nan, as Paddle), y at zero, 1 above
    one, zero = np.ones((), x.dtype), np.zeros((), x.dtype)
    return np.where(x > 0, one, np.where(x == 0, y, zero)).astype(np.result_type(x, y), copy=False)


def _heaviside_grad(ctx, g):
    xs, ys = ctx.in_shapes
    need_x, need_y = ctx.needs_input_grad
    gy = unbroadcast(where(equal(ctx.input(0), 0.0), g, 0.0), ys) if need_y else None
    return zero_grad(g, xs) if need_x else None, gy


heaviside_op = Op("heaviside", reference=_heaviside_kernel, meta=numeric_binary_meta("heaviside"), traits=BINARY,
                  promote=_dt.PROMOTE_FLOATS, dtypes=INTS_AND_FLOATS, grad=_heaviside_grad)


def heaviside(x, y, name=None) -> Tensor:
    """The Heaviside step: 0 where ``x < 0``, ``y`` where ``x == 0``, 1 where ``x > 0``
    (elementwise with broadcasting; the gradient flows to ``y`` where ``x == 0``).

    >>> import oar
    >>> oar.heaviside(oar.to_tensor([-1.0, 0.0, 2.0]), oar.to_tensor([0.5])).tolist()
    [0.0, 0.5, 1.0]
    """
    return _binary(heaviside_op, x, y)


def _nan_ignoring_grad(first_wins):
    # The gradient goes to the chosen input: x on a tie and where y is nan (Paddle's rule).
    def rule(ctx, g):
        xs, ys = ctx.in_shapes
        need_x, need_y = ctx.needs_input_grad
        x, y = ctx.input(0), ctx.input(1)
        chosen = logical_or(first_wins(x, y), isnan(y))
        return (unbroadcast(where(chosen, g, 0.0), xs) if need_x else None,
                unbroadcast(where(chosen, 0.0, g), ys) if need_y else None)

    return rule


fmax_op = Op("fmax", reference=np.fmax, meta=numeric_binary_meta("fmax"), traits=BINARY, promote=_dt.PROMOTE_FLOATS,
             dtypes=INTS_AND_FLOATS, grad=_nan_ignoring_grad(greater_equal))
fmin_op = Op("fmin", reference=np.fmin, meta=numeric_binary_meta("fmin"), traits=BINARY, promote=_dt.PROMOTE_FLOATS,
             dtypes=INTS_AND_FLOATS, grad=_nan_ignoring_grad(less_equal))


def fmax(x, y, name=None) -> Tensor:
    """The larger of ``x`` and ``y`` elementwise with broadcasting, ignoring a ``nan`` (``nan``
    only where both are).

    >>> import oar
    >>> oar.fmax(oar.to_tensor([float("nan"), 1.0]), oar.to_tensor([2.0, float("nan")])).tolist()
    [2.0, 1.0]
    """
    return _binary(fmax_op, x, y)


def fmin(x, y, name=None) -> Tensor:
    """The smaller of ``x`` and ``y`` elementwise with broadcasting, ignoring a ``nan``."""
    return _binary(fmin_op, x, y)


# -- frexp ---------------------------------------------------------------------------------------
def _frexp_kernel(x):
    mantissa, exponent = np.frexp(x)
    return mantissa, exponent.astype(x.dtype)


def _frexp_meta(x: TensorMeta) -> tuple:
    if x.dtype not in SPECIAL_DTYPES:
        raise DTypeError(f"frexp: x must be a float32 or float64 tensor, got {x.dtype.name}")
    return x, x


frexp_op = Op("frexp", reference=_frexp_kernel, meta=_frexp_meta, traits=ELEMENTWISE, dtypes=SPECIAL_DTYPES,
              num_outputs=2)


@frexp_op.defgrad
def _frexp_grad(ctx, g_mantissa, g_exponent=None):
    # mantissa = x * 2^-exponent, the exponent piecewise constant; 0 at x == 0 as in Paddle
    (x,) = ctx.inputs
    if g_mantissa is None:
        return zeros_like(x)
    return g_mantissa * where(equal(x, 0.0), 0.0, ctx.outputs[0] / _safe_nonzero(x))


def frexp(x, name=None) -> tuple[Tensor, Tensor]:
    """``(mantissa, exponent)`` with ``x = mantissa * 2**exponent`` and ``0.5 <= |mantissa| < 1``
    (both 0 for 0); the exponent has ``x``'s dtype, as in Paddle.

    >>> import oar
    >>> m, e = oar.frexp(oar.to_tensor([8.0, -3.0]))
    >>> m.tolist(), e.tolist()
    ([0.5, -0.75], [4.0, 2.0])
    """
    return _unary(frexp_op, x)


# -- integer functions (no gradient) ---------------------------------------------------------------
def _integer_binary_meta(op: str):
    promote = binary_meta(op)

    def meta(x: TensorMeta, y: TensorMeta, **attrs) -> TensorMeta:
        for arg, m in (("x", x), ("y", y)):
            if not m.dtype.is_integer:
                raise DTypeError(f"{op}: {arg} must be an integer tensor, got {m.dtype.name}")
        return promote(x, y)

    return meta


gcd_op = Op("gcd", reference=np.gcd, meta=_integer_binary_meta("gcd"), traits=BINARY + NONDIFF,
            promote=_dt.PROMOTE_FLOATS, dtypes=_dt.INT_DTYPES)
lcm_op = Op("lcm", reference=np.lcm, meta=_integer_binary_meta("lcm"), traits=BINARY + NONDIFF,
            promote=_dt.PROMOTE_FLOATS, dtypes=_dt.INT_DTYPES)


def gcd(x, y, name=None) -> Tensor:
    """The greatest common divisor of integer tensors, elementwise with broadcasting (non-negative;
    ``gcd(0, 0) = 0``).

    >>> import oar
    >>> oar.gcd(oar.to_tensor([12, -12, 0]), oar.to_tensor([18, 18, 5])).tolist()
    [6, 6, 5]
    """
    return _binary(gcd_op, x, y)


def lcm(x, y, name=None) -> Tensor:
    """The least common multiple of integer tensors, elementwise with broadcasting (non-negative;
    0 where either is 0)."""
    return _binary(lcm_op, x, y)


def _shift_kernel(left: bool):
    def kernel(x, y, is_arithmetic=True):
        x, y = np.broadcast_arrays(x, y)
        bits = x.dtype.itemsize * 8
        valid = (y >= 0) & (y < bits)  # Paddle: a shift out of [0, bits) moves every bit out
        amount = np.where(valid, y, 0).astype(x.dtype)
        if left:
            return np.where(valid, np.left_shift(x, amount), 0).astype(x.dtype)
        if is_arithmetic or x.dtype.kind == "u":
            fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
            return np.where(valid, np.right_shift(x, amount), fill).astype(x.dtype)
        unsigned = np.dtype(f"u{x.dtype.itemsize}")  # logical: the bits as an unsigned number
        shifted = np.right_shift(x.astype(unsigned), amount.astype(unsigned)).astype(x.dtype)
        return np.where(valid, shifted, 0).astype(x.dtype)

    return kernel


def _shift_meta(op: str):
    check = _integer_binary_meta(op)

    def meta(x: TensorMeta, y: TensorMeta, is_arithmetic=True) -> TensorMeta:
        return check(x, y)

    return meta


bitwise_left_shift_op = Op("bitwise_left_shift", reference=_shift_kernel(left=True),
                           meta=_shift_meta("bitwise_left_shift"), traits=BINARY + NONDIFF,
                           promote=_dt.PROMOTE_FLOATS, dtypes=_dt.INT_DTYPES)
bitwise_right_shift_op = Op("bitwise_right_shift", reference=_shift_kernel(left=False),
                            meta=_shift_meta("bitwise_right_shift"), traits=BINARY + NONDIFF,
                            promote=_dt.PROMOTE_FLOATS, dtypes=_dt.INT_DTYPES)


def _shift(op: Op, x, y, is_arithmetic, out) -> Tensor:
    x, y = binary_operands(x, y, op.name)
    return _into(out, _call(op, (x, y), {"is_arithmetic": bool(is_arithmetic)}), op.name)


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None) -> Tensor:
    """``x << y`` on integer tensors, elementwise with broadcasting; bits shifted past the width
    are lost, and a shift by ``y < 0`` or ``y >=`` the bit width gives 0, as in Paddle.

    >>> import oar
    >>> oar.bitwise_left_shift(oar.to_tensor([1, 3]), oar.to_tensor([2, 1])).tolist()
    [4, 6]
    """
    return _shift(bitwise_left_shift_op, x, y, is_arithmetic, out)


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None) -> Tensor:
    """``x >> y`` on integer tensors: arithmetic (the sign bit fills in) or, with
    ``is_arithmetic=False``, logical (zeros fill in, the bits read as unsigned).

    >>> import oar
    >>> x = oar.to_tensor([-8, 8], dtype="int8")
    >>> y = oar.to_tensor([1, 1], dtype="int8")
    >>> oar.bitwise_right_shift(x, y).tolist(), oar.bitwise_right_shift(x, y, is_arithmetic=False).tolist()
    ([-4, 4], [124, 4])
    """
    return _shift(bitwise_right_shift_op, x, y, is_arithmetic, out)


def bitwise_invert(x, out=None, name=None) -> Tensor:
    """``~x`` on integer or bool tensors (Paddle's other name of ``bitwise_not``)."""
    return bitwise_not(x, out=out)


# -- predicates (no gradient) ----------------------------------------------------------------------
def _signbit_meta(x: TensorMeta) -> TensorMeta:
    _require_numeric("signbit", "x", x.dtype)
    return bool_meta(x)


signbit_op = Op("signbit", reference=np.signbit, meta=_signbit_meta, traits=ELEMENTWISE + NONDIFF, dtypes=INTS_AND_FLOATS)


def signbit(x, name=None) -> Tensor:
    """Whether the sign bit of each element is set (True for ``-0.0`` and negative numbers).

    >>> import oar
    >>> oar.signbit(oar.to_tensor([-0.0, 0.0, -2.0])).tolist()
    [True, False, True]
    """
    return _unary(signbit_op, x)


def isposinf(x, name=None) -> Tensor:
    """Whether each element is ``+inf``, a bool tensor (composed of ``isinf`` and a comparison)."""
    x = as_tensor(x, "x", "isposinf")
    return logical_and(isinf(x), x > 0)


def isneginf(x, name=None) -> Tensor:
    """Whether each element is ``-inf``, a bool tensor.

    >>> import oar
    >>> oar.isneginf(oar.to_tensor([-float("inf"), float("inf"), 1.0])).tolist()
    [True, False, False]
    """
    x = as_tensor(x, "x", "isneginf")
    return logical_and(isinf(x), x < 0)


# -- composed functions ----------------------------------------------------------------------------
def _float_arg(x, op: str) -> Tensor:
    x = as_tensor(x, "x", op)
    if not x.dtype.is_floating:
        raise DTypeError(f"{op}: x must be a floating tensor, got {x.dtype.name}; cast it first")
    return x


def sgn(x, name=None) -> Tensor:
    """-1, 0 or 1 by the sign of a float ``x`` (``nan`` stays ``nan``); Paddle's ``sgn`` of a real
    tensor, which refuses integers."""
    return sign(_float_arg(x, "sgn"))


def frac(x, name=None, *, out=None) -> Tensor:
    """The fractional part ``x - trunc(x)`` (with ``x``'s sign), elementwise; integers give 0.

    >>> import oar
    >>> oar.frac(oar.to_tensor([-1.5, 2.25])).tolist()
    [-0.5, 0.25]
    """
    x = as_tensor(x, "x", "frac")
    _require_numeric("frac", "x", x.dtype)
    return _into(out, x - trunc(x), "frac")


def _to_float(x, op: str) -> Tensor:
    x = as_tensor(x, "x", op)
    _require_numeric(op, "x", x.dtype)
    return x if x.dtype.is_floating else cast(x, _dt.default_float())


def deg2rad(x, name=None) -> Tensor:
    """Degrees to radians, ``x * pi / 180`` (integers compute in float32, as in Paddle).

    >>> import oar
    >>> oar.deg2rad(oar.to_tensor([180.0], dtype="float64")).numpy().round(5).tolist()
    [3.14159]
    """
    return _to_float(x, "deg2rad") * (math.pi / 180.0)


def rad2deg(x, name=None) -> Tensor:
    """Radians to degrees, ``x * 180 / pi`` (integers compute in float32, as in Paddle)."""
    return _to_float(x, "rad2deg") * (180.0 / math.pi)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None) -> Tensor:
    """The scaled tanh ``scale_b * tanh(scale_a * x)``, elementwise.

    >>> import oar
    >>> round(float(oar.stanh(oar.to_tensor(1.0, dtype="float64"))), 6)
    1.003767
    """
    return tanh(_to_float(x, "stanh") * float(scale_a)) * float(scale_b)


def lerp(x, y, weight, name=None) -> Tensor:
    """Linear interpolation ``x + weight * (y - x)`` with broadcasting; ``weight`` is a number or a
    tensor. Differentiable in ``x``, ``y`` and a tensor ``weight``.

    >>> import oar
    >>> oar.lerp(oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, 6.0]), 0.5).tolist()
    [2.0, 4.0]
    """
    x = _float_arg(x, "lerp")
    y = as_tensor(y, "y", "lerp")
    if isinstance(weight, bool) or not isinstance(weight, (Tensor, int, float, np.integer, np.floating)):
        raise ArgumentError(f"lerp: weight must be a number or a Tensor, got {type(weight).__name__}")
    return x + weight * (y - x)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None) -> Tensor:
    """``x`` with ``nan`` replaced by ``nan`` (the argument), ``+inf`` by ``posinf`` and ``-inf``
    by ``neginf`` (by default the largest and lowest finite values of ``x``'s dtype). The
    gradient flows where ``x`` is finite.

    >>> import oar
    >>> oar.nan_to_num(oar.to_tensor([float("nan"), float("-inf"), 1.0], dtype="float64"), neginf=-9.0).tolist()
    [0.0, -9.0, 1.0]
    """
    x = _float_arg(x, "nan_to_num")
    largest = float(ml_dtypes.finfo(x.dtype.np).max)  # numpy's finfo does not know bfloat16
    posinf = largest if posinf is None else float(posinf)
    neginf = -largest if neginf is None else float(neginf)
    infinite = isinf(x)
    replaced = where(isnan(x), float(nan), x)
    return where(logical_and(infinite, x > 0), posinf, where(logical_and(infinite, x < 0), neginf, replaced))


def ldexp(x, y, name=None) -> Tensor:
    """``x * 2**y``, elementwise with broadcasting; an integer ``x`` computes in float32, as in Paddle.

    >>> import oar
    >>> oar.ldexp(oar.to_tensor([1.0, 3.0]), oar.to_tensor([3, -1])).tolist()
    [8.0, 1.5]
    """
    x = _to_float(x, "ldexp")
    y = as_tensor(y, "y", "ldexp")
    _require_numeric("ldexp", "y", y.dtype)
    return x * pow(2.0, cast(y, x.dtype))


# -- in-place variants ---------------------------------------------------------------------------
acos_ = _inplace(acos, "acos_")
asin_ = _inplace(asin, "asin_")
atan_ = _inplace(atan, "atan_")
acosh_ = _inplace(acosh, "acosh_")
asinh_ = _inplace(asinh, "asinh_")
atanh_ = _inplace(atanh, "atanh_")
cosh_ = _inplace(cosh, "cosh_")
sinh_ = _inplace(sinh, "sinh_")
expm1_ = _inplace(expm1, "expm1_")
digamma_ = _inplace(digamma, "digamma_")
lgamma_ = _inplace(lgamma, "lgamma_")
gammaln_ = _inplace(gammaln, "gammaln_")
polygamma_ = _inplace(polygamma, "polygamma_")
multigammaln_ = _inplace(multigammaln, "multigammaln_")
erfinv_ = _inplace(erfinv, "erfinv_", """In-place ``erfinv``: ``x`` becomes ``erfinv(x)``; returns ``x``.

    >>> import oar
    >>> x = oar.to_tensor([0.0], dtype="float64")
    >>> x.erfinv_() is x, x.tolist()
    (True, [0.0])
    """)
i0_ = _inplace(i0, "i0_")
gammainc_ = _inplace(gammainc, "gammainc_")
gammaincc_ = _inplace(gammaincc, "gammaincc_")
sinc_ = _inplace(sinc, "sinc_")
logit_ = _inplace(logit, "logit_")
frac_ = _inplace(frac, "frac_")
hypot_ = _inplace(hypot, "hypot_")
copysign_ = _inplace(copysign, "copysign_")
ldexp_ = _inplace(ldexp, "ldexp_")
gcd_ = _inplace(gcd, "gcd_")
lcm_ = _inplace(lcm, "lcm_")
lerp_ = _inplace(lerp, "lerp_")
nan_to_num_ = _inplace(nan_to_num, "nan_to_num_")
bitwise_invert_ = _inplace(bitwise_invert, "bitwise_invert_")
bitwise_left_shift_ = _inplace(bitwise_left_shift, "bitwise_left_shift_")
bitwise_right_shift_ = _inplace(bitwise_right_shift, "bitwise_right_shift_")


OPS = [
    acos_op, asin_op, atan_op, acosh_op, asinh_op, atanh_op, cosh_op, sinh_op, expm1_op, atan2_op, lgamma_op,
    digamma_op, polygamma_op, erfinv_op, i0_op, i0e_op, i1_op, i1e_op, gammainc_op, gammaincc_op, sinc_op, logit_op,
    hypot_op, logaddexp_op, copysign_op, nextafter_op, heaviside_op, fmax_op, fmin_op, frexp_op, gcd_op, lcm_op,
    bitwise_left_shift_op, bitwise_right_shift_op, signbit_op,
]

_FUNCTIONS = {
    "acos": acos, "asin": asin, "atan": atan, "acosh": acosh, "asinh": asinh, "atanh": atanh, "cosh": cosh,
    "sinh": sinh, "atan2": atan2, "expm1": expm1, "digamma": digamma, "lgamma": lgamma, "gammaln": gammaln,
    "polygamma": polygamma, "multigammaln": multigammaln, "erfinv": erfinv, "i0": i0, "i0e": i0e, "i1": i1,
    "i1e": i1e, "gammainc": gammainc, "gammaincc": gammaincc, "sinc": sinc, "logit": logit, "frac": frac,
    "deg2rad": deg2rad, "rad2deg": rad2deg, "hypot": hypot, "copysign": copysign, "nextafter": nextafter,
    "ldexp": ldexp, "frexp": frexp, "heaviside": heaviside, "fmax": fmax, "fmin": fmin, "gcd": gcd, "lcm": lcm,
    "logaddexp": logaddexp, "signbit": signbit, "sgn": sgn, "isneginf": isneginf, "isposinf": isposinf,
    "stanh": stanh, "lerp": lerp, "nan_to_num": nan_to_num, "bitwise_invert": bitwise_invert,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
}
_IN_PLACE = {
    "acos_": acos_, "asin_": asin_, "atan_": atan_, "acosh_": acosh_, "asinh_": asinh_, "atanh_": atanh_,
    "cosh_": cosh_, "sinh_": sinh_, "expm1_": expm1_, "digamma_": digamma_, "lgamma_": lgamma_,
    "gammaln_": gammaln_, "polygamma_": polygamma_, "multigammaln_": multigammaln_, "erfinv_": erfinv_, "i0_": i0_,
    "gammainc_": gammainc_, "gammaincc_": gammaincc_, "sinc_": sinc_, "logit_": logit_, "frac_": frac_,
    "hypot_": hypot_, "copysign_": copysign_, "ldexp_": ldexp_, "gcd_": gcd_, "lcm_": lcm_, "lerp_": lerp_,
    "nan_to_num_": nan_to_num_, "bitwise_invert_": bitwise_invert_, "bitwise_left_shift_": bitwise_left_shift_,
    "bitwise_right_shift_": bitwise_right_shift_,
}
# Paddle 3.3.1 keeps asin_, acosh_, asinh_, atanh_, cosh_, erfinv_ and lerp_ as Tensor methods only,
# and expm1_ at the top level only.
_METHOD_ONLY = ("asin_", "acosh_", "asinh_", "atanh_", "cosh_", "erfinv_", "lerp_")
_TOP_LEVEL_ONLY = ("expm1_",)

__all__ = list(_FUNCTIONS) + [name for name in _IN_PLACE if name not in _METHOD_ONLY]

# Paddle 3.3.1's Tensor methods of this family.
METHODS = {**_FUNCTIONS, **{name: fn for name, fn in _IN_PLACE.items() if name not in _TOP_LEVEL_ONLY}}
