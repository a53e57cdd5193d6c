"""Paddle's semantics of the elementwise family: result dtypes, operators, edge values, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import oar
from oar._ops import elementwise as E
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.testing import record_ops


def t(values, dtype=None):
    return oar.to_tensor(values, dtype=dtype)


# -- result dtypes ----------------------------------------------------------------------------------
DTYPE_RULES = [
    ("int tensor + float scalar -> float32", lambda: t([1, 2]) + 1.5, "float32"),
    ("float scalar * int tensor -> float32", lambda: 0.5 * t([1, 2], "int32"), "float32"),
    ("int32 + int scalar stays int32", lambda: t([1, 2], "int32") + 1, "int32"),
    ("int32 + 0-d int64 tensor stays int32", lambda: t([1, 2], "int32") + t(1), "int32"),
    ("float16 + float32 -> float32", lambda: t([1.0], "float16") + t([1.0]), "float32"),
    ("float16 * float scalar stays float16", lambda: t([1.0], "float16") * 2.0, "float16"),
    ("float16 + 0-d int64 tensor -> float16", lambda: t([1.0], "float16") + t(1), "float16"),
    ("bfloat16 + float16 -> float32", lambda: t([1.0], "bfloat16") + t([1.0], "float16"), "float32"),
    ("int / int -> float32", lambda: t([3]) / t([2]), "float32"),
    ("int / int scalar -> float32", lambda: t([3], "int32") / 2, "float32"),
    ("bool + bool -> bool", lambda: t([True]) + t([False]), "bool"),
    ("bool + int scalar -> int64", lambda: t([True]) + 1, "int64"),
    ("bool * float scalar -> float32", lambda: t([True]) * 1.5, "float32"),
    ("int // float scalar -> float32", lambda: t([7]) // 2.5, "float32"),
    ("int % int -> int", lambda: t([7], "int32") % t([3], "int32"), "int32"),
    ("int ** int -> int", lambda: t([3]) ** 2, "int64"),
    ("int ** float -> float32", lambda: t([4]) ** 0.5, "float32"),
    ("int scalar ** int tensor -> int", lambda: 2 ** t([3], "int32"), "int32"),
    ("float scalar ** int tensor -> float32", lambda: 2.0 ** t([3]), "float32"),
    ("sqrt of int -> float32", lambda: oar.sqrt(t([4])), "float32"),
    ("exp of bool -> float32", lambda: oar.exp(t([True])), "float32"),
    ("abs of int32 stays int32", lambda: abs(t([-3], "int32")), "int32"),
    ("floor of int stays int", lambda: oar.floor(t([3])), "int64"),
    ("round of float16 stays float16", lambda: oar.round(t([1.5], "float16")), "float16"),
    ("sign of int8 stays int8", lambda: oar.sign(t([-3], "int8")), "int8"),
    ("clip of int stays int", lambda: oar.clip(t([5], "int16"), 0, 3), "int16"),
    ("scale of int stays int", lambda: oar.scale(t([5], "int32"), 2.0), "int32"),
    ("maximum(float16, float32) -> float32", lambda: oar.maximum(t([1.0], "float16"), t([2.0])), "float32"),
    ("where(c, int32, float scalar) -> float32", lambda: oar.where(t([True]), t([1], "int32"), 2.0), "float32"),
    ("comparison -> bool", lambda: t([1.0]) < t([2.0], "float16"), "bool"),
    ("isnan -> bool", lambda: oar.isnan(t([1.0])), "bool"),
    ("logical_and of floats -> bool", lambda: oar.logical_and(t([1.0]), t([0.0])), "bool"),
    ("int32 & int scalar stays int32", lambda: t([6], "int32") & 3, "int32"),
    ("~bool -> bool", lambda: ~t([True]), "bool"),
]


@pytest.mark.parametrize("rule, compute, dtype", DTYPE_RULES, ids=[r[0] for r in DTYPE_RULES])
def test_result_dtype(rule, compute, dtype):
    assert compute().dtype == dtype


def test_values_of_mixed_dtype_arithmetic():
    assert (t([1, 2]) + 1.5).tolist() == [2.5, 3.5]
    assert (t([True, False]) + t([True, True])).tolist() == [True, True]  # or, as numpy and Paddle
    assert (t([7, 8], "int32") / 2).tolist() == [3.5, 4.0]
    assert (t([4, 9]) ** 0.5).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("a, b, expected", [
    ("int8", "uint8", "int16"), ("int64", "float16", "float16"), ("float16", "bfloat16", "float32"),
    ("bfloat16", "float64", "float64"), ("bool", "int8", "int8"), ("bool", "float16", "float16"),
    ("int32", "int64", "int64"), ("uint8", "bool", "uint8"), ("float32", "float64", "float64"),
])
def test_promotion_table(a, b, expected):
    assert oar.promote_types(a, b) == expected
    assert oar.promote_types(b, a) == expected
    # tensors of two broad types meet only as 0-d tensors (Paddle 3 raises otherwise: test_type_promotion.py)
    assert (oar.ones([], dtype=a) + oar.ones([], dtype=b)).dtype == expected


# -- operators with numpy arrays and Python numbers ---------------------------------------------------
ARRAY = np.array([1.0, 2.0, 4.0], np.float32)
OPERATORS = [
    ("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b),
    ("/", lambda a, b: a / b), ("//", lambda a, b: a // b), ("%", lambda a, b: a % b),
    ("**", lambda a, b: a ** b), ("<", lambda a, b: a < b), ("==", lambda a, b: a == b),
]


@pytest.mark.parametrize("symbol, apply", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_operators_with_numpy_arrays_on_either_side(symbol, apply):
    x = t([3.0, 5.0, 6.0])
    for left, right in ((x, ARRAY), (ARRAY, x)):
        got = apply(left, right)
        assert isinstance(got, oar.Tensor), symbol
        expected = apply(np.asarray(left), np.asarray(right))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
        assert got.dtype == ("bool" if expected.dtype == np.bool_ else "float32")


def test_bitwise_operators_with_python_numbers_on_either_side():
    x = t([6, 5], "int32")
    assert (x & 3).tolist() == [2, 1] and (3 & x).tolist() == [2, 1]
    assert (x | 8).tolist() == [14, 13] and (8 | x).tolist() == [14, 13]
    assert (x ^ 1).tolist() == [7, 4] and (1 ^ x).tolist() == [7, 4]
    assert (~x).tolist() == [-7, -6]
    assert (x & 3).dtype == "int32"


def test_reflected_operators_keep_the_operand_order():
    x = t([2.0, 4.0])
    assert (10.0 - x).tolist() == [8.0, 6.0]
    assert (9.0 // x).tolist() == [4.0, 2.0]
    assert (9.0 % x).tolist() == [1.0, 1.0]
    assert (2.0 ** x).tolist() == [4.0, 16.0]
    assert (1.0 / x).tolist() == [0.5, 0.25]


# -- one op, two spellings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [
    "exp", "log1p", "sqrt", "abs", "sign", "floor", "round", "clip", "scale", "pow", "maximum", "where",
    "isnan", "logical_and", "bitwise_xor", "remainder", "mod", "floor_mod", "floor_divide", "erf",
])
def test_method_and_function_are_the_same_function(name):
    assert getattr(oar.Tensor, name) is getattr(oar, name)


def test_method_and_function_bind_the_same_op():
    x = t([0.5, 1.5])
    with record_ops() as by_method:
        x.exp()
    with record_ops() as by_function:
        oar.exp(x)
    assert by_method.ops == by_function.ops == {"exp"}


@pytest.mark.parametrize("dunder, fn", [
    ("__floordiv__", "floor_divide"), ("__mod__", "remainder"), ("__pow__", "pow"),
    ("__and__", "bitwise_and"), ("__or__", "bitwise_or"), ("__xor__", "bitwise_xor"),
    ("__invert__", "bitwise_not"), ("__abs__", "abs"),
])
def test_operators_are_the_public_functions(dunder, fn):
    assert getattr(oar.Tensor, dunder) is getattr(oar, fn)


def test_operators_record_their_ops():
    x, y = t([5.0, 7.0]), t([2.0, 3.0])
    expected = {
        "floor_divide": lambda: x // y, "remainder": lambda: x % y, "pow": lambda: x ** 2,
        "elementwise_pow": lambda: x ** y, "abs": lambda: abs(x), "bitwise_not": lambda: ~(x > 6),
    }
    for op, run in expected.items():
        with record_ops() as rec:
            run()
        assert op in rec.ops, (op, rec.ops)


def test_sigmoid_is_a_method_not_a_top_level_function():
    assert not hasattr(oar, "sigmoid")  # paddle.nn.functional.sigmoid, as in Paddle
    assert t([0.0]).sigmoid().tolist() == [0.5]


# -- broadcasting errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, call", [
    ("add", lambda a, b: oar.add(a, b)), ("multiply", lambda a, b: a * b),
    ("floor_divide", lambda a, b: a // b), ("remainder", lambda a, b: a % b),
    ("pow", lambda a, b: a ** b), ("maximum", oar.maximum), ("logical_and", oar.logical_and),
    ("less_than", lambda a, b: a < b),
])
def test_broadcast_errors_name_the_op_and_both_shapes(name, call):
    a, b = oar.ones([2, 3]), oar.ones([4])
    with pytest.raises(ShapeError) as info:
        call(a, b)
    message = str(info.value)
    assert name in message and "[2, 3]" in message and "[4]" in message


def test_where_broadcast_error_names_the_arguments():
    with pytest.raises(ShapeError, match=r"where: .*condition \[2\] .*x \[3\]"):
        oar.where(t([True, False]), oar.ones([3]), oar.ones([3]))


# -- edge values ------------------------------------------------------------------------------------------
def test_integer_division_by_zero_raises_like_paddle():
    with pytest.raises(ArgumentError, match="floor_divide: integer division by zero"):
        t([1, 2]) // t([1, 0])
    with pytest.raises(ArgumentError, match="remainder: integer division by zero"):
        t([1, 2], "int32") % 0


def test_float_division_by_zero_gives_inf_and_nan_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = t([1.0, -1.0, 0.0]) // 0.0
        r = t([1.0, -1.0]) % 0.0
    assert q.numpy()[0] == np.inf and q.numpy()[1] == -np.inf and np.isnan(q.numpy()[2])
    assert np.isnan(r.numpy()).all()


def test_floor_divide_and_remainder_round_toward_negative_infinity():
    x, y = t([7, -7, 7, -7]), t([2, 2, -2, -2])
    assert (x // y).tolist() == [3, -4, -4, 3]
    assert (x % y).tolist() == [1, 1, -1, -1]  # the sign of the divisor
    assert (t([-7.5]) % 2.0).tolist() == [0.5]


def test_integer_to_negative_power_raises():
    with pytest.raises(ArgumentError, match="pow: an integer tensor .* negative integer power -1"):
        t([2, 3]) ** -1
    with pytest.raises(ArgumentError, match="pow: integer tensors cannot be raised to negative"):
        t([2, 3]) ** t([1, -1])
    assert (t([2.0, 4.0]) ** -1).tolist() == [0.5, 0.25]


def test_round_halves_to_even_and_supports_decimals():
    assert oar.round(t([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])).tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0]
    np.testing.assert_allclose(oar.round(t([1.2345, -2.6789], "float64"), decimals=2).numpy(), [1.23, -2.68])
    with pytest.raises(ArgumentError, match="round: decimals must be an int"):
        oar.round(t([1.0]), decimals=1.5)


def test_erf_matches_math_erf_to_double_precision():
    values = np.concatenate([np.linspace(-7, 7, 281), [0.0, -0.0, 1e-12, np.inf, -np.inf]])
    got = oar.erf(t(values, "float64")).numpy()
    expected = np.array([math.erf(v) for v in values])
    np.testing.assert_allclose(got, expected, rtol=2e-15, atol=1e-300)
    assert np.isnan(oar.erf(t([np.nan])).numpy()).all()


def test_sigmoid_and_classification_of_extremes():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = t([-1000.0, 0.0, 1000.0]).sigmoid()
    assert s.tolist() == [0.0, 0.5, 1.0]
    special = t([np.nan, np.inf, -np.inf, 1.0])
    assert oar.isnan(special).tolist() == [True, False, False, False]
    assert oar.isinf(special).tolist() == [False, True, True, False]
    assert oar.isfinite(special).tolist() == [False, False, False, True]
    assert oar.isfinite(t([1, 2])).tolist() == [True, True]


def test_maximum_and_minimum_propagate_nan():
    assert np.isnan(oar.maximum(t([np.nan, 1.0]), t([0.0, np.nan])).numpy()).all()
    assert np.isnan(oar.minimum(t([np.nan]), t([0.0])).numpy()).all()


def test_clip_arguments():
    x = t([-2.0, 0.5, 3.0])
    assert oar.clip(x, t([-1.0]), t(1.0)).tolist() == [-1.0, 0.5, 1.0]  # 1-element tensor bounds
    assert oar.clip(t([1, 5, 9]), 2.5, 6.5).tolist() == [3, 5, 6]  # float bounds round inward on ints
    assert oar.clip(t([-128, 0, 127], "int8"), -1000, 1000).tolist() == [-128, 0, 127]
    with pytest.raises(ArgumentError, match=r"clip: min \(2.0\) must not be greater than max \(1.0\)"):
        oar.clip(x, 2.0, 1.0)
    with pytest.raises(ArgumentError, match="clip: min must be a number"):
        oar.clip(x, "low")
    with pytest.raises(DTypeError, match="clip: x must be an integer or floating tensor, got bool"):
        oar.clip(t([True]), 0, 1)


def test_scale_arguments():
    x = t([1.0, -2.0])
    assert oar.scale(x, t([3.0])).tolist() == [3.0, -6.0]
    assert oar.scale(x, 2.0, 1.0, bias_after_scale=False).tolist() == [4.0, -2.0]
    assert oar.scale(x, 1.0, act="relu").tolist() == [1.0, 0.0]
    assert oar.scale(t([3], "int32"), 2.7, 1.9).tolist() == [7]  # scale and bias cast to int, as Paddle
    with pytest.raises(ArgumentError, match="scale: act must be None or one of"):
        oar.scale(x, act="gelu")


def test_where_forms_and_errors():
    c = t([True, False, True])
    assert oar.where(c, 1.0, 0.0).tolist() == [1.0, 0.0, 1.0]
    (idx,) = oar.where(c)  # the nonzero form
    assert idx.tolist() == [[0], [2]]
    with pytest.raises(DTypeError, match="where: condition must be a bool tensor, got int64"):
        oar.where(t([1, 0]), 1.0, 0.0)
    with pytest.raises(ArgumentError, match="where: give both x and y, or neither"):
        oar.where(c, t([1.0, 2.0, 3.0]))


def test_bitwise_ops_reject_floats_and_pow_rejects_bools():
    with pytest.raises(DTypeError, match="bitwise_and: x must be an integer or bool tensor, got float32"):
        oar.bitwise_and(t([1.0]), t([1]))
    with pytest.raises(DTypeError, match="bitwise_not: x must be an integer or bool tensor, got float64"):
        ~t([1.0], "float64")
    with pytest.raises(DTypeError, match="pow: x and y must be an integer or floating tensor, got bool"):
        t([True]) ** t([True])  # (a bool tensor ** an int number computes in int64, Paddle's scalar rule)
    with pytest.raises(DTypeError, match="subtract: x and y must be an integer or floating tensor, got bool"):
        t([True, False]) - t([True, True])


def test_logical_ops_treat_nonzero_as_true():
    assert oar.logical_and(t([0.0, 2.0, -1.0]), t([1.0, 1.0, 0.0])).tolist() == [False, True, False]
    assert oar.logical_and(t([0, 2, -1]), t([1, 1, 0])).tolist() == [False, True, False]
    assert oar.logical_not(t([0, 3])).tolist() == [True, False]
    assert oar.logical_xor(t([True, True]), t([True, False])).tolist() == [False, True]


# -- gradients with Paddle's conventions -------------------------------------------------------------------
def test_rounding_ops_have_zero_gradient_not_none():
    for fn in (oar.floor, oar.ceil, oar.round, oar.trunc, oar.sign):
        x = t([0.3, -1.7])
        x.stop_gradient = False
        y = fn(x)
        assert not y.stop_gradient
        (y * 3.0 + x).sum().backward()
        assert x.grad.tolist() == [1.0, 1.0], fn.__name__


def test_maximum_tie_splits_the_gradient():
    x, y = t([1.0, 2.0, 3.0]), t([1.0, 5.0, 0.0])
    x.stop_gradient = y.stop_gradient = False
    oar.maximum(x, y).sum().backward()
    assert x.grad.tolist() == [0.5, 0.0, 1.0] and y.grad.tolist() == [0.5, 1.0, 0.0]


def test_clip_gradient_passes_strictly_inside():
    x = t([-1.0, 0.0, 1.0, 2.0])
    x.stop_gradient = False
    oar.clip(x, -1.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_abs_gradient_at_zero_is_zero():
    x = t([-2.0, 0.0, 3.0])
    x.stop_gradient = False
    x.abs().sum().backward()
    assert x.grad.tolist() == [-1.0, 0.0, 1.0]


def test_higher_order_gradients_through_powers_and_trig():
    x = t([0.7, 1.3], "float64")
    x.stop_gradient = False
    (d1,) = oar.grad((x ** 3).sum(), x, create_graph=True)
    (d2,) = oar.grad(d1.sum(), x, create_graph=True)
    np.testing.assert_allclose(d2.numpy(), 6 * x.numpy())
    (s1,) = oar.grad(oar.sin(x).sum(), x, create_graph=True)
    (s2,) = oar.grad(s1.sum(), x)
    np.testing.assert_allclose(s2.numpy(), -np.sin(x.numpy()))
    (e1,) = oar.grad(oar.erf(x).sum(), x, create_graph=True)
    (e2,) = oar.grad(e1.sum(), x)
    np.testing.assert_allclose(e2.numpy(), -4 / math.sqrt(math.pi) * x.numpy() * np.exp(-x.numpy() ** 2))


def test_elementwise_pow_gradient_wrt_exponent_at_zero_base():
    x, y = t([0.0, 2.0], "float64"), t([2.0, 3.0], "float64")
    x.stop_gradient = y.stop_gradient = False
    (x ** y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [0.0, 8.0 * math.log(2.0)])
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 12.0])


def test_metas_explain_what_the_kernels_reject():
    # the meta is the error path of eager dispatch: each names the op and the argument
    meta = E.pow_op.meta
    with pytest.raises(ArgumentError, match="pow: an integer tensor"):
        meta(E.TensorMeta((2,), oar.int64), factor=-2)
    with pytest.raises(DTypeError, match="floor_divide: x and y must be an integer or floating tensor, got bool"):
        E.floor_divide_op.meta(E.TensorMeta((2,), oar.bool), E.TensorMeta((2,), oar.bool))
    assert E.where_op.meta(E.TensorMeta((2, 1), oar.int32), E.TensorMeta((3,), oar.float16),
                           E.TensorMeta((1,), oar.bool)) == E.TensorMeta((2, 3), oar.float16)


def test_add_n_sums_a_list_and_refuses_what_paddle_refuses():
    xs = [oar.to_tensor(np.full((2, 3), float(k), "float32"), stop_gradient=False) for k in range(1, 4)]
    total = oar.add_n(xs)
    np.testing.assert_array_equal(total.numpy(), np.full((2, 3), 6.0))
    total.sum().backward()
    for x in xs:
        np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    assert oar.add_n(xs[0]) is xs[0]
    with pytest.raises(oar.errors.ArgumentError, match=r"add_n: inputs\[1\] has shape \[3\].*neither broadcasts"):
        oar.add_n([oar.ones([2]), oar.ones([3])])
    with pytest.raises(oar.errors.ArgumentError, match="non-empty list"):
        oar.add_n([])
