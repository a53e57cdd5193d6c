"""The reduction kernels beyond the op table: half dtypes against the cpu, strided and broadcast
views, rows longer than a block, split rows, integers, NaN, empty inputs and the refusals.

Views are made on the device directly (``DeviceArray.view``) and handed to the kernels, so that
the layouts are exercised whatever the shape family's kernels do.
"""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels.reduction import KERNELS
from triton_test_support import assert_same

import oar
from oar.errors import ArgumentError, DTypeError

RNG = np.random.default_rng(7)


def device(a: np.ndarray):
    return BACKEND.from_numpy(a)


def host(d) -> np.ndarray:
    return BACKEND.to_numpy(d)


def transposed(a: np.ndarray):
    """``a.T`` as a strided device view of ``a``'s buffer."""
    d = device(a)
    return d.view(a.shape[::-1], d.strides[::-1])


def _on(place: str, fn, a: np.ndarray, dtype: str) -> np.ndarray:
    previous = oar.get_device()
    oar.set_device(place)
    try:
        return fn(oar.to_tensor(a.astype(oar.ops.get_dtype(dtype).np))).numpy()
    finally:
        oar.set_device(previous)


HALF_CASES = {
    "sum": lambda t: oar.sum(t, axis=1),
    "mean": lambda t: oar.mean(t, axis=0),
    "prod": lambda t: oar.prod(t, axis=1),
    "max": lambda t: oar.max(t, axis=[0, 2]),
    "amin": lambda t: oar.amin(t, axis=-1, keepdim=True),
    "argmax": lambda t: oar.argmax(t, axis=1),
    "logsumexp": lambda t: oar.logsumexp(t, axis=2),
    "var": lambda t: oar.var(t, axis=1),
    "std": lambda t: oar.std(t, axis=[0, 1]),
    "cumsum": lambda t: oar.cumsum(t, axis=1),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", sorted(HALF_CASES))
def test_half_dtypes_match_the_cpu(op, dtype):
    a = RNG.uniform(0.5, 1.5, (3, 40, 5)) * np.where(RNG.random((3, 40, 5)) < 0.5, -1, 1)
    if op == "argmax":  # distinct in the half type: no ties the two sides could break differently
        a = RNG.permutation(np.arange(600)).reshape(3, 40, 5) / 8.0
    got, expected = _on("gpu", HALF_CASES[op], a, dtype), _on("cpu", HALF_CASES[op], a, dtype)
    assert_same([got], [expected], dtype, f"{op} [{dtype}]", terms=40)


@pytest.mark.parametrize("axis", [(0,), (1,), (0, 1), None])
def test_transposed_views_reduce_without_a_wrong_order(axis):
    a = RNG.standard_normal((6, 300)).astype(np.float32)
    view = transposed(a)
    np.testing.assert_allclose(host(KERNELS["sum"](view, axis=axis)), a.T.sum(axis=axis), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(host(KERNELS["max"](view, axis=axis)), a.T.max(axis=axis))
    index = None if axis is None else axis[0]
    if axis is None or len(axis) == 1:
        np.testing.assert_array_equal(host(KERNELS["argmin"](view, axis=index)), np.argmin(a.T, axis=index))


def test_middle_axes_of_a_sliced_view():
    a = RNG.standard_normal((4, 6, 5, 8)).astype(np.float32)
    d = device(a)
    # a[:, ::2, :, 1:7]: strides that merge with nothing, and an offset
    view = d.view((4, 3, 5, 6), (d.strides[0], 2 * d.strides[1], d.strides[2], 1), offset=1)
    expected = a[:, ::2, :, 1:7]
    for axes in [(1,), (0, 2), (1, 3), (0, 1, 3)]:
        np.testing.assert_allclose(host(KERNELS["sum"](view, axis=axes)), expected.sum(axis=axes), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(host(KERNELS["var"](view, axis=axes, unbiased=True)), expected.var(axis=axes, ddof=1),
                                   rtol=1e-4, atol=1e-6)


def test_broadcast_view_sums_every_repeat():
    row = np.arange(5, dtype=np.float32)
    d = device(row)
    view = d.view((3, 4, 5), (0, 0, 1))  # row broadcast to (3, 4, 5)
    np.testing.assert_array_equal(host(KERNELS["sum"](view, axis=(0, 1))), row * 12)
    np.testing.assert_array_equal(host(KERNELS["cumsum"](view, axis=0)), np.cumsum(np.broadcast_to(row, (3, 4, 5)), 0))


def test_rows_longer_than_a_block_and_many_short_columns():
    long_rows = RNG.standard_normal((3, 3000)).astype(np.float32)
    np.testing.assert_allclose(host(KERNELS["logsumexp"](device(long_rows), axis=(1,))),
                               np.log(np.exp(long_rows).sum(1)), rtol=1e-5)
    np.testing.assert_allclose(host(KERNELS["cumsum"](device(long_rows), axis=1, reverse=True)),
                               np.cumsum(long_rows[:, ::-1], 1)[:, ::-1], rtol=1e-4, atol=1e-3)
    columns = RNG.standard_normal((300, 7)).astype(np.float32)  # a column reduction over 300 rows
    np.testing.assert_allclose(host(KERNELS["mean"](device(columns), axis=(0,))), columns.mean(0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(host(KERNELS["argmax"](device(columns), axis=0)), columns.argmax(0))
    np.testing.assert_allclose(host(KERNELS["cumsum"](device(columns), axis=0)), np.cumsum(columns, 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "any"])
def test_long_rows_split_into_pieces(op):
    # 2 rows of 20000: too few rows for the GPU, so each row is reduced in three pieces and the
    # partials reduced again; the extremes sit in the last piece
    a = RNG.uniform(0.5, 1.5, (2, 20000)).astype(np.float32)
    if op == "prod":  # a product of 20000 terms stays finite near 1
        a = (1 + (a - 1) * 2e-4).astype(np.float32)
    if op == "any":
        a[:] = 0
    a[0, 19999], a[1, 17000] = 2.0, 0.0 if op != "any" else 1.0
    exact = a.astype(np.float64)  # float32 products drift by ~1e-4 over 20000 terms: compare with exact values
    np.testing.assert_allclose(host(KERNELS[op](device(a), axis=(1,))), getattr(np, op)(exact, axis=1), rtol=1e-3)
    if op != "prod":  # (the interpreter runs prod's tree of products slowly: one layout is enough)
        np.testing.assert_allclose(host(KERNELS[op](device(a), axis=None)), getattr(np, op)(exact), rtol=1e-3)


def test_integers_accumulate_and_wrap_as_numpy():
    small = RNG.integers(-100, 100, (4, 50)).astype(np.int8)
    np.testing.assert_array_equal(host(KERNELS["sum"](device(small), axis=(1,))), np.add.reduce(small, 1, np.int8))
    ints = RNG.integers(1, 9, (3, 20)).astype(np.int32)
    np.testing.assert_array_equal(host(KERNELS["prod"](device(ints), axis=(1,))), np.prod(ints, 1, dtype=np.int32))
    bytes_ = RNG.integers(0, 255, (5, 6)).astype(np.uint8)
    np.testing.assert_array_equal(host(KERNELS["max"](device(bytes_), axis=(0,))), bytes_.max(0))
    np.testing.assert_array_equal(host(KERNELS["argmin"](device(bytes_), axis=1, dtype="int32")),
                                  bytes_.argmin(1).astype(np.int32))
    longs = RNG.integers(-(2**40), 2**40, (3, 9))
    longs[1, 4] = 2**62 + 1  # beyond float precision: compared as integers
    np.testing.assert_array_equal(host(KERNELS["max"](device(longs), axis=(1,))), longs.max(1))
    np.testing.assert_array_equal(host(KERNELS["cumsum"](device(longs), axis=1)), np.cumsum(longs, 1))
    flags = np.array([[True, False, True], [True, True, True]])
    for op in ("sum", "prod"):  # numpy's bool sum and product: or, and
        got = host(KERNELS[op](device(flags), axis=(0,)))
        np.testing.assert_array_equal(got, (np.add if op == "sum" else np.multiply).reduce(flags, 0, bool))
    np.testing.assert_array_equal(host(KERNELS["all"](device(flags), axis=(1,))), [False, True])
    np.testing.assert_array_equal(host(KERNELS["min"](device(flags), axis=(1,))), [False, True])
    np.testing.assert_array_equal(host(KERNELS["any"](device(np.array([0.0, np.nan, 0.0])), axis=None)), True)


def test_nan_propagates_as_in_numpy():
    a = RNG.standard_normal((3, 9)).astype(np.float32)
    a[1, 4] = a[1, 7] = np.nan
    for op in ("max", "min", "amax"):
        got = host(KERNELS[op](device(a), axis=(1,)))
        np.testing.assert_array_equal(got, getattr(np, op.lstrip("a"))(a, axis=1))
    for op in ("argmax", "argmin"):  # the first NaN
        np.testing.assert_array_equal(host(KERNELS[op](device(a), axis=1)), getattr(np, op)(a, axis=1))


def test_ties_give_the_first_index():
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    np.testing.assert_array_equal(host(KERNELS["argmax"](device(a), axis=1)), [1, 0])
    np.testing.assert_array_equal(host(KERNELS["argmin"](device(a), axis=None, keepdim=True)), [[3]])


def test_empty_inputs_give_the_identity():
    empty = np.zeros((0, 3), np.float32)
    d = device(empty)
    np.testing.assert_array_equal(host(KERNELS["sum"](d, axis=(0,))), [0, 0, 0])
    np.testing.assert_array_equal(host(KERNELS["prod"](d, axis=(0,))), [1, 1, 1])
    assert np.isnan(host(KERNELS["mean"](d, axis=(0,)))).all()
    np.testing.assert_array_equal(host(KERNELS["logsumexp"](d, axis=(0,))), [-np.inf] * 3)
    np.testing.assert_array_equal(host(KERNELS["all"](d, axis=None)), True)
    np.testing.assert_array_equal(host(KERNELS["any"](d, axis=(0,), keepdim=True)), [[False] * 3])
    assert host(KERNELS["sum"](d, axis=(1,))).shape == (0,)
    assert host(KERNELS["cumsum"](d, axis=0)).shape == (0, 3)


def test_refusals_name_the_op():
    empty = device(np.zeros((0, 3), np.float32))
    for op in ("max", "amin"):
        with pytest.raises(ArgumentError, match=f"{op}: cannot reduce a zero-size tensor of shape \\[0, 3\\]"):
            KERNELS[op](empty, axis=(0,))
    with pytest.raises(ArgumentError, match="argmax: cannot reduce"):
        KERNELS["argmax"](empty, axis=0)
    flags = device(np.ones((2, 2), bool))
    with pytest.raises(DTypeError, match="cumsum: the gpu kernel does not scan bool"):
        KERNELS["cumsum"](flags, axis=0)
    with pytest.raises(DTypeError, match="mean: the gpu kernel computes floating inputs only"):
        KERNELS["mean"](device(np.ones(3, np.int32)), axis=None)
    with pytest.raises(ArgumentError, match="sum: axis 2 is out of range"):
        KERNELS["sum"](flags, axis=2)


def test_public_api_runs_on_the_gpu(gpu):
    x = oar.to_tensor(np.array([[1.0, 5.0, 2.0], [3.0, 2.0, 8.0]], np.float32))
    assert oar.sum(x, axis=1).place.backend == "gpu"
    assert oar.sum(x, axis=-1).tolist() == [8.0, 13.0]
    assert oar.max(x, axis=0, keepdim=True).tolist() == [[3.0, 5.0, 8.0]]
    assert oar.argmax(x, axis=1).tolist() == [1, 2]
    assert oar.sum(oar.to_tensor(np.array([True, True, False]))).item() == 2
