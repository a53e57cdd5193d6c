"""The math lowerings (``oar_triton.kernels.math``) against numpy over wide ranges: magnitudes from
the smallest normal to the largest, 0 and -0.0, inf and nan, in float32 and float64 (to
``oar.testing``'s tolerances, zeros with numpy's sign); float16/bfloat16 against the cpu; the
integer and bool variants exactly; the activations against the cpu's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError
from oar.ops import dispatch
from oar.plugins import registries
from oar.testing import TOLERANCES

RNG = np.random.default_rng(11)
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan]


def wide(dtype, extra=()) -> np.ndarray:
    """Both signs of magnitudes spread evenly in exponent over the dtype's normal range, near 1 and
    near 0 densely, the special values and ``extra``."""
    info = np.finfo(dtype)
    big = np.log10(float(info.max)) - 0.01
    small = np.log10(float(info.tiny)) + 0.01
    magnitudes = np.concatenate([np.logspace(small, big, 700), np.linspace(0, 4, 400), np.logspace(-9, 0, 200)])
    values = np.concatenate([magnitudes, -magnitudes, SPECIAL, np.asarray(extra, np.float64)])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def assert_close(got: np.ndarray, expected: np.ndarray, dtype, what: str, zero_signs: bool = True) -> None:
    """``oar.testing``'s relative tolerance; an absolute one of the smallest normal (subnormal results
    round twice); zeros with numpy's sign; nan and infinities where numpy has them."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, f"{what}: {got.dtype} vs {expected.dtype}"
    np.testing.assert_allclose(got, expected, rtol=TOLERANCES[np.dtype(dtype).name][0],
                               atol=float(np.finfo(dtype).tiny), err_msg=what)
    if not zero_signs:
        return
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]), err_msg=f"{what}: sign of zero")


def on_gpu(fn, *arrays):
    out = fn(*[oar.to_tensor(a, place="gpu") for a in arrays])
    assert out.place.is_gpu_place()
    return out.numpy()


def on_cpu(fn, *arrays):
    with np.errstate(all="ignore"):  # the reference kernels meet inf and overflow here on purpose
        return fn(*[oar.to_tensor(a, place="cpu") for a in arrays]).numpy()


