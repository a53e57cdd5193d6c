"""Op cases of the special family.

The references are numpy or the math module, computed another way than the kernels where the
kernel is not a numpy ufunc: digamma and polygamma by a 1000-term recurrence with an
Euler-Maclaurin tail (no reflection), erfinv by bisection on ``math.erf``, the Bessel functions by
the trapezoid rule on ``I_n(x) = 1/pi int_0^pi exp(x cos t) cos(n t) dt`` (exact to rounding for a
periodic integrand), the incomplete gamma functions by their closed forms at integer and
half-integer ``x``, the shifts with Python's unbounded ints.
"""

from __future__ import annotations

import math

import numpy as np

import oar
from oar.testing import OpCase

from ._data import away_from, ints, positive, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")
NOGRAD = {"grad": False}


def _vectorized(fn):
    return np.vectorize(fn, otypes=[np.float64])


_lgamma = _vectorized(math.lgamma)


def _digamma(x):
    # psi(x) = psi(x + K) - sum_{k<K} 1/(x + k), psi(x + K) from three terms of its asymptotic series
    x = np.asarray(x, np.float64)
    k = np.arange(1000.0)
    w = x[..., None] + 1000.0
    head = np.log(w) - 0.5 / w - 1 / (12 * w ** 2) + 1 / (120 * w ** 4)
    return (head - np.sum(1.0 / (x[..., None] + k), axis=-1)[..., None])[..., 0]


def _polygamma(n):
    # (-1)^(n+1) n! sum_k (x + k)^-(n+1): 1000 terms, then the Euler-Maclaurin tail
    def ref(x):
        x = np.asarray(x, np.float64)[..., None]
        terms = np.sum((x + np.arange(1000.0)) ** -(n + 1), axis=-1, keepdims=True)
        w = x + 1000.0
        tail = w ** -n / n + w ** -(n + 1) / 2 + (n + 1) * w ** -(n + 2) / 12
        return ((-1.0) ** (n + 1) * math.factorial(n) * (terms + tail))[..., 0]

    return ref


