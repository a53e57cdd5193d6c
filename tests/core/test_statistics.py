"""The statistics family (``oar._ops.statistics``): the composed functions against numpy and
finite differences, the results Paddle 3.3.1 gives (recorded numbers, marked as such), edge
cases (NaN, empty, ties), errors, in-place variants and Tensor methods. The ops with kernels of
their own are also in the op table (``tests/core/op_cases/statistics.py``)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
from oar._ops import statistics
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.testing import TOLERANCES, OpCase, check_grad, check_output, check_static, sum_tolerance

NAN = float("nan")
rng = np.random.default_rng(7)


def distinct(*shape) -> np.ndarray:
    """Values at least 2 / size apart in a shuffled order: no ties for sorting gradients."""
    size = int(np.prod(shape))
    return rng.permutation(np.linspace(-1.0, 1.0, size) + rng.uniform(0, 0.5 / size, size)).reshape(shape)


def t(values, dtype=None):
    return oar.to_tensor(values, dtype=dtype)


def values_of(result):
    if isinstance(result, (tuple, list)):
        return [values_of(r) for r in result]
    return result.dtype.name, list(result.shape), result.numpy().tolist()


def close(got, expected, dtype="float32"):
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(got.numpy().astype(np.float64), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


# -- against numpy, forward and gradient --------------------------------------------------------------
X34 = distinct(3, 4)
WITH_NAN = np.where(rng.uniform(size=(4, 5)) < 0.3, np.nan, distinct(4, 5))
WITH_NAN[2] = np.nan  # an all-NaN row

COMPOSED = [
    OpCase("nansum", lambda x: oar.nansum(x, axis=1), lambda x: np.nansum(x, axis=1), [WITH_NAN], id="nansum"),
    OpCase("nanmean", lambda x: oar.nanmean(x, axis=0, keepdim=True),
           lambda x: np.nanmean(x, axis=0, keepdims=True), [WITH_NAN[[0, 1, 3]]], id="nanmean"),
    OpCase("nanmedian", lambda x: oar.nanmedian(x, axis=1), lambda x: np.nanmedian(x, axis=1),
           [WITH_NAN[[0, 1, 3]]], id="nanmedian"),
    OpCase("nanmedian", lambda x: oar.nanmedian(x, axis=[0, 1]), lambda x: np.nanmedian(x), [WITH_NAN[[0, 1, 3]]],
           id="nanmedian_axes"),
    OpCase("count_nonzero", lambda x: oar.count_nonzero(x, axis=0),
           lambda x: np.count_nonzero(x, axis=0).astype(np.int64), [X34 * (X34 > 0)], grad=False,
           id="count_nonzero"),
    OpCase("kthvalue", lambda x: oar.kthvalue(x, 2, axis=0),
           lambda x: (np.sort(x, 0)[1], np.argsort(x, 0, kind="stable")[1]), [X34], id="kthvalue"),
    OpCase("kthvalue", lambda x: oar.kthvalue(x, 3, keepdim=True),
           lambda x: (np.sort(x, -1)[:, 2:3], np.argsort(x, -1, kind="stable")[:, 2:3]), [X34], id="kthvalue_keepdim"),
    OpCase("msort", oar.msort, lambda x: np.sort(x, axis=0), [X34], id="msort"),
    OpCase("trapezoid", oar.trapezoid, lambda y: np.trapezoid(y, axis=-1), [X34], id="trapezoid"),
    OpCase("trapezoid", lambda y, x: oar.trapezoid(y, x=x, axis=0), lambda y, x: np.trapezoid(y, x=x, axis=0),
           [X34, np.array([0.0, 0.5, 2.0])], id="trapezoid_x"),
    OpCase("trapezoid", lambda y, x: oar.trapezoid(y, x=x), lambda y, x: np.trapezoid(y, x=x, axis=-1),
           [X34, np.cumsum(rng.uniform(0.1, 1.0, (3, 4)), axis=1)], id="trapezoid_x_full"),
    OpCase("cumulative_trapezoid", lambda y: oar.cumulative_trapezoid(y, dx=0.5),
           lambda y: np.cumsum((y[:, 1:] + y[:, :-1]) * 0.25, axis=1), [X34], id="cumulative_trapezoid"),
    OpCase("renorm", lambda x: oar.renorm(x, p=2, axis=1, max_norm=0.8),
           lambda x: x * np.where((n := np.sqrt((x * x).sum(0, keepdims=True))) > 0.8, 0.8 / (n + 1e-7), 1.0),
           [X34], id="renorm"),
    OpCase("renorm", lambda x: oar.renorm(x, p=1, axis=0, max_norm=1.5),
           lambda x: x * np.where((n := np.abs(x).sum(1, keepdims=True)) > 1.5, 1.5 / (n + 1e-7), 1.0),
           [X34], id="renorm_p1"),
    OpCase("pdist", oar.pdist, lambda x: np.array([np.linalg.norm(x[i] - x[j]) for i in range(4) for j in range(i + 1, 4)]),
           [distinct(4, 3)], id="pdist"),
    OpCase("pdist", lambda x: oar.pdist(x, p=3.0),
           lambda x: np.array([(np.abs(x[i] - x[j]) ** 3).sum() ** (1 / 3) for i in range(3) for j in range(i + 1, 3)]),
           [distinct(3, 2)], id="pdist_p3"),
]
for _method in ("linear", "lower", "higher", "nearest", "midpoint"):
    # q = 0.4 of 4 values is position 1.2 (no .5 tie: numpy's 'nearest' rounds half to even)
    COMPOSED.append(OpCase("quantile", lambda x, m=_method: oar.quantile(x, [0.4, 0.9], axis=1, interpolation=m),
                           lambda x, m=_method: np.quantile(x, [0.4, 0.9], axis=1, method=m), [X34],
                           id=f"quantile_{_method}"))
COMPOSED += [
    OpCase("quantile", lambda x: oar.quantile(x, 0.3, axis=[0, 2], keepdim=True),
           lambda x: np.quantile(x, 0.3, axis=(0, 2), keepdims=True), [distinct(2, 3, 4)], id="quantile_axes"),
    OpCase("quantile", lambda x: oar.quantile(x, 0.75), lambda x: np.quantile(x, 0.75), [X34], id="quantile_all"),
    OpCase("nanquantile", lambda x: oar.nanquantile(x, [0.25, 0.6], axis=1),
           lambda x: np.nanquantile(x, [0.25, 0.6], axis=1), [WITH_NAN[[0, 1, 3]]], id="nanquantile"),
]


@pytest.mark.parametrize("case", COMPOSED, ids=[c.id for c in COMPOSED])
def test_composed_function_matches_numpy_and_finite_differences(case):
    for dtype in ("float32", "float64"):
        check_output(case, dtype)
    if case.grad:
        check_grad(case)


@pytest.mark.parametrize("case", COMPOSED[::3], ids=[c.id for c in COMPOSED[::3]])
def test_composed_function_traces_into_a_program(case):
    check_static(case, "float32")


def test_logcumsumexp_gradient_is_stable_far_from_the_maximum():
    x = t([-1000.0, 0.0, 1.0], dtype="float64")
    x.stop_gradient = False
    oar.logcumsumexp(x).sum().backward()
    # d/dx_j sum_i out_i = sum_{i >= j} softmax(x[:i+1])_j; exp(1000) would overflow on the way
    s1 = 1.0 / (1.0 + np.exp(1.0))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0 + s1, 1.0 - s1], rtol=1e-12)


def test_nan_aware_reductions_of_all_nan_and_empty_slices():
    x = t([[1.0, NAN, 3.0], [NAN, NAN, NAN]])
    assert oar.nansum(x, axis=1).tolist() == [4.0, 0.0]
    mean = oar.nanmean(x, axis=1).numpy()
    assert mean[0] == 2.0 and np.isnan(mean[1])
    assert np.isnan(oar.nanmean(oar.zeros([0])).item())
    median, index = oar.nanmedian(x, axis=1, mode="min")
    assert median.numpy()[0] == 1.0 and np.isnan(median.numpy()[1]) and index.tolist() == [0, -1]
    assert np.isnan(oar.nanquantile(x, 0.5, axis=1).numpy()[1])
    assert np.isnan(oar.quantile(x, 0.5, axis=1).numpy()).all()  # any NaN makes quantile NaN


def test_nan_aware_gradients_skip_the_nans():
    x = t([1.0, NAN, 3.0, 5.0], dtype="float64")
    x.stop_gradient = False
    (oar.nanmean(x) + oar.nansum(x)).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 + 1 / 3, 0.0, 1 + 1 / 3, 1 + 1 / 3])
    rows = t([[1.0, NAN, 3.0], [NAN, NAN, NAN]], dtype="float64")
    rows.stop_gradient = False
    (oar.nanmedian(rows, axis=1) + oar.nanquantile(rows, 0.25, axis=1)).sum().backward()
    assert rows.grad.tolist() == [[1.25, 0.0, 0.75], [0.0, 0.0, 0.0]]  # none to an all-NaN row


# -- Paddle 3.3.1's results ------------------------------------------------------------------------------
# Every expected value below was recorded from Paddle 3.3.1 (CPU) with the same call.
PADDLE_3_3_1 = [
    (lambda: oar.nanmedian(t([[3.0, NAN, 1.0, 2.0], [4.0, 1.0, NAN, 5.0]]), axis=1, mode="min"),
     [("float32", [2], [2.0, 4.0]), ("int64", [2], [3, 0])]),
    (lambda: oar.nanmedian(t([1, 2, 3, 4])), ("int64", [], 2)),
    (lambda: oar.nanmedian(t([[3.0, NAN, 1.0, 2.0], [4.0, 1.0, NAN, 4.0]]), keepdim=True),
     ("float32", [1, 1], [[2.5]])),
    (lambda: oar.nanmean(t([1, 2])), ("float32", [], 1.5)),
    (lambda: oar.nansum(t([1, 2], dtype="int32")), ("int64", [], 3)),
    (lambda: oar.quantile(t([[3.0, 1.0, 2.0, 5.0], [4.0, 4.0, 0.0, 1.0]]), t([0.3, 0.5]), axis=1),
     ("float32", [2, 2], [[1.9000000953674316, 0.9000000357627869], [2.5, 2.5]])),
    (lambda: oar.quantile(t([1.0, 2.0, 3.0, 4.0]), [0.5], interpolation="nearest"), ("float32", [], 3.0)),
    (lambda: oar.quantile(oar.arange(24, dtype="float32").reshape([2, 3, 4]), [0.5, 0.2], axis=[0, 2],
                          keepdim=True), ("float32", [2, 1, 3, 1], None)),
    (lambda: oar.nanquantile(t([NAN, 2.0, 1.0]), [0.0, 1.0, 0.5], interpolation="higher"),
     ("float32", [3], [1.0, 2.0, 2.0])),
    (lambda: oar.count_nonzero(t([[3.0, 1.0, 0.0, 5.0], [4.0, 0.0, 0.0, 1.0]]), axis=[0, 1], keepdim=True),
     ("int64", [1, 1], [[5]])),
    (lambda: oar.cummax(t([1.0, 3.0, 2.0, 3.0, NAN, 0.0, 5.0])),
     [("float32", [7], [1.0, 3.0, 3.0, 3.0, NAN, NAN, NAN]), ("int64", [7], [0, 1, 1, 3, 4, 4, 4])]),
    (lambda: oar.cummin(t([3.0, 1.0, 1.0, 2.0, 1.0])),
     [("float32", [5], [3.0, 1.0, 1.0, 1.0, 1.0]), ("int64", [5], [0, 1, 2, 2, 4])]),
    (lambda: oar.cummax(t([[1, 3], [2, 1]]), axis=0, dtype="int32"),
     [("int64", [2, 2], [[1, 3], [2, 3]]), ("int32", [2, 2], [[0, 0], [1, 0]])]),
    (lambda: oar.cummin(t(3.0)), [("float32", [1], [3.0]), ("int64", [1], [0])]),
    (lambda: oar.logcumsumexp(t([[-1000.0, 0.0], [1.0, 2.0]])),
     ("float32", [4], [-1000.0, 0.0, 1.3132617473602295, 2.4076061248779297])),
    (lambda: oar.logcumsumexp(t([1, 2])), ("float32", [2], [1.0, 2.3132617473602295])),
    (lambda: oar.kthvalue(t([[3.0, 1.0, 2.0, 5.0], [4.0, 4.0, 0.0, 1.0]]), 2, axis=0, keepdim=True),
     [("float32", [1, 4], [[4.0, 4.0, 2.0, 5.0]]), ("int64", [1, 4], [[1, 1, 0, 0]])]),
    (lambda: oar.mode(t([[1.0, 2.0, 2.0, 3.0, 3.0, 1.0], [5.0, 4.0, 4.0, 5.0, 0.0, 5.0]])),
     [("float32", [2], [1.0, 5.0]), ("int64", [2], [5, 5])]),
    (lambda: oar.mode(t([2, 1, 2, 1, 3])), [("int64", [], 1), ("int64", [], 3)]),
    (lambda: oar.mode(t([1.0, NAN, NAN])), [("float32", [], 1.0), ("int64", [], 0)]),
    (lambda: oar.histogram(t([1.0, 2.0, 1.0, 4.0, 0.5]), bins=4), ("int64", [4], [3, 1, 0, 1])),
    (lambda: oar.histogram(t([1.0, 2.0, 1.0, 4.0, 0.5]), bins=4, min=0, max=2), ("int64", [4], [0, 1, 2, 1])),
    (lambda: oar.histogram(t([1.0, 2.0, 1.0, 4.0, 0.5]), bins=4, weight=t([1.0, 2.0, 3.0, 4.0, 5.0])),
     ("float32", [4], [9.0, 2.0, 0.0, 4.0])),
    (lambda: oar.histogram(t([1.0, 2.0, 4.0], dtype="float64"), bins=2, density=True),
     ("float32", [2], [0.4444444477558136, 0.2222222238779068])),
    (lambda: oar.histogram(t([1.0, 2.0, 3.0]), bins=2, min=1.5, max=1.5), ("int64", [2], [1, 2])),
    (lambda: oar.histogram(t([2.0, 2.0]), bins=8), ("int64", [8], [0, 0, 0, 0, 2, 0, 0, 0])),
    (lambda: oar.histogram_bin_edges(t([2.0, 2.0]), bins=4), ("float32", [5], [1.5, 1.75, 2.0, 2.25, 2.5])),
    (lambda: oar.histogram_bin_edges(t([1, 5]), bins=2), ("float32", [3], [1.0, 3.0, 5.0])),
    (lambda: oar.histogramdd(t([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]), bins=[3, 3]),
     [("float32", [3, 3], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 1.0]]),
      [("float32", [4], [0.0, 0.6666666865348816, 1.3333332538604736, 2.0])] * 2]),
    (lambda: oar.histogramdd(t([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]), bins=2, ranges=[0.0, 1.0, 0.0, 1.0],
                             weights=t([1.0, 2.0, 3.0, 4.0]), density=True),
     [("float32", [2, 2], [[0.0, 1.3333333730697632], [2.6666667461395264, 0.0]]),
      [("float32", [3], [0.0, 0.5, 1.0])] * 2]),
    (lambda: oar.bincount(t([1, 1, 3]), weights=t([1, 2, 3], dtype="int32")), ("float64", [4], [0.0, 3.0, 0.0, 3.0])),
    (lambda: oar.bincount(t([1, 2], dtype="int32")), ("int64", [3], [0, 1, 1])),
    (lambda: oar.searchsorted(t([[1, 3, 5], [2, 4, 6]]), t([[3, 6], [3, 6]])), ("int64", [2, 2], [[1, 3], [1, 2]])),
    (lambda: oar.searchsorted(t([1, 3, 5, 7, 9]), t(5)), ("int64", [], 2)),
    (lambda: oar.searchsorted(t([5, 1, 3]), t([2, 4]), sorter=t([1, 2, 0])), ("int64", [2], [1, 2])),
    (lambda: oar.searchsorted(t([1, 3, 5, 7, 9]), t([3, 6, 9]), side="right"), ("int64", [3], [2, 3, 5])),
    (lambda: oar.bucketize(t([[3, 6, 9]]), t([1, 3, 5, 7, 9]), out_int32=True), ("int32", [1, 3], [[1, 3, 4]])),
    (lambda: oar.unique(t([2, 3, 3, 1, 5, 3]), return_index=True, return_inverse=True, return_counts=True),
     [("int64", [4], [1, 2, 3, 5]), ("int64", [4], [3, 0, 1, 4]), ("int64", [6], [1, 2, 2, 0, 3, 2]),
      ("int64", [4], [1, 1, 3, 1])]),
    (lambda: oar.unique(t([2, 3, 3, 1]), return_index=True, dtype="int32"),
     [("int64", [3], [1, 2, 3]), ("int32", [3], [3, 0, 1])]),
    (lambda: oar.unique(t([[2, 1], [3, 1]]), return_inverse=True), [("int64", [3], [1, 2, 3]), ("int64", [4], [1, 0, 2, 0])]),
    (lambda: oar.unique(t([1.0, NAN, NAN, 0.0])), ("float32", [4], [0.0, 1.0, NAN, NAN])),
    (lambda: oar.unique_consecutive(t([[2, 1, 3], [2, 1, 3], [3, 0, 1], [2, 1, 3]]), axis=0, return_inverse=True,
                                    return_counts=True),
     [("int64", [3, 3], [[2, 1, 3], [3, 0, 1], [2, 1, 3]]), ("int64", [4], [0, 0, 1, 2]), ("int64", [3], [2, 1, 1])]),
    (lambda: oar.unique_consecutive(t([[2, 2], [3, 3]]), return_inverse=True),
     [("int64", [2], [2, 3]), ("int64", [4], [0, 0, 1, 1])]),
    (lambda: oar.isin(t([1.0, 2.0]), t([2.0]), invert=True), ("bool", [2], [True, False])),
    (lambda: oar.argwhere(t([[1, 0], [0, 3]])), ("int64", [2, 2], [[0, 0], [1, 1]])),
    (lambda: oar.trapezoid(t([[1.0, 2.0, 4.0], [2.0, 2.0, 2.0]]), x=t([[0.0, 1.0, 3.0], [0.0, 2.0, 3.0]])),
     ("float32", [2], [7.5, 6.0])),
    (lambda: oar.trapezoid(t([1.0, 2.0, 4.0]), dx=t(0.5)), ("float32", [], 2.25)),
    (lambda: oar.cumulative_trapezoid(t([1.0, 2.0, 4.0]), x=t([0.0, 1.0, 3.0])), ("float32", [2], [1.5, 7.5])),
    (lambda: oar.renorm(t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 2.0, 0, 5.0),
     ("float32", [2, 3], [[1.0, 2.0, 3.0], [2.2792115211486816, 2.8490142822265625, 3.4188172817230225]])),
    (lambda: oar.renorm(t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 1.0, 1, 4.0),
     ("float32", [2, 3], [[0.800000011920929, 1.1428571939468384, 1.3333333730697632],
                          [3.200000047683716, 2.857142925262451, 2.6666667461395264]])),
    (lambda: oar.pdist(t([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]]), p=float("inf")), ("float32", [3], [4.0, 1.0, 3.0])),
    (lambda: oar.pdist(t([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]]), p=0.0), ("float32", [3], [2.0, 2.0, 2.0])),
    (lambda: oar.pdist(t([[0.0, 0.0]])), ("float32", [0], [])),
    (lambda: oar.logspace(0, 2, 3, base=2, dtype="float64"), ("float64", [3], [1.0, 2.0, 4.0])),
    (lambda: oar.logspace(0, 1, 3, dtype="int32"), ("int32", [3], [1, 3, 10])),
    (lambda: oar.logspace(1, 0, 3), ("float32", [3], [10.0, 3.1622776985168457, 1.0])),
    (lambda: oar.mean(t([1, 2], dtype="int32"), dtype="float64"), ("float64", [], 1.5)),
]


def _assert_recorded(got, expected):
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _assert_recorded(g, e)
        return
    dtype, shape, data = expected
    assert list(got[:2]) == [dtype, shape], (got, expected)
    if data is not None:
        np.testing.assert_allclose(np.asarray(got[2], np.float64), np.asarray(data, np.float64), rtol=1e-6,
                                   equal_nan=True)


@pytest.mark.parametrize("index", range(len(PADDLE_3_3_1)))
def test_matches_paddle_3_3_1(index):
    call, expected = PADDLE_3_3_1[index]
    _assert_recorded(values_of(call()), expected)


# -- larger inputs against numpy ------------------------------------------------------------------------------
def test_histogram_and_bincount_of_many_values_match_numpy():
    data = rng.normal(size=2000).astype(np.float32)
    counts, edges = np.histogram(data.astype(np.float64), bins=30)
    assert oar.histogram(t(data), bins=30).tolist() == counts.tolist()
    close(oar.histogram_bin_edges(t(data), bins=30), edges)
    labels = rng.integers(0, 50, 3000)
    weights = rng.uniform(size=3000)
    np.testing.assert_allclose(oar.bincount(t(labels), weights=t(weights)).numpy(), np.bincount(labels, weights),
                               rtol=sum_tolerance("float64", 3000)[0])


def test_logspace_matches_numpy():
    close(oar.logspace(-2.0, 3.0, 11, base=3.0), np.logspace(-2.0, 3.0, 11, base=3.0))


# -- in place, methods, signatures -------------------------------------------------------------------------------
def test_inplace_variants_modify_and_return_x():
    x = t([[1.0, 2.0], [3.0, 4.0]])
    version = x.inplace_version
    assert x.cumsum_(axis=1) is x and x.tolist() == [[1.0, 3.0], [3.0, 7.0]]
    assert oar.cumprod_(x, dim=0) is x and x.tolist() == [[1.0, 3.0], [3.0, 21.0]]
    assert x.inplace_version == version + 2
    y = t([[3.0, 4.0], [0.3, 0.4]])
    assert oar.renorm_(y, 2, 0, 1.0) is y
    close(y, [[0.6, 0.8], [0.3, 0.4]])
    ints = t([[1, 2], [3, 4]], dtype="int32")
    assert ints.cumsum_(axis=1).dtype == oar.int32 and ints.tolist() == [[1, 3], [3, 7]]  # Paddle 3.3.1 keeps int32


def test_inplace_scan_refuses_to_flatten_x():
    with pytest.raises(ShapeError, match="cumsum_"):
        t([[1.0, 2.0], [3.0, 4.0]]).cumsum_()
    assert t([1.0, 2.0]).cumsum_().tolist() == [1.0, 3.0]


def test_inplace_gradient_flows_through_the_scan():
    leaf = t([1.0, 2.0, 3.0], dtype="float64")
    leaf.stop_gradient = False
    y = leaf * 1.0
    y.cumsum_()
    y.sum().backward()
    assert leaf.grad.tolist() == [3.0, 2.0, 1.0]


def test_tensor_methods_are_bound():
    x = t([0.2, 0.8])
    assert x.multinomial(1).dtype == oar.int64
    assert t([3.0, 1.0, 2.0]).quantile(0.5).item() == 2.0
    assert t([[1.0, NAN], [3.0, 4.0]]).nanmean(axis=0).tolist() == [2.0, 4.0]
    for name in ("nanmedian", "cummax", "logcumsumexp", "kthvalue", "mode", "msort", "histogram", "bincount",
                 "bucketize", "unique", "unique_consecutive", "isin", "argwhere", "trapezoid", "renorm", "renorm_",
                 "histogramdd", "count_nonzero", "cumprod_"):
        assert callable(getattr(oar.Tensor, name)), name
    for name in ("searchsorted", "pdist", "logspace"):  # top level only, as in Paddle
        assert not hasattr(oar.Tensor, name), name


# -- errors -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda: oar.quantile(t([1.0, 2.0]), 1.5), ArgumentError, "q must be in"),
    (lambda: oar.quantile(t([1.0, 2.0]), []), ArgumentError, "empty"),
    (lambda: oar.quantile(t([1.0, 2.0]), 0.5, interpolation="cubic"), ArgumentError, "interpolation"),
    (lambda: oar.quantile(oar.zeros([0]), 0.5), ArgumentError, "empty"),
    (lambda: oar.nanmedian(t([1.0]), mode="max"), ArgumentError, "mode"),
    (lambda: oar.nanmedian(t([[1.0]]), axis=[]), ArgumentError, "empty list"),
    (lambda: oar.kthvalue(t([1.0, 2.0]), 3), ArgumentError, "k=3"),
    (lambda: oar.cummax(t([1.0]), dtype="float32"), DTypeError, "int32"),
    (lambda: oar.histogram(t([1.0]), bins=0), ArgumentError, "bins"),
    (lambda: oar.histogram(t([1.0]), min=2, max=1), ArgumentError, "max"),
    (lambda: oar.bincount(t([1.0, 2.0])), DTypeError, "bincount"),
    (lambda: oar.bincount(t([-1, 2])), ArgumentError, "non-negative"),
    (lambda: oar.searchsorted(t([[1, 2], [3, 4]]), t([1, 2, 3])), ShapeError, "searchsorted"),
    (lambda: oar.bucketize(t([1]), t([[1, 2]])), ShapeError, "1-D"),
    (lambda: oar.unique(t([[1, 2]]), axis=[0, 1]), ArgumentError, "axis"),
    (lambda: oar.trapezoid(t([1, 2, 3])), DTypeError, "float"),
    (lambda: oar.trapezoid(t([1.0, 2.0]), x=t([0.0, 1.0]), dx=1.0), ArgumentError, "not both"),
    (lambda: oar.pdist(t([1.0, 2.0])), ShapeError, "2-D"),
    (lambda: oar.histogramdd(t([1.0, 2.0])), ArgumentError, "2 dims"),
    (lambda: oar.logspace(0, 1, 0), ArgumentError, "num"),
])
def test_bad_arguments_raise_errors_naming_the_op(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_docstring_examples():
    result = doctest.testmod(statistics)
    assert result.failed == 0 and result.attempted > 40