UNARY = {
    "log1p": (oar.log1p, np.log1p, [-1.0, -0.999, -0.25, 0.25, 1e-7]),
    "expm1": (oar.expm1, np.expm1, [-0.35, 0.35, 88.7, 709.7, -1e-7]),
    "log2": (oar.log2, np.log2, [2.0, 1024.0, 0.5, 1.0000001, 0.999]),
    "log10": (oar.log10, np.log10, [10.0, 1e6, 0.1, 1.0000001, 0.999]),
    "tan": (oar.tan, np.tan, [1.5707963, -1.5707964, 3.1415927, 100.0]),
    "atan": (oar.atan, np.arctan, [1.0, -1.0, 0.9999999, 1.0000001, 1e-20]),
    "asin": (oar.asin, np.arcsin, [1.0, -1.0, 0.9999999, -0.5, 1.0000001]),
    "acos": (oar.acos, np.arccos, [1.0, -1.0, 0.9999999, -0.9999999, 1.0000001]),
    "sinh": (oar.sinh, np.sinh, [20.0, 20.5, 88.0, 89.0, 709.0, 710.0, 1e-30]),
    "cosh": (oar.cosh, np.cosh, [20.0, 20.5, 88.0, 89.0, 709.0, 710.0]),
    "asinh": (oar.asinh, np.arcsinh, [2.0**28, 2.0**28 + 1, 1e-30]),
    "acosh": (oar.acosh, np.arccosh, [1.0, 1.0000001, 2.0**28, 2.0**28 + 1, 0.99]),
    "atanh": (oar.atanh, np.arctanh, [1.0, -1.0, 0.9999999, 1e-30]),
    "trunc": (oar.trunc, np.trunc, [2.0**23 + 0.5, -0.5, 0.5]),
    "round": (oar.round, np.round, [0.5, 1.5, 2.5, -0.5, -2.5, 2.0**52, 2.0**23 - 0.5]),
    "sinc": (oar.sinc, np.sinc, [1.0, -2.0, 0.5, 1e-20]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_over_the_whole_range(name, dtype):
    fn, reference, extra = UNARY[name]
    x = wide(dtype, extra)
    with np.errstate(all="ignore"):
        expected = reference(x)
    assert_close(on_gpu(fn, x), expected, dtype, f"{name}[{np.dtype(dtype).name}]")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_with_decimals(dtype):
    x = (RNG.standard_normal(3000) * 1000).astype(dtype)
    x[:4] = [0.125, 0.375, -2.5, 1234.5]
    for decimals in (2, -1, -2):
        assert_close(on_gpu(lambda t, d=decimals: oar.round(t, decimals=d), x), np.round(x, decimals), dtype,
                     f"round(decimals={decimals})")


@pytest.mark.parametrize("name, reference", [("isinf", np.isinf), ("isfinite", np.isfinite), ("signbit", np.signbit)])
def test_classification(name, reference):
    fn = getattr(oar, name)
    for dtype in (np.float32, np.float64, np.float16):
        with np.errstate(over="ignore"):
            x = wide(np.float32).astype(dtype)
        np.testing.assert_array_equal(on_gpu(fn, x), reference(x), err_msg=f"{name}[{np.dtype(dtype).name}]")
    for dtype in (np.int32, np.uint8) + ((np.bool_,) if name != "signbit" else ()):
        i = np.array([0, 1, 5, 200, 255], np.int64).astype(dtype)
        got = on_gpu(fn, i)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, on_cpu(fn, i), err_msg=f"{name}[{np.dtype(dtype).name}]")
    np.testing.assert_array_equal(on_gpu(oar.signbit, np.array([-3, 0, 4], np.int8)), [True, False, False])


def _grid(dtype, values) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(np.asarray(values, np.float64), np.asarray(values, np.float64))
    with np.errstate(over="ignore"):
        return a.ravel().astype(dtype), b.ravel().astype(dtype)


BINARY = {
    "floor_divide": (oar.floor_divide, np.floor_divide),
    "remainder": (oar.remainder, np.remainder),
    "elementwise_pow": (oar.pow, np.power),
    "atan2": (oar.atan2, np.arctan2),
    "hypot": (oar.hypot, np.hypot),
    "logaddexp": (oar.logaddexp, np.logaddexp),
    "copysign": (oar.copysign, np.copysign),
    "fmax": (oar.fmax, np.fmax),
    "fmin": (oar.fmin, np.fmin),
}
# operands mixing every scale: quotients far beyond 2^53, powers that overflow and underflow
_OPERANDS = [1e-30, 1e-8, 0.3, 0.5, 1.0, 2.0, 2.5, 3.0, 7.0, 10.0, 1e10, 3e30, 1e300, 1.7e308]
_OPERANDS = _OPERANDS + [-v for v in _OPERANDS] + SPECIAL


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_over_the_whole_range(name, dtype):
    fn, reference = BINARY[name]
    a, b = _grid(dtype, _OPERANDS)
    with np.errstate(all="ignore"):
        expected = reference(a, b)
    # which of 0.0 and -0.0 fmax and fmin return is numpy's loop's choice, not a rule
    assert_close(on_gpu(fn, a, b), expected, dtype, f"{name}[{np.dtype(dtype).name}]",
                 zero_signs=name not in ("fmax", "fmin"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_division_of_random_operands(dtype):
    a = (RNG.standard_normal(4000) * 10.0 ** RNG.integers(-3, 8, 4000)).astype(dtype)
    b = (RNG.standard_normal(4000) * 10.0 ** RNG.integers(-3, 3, 4000)).astype(dtype)
    b[:10] = [1.0, -1.0, 0.1, -0.1, 3.0, 1e-3, 7.0, -7.0, 0.5, 2.0]
    for fn, reference in ((oar.floor_divide, np.floor_divide), (oar.remainder, np.remainder)):
        assert_close(on_gpu(fn, a, b), reference(a, b), dtype, reference.__name__)


def test_heaviside():
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.nan, -np.inf, np.inf], np.float32)
    y = np.array([0.5], np.float32)
    np.testing.assert_array_equal(on_gpu(oar.heaviside, x, y), [0.0, 0.5, 0.5, 1.0, 0.0, 0.0, 1.0])  # nan: 0, as Paddle
    i, j = np.array([-3, 0, 4], np.int32), np.array([7, 7, 7], np.int32)
    np.testing.assert_array_equal(on_gpu(oar.heaviside, i, j), [0, 7, 1])


def test_integer_variants_are_exact():
    a = np.array([7, -7, 7, -7, 0, 127, -128, 13, -1], np.int32)
    b = np.array([2, 2, -2, -2, 5, 10, 3, -4, 3], np.int32)
    for fn, reference in ((oar.floor_divide, np.floor_divide), (oar.remainder, np.remainder),
                          (oar.copysign, lambda x, y: np.where(y < 0, -np.abs(x), np.abs(x))),
                          (oar.fmax, np.fmax), (oar.fmin, np.fmin)):
        for dtype in (np.int8, np.int32, np.int64):
            got = on_gpu(fn, a.astype(dtype), b.astype(dtype))
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, reference(a.astype(dtype), b.astype(dtype)), err_msg=str(fn))
    u, v = np.array([200, 7, 0, 255], np.uint8), np.array([7, 200, 3, 16], np.uint8)
    for fn, reference in ((oar.floor_divide, np.floor_divide), (oar.remainder, np.remainder)):
        np.testing.assert_array_equal(on_gpu(fn, u, v), reference(u, v))
    base = np.array([3, -2, 0, 1, -1, 5, 2, 7], np.int64)
    exponent = np.array([4, 5, 3, 60, 61, 0, 62, 25], np.int64)  # 2^62 and 7^25 wrap as numpy's
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(on_gpu(oar.pow, base, exponent), np.power(base, exponent))
    np.testing.assert_array_equal(on_gpu(oar.pow, base.astype(np.int8), exponent.astype(np.int8) % 9),
                                  np.power(base.astype(np.int8), exponent.astype(np.int8) % 9))
    x = np.array([-17, -15, -25, 15, 25, 35, 44, 45, 46, 120], np.int16)
    for decimals in (0, 1, -1, -2):
        got = on_gpu(lambda t, d=decimals: oar.round(t, decimals=d), x)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, np.round(x, decimals), err_msg=f"decimals={decimals}")
    np.testing.assert_array_equal(on_gpu(oar.trunc, x), x)


