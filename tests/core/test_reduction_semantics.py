"""Paddle-specific semantics of the reduction family that the op table does not pin down:
output dtypes, axis validation and its messages, keepdim shapes, the unbiased flag, ties in
topk/sort and in the max/amax gradients, empty tensors, and second-order gradients."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import oar
from oar._engine.op import TensorMeta
from oar._ops import reduction as R
from oar.errors import ArgumentError, DTypeError


def t(values, dtype=None, stop_gradient=True):
    return oar.to_tensor(values, dtype=dtype, stop_gradient=stop_gradient)


# -- output dtypes --------------------------------------------------------------------------------
DTYPE_CASES = [
    ("sum_bool", lambda: oar.sum(t([True, False, True])), "int64"),
    ("sum_int32", lambda: oar.sum(t([1, 2], "int32")), "int64"),
    ("sum_int8_keeps", lambda: oar.sum(t([1, 2], "int8")), "int8"),
    ("sum_int64", lambda: oar.sum(t([1, 2])), "int64"),
    ("sum_float16", lambda: oar.sum(t([1.0, 2.0], "float16")), "float16"),
    ("sum_dtype_arg", lambda: oar.sum(t([1, 2], "int32"), dtype="int32"), "int32"),
    ("sum_dtype_float64", lambda: oar.sum(t([1.0, 2.0]), dtype=oar.float64), "float64"),
    ("mean_int", lambda: oar.mean(t([1, 2])), "float32"),
    ("prod_int32", lambda: oar.prod(t([2, 3], "int32")), "int32"),
    ("prod_dtype", lambda: oar.prod(t([2, 3], "int32"), dtype="int64"), "int64"),
    ("max_int32", lambda: oar.max(t([2, 3], "int32")), "int32"),
    ("amin_float64", lambda: oar.amin(t([2.0, 3.0], "float64")), "float64"),
    ("argmax", lambda: oar.argmax(t([2.0, 3.0])), "int64"),
    ("argmin_int32", lambda: oar.argmin(t([2.0, 3.0]), dtype="int32"), "int32"),
    ("var_int", lambda: oar.var(t([1, 2, 4])), "float32"),
    ("std_float64", lambda: oar.std(t([1.0, 2.0], "float64")), "float64"),
    ("logsumexp_int", lambda: oar.logsumexp(t([1, 2])), "float32"),
    ("all_float", lambda: oar.all(t([1.0, 0.0])), "bool"),
    ("any_int", lambda: oar.any(t([0, 3])), "bool"),
    ("cumsum_int32", lambda: oar.cumsum(t([1, 2], "int32")), "int64"),
    ("cumsum_uint8_keeps", lambda: oar.cumsum(t([1, 2], "uint8")), "uint8"),
    ("cumsum_dtype", lambda: oar.cumsum(t([1, 2], "int32"), dtype="float64"), "float64"),
    ("cumprod_int32", lambda: oar.cumprod(t([1, 2], "int32"), dim=0), "int32"),
    ("norm_int", lambda: oar.norm(t([3, 4])), "float32"),
    ("argsort", lambda: oar.argsort(t([2.0, 1.0])), "int64"),
    ("topk_values", lambda: oar.topk(t([2, 1], "int32"), 1)[0], "int32"),
    ("topk_indices", lambda: oar.topk(t([2.0, 1.0]), 1)[1], "int64"),
    ("median_int_avg", lambda: oar.median(t([1, 2, 4, 5])), "float32"),
    ("median_float16_avg", lambda: oar.median(t([1.0, 2.0], "float16")), "float32"),
    ("median_float64_avg", lambda: oar.median(t([1.0, 2.0], "float64")), "float64"),
    ("median_int_min", lambda: oar.median(t([1, 2, 4, 5]), mode="min"), "int64"),
    ("median_min_index", lambda: oar.median(t([[1.0, 2.0]]), axis=1, mode="min")[1], "int64"),
]


@pytest.mark.parametrize("make, expected", [c[1:] for c in DTYPE_CASES], ids=[c[0] for c in DTYPE_CASES])
def test_output_dtype(make, expected):
    assert make().dtype == expected


def test_sum_of_int8_wraps_in_int8_like_paddle():
    assert oar.sum(t([100, 100], "int8")).item() == -56


# -- axis validation ---------------------------------------------------------------------------------
AXIS_FUNCTIONS = {
    "sum": oar.sum, "mean": oar.mean, "prod": oar.prod, "max": oar.max, "min": oar.min, "amax": oar.amax,
    "amin": oar.amin, "argmax": oar.argmax, "argmin": oar.argmin, "var": oar.var, "std": oar.std,
    "logsumexp": oar.logsumexp, "all": oar.all, "any": oar.any, "cumsum": oar.cumsum, "norm": oar.norm,
    "sort": oar.sort, "argsort": oar.argsort, "median": oar.median,
}


@pytest.mark.parametrize("name", sorted(AXIS_FUNCTIONS))
@pytest.mark.parametrize("axis", [2, -3])
def test_axis_out_of_range_names_op_and_range(name, axis):
    with pytest.raises(ArgumentError) as info:
        AXIS_FUNCTIONS[name](oar.ones([2, 3]), axis=axis)
    message = str(info.value)
    assert message.startswith(f"{name}:"), message
    assert f"axis={axis}" in message and "expected -2..1" in message, message


def test_axis_out_of_range_in_a_list():
    with pytest.raises(ArgumentError, match=r"sum: axis=3 is out of range for a 2-d tensor \(expected -2..1\)"):
        oar.sum(oar.ones([2, 3]), axis=[0, 3])


def test_cumprod_error_names_its_dim_argument():
    with pytest.raises(ArgumentError, match=r"cumprod: dim=2 is out of range for a 2-d tensor"):
        oar.cumprod(oar.ones([2, 3]), dim=2)


def test_topk_axis_and_k_validation():
    with pytest.raises(ArgumentError, match=r"topk: axis=2 .*expected -2..1"):
        oar.topk(oar.ones([2, 3]), 1, axis=2)
    with pytest.raises(ArgumentError, match=r"topk: k=4 is out of range for axis 1 of size 3 \(expected 1..3\)"):
        oar.topk(oar.ones([2, 3]), 4)
    with pytest.raises(ArgumentError, match=r"topk: k=0"):
        oar.topk(oar.ones([2, 3]), 0)
    with pytest.raises(ArgumentError, match=r"topk: k must be an int"):
        oar.topk(oar.ones([2, 3]), 1.5)


def test_meta_rejects_out_of_range_axes_with_the_op_name():
    # Tracing runs metas only, so they must validate too.
    meta = TensorMeta((2, 3), oar.float32)
    for op in (R.sum_op, R.max_op, R.var_op, R.logsumexp_op, R.all_op):
        with pytest.raises(ArgumentError, match=rf"{op.name}: axis 5 is out of range for a 2-d tensor"):
            op.meta(meta, axis=(5,), keepdim=False)


def test_other_argument_errors():
    with pytest.raises(DTypeError, match="argmax: dtype must be 'int32' or 'int64', got 'float32'"):
        oar.argmax(oar.ones([2]), dtype="float32")
    with pytest.raises(ArgumentError, match="median: mode must be 'avg' or 'min'"):
        oar.median(oar.ones([2]), mode="max")
    with pytest.raises(ArgumentError, match="median: axis must be an int or None"):
        oar.median(oar.ones([2, 2]), axis=[0, 1])
    with pytest.raises(DTypeError, match="sum: unknown dtype 'float33'"):
        oar.sum(oar.ones([2]), dtype="float33")


def test_reductions_without_identity_reject_empty_input():
    empty = oar.zeros([0, 3])
    for fn, name in ((oar.max, "max"), (oar.amin, "amin"), (oar.argmax, "argmax")):
        with pytest.raises(ArgumentError, match=rf"{name}: cannot reduce a zero-size tensor of shape \[0, 3\]"):
            fn(empty, axis=0)
    assert oar.max(empty, axis=1).shape == [0]  # reducing the non-empty axis is fine
    with pytest.raises(ArgumentError, match=r"median: x must not be empty"):
        oar.median(empty)


# -- keepdim and axis shapes -------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [oar.sum, oar.mean, oar.prod, oar.max, oar.amin, oar.var, oar.std, oar.logsumexp,
                                oar.all, oar.any, oar.norm], ids=lambda f: f.__name__)
def test_keepdim_shapes(fn):
    x = oar.ones([2, 3, 4])
    assert fn(x, axis=1).shape == [2, 4]
    assert fn(x, axis=[0, -1], keepdim=True).shape == [1, 3, 1]
    assert fn(x, axis=(0, 2)).shape == [3]
    assert fn(x).shape == []
    assert fn(x, keepdim=True).shape == [1, 1, 1]
    assert fn(oar.ones([])).shape == []


def test_arg_reduction_shapes():
    x = oar.ones([2, 3])
    assert oar.argmax(x).shape == []
    assert oar.argmax(x, keepdim=True).shape == [1, 1]
    assert oar.argmin(x, axis=-1, keepdim=True).shape == [2, 1]
    assert oar.argmax(oar.ones([]), axis=0).shape == []


def test_scan_shapes_follow_paddle_on_0d():
    x = oar.to_tensor(2.0)
    assert oar.cumsum(x).shape == [1]  # axis None flattens
    assert oar.cumsum(x, axis=0).shape == []
    assert oar.cumsum(x, axis=-1).shape == []
    assert oar.cumprod(oar.ones([2, 3])).shape == [6]


def test_median_shapes_and_outputs():
    x = t([[1.0, 4.0, 2.0, 3.0], [5.0, 7.0, 6.0, 8.0]])
    assert oar.median(x).shape == []
    assert oar.median(x, keepdim=True).shape == [1, 1]
    out = oar.median(x, axis=1, keepdim=True)
    assert out.shape == [2, 1] and out.numpy().ravel().tolist() == [2.5, 6.5]
    values, index = oar.median(x, axis=1, mode="min")
    assert values.tolist() == [2.0, 6.0] and index.tolist() == [2, 2]
    assert isinstance(oar.median(x, mode="min"), oar.Tensor)  # no index without an axis


def test_median_of_a_slice_with_nan_is_nan():
    x = t([[1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]])
    out = oar.median(x, axis=1).numpy()
    assert math.isnan(out[0]) and out[1] == 2.0
    values, index = oar.median(x, axis=1, mode="min")
    assert math.isnan(values.numpy()[0]) and index.tolist() == [1, 1]


# -- var / std --------------------------------------------------------------------------------------
def test_unbiased_flag():
    x = t([1.0, 2.0, 3.0, 4.0], "float64")
    assert oar.var(x).item() == pytest.approx(5.0 / 3.0)
    assert oar.var(x, unbiased=False).item() == pytest.approx(1.25)
    assert oar.std(x).item() == pytest.approx(math.sqrt(5.0 / 3.0))
    assert oar.std(x, unbiased=False).item() == pytest.approx(math.sqrt(1.25))


@pytest.mark.parametrize("fn", [oar.var, oar.std, lambda x, **kw: x.var(**kw), lambda x, **kw: x.std(**kw)],
                         ids=["var", "std", "Tensor.var", "Tensor.std"])
def test_unbiased_moments_of_one_element_or_none_are_nan_like_paddle_and_numpy(fn):
    # N - 1 = 0 degrees of freedom (issue #24): NaN, with Paddle 3's warning, never a silent 0.
    with pytest.warns(UserWarning, match=r"degrees of freedom <= 0"):
        assert math.isnan(fn(t([3.0])).item())
    with pytest.warns(UserWarning, match=r"along axis \[0\] of x \[1, 2\]"):
        assert all(math.isnan(v) for v in fn(t([[3.0, 4.0]]), axis=0).tolist())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert all(math.isnan(v) for v in fn(oar.zeros([0, 2]), axis=0).tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the biased moments of one element are 0, of none NaN, quietly
        assert fn(t([3.0]), unbiased=False).item() == 0.0
        assert math.isnan(fn(oar.zeros([0]), unbiased=False).item())
        assert fn(t([3.0, 5.0])).item() > 0


def test_gradient_of_an_unbiased_moment_of_one_element_is_nan():
    for fn in (oar.var, oar.std):
        x = t([[3.0], [4.0]])
        x.stop_gradient = False
        with pytest.warns(UserWarning, match="degrees of freedom"):
            fn(x, axis=1).sum().backward()
        assert np.isnan(x.grad.numpy()).all()


# -- ties -------------------------------------------------------------------------------------------
def test_topk_ties_return_the_first_indices():
    x = t([1.0, 3.0, 3.0, 2.0, 3.0])
    values, indices = oar.topk(x, 2)
    assert values.tolist() == [3.0, 3.0] and indices.tolist() == [1, 2]
    values, indices = oar.topk(t([2, 1, 1, 0, 1]), 3, largest=False)
    assert values.tolist() == [0, 1, 1] and indices.tolist() == [3, 1, 2]


def test_sort_and_argsort_keep_the_order_of_equal_elements():
    x = t([2.0, 1.0, 2.0, 1.0])
    assert oar.argsort(x).tolist() == [1, 3, 0, 2]
    assert oar.argsort(x, descending=True).tolist() == [0, 2, 1, 3]
    assert oar.sort(x, descending=True).tolist() == [2.0, 2.0, 1.0, 1.0]


def test_argmax_ties_return_the_first_index():
    assert oar.argmax(t([1.0, 3.0, 3.0])).item() == 1
    assert oar.argmin(t([[1, 0, 0]]), axis=1).tolist() == [1]


def test_max_and_amax_gradients_on_ties_follow_paddle():
    data = [[0.1, 0.9, 0.9, 0.9], [0.9, 0.9, 0.6, 0.7]]
    x = t(data, "float64", stop_gradient=False)
    oar.amax(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.2, 0.2, 0.2], [0.2, 0.2, 0, 0]])
    x.clear_grad()
    oar.max(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 1, 1], [1, 1, 0, 0]])
    x.clear_grad()
    oar.amax(x, axis=0).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 1, 1], [1, 0.5, 0, 0]])
    x.clear_grad()
    oar.amin(x, axis=1).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 0, 0, 0], [0, 0, 1, 0]])


def test_topk_and_sort_gradients_follow_the_permutation():
    x = t([[3.0, 1.0, 2.0]], "float64", stop_gradient=False)
    values, _ = oar.topk(x, 2)
    (values * t([[10.0, 1.0]], "float64")).sum().backward()
    assert x.grad.tolist() == [[10.0, 0.0, 1.0]]
    x.clear_grad()
    (oar.sort(x, descending=True) * t([[1.0, 2.0, 3.0]], "float64")).sum().backward()
    assert x.grad.tolist() == [[1.0, 3.0, 2.0]]


def test_prod_gradient_at_zeros():
    x = t([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], "float64", stop_gradient=False)
    oar.prod(x, axis=1).backward()
    assert x.grad.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]]


# -- empty tensors and numerics ---------------------------------------------------------------------
def test_all_and_any_on_empty_tensors():
    empty = oar.zeros([0])
    assert oar.all(empty).item() is True
    assert oar.any(empty).item() is False
    assert oar.all(oar.zeros([2, 0]), axis=1).tolist() == [True, True]
    assert oar.any(oar.zeros([2, 0]), axis=1, keepdim=True).tolist() == [[False], [False]]


def test_sum_and_prod_of_empty_are_identities():
    assert oar.sum(oar.zeros([0, 2]), axis=0).tolist() == [0.0, 0.0]
    assert oar.prod(oar.zeros([0, 2]), axis=0).tolist() == [1.0, 1.0]


def test_logsumexp_is_numerically_stable():
    x = t([1000.0, 1000.0], "float64")
    assert oar.logsumexp(x).item() == pytest.approx(1000.0 + math.log(2.0))
    assert oar.logsumexp(t([-1000.0, -1000.0], "float64")).item() == pytest.approx(-1000.0 + math.log(2.0))
    assert oar.logsumexp(t([float("-inf"), float("-inf")])).item() == float("-inf")
    assert oar.logsumexp(t([1.0, float("inf")])).item() == float("inf")
    x = t([1000.0, 0.0], "float32", stop_gradient=False)
    oar.logsumexp(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0], atol=1e-6)


def test_norm_values_and_unsupported_orders():
    x = t([[3.0, -4.0], [1.0, 2.0]], "float64")
    assert oar.norm(x).item() == pytest.approx(math.sqrt(30.0))
    assert oar.norm(x, p="fro", axis=[0, 1]).item() == pytest.approx(math.sqrt(30.0))
    assert oar.norm(x, p=float("inf"), axis=[0, 1]).item() == 7.0  # largest absolute row sum
    assert oar.norm(x, p=1, axis=[0, 1]).item() == 6.0  # largest absolute column sum
    assert oar.norm(x, p=0, axis=1).tolist() == [2.0, 2.0]
    # the singular-value norms (oar.linalg's; issue #19)
    assert oar.norm(x, p="nuc", axis=[0, 1]).item() == pytest.approx(np.linalg.norm(x.numpy(), "nuc"))
    assert oar.norm(x, p=2, axis=[0, 1]).item() == pytest.approx(np.linalg.norm(x.numpy(), 2))
    with pytest.raises(ArgumentError, match=r"norm: p must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf for a matrix"):
        oar.norm(x, p=3, axis=[0, 1])
    with pytest.raises(ArgumentError, match=r"norm: p='nuc' is a matrix norm"):
        oar.norm(x, p="nuc")
    with pytest.raises(ArgumentError, match=r"norm: p must be a number, 'fro', 'nuc' or None, got 'l2'"):
        oar.norm(x, p="l2")
    with pytest.raises(ArgumentError, match=r"norm: axis must be an int or a list of one or two ints"):
        oar.norm(oar.ones([2, 2, 2]), axis=[0, 1, 2])


def test_norm_gradient_of_an_all_zero_slice_is_zero():
    x = oar.zeros([2, 3], dtype="float64")
    x.stop_gradient = False
    oar.norm(x, axis=1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2


# -- Tensor methods ---------------------------------------------------------------------------------
def test_tensor_methods_bind_the_same_functions():
    x = t([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]])
    pairs = [
        (x.sum(axis=0), oar.sum(x, axis=0)), (x.mean(), oar.mean(x)), (x.prod(axis=1), oar.prod(x, axis=1)),
        (x.max(axis=1), oar.max(x, axis=1)), (x.min(), oar.min(x)), (x.amax(axis=0), oar.amax(x, axis=0)),
        (x.amin(axis=0), oar.amin(x, axis=0)), (x.argmax(axis=1), oar.argmax(x, axis=1)),
        (x.argmin(), oar.argmin(x)), (x.var(axis=1), oar.var(x, axis=1)), (x.std(), oar.std(x)),
        (x.logsumexp(axis=1), oar.logsumexp(x, axis=1)), (x.all(), oar.all(x)), (x.any(axis=0), oar.any(x, axis=0)),
        (x.cumsum(axis=1), oar.cumsum(x, axis=1)), (x.cumprod(dim=0), oar.cumprod(x, dim=0)),
        (x.norm(p=1), oar.norm(x, p=1)), (x.sort(descending=True), oar.sort(x, descending=True)),
        (x.argsort(axis=0), oar.argsort(x, axis=0)), (x.topk(2)[1], oar.topk(x, 2)[1]), (x.median(), oar.median(x)),
    ]
    for method_result, function_result in pairs:
        np.testing.assert_array_equal(method_result.numpy(), function_result.numpy())


# -- second-order gradients -------------------------------------------------------------------------
SECOND_ORDER = [
    ("prod", lambda x: oar.prod(x, axis=1)),
    ("prod_zero", lambda x: oar.prod(x * t([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]], "float64"), axis=1)),
    ("cumprod", lambda x: oar.cumprod(x, dim=1)),
    ("cumsum", lambda x: oar.cumsum(x * x)),
    ("var", lambda x: oar.var(x, axis=0)),
    ("std", lambda x: oar.std(x)),
    ("logsumexp", lambda x: oar.logsumexp(x, axis=1)),
    ("norm_2", lambda x: oar.norm(x, axis=1)),
    ("norm_3", lambda x: oar.norm(x, p=3)),
    ("amax", lambda x: oar.amax(x * x, axis=0)),
    ("sort", lambda x: oar.sort(x * x, axis=1)),
    ("topk", lambda x: oar.topk(x * x, 2)[0]),
    ("median", lambda x: oar.median(x * x, axis=1)),
]


@pytest.mark.parametrize("fn", [c[1] for c in SECOND_ORDER], ids=[c[0] for c in SECOND_ORDER])
def test_gradient_rules_differentiate_again(fn):
    rng = np.random.default_rng(7)
    base = np.array([[0.7, -1.3, 0.4], [1.9, 0.25, -0.6]])
    weights = t(rng.standard_normal(fn(t(base, "float64")).shape), "float64")
    direction = rng.standard_normal(base.shape)

    def first_grad(values, create_graph=False):
        x = t(values, "float64", stop_gradient=False)
        (g,) = oar.grad((fn(x) * weights).sum(), x, create_graph=create_graph)
        return x, g

    x, g = first_grad(base, create_graph=True)
    (hessian_v,) = oar.grad((g * t(direction, "float64")).sum(), x)
    eps = 1e-6
    numeric = (first_grad(base + eps * direction)[1].numpy() - first_grad(base - eps * direction)[1].numpy()) / (2 * eps)
    np.testing.assert_allclose(hessian_v.numpy(), numeric, rtol=1e-5, atol=1e-6)