def _erfinv(y):
    lo, hi = np.full(np.shape(y), -7.0), np.full(np.shape(y), 7.0)
    erf = _vectorized(math.erf)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = erf(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def _bessel(order, scaled):
    t = np.linspace(0.0, math.pi, 2001)
    weights = np.full(t.shape, 1.0)
    weights[[0, -1]] = 0.5

    def ref(x):
        x = np.asarray(x, np.float64)[..., None]
        shift = np.abs(x) if scaled else 0.0
        integrand = np.exp(x * np.cos(t) - shift) * np.cos(order * t)
        return (integrand * weights).sum(-1) * (t[1] - t[0]) / math.pi

    return ref


def _gammaincc_closed(a, y):
    # Q(n, y) = e^-y sum_{k<n} y^k / k!; Q(n + 1/2, y) = erfc(sqrt y) + e^-y sum_{k<n} y^(k+1/2) / Gamma(k + 3/2)
    def one(a, y):
        whole = math.floor(a)
        if a == whole:
            return math.exp(-y) * sum(y ** k / math.factorial(k) for k in range(int(whole)))
        return math.erfc(math.sqrt(y)) + math.exp(-y) * sum(y ** (k + 0.5) / math.gamma(k + 1.5) for k in range(int(whole)))

    return np.vectorize(one, otypes=[np.float64])(a, y)


def _shift_ref(left, arithmetic=True):
    def ref(x, y):
        bits = x.dtype.itemsize * 8
        mask = (1 << bits) - 1

        def one(a, s):
            a, s = int(a), int(s)
            if not 0 <= s < bits:
                return -1 if (not left and arithmetic and a < 0) else 0
            if left:
                value = (a << s) & mask
            elif arithmetic or x.dtype.kind == "u":
                value = a >> s
            else:
                value = (a & mask) >> s
            value &= mask
            return value - (1 << bits) if x.dtype.kind == "i" and value >= 1 << (bits - 1) else value

        return np.vectorize(one, otypes=[x.dtype])(*np.broadcast_arrays(x, y))

    return ref


def _logit(eps=None):
    def ref(x):
        if eps is not None:
            x = np.clip(x, eps, 1 - eps)
        return np.log(x / (1 - x))

    return ref


UNIT = rand(2, 3, low=-0.9, high=0.9)
GAMMA_X = np.array([[0.5, 1.0, 1.5], [2.0, 3.5, 5.0]])
GAMMA_Y = positive(2, 3, low=0.3, high=6.0)
SHIFT_X8 = np.array([1, -1, 100, -100, 3, -128, 64, 5], np.int8)
SHIFT_Y8 = np.array([7, 9, 1, 9, -1, 1, 3, 0], np.int8)

CASES = [
    # -- inverse and hyperbolic trigonometry -------------------------------------------------------
    OpCase("acos", oar.acos, np.arccos, [UNIT], dtypes=ALL_FLOATS),
    OpCase("acos", lambda x: x.acos(), np.arccos, [ints(4, low=-1, high=2)], id="acos_int_is_float", **NOGRAD),
    OpCase("asin", oar.asin, np.arcsin, [UNIT], dtypes=ALL_FLOATS),
    OpCase("atan", oar.atan, np.arctan, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("atan", oar.atan, np.arctan, [rand()], id="atan_0d"),
    OpCase("acosh", oar.acosh, np.arccosh, [positive(2, 3, low=1.2, high=4.0)], dtypes=ALL_FLOATS),
    OpCase("asinh", oar.asinh, np.arcsinh, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("atanh", oar.atanh, np.arctanh, [UNIT], dtypes=ALL_FLOATS),
    OpCase("cosh", oar.cosh, np.cosh, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("sinh", lambda x: x.sinh(), np.sinh, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("expm1", oar.expm1, np.expm1, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("expm1", oar.expm1, np.expm1, [np.array([1e-12, -1e-9, 1e-5])], dtypes=("float64",), rtol=1e-14,
           id="expm1_small"),
    OpCase("atan2", oar.atan2, np.arctan2, [away_from(rand(2, 3)), away_from(rand(3))], dtypes=ALL_FLOATS),
    OpCase("atan2", lambda x, y: x.atan2(y), np.arctan2, [ints(2, 3, low=-5, high=5), ints(3, low=1)],
           id="atan2_int_is_float64", **NOGRAD),
    # -- gamma functions ---------------------------------------------------------------------------------
    OpCase("lgamma", oar.lgamma, _lgamma, [positive(2, 3, low=0.2, high=8.0)]),
    OpCase("lgamma", oar.lgamma, _lgamma, [np.array([-2.5, -0.5, 0.3, 1.0, 2.0, 30.0, 171.5])], id="lgamma_negative"),
    OpCase("lgamma", oar.gammaln, _lgamma, [positive(3, low=0.5, high=4.0)], id="gammaln"),
    OpCase("lgamma", lambda x: x.lgamma(), lambda x: np.full(x.shape, np.inf), [np.array([0.0, -1.0, -2.0])],
           id="lgamma_poles", **NOGRAD),
    OpCase("digamma", oar.digamma, _digamma, [positive(2, 3, low=0.2, high=12.0)]),
    OpCase("digamma", oar.digamma, _digamma, [np.array([-3.7, -1.5, -0.2, 0.01, 0.49, 0.51, 9.99, 10.01, 1e4])],
           id="digamma_reflection_and_series"),
    OpCase("digamma", oar.digamma, _digamma, [np.array(-0.7)], id="digamma_0d"),
    OpCase("polygamma", lambda x: oar.polygamma(x, 1), _polygamma(1), [positive(2, 3, low=0.2, high=12.0)]),
    OpCase("polygamma", lambda x: oar.polygamma(x, 3), _polygamma(3), [np.array(0.3)], id="polygamma_0d"),
    OpCase("polygamma", lambda x: x.polygamma(2), _polygamma(2), [np.array([-2.5, -0.3, 0.4, 1.0, 7.5, 25.0])],
           id="polygamma_2_reflection"),
    OpCase("polygamma", lambda x: oar.polygamma(x, 5), _polygamma(5), [np.array([-1.25, 0.75, 3.0, 40.0])],
           id="polygamma_5"),
    OpCase("erfinv", oar.erfinv, _erfinv, [rand(2, 3, low=-0.95, high=0.95)]),
    OpCase("erfinv", oar.erfinv, _erfinv, [np.array(0.6)], id="erfinv_0d"),
    OpCase("erfinv", oar.erfinv, _erfinv, [np.array([-0.999999, -0.99, 1e-8, 0.3, 0.9999, 0.999999999])],
           dtypes=("float64",), id="erfinv_tails", **NOGRAD),
    # -- Bessel functions ---------------------------------------------------------------------------------
    OpCase("i0", oar.i0, np.i0, [rand(2, 3, low=-6, high=6)]),
    OpCase("i0", oar.i0, np.i0, [np.array([0.0, -29.0, 31.0, 80.0, -300.0])], dtypes=("float64",), id="i0_both_branches",
           **NOGRAD),
    OpCase("i0", oar.i0, np.i0, [np.array([-31.0, 32.5])], id="i0_far"),
    OpCase("i0e", oar.i0e, _bessel(0, True), [rand(2, 3, low=-6, high=6)]),
    OpCase("i0e", oar.i0e, _bessel(0, True), [np.array(-40.0)], id="i0e_0d"),
    OpCase("i0e", oar.i0e, _bessel(0, True), [np.array([0.3, -29.0, 31.0, 80.0, -300.0])], id="i0e_both_branches"),
    OpCase("i1", oar.i1, _bessel(1, False), [rand(2, 3, low=-6, high=6)]),
    OpCase("i1", oar.i1, _bessel(1, False), [np.array([0.0, -29.0, 31.0, 80.0])], id="i1_both_branches", **NOGRAD),
    OpCase("i1", oar.i1, _bessel(1, False), [np.array([-31.0, 32.5])], id="i1_far"),
    OpCase("i1e", oar.i1e, _bessel(1, True), [rand(2, 3, low=-6, high=6)]),
    OpCase("i1e", oar.i1e, _bessel(1, True), [np.array([0.0, -29.0, 31.0, 80.0, -300.0])], id="i1e_both_branches"),
    # -- incomplete gamma --------------------------------------------------------------------------------
    OpCase("gammainc", oar.gammainc, lambda a, y: 1.0 - _gammaincc_closed(a, y), [GAMMA_X, GAMMA_Y], grad_inputs=[1]),
    OpCase("gammainc", lambda a, y: a.gammainc(y), lambda a, y: 1.0 - _gammaincc_closed(*np.broadcast_arrays(a, y)),
           [np.array([2.0]), np.array([0.1, 2.9, 3.1, 40.0])], grad_inputs=[1], id="gammainc_broadcast_branches"),
    OpCase("gammaincc", oar.gammaincc, _gammaincc_closed, [GAMMA_X, GAMMA_Y], grad_inputs=[1]),
    OpCase("gammaincc", oar.gammaincc, _gammaincc_closed, [np.array(1.5), np.array(2.5)], grad_inputs=[1],
           id="gammaincc_0d"),
    OpCase("gammaincc", oar.gammaincc, lambda a, y: _gammaincc_closed(*np.broadcast_arrays(a, y)),
           [np.array([[10.0], [0.5]]), np.array([1.0, 9.0, 11.0, 60.0])], dtypes=("float64",), rtol=1e-12,
           grad_inputs=[1], id="gammaincc_branches"),
    # -- sinc, logit -------------------------------------------------------------------------------------
    OpCase("sinc", oar.sinc, np.sinc, [rand(2, 3, low=-2.5, high=2.5)], dtypes=ALL_FLOATS),
    OpCase("sinc", oar.sinc, np.sinc, [np.array([0.0, 1.0, -2.0, 0.5])], id="sinc_zero_and_integers"),
    OpCase("logit", oar.logit, _logit(), [rand(2, 3, low=0.05, high=0.95)], dtypes=ALL_FLOATS),
    OpCase("logit", lambda x: x.logit(eps=0.1), _logit(0.1), [np.array([0.02, 0.05, 0.3, 0.6, 0.95, 0.99])],
           id="logit_eps"),
    # -- binary float functions --------------------------------------------------------------------------
    OpCase("hypot", oar.hypot, np.hypot, [away_from(rand(2, 3)), away_from(rand(3))], dtypes=ALL_FLOATS),
    OpCase("hypot", oar.hypot, np.hypot, [np.array([1e200, 3.0]), np.array([1e200, -4.0])], dtypes=("float64",),
           id="hypot_no_overflow", **NOGRAD),
    OpCase("logaddexp", oar.logaddexp, np.logaddexp, [rand(2, 3, low=-3, high=3), rand(3, low=-3, high=3)],
           dtypes=ALL_FLOATS),
    OpCase("logaddexp", oar.logaddexp, np.logaddexp, [np.array([800.0, -800.0]), np.array([800.0, -801.0])],
           dtypes=("float64",), id="logaddexp_no_overflow"),
    OpCase("copysign", oar.copysign, np.copysign, [away_from(rand(2, 3)), away_from(rand(3))], dtypes=ALL_FLOATS,
           grad_inputs=[0]),
    OpCase("copysign", lambda x, y: x.copysign(y), np.copysign, [np.array([1.0, -2.0, 3.0]), np.array([-0.0, 0.0, -5.0])],
           id="copysign_signed_zero", grad_inputs=[0]),
    OpCase("copysign", oar.copysign, lambda x, y: np.where(y < 0, -np.abs(x), np.abs(x)),
           [ints(2, 3, low=-5, high=5), ints(3, low=-5, high=5)], id="copysign_int", **NOGRAD),
    OpCase("nextafter", oar.nextafter, np.nextafter, [rand(2, 3), rand(3)], **NOGRAD),
    OpCase("heaviside", oar.heaviside, np.heaviside, [np.array([[-1.5, 0.0, 2.0], [0.0, -0.5, 3.0]]), rand(3)],
           dtypes=ALL_FLOATS, grad_inputs=[1]),
    OpCase("heaviside", oar.heaviside, np.heaviside, [away_from(rand(2, 3)), rand(3)], id="heaviside_x_grad"),
    OpCase("heaviside", oar.heaviside, lambda x, y: np.heaviside(x, y).astype(x.dtype), [ints(2, 3, low=-2, high=3), ints(3)],
           id="heaviside_int", **NOGRAD),
    OpCase("fmax", oar.fmax, np.fmax, [away_from(rand(2, 3)), away_from(rand(3), (0.5,))], dtypes=ALL_FLOATS),
    OpCase("fmax", oar.fmax, np.fmax, [np.array([np.nan, 1.0, np.nan, 2.0]), np.array([2.0, np.nan, np.nan, 2.0])],
           id="fmax_nan", **NOGRAD),
    OpCase("fmax", oar.fmax, np.fmax, [ints(2, 3), ints(3)], id="fmax_int", **NOGRAD),
    OpCase("fmin", oar.fmin, np.fmin, [away_from(rand(2, 3)), away_from(rand(3), (0.5,))], dtypes=ALL_FLOATS),
    OpCase("fmin", lambda x, y: x.fmin(y), np.fmin, [np.array([np.nan, 1.0, 3.0]), np.array([2.0, np.nan, 0.5])],
           id="fmin_nan"),
    # -- frexp -------------------------------------------------------------------------------------------
    OpCase("frexp", oar.frexp, lambda x: (np.frexp(x)[0], np.frexp(x)[1].astype(x.dtype)),
           [np.array([[3.0, -5.5, 0.3], [100.0, 1e-3, -0.7]])]),
    OpCase("frexp", lambda x: x.frexp(), lambda x: (np.frexp(x)[0], np.frexp(x)[1].astype(x.dtype)),
           [np.array([0.0, -0.0, 1.0, 1e-310, 1e300])], dtypes=("float64",), id="frexp_edges", **NOGRAD),
    # -- integer functions ----------------------------------------------------------------------------------
    OpCase("gcd", oar.gcd, np.gcd, [np.array([12, -12, 0, 0, 7, 100]), np.array([18, 18, 0, -5, 0, 75])], **NOGRAD),
    OpCase("gcd", lambda x, y: x.gcd(y), np.gcd, [np.array([[12], [9]], np.int32), np.array([18, 6], np.int32)],
           id="gcd_int32_broadcast", **NOGRAD),
    OpCase("lcm", oar.lcm, np.lcm, [np.array([12, -12, 0, 0, 7, 4]), np.array([18, 18, 0, -5, 0, 6])], **NOGRAD),
    OpCase("lcm", oar.lcm, np.lcm, [ints(2, 3, low=1, dtype=np.int16), ints(3, low=1, dtype=np.int16)],
           id="lcm_int16", **NOGRAD),
    OpCase("bitwise_left_shift", oar.bitwise_left_shift, _shift_ref(left=True), [SHIFT_X8, SHIFT_Y8], **NOGRAD),
    OpCase("bitwise_left_shift", lambda x, y: x.bitwise_left_shift(y), _shift_ref(left=True),
           [ints(2, 3, low=-1000, high=1000), np.array([0, 5, 63])], id="bitwise_left_shift_int64", **NOGRAD),
    OpCase("bitwise_right_shift", oar.bitwise_right_shift, _shift_ref(left=False), [SHIFT_X8, SHIFT_Y8], **NOGRAD),
    OpCase("bitwise_right_shift", lambda x, y: oar.bitwise_right_shift(x, y, is_arithmetic=False),
           _shift_ref(left=False, arithmetic=False), [SHIFT_X8, SHIFT_Y8], id="bitwise_right_shift_logical", **NOGRAD),
    OpCase("bitwise_right_shift", lambda x, y: oar.bitwise_right_shift(x, y, is_arithmetic=False),
           _shift_ref(left=False, arithmetic=False), [np.array([-8, 8, -1], np.int32), np.array([1, 1, 31], np.int32)],
           id="bitwise_right_shift_logical_int32", **NOGRAD),
    OpCase("bitwise_right_shift", oar.bitwise_right_shift, _shift_ref(left=False),
           [np.array([200, 7], np.uint8), np.array([1, 9], np.uint8)], id="bitwise_right_shift_uint8", **NOGRAD),
    # -- predicates -------------------------------------------------------------------------------------
    OpCase("signbit", oar.signbit, np.signbit, [np.array([-0.0, 0.0, -1.5, 2.0, -np.inf, np.inf])], dtypes=ALL_FLOATS,
           **NOGRAD),
    OpCase("signbit", lambda x: x.signbit(), np.signbit, [ints(2, 3, low=-5, high=5)], id="signbit_int", **NOGRAD),
]