def test_bitwise_ops():
    a = np.array([0, 1, -1, 0x5A, -128, 127, 64], np.int8)
    b = np.array([-1, 3, 0x0F, 0x33, 1, -2, 64], np.int8)
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64):
        x, y = a.astype(dtype), b.astype(dtype)
        for fn, reference in ((oar.bitwise_and, np.bitwise_and), (oar.bitwise_or, np.bitwise_or),
                              (oar.bitwise_xor, np.bitwise_xor)):
            got = on_gpu(fn, x, y)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, reference(x, y), err_msg=f"{reference.__name__}[{dtype.__name__}]")
        np.testing.assert_array_equal(on_gpu(oar.bitwise_not, x), np.invert(x))
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    for fn, reference in ((oar.bitwise_and, np.bitwise_and), (oar.bitwise_or, np.bitwise_or),
                          (oar.bitwise_xor, np.bitwise_xor)):
        np.testing.assert_array_equal(on_gpu(fn, p, q), reference(p, q))
    np.testing.assert_array_equal(on_gpu(oar.bitwise_not, p), ~p)
    with pytest.raises(DTypeError, match="bitwise_and"):
        on_gpu(oar.bitwise_and, np.ones(2, np.float32), np.ones(2, np.float32))


def test_masked_fill_reads_x_mask_value():
    x = RNG.standard_normal((3, 1200)).astype(np.float32)  # several blocks
    mask = RNG.random((1, 1200)) < 0.5  # broadcast over rows
    got = on_gpu(lambda t, m: oar.masked_fill(t, m, -7.5), x, mask)
    np.testing.assert_array_equal(got, np.where(mask, np.float32(-7.5), x))
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    np.testing.assert_array_equal(on_gpu(lambda t, m: oar.masked_fill(t, m, 9), i, mask[:, :3]),
                                  np.where(mask[:, :3], 9, i))
    b = np.array([True, False, True])
    np.testing.assert_array_equal(on_gpu(lambda t, m: oar.masked_fill(t, m, False), b, mask[0, :3]),
                                  np.where(mask[0, :3], False, b))


