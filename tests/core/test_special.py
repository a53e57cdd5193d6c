"""Behaviour of the special family beyond the op table: the composed functions, values and
gradients recorded from Paddle 3.3.1, dtype rules, errors, ``out=`` and the in-place variants."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient

RTOL64, ATOL64 = TOLERANCES["float64"]
RTOL32, ATOL32 = TOLERANCES["float32"]
NAN, INF = math.nan, math.inf
# The Paddle 3.3.1 numbers below were printed by numpy to 8 decimals: they are exact to half of the last digit.
PRINTED_RTOL, PRINTED_ATOL = RTOL64, 5e-9


def f64(values, stop_gradient=True):
    return oar.to_tensor(np.asarray(values, np.float64), stop_gradient=stop_gradient)


def close64(got, expected):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=RTOL64, atol=ATOL64)


def grads(fn, *values):
    inputs = [f64(v, stop_gradient=False) for v in values]
    out = fn(*inputs)
    out = out[0] if isinstance(out, tuple) else out
    out.sum().backward()
    return [None if t.grad is None else t.grad.numpy() for t in inputs]


# -- values recorded from Paddle 3.3.1 (float64) -------------------------------------------------------
@pytest.mark.parametrize("fn, inputs, paddle_values", [
    (oar.gammainc, ([0.5, 1.0, 3.0, 10.0], [1.0, 0.5, 5.0, 3.0]), [0.84270079, 0.39346934, 0.87534798, 0.00110249]),
    (oar.gammaincc, ([0.5, 1.0, 3.0, 10.0], [1.0, 0.5, 5.0, 3.0]), [0.15729921, 0.60653066, 0.12465202, 0.99889751]),
    (oar.gammainc, ([100.0, 100.0, 1e-3], [90.0, 110.0, 1e-3]), [0.15822099, 0.84172133, 0.99368765]),
    (lambda x: oar.polygamma(x, 2), ([0.5, 1.0, 3.0, -1.5],), [-16.82879664, -2.40411381, -0.15411381, -0.23620405]),
    (oar.digamma, ([0.5, 1.0, 3.0, -1.5, 0.0, -2.0],), [-1.96351003, -0.57721566, 0.92278434, 0.70315664, -INF, NAN]),
    (oar.lgamma, ([0.5, 1.0, 3.0, -1.5, 0.0, -2.0],), [0.57236494, 0.0, 0.69314718, 0.86004702, INF, INF]),
    (oar.erfinv, ([0.0, 0.5, -0.999, 1.0, -1.0],), [0.0, 0.47693628, -2.32675377, INF, -INF]),
    (oar.i0, ([0.0, 1.0, -5.0, 30.0],), [1.0, 1.26606588, 27.2398718, 7.81672298e11]),
    (oar.i1, ([0.0, 1.0, -5.0, 30.0],), [0.0, 0.565159104, -24.3356421, 7.68532039e11]),
    (oar.i0e, ([0.0, 1.0, -5.0, 30.0],), [1.0, 0.46575961, 0.18354081, 0.07314595]),
    (oar.i1e, ([0.0, 1.0, -5.0, 30.0],), [0.0, 0.20791042, -0.16397227, 0.07191633]),
    (lambda x: oar.multigammaln(x, 3), ([2.5, 4.0, 0.5],), [1.88099546, 5.40297508, INF]),
    (lambda x: oar.polygamma(x, 1), ([0.0, -1.0, -2.0],), [INF, INF, INF]),
    (lambda x: oar.polygamma(x, 2), ([0.0, -1.0, -2.0],), [-INF, -INF, -INF]),
    (oar.sinc, ([0.0, 0.5, -2.5],), [1.0, 0.63661977, 0.12732395]),
    (lambda x: oar.logit(x, eps=0.01), ([0.0, 0.001, 0.5, 1.0, 1.5],), [-4.59511985, -4.59511985, 0.0, 4.59511985, 4.59511985]),
    (oar.logit, ([0.0, 0.5, 1.0, 1.5],), [-INF, 0.0, INF, NAN]),
    (oar.heaviside, ([-1.0, 0.0, 2.0, NAN], [0.5]), [0.0, 0.5, 1.0, 0.0]),
    (lambda x, y: oar.lerp(x, y, f64([0.1, 0.2, 0.3])), ([0.5, 1.5, 2.5], [1.0, 3.0, 5.0]), [0.55, 1.8, 3.25]),
    (lambda x: oar.nan_to_num(x, 1.0, 2.0, -3.0), ([NAN, INF, -INF, 1.0],), [1.0, 2.0, -3.0, 1.0]),
])
def test_values_match_paddle(fn, inputs, paddle_values):
    got = fn(*[f64(v) for v in inputs]).numpy()
    np.testing.assert_allclose(got, paddle_values, rtol=PRINTED_RTOL, atol=PRINTED_ATOL)


@pytest.mark.parametrize("fn, inputs, paddle_grads", [
    (oar.copysign, ([1.0, -2.0, 0.0, 3.0], [-1.0, -1.0, -1.0, 0.0]), [[-1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]),
    (oar.heaviside, ([-1.0, 0.0, 2.0], [0.5, 0.7, 0.2]), [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    (oar.fmax, ([1.0, 2.0, NAN, 3.0], [2.0, 2.0, 1.0, NAN]), [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]]),
    (oar.fmin, ([1.0, 2.0, NAN, 3.0], [2.0, 2.0, 1.0, NAN]), [[1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]),
    (oar.gammainc, ([0.5, 2.0], [1.0, 3.0]), [None, [0.20755375, 0.14936121]]),
    (oar.gammaincc, ([0.5, 2.0], [1.0, 3.0]), [None, [-0.20755375, -0.14936121]]),
    (oar.i1, ([0.0, 1.0, -2.0],), [[0.5, 0.70090677, 1.48426688]]),
    (oar.i1e, ([0.0, 1.0, -2.0],), [[0.5, 0.04993878, -0.01439561]]),
    (oar.i0e, ([0.0, 1.0, -2.0],), [[-1.0, -0.25784919, 0.09323903]]),
    (oar.hypot, ([0.0, 3.0], [0.0, 4.0]), [[NAN, 0.6], [NAN, 0.8]]),
    (oar.atan2, ([0.0, 1.0], [0.0, 2.0]), [[NAN, 0.4], [NAN, -0.2]]),
    (oar.nan_to_num, ([NAN, INF, 1.0],), [[0.0, 0.0, 1.0]]),
    (lambda x: oar.logit(x, 0.1), ([0.05, 0.5, 0.95, 0.1],), [[0.0, 4.0, 0.0, 11.11111111]]),
    (oar.logit, ([0.05, 0.5, 1.5],), [[21.05263158, 4.0, NAN]]),
    (oar.frac, ([-1.5, 2.25],), [[1.0, 1.0]]),
    (oar.sinc, ([0.0, 0.5],), [[0.0, -1.27323954]]),
    (oar.frexp, ([3.0, 0.0, -5.0],), [[0.25, 0.0, 0.125]]),
    (lambda x: oar.polygamma(x, 1), ([0.5, 2.0],), [[-16.82879664, -0.40411381]]),
    (oar.stanh, ([0.3],), [[1.10442882]]),
    (oar.ldexp, ([3.0], [2.0]), [[4.0], [8.31776617]]),
    (lambda x: oar.multigammaln(x, 2), ([3.0],), [[1.62594098]]),
    (oar.logaddexp, ([1.0], [2.0]), [[0.26894142], [0.73105858]]),
])
def test_gradients_match_paddle(fn, inputs, paddle_grads):
    for got, expected in zip(grads(fn, *inputs), paddle_grads):
        if expected is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, expected, rtol=PRINTED_RTOL, atol=PRINTED_ATOL)


# -- composed functions against numpy --------------------------------------------------------------------
def test_composed_functions_match_numpy():
    x = np.array([-2.75, -0.5, 0.0, 0.3, 4.0])
    close64(oar.frac(f64(x)).numpy(), x - np.trunc(x))
    close64(oar.deg2rad(f64(x)).numpy(), np.deg2rad(x))
    close64(oar.rad2deg(f64(x)).numpy(), np.rad2deg(x))
    close64(oar.stanh(f64(x), 0.5, 2.0).numpy(), 2.0 * np.tanh(0.5 * x))
    close64(oar.lerp(f64(x), f64(x[::-1]), 0.25).numpy(), x + 0.25 * (x[::-1] - x))
    close64(oar.ldexp(f64(x), oar.to_tensor([1, 0, -3, 5, 2])).numpy(), np.ldexp(x, [1, 0, -3, 5, 2]))
    close64(oar.sgn(f64([-2.0, 0.0, NAN, 3.0])).numpy(), [-1.0, 0.0, NAN, 1.0])
    p = 4
    expected = [p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(v - j / 2) for j in range(p)) for v in (2.0, 7.5)]
    close64(oar.multigammaln(f64([2.0, 7.5]), p).numpy(), expected)
    special = f64([-INF, -1.0, INF, NAN])
    assert oar.isneginf(special).tolist() == [True, False, False, False]
    assert oar.isposinf(special).tolist() == [False, False, True, False]
    assert oar.isposinf(oar.to_tensor([1, 2])).tolist() == [False, False]
    assert oar.bitwise_invert(oar.to_tensor([0, 5, -3])).tolist() == [-1, -6, 2]


def test_nan_to_num_defaults_are_the_dtype_limits():
    x = oar.to_tensor([NAN, INF, -INF, 1.0], dtype="float32")
    big = float(np.finfo(np.float32).max)
    np.testing.assert_array_equal(oar.nan_to_num(x).numpy(), np.array([0.0, big, -big, 1.0], np.float32))
    half = oar.nan_to_num(oar.to_tensor([INF], dtype="float16"))
    assert half.dtype == oar.float16 and float(half) == float(np.finfo(np.float16).max)


def test_lerp_differentiates_in_every_argument():
    # Paddle gives weight no gradient; oar gives d/dweight = y - x (see the module docstring)
    x, y, w = f64([1.0, 2.0], False), f64([3.0, 5.0], False), f64([0.25, 0.5], False)
    oar.lerp(x, y, w).sum().backward()
    close64(x.grad.numpy(), [0.75, 0.5])  # Paddle 3.3.1's
    close64(y.grad.numpy(), [0.25, 0.5])  # Paddle 3.3.1's
    close64(w.grad.numpy(), [2.0, 3.0])


def test_multigammaln_gradient_is_finite_differences():
    x0 = np.array([2.3, 5.1])
    analytic = grads(lambda x: oar.multigammaln(x, 3), x0)[0]
    numeric = numeric_gradient(lambda a: float(oar.multigammaln(f64(a), 3).sum()), x0)
    np.testing.assert_allclose(analytic, numeric, rtol=GRAD_RTOL, atol=GRAD_ATOL)


def test_gammainc_limits():
    close64(oar.gammainc(f64([2.0, 0.5, 0.0, 0.0, 3.0]), f64([0.0, 0.0, 1.0, 0.0, INF])).numpy(), [0, 0, 1, 0, 1])
    close64(oar.gammaincc(f64([2.0, 0.0, 3.0]), f64([0.0, 1.0, INF])).numpy(), [1, 0, 0])
    tiny = oar.gammainc(f64([45.69274500698141]), f64([6.7807173779211105])).numpy()  # Paddle flushes it to 0
    assert 0 < tiny[0] < 1e-20


def test_erfinv_round_trips_and_is_nan_outside():
    y = np.linspace(-0.9999, 0.9999, 41)
    close64(oar.erf(oar.erfinv(f64(y))).numpy(), y)
    assert np.isnan(oar.erfinv(f64([1.5, -2.0])).numpy()).all()  # Paddle 3.3.1 gives +-inf here


def test_logaddexp_of_infinities():
    close64(oar.logaddexp(f64([-INF, INF, -INF]), f64([-INF, INF, 1.0])).numpy(), [-INF, INF, 1.0])


# -- dtype rules (Paddle 3.3.1's) -------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [oar.acos, oar.asin, oar.atan, oar.acosh, oar.asinh, oar.atanh, oar.cosh, oar.sinh,
                                oar.expm1, oar.digamma, oar.lgamma, oar.erfinv, oar.i0, oar.i0e, oar.i1, oar.i1e,
                                oar.deg2rad, oar.rad2deg, oar.stanh, oar.logit, lambda x: oar.polygamma(x, 1)])
def test_integer_input_computes_in_float32(fn):
    assert fn(oar.to_tensor([1, 2, 3])).dtype == oar.float32


def test_binary_dtype_rules():
    a, b = oar.to_tensor([1, 2, 3]), oar.to_tensor([3, -2, 1])
    assert oar.atan2(a, b).dtype == oar.float64
    assert oar.atan2(a.astype("int32"), b.astype("int32")).dtype == oar.float64
    for fn in (oar.hypot, oar.logaddexp, oar.ldexp):
        assert fn(a, b).dtype == oar.float32
    for fn in (oar.copysign, oar.heaviside, oar.fmax, oar.fmin, oar.gcd, oar.lcm):
        assert fn(a, b).dtype == oar.int64
    assert oar.copysign(a, b).tolist() == [1, -2, 3]
    assert oar.frac(a).dtype == oar.int64 and oar.frac(a).tolist() == [0, 0, 0]
    assert oar.ldexp(f64([1.0, 2.0]), oar.to_tensor([1, 3], dtype="int32")).tolist() == [2.0, 16.0]
    assert oar.signbit(oar.to_tensor([-1, 0, 3])).tolist() == [True, False, False]
    half = oar.to_tensor([0.5], dtype="float16")
    assert oar.digamma(half).dtype == oar.float16 and oar.gammainc(half, half).dtype == oar.float16
    mantissa, exponent = oar.frexp(oar.to_tensor([1e-40, 8.0], dtype="float32"))
    assert exponent.dtype == oar.float32 and exponent.tolist() == [-132.0, 4.0]  # Paddle 3.3.1's
    np.testing.assert_allclose(mantissa.numpy(), [0.54444885, 0.5], rtol=RTOL32)


@pytest.mark.parametrize("call, error, words", [
    (lambda: oar.gcd(f64([1.0]), f64([2.0])), DTypeError, "gcd: x must be an integer tensor"),
    (lambda: oar.bitwise_left_shift(f64([1.0]), f64([2.0])), DTypeError, "bitwise_left_shift: x"),
    (lambda: oar.bitwise_left_shift(oar.to_tensor([1], dtype="int32"), oar.to_tensor([1])), DTypeError, "int32"),
    (lambda: oar.frexp(oar.to_tensor([1])), DTypeError, "frexp: x must be a float32 or float64"),
    (lambda: oar.nextafter(oar.to_tensor([1.0], dtype="float16"), oar.to_tensor([2.0], dtype="float16")), DTypeError,
     "nextafter"),
    (lambda: oar.nan_to_num(oar.to_tensor([1])), DTypeError, "nan_to_num: x must be a floating tensor"),
    (lambda: oar.sgn(oar.to_tensor([1])), DTypeError, "sgn"),
    (lambda: oar.lerp(oar.to_tensor([1]), oar.to_tensor([2]), 0.5), DTypeError, "lerp"),
    (lambda: oar.signbit(oar.to_tensor([True])), DTypeError, "signbit"),
    (lambda: oar.polygamma(f64([1.0]), -1), ArgumentError, "polygamma: n must be a non-negative int"),
    (lambda: oar.polygamma(f64([1.0]), 1.5), ArgumentError, "polygamma: n must be a non-negative int"),
    (lambda: oar.multigammaln(f64([3.0]), 0), ArgumentError, "multigammaln: p must be an int >= 1"),
    (lambda: oar.gammainc(f64([-1.0]), f64([1.0])), ArgumentError, "gammainc: x must be >= 0"),
    (lambda: oar.gammaincc(f64([1.0]), f64([NAN])), ArgumentError, "gammaincc: y must be >= 0"),
    (lambda: oar.logit(f64([0.5]), eps="a"), ArgumentError, "logit: eps"),
    (lambda: oar.atan2(f64([1.0, 2.0]), f64([1.0, 2.0, 3.0])), oar.errors.ShapeError, "atan2"),
])
def test_errors_name_the_op_and_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


# -- out=, in place, methods ---------------------------------------------------------------------------------
def test_out_argument_writes_in_place():
    out = oar.zeros([2], dtype="float64")
    result = oar.acos(f64([1.0, -1.0]), out=out)
    assert result is out
    close64(out.numpy(), [0.0, math.pi])
    shifted = oar.zeros([2], dtype="int64")
    oar.bitwise_left_shift(oar.to_tensor([1, 2]), oar.to_tensor([3, 1]), out=shifted)
    assert shifted.tolist() == [8, 4]
    frac_out = oar.zeros([1], dtype="float64")
    oar.frac(f64([2.5]), out=frac_out)
    assert frac_out.tolist() == [0.5]


@pytest.mark.parametrize("name, args, expected", [
    ("acos_", (), np.arccos([0.25, 0.5])),
    ("sinh_", (), np.sinh([0.25, 0.5])),
    ("lgamma_", (), [math.lgamma(0.25), math.lgamma(0.5)]),
    ("digamma_", (), [-4.227453533376, -1.963510026021]),  # Paddle 3.3.1's
    ("polygamma_", (1,), [17.197329154507, 4.934802200545]),  # Paddle 3.3.1's
    ("multigammaln_", (1,), [math.lgamma(0.25), math.lgamma(0.5)]),
    ("i0_", (), np.i0([0.25, 0.5])),
    ("logit_", (), np.log(np.array([0.25, 0.5]) / (1 - np.array([0.25, 0.5])))),
    ("gammainc_", (f64([1.0, 1.0]),), [0.93207886799, math.erf(1.0)]),  # Paddle 3.3.1's
    ("hypot_", (f64([1.0, 1.0]),), np.hypot([0.25, 0.5], 1.0)),
    ("copysign_", (f64([-1.0, 1.0]),), [-0.25, 0.5]),
    ("ldexp_", (f64([2.0, -1.0]),), [1.0, 0.25]),
    ("nan_to_num_", (), [0.25, 0.5]),
    ("sinc_", (), np.sinc([0.25, 0.5])),
])
def test_in_place_variants(name, args, expected):
    x = f64([0.25, 0.5])
    result = getattr(x, name)(*args)
    assert result is x and x.inplace_version == 1
    close64(x.numpy(), expected)


def test_in_place_integer_variants():
    x = oar.to_tensor([12, 7])
    assert oar.gcd_(x, oar.to_tensor([18, 21])) is x and x.tolist() == [6, 7]
    x.lcm_(oar.to_tensor([4, 2]))
    assert x.tolist() == [12, 14]
    x.bitwise_left_shift_(oar.to_tensor([1, 2]))
    assert x.tolist() == [24, 56]
    x.bitwise_right_shift_(oar.to_tensor([3, 3]))
    assert x.tolist() == [3, 7]
    x.bitwise_invert_()
    assert x.tolist() == [-4, -8]


def test_in_place_refuses_a_float_result_in_an_int_tensor():
    with pytest.raises(DTypeError):
        oar.to_tensor([1, 2]).acos_()


def test_names_follow_paddle_namespaces():
    for name in ("asin_", "acosh_", "asinh_", "atanh_", "cosh_", "erfinv_", "lerp_"):
        assert hasattr(oar.Tensor, name) and not hasattr(oar, name), name
    assert hasattr(oar, "expm1_") and not hasattr(oar.Tensor, "expm1_")
    x = f64([0.5])
    assert x.lerp_(f64([1.5]), 0.5) is x and x.tolist() == [1.0]
