"""Op cases of the elementwise family."""

from __future__ import annotations

import math

import numpy as np

import oar
from oar.ops import sigmoid
from oar.testing import OpCase

from ._data import away_from, ints, positive, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")
NOGRAD = {"grad": False}


def off_grid(*shape, scale=3.0) -> np.ndarray:
    """Values whose fractional part is in [0.1, 0.4] or [0.6, 0.9]: away from the jumps of floor,
    ceil, trunc (integers) and round (halves), so finite differences see a flat function."""
    whole = np.floor(rand(*shape) * scale)
    frac = rand(*shape, low=0.1, high=0.4)
    frac = np.where(rand(*shape) > 0, frac, frac + 0.5)
    return whole + frac


def quotient_off_grid(*shape) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) with y of both signs and x / y away from integers: floor_divide and remainder are
    smooth there."""
    y = positive(*shape) * np.where(rand(*shape) > 0, 1.0, -1.0)
    return off_grid(*shape) * y, y


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_FD_X, _FD_Y = quotient_off_grid(2, 3)
_FD_X0, _FD_Y0 = quotient_off_grid()
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0])
BOOLS_A = np.array([[True, False, True], [False, False, True]])
BOOLS_B = np.array([True, False, False])

CASES = [
    # -- arithmetic ---------------------------------------------------------------------------
    OpCase("add", oar.add, np.add, [rand(2, 3), rand(3)], dtypes=ALL_FLOATS, id="add_broadcast"),
    OpCase("add", oar.add, np.add, [rand(), rand()], id="add_0d"),
    OpCase("add", oar.add, np.add, [rand(0, 3), rand(3)], id="add_empty"),
    OpCase("add", oar.add, np.add, [ints(2, 3, dtype=np.int32), ints(3, dtype=np.int32)], id="add_int32", **NOGRAD),
    OpCase("add", oar.add, np.add, [BOOLS_A, BOOLS_B], id="add_bool", **NOGRAD),
    OpCase("add", lambda x: x + 2.5, lambda x: x + 2.5, [ints(2, 3)], id="add_int_float_scalar", **NOGRAD),
    OpCase("subtract", oar.subtract, np.subtract, [rand(4, 1), rand(1, 5)], dtypes=ALL_FLOATS),
    OpCase("subtract", lambda x: 1.0 - x, lambda x: 1.0 - x, [rand(2, 3)], id="rsub_scalar"),
    OpCase("multiply", oar.multiply, np.multiply, [rand(2, 3, 4), rand(3, 1)], dtypes=ALL_FLOATS),
    OpCase("multiply", oar.multiply, np.multiply, [ints(2, 3, low=-5), ints(2, 3)], id="multiply_int", **NOGRAD),
    OpCase("divide", oar.divide, np.divide, [rand(2, 3), positive(2, 1)], dtypes=ALL_FLOATS),
    OpCase("divide", oar.divide, np.divide, [ints(2, 3), ints(3, low=1)], id="divide_int_is_float", **NOGRAD),
    OpCase("divide", lambda x: 2.0 / x, lambda x: 2.0 / x, [positive(2, 3)], id="rtruediv_scalar"),
    OpCase("floor_divide", oar.floor_divide, np.floor_divide, [_FD_X, _FD_Y], dtypes=ALL_FLOATS),
    OpCase("floor_divide", oar.floor_divide, np.floor_divide, [_FD_X[0], _FD_Y[:1, :1]], id="floor_divide_broadcast"),
    OpCase("floor_divide", oar.floor_divide, np.floor_divide, [_FD_X0, _FD_Y0], id="floor_divide_0d"),
    OpCase("floor_divide", lambda x, y: x // y, np.floor_divide, [ints(2, 3, low=-9), np.array([-3, 2, 5])],
           id="floor_divide_int_operator", **NOGRAD),
    OpCase("floor_divide", lambda x: 7 // x, lambda x: 7 // x, [np.array([-3, 2, 5], np.int32)], id="rfloordiv_int", **NOGRAD),
    OpCase("remainder", oar.remainder, np.remainder, [_FD_X, _FD_Y], dtypes=ALL_FLOATS),
    OpCase("remainder", oar.mod, np.remainder, [_FD_X, _FD_Y[0]], id="mod_broadcast"),
    OpCase("remainder", lambda x, y: x % y, np.remainder, [ints(2, 3, low=-9), np.array([-3, 2, 5])],
           id="remainder_int_operator", **NOGRAD),
    OpCase("remainder", lambda x: 5.5 % x, lambda x: np.remainder(5.5, x), [positive(2, 3) + 0.01], id="rmod_scalar"),
    OpCase("remainder", oar.floor_mod, np.remainder, [rand(0, 2), positive(2)], id="floor_mod_empty"),
    OpCase("neg", oar.neg, np.negative, [rand(3, 2)]),
    OpCase("neg", lambda x: -x, np.negative, [ints(3, low=-4)], id="neg_int", **NOGRAD),
    # -- powers -----------------------------------------------------------------------------------
    OpCase("pow", lambda x: oar.pow(x, 2.5), lambda x: np.power(x, 2.5), [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("pow", lambda x: x ** 3, lambda x: x ** 3, [rand(2, 3)], id="pow_operator_int_factor"),
    OpCase("pow", lambda x: x ** -1, lambda x: 1 / x, [positive(4)], id="pow_negative_factor"),
    OpCase("pow", lambda x: x.pow(0), lambda x: np.ones_like(x), [rand(3)], id="pow_zero_factor"),
    OpCase("pow", lambda x: oar.pow(x, 2), lambda x: x ** 2, [ints(2, 3, low=-5)], id="pow_int", **NOGRAD),
    OpCase("pow", lambda x: oar.pow(x, 0.5), np.sqrt, [ints(2, 3)], id="pow_int_float_factor", **NOGRAD),
    OpCase("pow", oar.square, np.square, [rand(2, 3)], dtypes=ALL_FLOATS, id="square"),
    OpCase("pow", oar.square, np.square, [rand()], id="square_0d"),
    OpCase("elementwise_pow", oar.pow, np.power, [positive(2, 3), rand(3)], dtypes=ALL_FLOATS),
    OpCase("elementwise_pow", lambda x, y: x ** y, np.power, [positive(), rand(2)], id="elementwise_pow_operator"),
    OpCase("elementwise_pow", lambda x: 2.0 ** x, lambda x: 2.0 ** x, [rand(2, 3)], id="rpow_scalar"),
    OpCase("elementwise_pow", oar.pow, np.power, [ints(2, 3, low=-3, high=4), ints(3, high=4)], id="elementwise_pow_int", **NOGRAD),
    OpCase("sqrt", oar.sqrt, np.sqrt, [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("sqrt", oar.sqrt, np.sqrt, [ints(2, 3)], id="sqrt_int_is_float", **NOGRAD),
    OpCase("sqrt", oar.sqrt, np.sqrt, [positive()], id="sqrt_0d"),
    OpCase("rsqrt", oar.rsqrt, lambda x: 1 / np.sqrt(x), [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("reciprocal", oar.reciprocal, np.reciprocal, [away_from(rand(2, 3), margin=0.3)], dtypes=ALL_FLOATS),
    # -- math functions ---------------------------------------------------------------------------
    OpCase("exp", oar.exp, np.exp, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("exp", oar.exp, np.exp, [rand(0, 3)], id="exp_empty"),
    OpCase("log", oar.log, np.log, [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("log1p", oar.log1p, np.log1p, [rand(2, 3, low=-0.5)], dtypes=ALL_FLOATS),
    OpCase("log2", oar.log2, np.log2, [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("log10", oar.log10, np.log10, [positive(2, 3)], dtypes=ALL_FLOATS),
    OpCase("log10", oar.log10, np.log10, [ints(4, low=1)], id="log10_int_is_float", **NOGRAD),
    OpCase("tanh", oar.tanh, np.tanh, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("sin", oar.sin, np.sin, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("sin", oar.sin, np.sin, [rand()], id="sin_0d"),
    OpCase("cos", oar.cos, np.cos, [rand(2, 3, low=-3, high=3)], dtypes=ALL_FLOATS),
    OpCase("tan", oar.tan, np.tan, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("sigmoid", sigmoid, _sigmoid, [rand(2, 3, low=-4, high=4)], dtypes=ALL_FLOATS),
    OpCase("sigmoid", lambda x: x.sigmoid(), _sigmoid, [np.array([-100.0, -30.0, 0.0, 30.0, 100.0])], id="sigmoid_saturates"),
    OpCase("erf", oar.erf, _erf, [rand(2, 3, low=-1.5, high=1.5)], dtypes=ALL_FLOATS),
    OpCase("erf", oar.erf, _erf, [np.array([-4.0, -2.5, -2.0, -0.3, 0.0, 0.7, 1.99, 2.01, 3.0, 6.5])], id="erf_both_branches"),
    # -- sign, abs, rounding ----------------------------------------------------------------------
    OpCase("abs", oar.abs, np.abs, [away_from(rand(2, 3))], dtypes=ALL_FLOATS),
    OpCase("abs", lambda x: abs(x), np.abs, [ints(2, 3, low=-5, high=5, dtype=np.int32)], id="abs_int_builtin", **NOGRAD),
    OpCase("sign", oar.sign, np.sign, [away_from(rand(2, 3))], dtypes=ALL_FLOATS),
    OpCase("sign", oar.sign, np.sign, [ints(5, low=-2, high=3)], id="sign_int", **NOGRAD),
    OpCase("floor", oar.floor, np.floor, [off_grid(2, 3)], dtypes=ALL_FLOATS),
    OpCase("floor", oar.floor, np.floor, [ints(2, 3)], id="floor_int", **NOGRAD),
    OpCase("ceil", oar.ceil, np.ceil, [off_grid(2, 3)], dtypes=ALL_FLOATS),
    OpCase("ceil", oar.ceil, np.ceil, [off_grid()], id="ceil_0d"),
    OpCase("trunc", oar.trunc, np.trunc, [off_grid(2, 3)], dtypes=ALL_FLOATS),
    OpCase("trunc", oar.trunc, np.trunc, [ints(3, low=-3, dtype=np.int32)], id="trunc_int", **NOGRAD),
    OpCase("round", oar.round, np.round, [off_grid(2, 3)], dtypes=ALL_FLOATS),
    OpCase("round", oar.round, np.round, [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])], id="round_half_to_even", **NOGRAD),
    OpCase("round", lambda x: oar.round(x, decimals=1), lambda x: np.round(x, 1),
           [np.array([0.123, -1.234, 2.349, 3.971])], dtypes=("float64",), id="round_decimals"),
    OpCase("round", oar.round, np.round, [ints(4, low=-9)], id="round_int", **NOGRAD),
    # -- clip, scale --------------------------------------------------------------------------------
    OpCase("clip", lambda x: oar.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5),
           [away_from(rand(2, 3), (-0.5, 0.5))], dtypes=ALL_FLOATS),
    OpCase("clip", lambda x: oar.clip(x, max=0.25), lambda x: np.minimum(x, 0.25), [away_from(rand(3, 2), (0.25,))], id="clip_max_only"),
    OpCase("clip", lambda x: x.clip(min=0.0), lambda x: np.maximum(x, 0.0), [away_from(rand())], id="clip_min_only_0d"),
    OpCase("clip", oar.clip, lambda x: x.copy(), [rand(2, 2)], id="clip_unbounded"),
    OpCase("clip", lambda x: oar.clip(x, 2, 6), lambda x: np.clip(x, 2, 6), [ints(2, 3)], id="clip_int", **NOGRAD),
    OpCase("clip", lambda x: oar.clip(x, 2.5, 6.5), lambda x: np.clip(x, 3, 6), [ints(2, 3, dtype=np.int8)], id="clip_int_float_bounds", **NOGRAD),
    OpCase("clip", lambda x: oar.clip(x, -1.0, 1.0), lambda x: np.clip(x, -1, 1), [rand(0, 2)], id="clip_empty"),
    OpCase("scale", lambda x: oar.scale(x, 2.5, 1.0), lambda x: 2.5 * x + 1.0, [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("scale", lambda x: oar.scale(x, 2.5, 1.0, bias_after_scale=False), lambda x: 2.5 * (x + 1.0), [rand(2, 3)],
           id="scale_bias_before"),
    OpCase("scale", lambda x: x.scale(3, 2), lambda x: 3 * x + 2, [ints(2, 3, dtype=np.int32)], id="scale_int", **NOGRAD),
    OpCase("scale", lambda x: oar.scale(x, 0.5, act="tanh"), lambda x: np.tanh(0.5 * x), [rand(4)], id="scale_act"),
    # -- maximum, minimum, where ---------------------------------------------------------------------
    OpCase("maximum", oar.maximum, np.maximum, [rand(2, 3), rand(3)], dtypes=ALL_FLOATS),
    OpCase("maximum", oar.maximum, np.maximum, [ints(2, 3), ints(2, 3)], id="maximum_int", **NOGRAD),
    OpCase("maximum", lambda x: oar.maximum(x, 0.0), lambda x: np.maximum(x, 0.0), [away_from(rand())], id="maximum_scalar_0d"),
    OpCase("minimum", oar.minimum, np.minimum, [rand(2, 1), rand(1, 3)], dtypes=ALL_FLOATS),
    OpCase("minimum", oar.minimum, np.minimum, [rand(0, 3), rand(3)], id="minimum_empty"),
    OpCase("where", oar.where, np.where, [BOOLS_A, rand(2, 3), rand(3)], dtypes=ALL_FLOATS),
    OpCase("where", lambda c, x: oar.where(c, x, 0.5), lambda c, x: np.where(c, x, 0.5), [BOOLS_B, rand(2, 3)], id="where_scalar_y"),
    OpCase("where", lambda c, x, y: c.where(x, y), np.where, [np.array(True), rand(), rand()], id="where_0d_method"),
    OpCase("where", oar.where, np.where, [BOOLS_B, ints(3), ints(2, 3)], id="where_int", **NOGRAD),
    # -- comparisons ----------------------------------------------------------------------------------
    OpCase("equal", oar.equal, np.equal, [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])], **NOGRAD),
    OpCase("not_equal", oar.not_equal, np.not_equal, [np.array([1.0, 2.0]), np.array([1.0, 0.0])], **NOGRAD),
    OpCase("less_than", oar.less_than, np.less, [rand(2, 3), rand(3)], **NOGRAD),
    OpCase("less_equal", oar.less_equal, np.less_equal, [rand(2, 3), rand(3)], **NOGRAD),
    OpCase("greater_than", oar.greater_than, np.greater, [rand(2, 3), rand(3)], **NOGRAD),
    OpCase("greater_equal", oar.greater_equal, np.greater_equal, [rand(2, 3), rand(3)], **NOGRAD),
    # -- classification -------------------------------------------------------------------------------
    OpCase("isnan", oar.isnan, np.isnan, [SPECIAL], dtypes=ALL_FLOATS, **NOGRAD),
    OpCase("isnan", oar.isnan, np.isnan, [ints(3)], id="isnan_int", **NOGRAD),
    OpCase("isinf", oar.isinf, np.isinf, [SPECIAL.reshape(2, 3)], dtypes=ALL_FLOATS, **NOGRAD),
    OpCase("isinf", oar.isinf, np.isinf, [np.array([True, False])], id="isinf_bool", **NOGRAD),
    OpCase("isfinite", oar.isfinite, np.isfinite, [SPECIAL], dtypes=ALL_FLOATS, **NOGRAD),
    OpCase("isfinite", oar.isfinite, np.isfinite, [ints(0, 2)], id="isfinite_empty_int", **NOGRAD),
    # -- logic and bits ---------------------------------------------------------------------------------
    OpCase("logical_and", oar.logical_and, np.logical_and, [BOOLS_A, BOOLS_B], **NOGRAD),
    OpCase("logical_and", oar.logical_and, np.logical_and, [np.array([0.0, 1.5, -2.0]), ints(2, 3, high=2).astype(np.float64)],
           id="logical_and_numbers", **NOGRAD),
    OpCase("logical_or", oar.logical_or, np.logical_or, [BOOLS_A, BOOLS_B], **NOGRAD),
    OpCase("logical_xor", oar.logical_xor, np.logical_xor, [BOOLS_A, np.array(True)], **NOGRAD),
    OpCase("logical_not", oar.logical_not, np.logical_not, [BOOLS_A], **NOGRAD),
    OpCase("logical_not", oar.logical_not, np.logical_not, [np.array([0.0, 2.0, -0.5])], id="logical_not_float", **NOGRAD),
    OpCase("bitwise_and", oar.bitwise_and, np.bitwise_and, [ints(2, 3, low=-8, high=8), ints(3)], **NOGRAD),
    OpCase("bitwise_and", lambda x, y: x & y, np.bitwise_and, [BOOLS_A, BOOLS_B], id="bitwise_and_bool_operator", **NOGRAD),
    OpCase("bitwise_or", lambda x, y: x | y, np.bitwise_or, [ints(2, 3, dtype=np.uint8), ints(3, dtype=np.uint8)], **NOGRAD),
    OpCase("bitwise_or", lambda x: 6 | x, lambda x: 6 | x, [ints(3, dtype=np.int16)], id="ror_scalar", **NOGRAD),
    OpCase("bitwise_xor", lambda x, y: x ^ y, np.bitwise_xor, [ints(2, 3, low=-8, high=8), ints(2, 3)], **NOGRAD),
    OpCase("bitwise_not", lambda x: ~x, np.invert, [ints(2, 3, low=-8, high=8, dtype=np.int8)], **NOGRAD),
    OpCase("bitwise_not", oar.bitwise_not, np.invert, [BOOLS_A], id="bitwise_not_bool", **NOGRAD),
    # -- cast -------------------------------------------------------------------------------------------
    OpCase("cast", lambda x: oar.cast(x, "float64"), lambda x: x.astype(np.float64), [rand(2, 3)], dtypes=("float32",)),
    OpCase("cast", lambda x: oar.cast(x, "int32"), lambda x: x.astype(np.int32), [rand(2, 3) * 10], id="cast_to_int", **NOGRAD),
]