ACTIVATIONS = {
    "elu": lambda t: F.elu(t, alpha=0.7),
    "selu": F.selu,
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "softplus": lambda t: F.softplus(t, beta=2.0, threshold=15.0),
    "softsign": F.softsign,
    "mish": F.mish,
    "logit": oar.logit,
    "logit_eps": lambda t: oar.logit(t, eps=0.01),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_against_the_cpu(name, dtype):
    fn = ACTIVATIONS[name]
    x = wide(dtype, [20.0, 7.5, 7.6, -3.0, 3.0, 0.01, 0.99])
    assert_close(on_gpu(fn, x), on_cpu(fn, x), dtype, name)


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_gelu_grad_in_both_modes(approximate, dtype):
    np_dtype = oar.ops.get_dtype(dtype).np
    x = (RNG.standard_normal(2100) * 4).astype(np_dtype)  # three blocks
    g = RNG.standard_normal(2100).astype(np_dtype)
    op = registries().ops.lookup("gelu_grad")
    got, expected = (dispatch(op, (oar.to_tensor(x, place=p), oar.to_tensor(g, place=p)), {"approximate": approximate})
                     for p in ("gpu", "cpu"))
    assert got.place.is_gpu_place()
    assert_same([got.numpy()], [expected.numpy()], dtype, f"gelu_grad(approximate={approximate})")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_against_the_cpu(dtype):
    np_dtype = oar.ops.get_dtype(dtype).np
    x = RNG.uniform(-0.95, 0.95, 1500).astype(np_dtype)
    y = RNG.uniform(0.5, 3.0, 1500).astype(np_dtype)
    for fn in (oar.atan, oar.asin, oar.acos, oar.atanh, oar.expm1, oar.log1p, oar.sinh, oar.cosh, oar.asinh, F.mish,
               F.selu):
        assert_same([on_gpu(fn, x)], [on_cpu(fn, x)], dtype, fn.__name__)
    for fn in (oar.atan2, oar.hypot, oar.logaddexp, oar.remainder, oar.floor_divide, oar.pow):
        assert_same([on_gpu(fn, x, y)], [on_cpu(fn, x, y)], dtype, fn.__name__)


def test_views_broadcasts_and_empty_inputs():
    a = RNG.uniform(-3, 3, (40, 30)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (30,)).astype(np.float32)
    got = on_gpu(lambda x, y: oar.remainder(x.T[::2], y[::2, None]), a, b)  # a transposed, stepped view
    np.testing.assert_allclose(got, np.remainder(a.T[::2], b[::2, None]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(on_gpu(lambda x: oar.atan(x[:, ::3]), a), np.arctan(a[:, ::3]), rtol=1e-5, atol=1e-6)
    empty = np.zeros((0, 3), np.float32)
    assert on_gpu(oar.log1p, empty).shape == (0, 3)
    assert on_gpu(oar.atan2, empty, np.ones(3, np.float32)).shape == (0, 3)


def test_round_refuses_decimals_beyond_int64():
    with pytest.raises(ArgumentError, match="decimals=19"):
        on_gpu(lambda t: oar.round(t, decimals=19), np.ones(3, np.float32))
