"""The manipulation family (``oar._ops.manipulation``): functions composed from other families'
ops, checked against numpy and against values recorded from Paddle 3.3.1, plus gradients
(finite differences through ``oar.testing``), views and in-place variants.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
from oar._ops import manipulation
from oar.errors import ArgumentError, DTypeError, GradientError, IndexOutOfRangeError, ShapeError
from oar.testing import OpCase, check_grad, sum_tolerance

RNG = np.random.default_rng(7)


def t(values, dtype=None, grad=False):
    out = oar.to_tensor(np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype))
    out.stop_gradient = not grad
    return out


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def shapes(tensors):
    return [list(s.shape) for s in tensors]


# -- at least n dims, stacks ------------------------------------------------------------------
def test_atleast_nd_shapes_follow_numpy():
    for fn, npfn in ((oar.atleast_1d, np.atleast_1d), (oar.atleast_2d, np.atleast_2d), (oar.atleast_3d, np.atleast_3d)):
        for shape in ((), (3,), (2, 3), (2, 3, 4)):
            a = np.ones(shape)
            assert list(fn(t(a)).shape) == list(npfn(a).shape)
    assert isinstance(oar.atleast_1d(t(1.0), t([1.0])), list)
    assert shapes(oar.atleast_3d([t(1.0), t([1.0, 2.0])])) == [[1, 1, 1], [1, 2, 1]]  # Paddle 3.3.1


def test_stacks_match_paddle_shapes():
    v, m, s = t([1.0, 2.0, 3.0]), t(X), t(1.0)
    # (fn, shape of [v, v], of [m, m], of [s, s]) as Paddle 3.3.1 gives them
    expected = {
        oar.column_stack: ([3, 2], [2, 6], [1, 2]), oar.row_stack: ([2, 3], [4, 3], [2, 1]),
        oar.hstack: ([6], [2, 6], [2]), oar.vstack: ([2, 3], [4, 3], [2, 1]),
        oar.dstack: ([1, 3, 2], [2, 3, 2], [1, 1, 2]),
    }
    for fn, (a, b, c) in expected.items():
        assert [list(fn([v, v]).shape), list(fn([m, m]).shape), list(fn([s, s]).shape)] == [a, b, c], fn.__name__
    np.testing.assert_array_equal(oar.column_stack([v, v]).numpy(), np.column_stack([v.numpy(), v.numpy()]))
    np.testing.assert_array_equal(oar.dstack([m, m]).numpy(), np.dstack([X, X]))


def test_block_diag_matches_paddle():
    out = oar.block_diag([t([1.0, 2.0]), t([[3.0]]), t(5.0)])
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 5]])  # Paddle 3.3.1
    with pytest.raises(ShapeError, match="block_diag"):
        oar.block_diag([oar.ones([1, 1, 1])])


def test_broadcast_shapes_and_tensors():
    assert oar.broadcast_shape([2, 1], [3]) == [2, 3]
    assert oar.broadcast_shapes([2, 1], [3], [1, 1, 1]) == [1, 2, 3]
    with pytest.raises(ShapeError, match="broadcast_shape"):
        oar.broadcast_shape([2], [3])
    outs = oar.broadcast_tensors([t(X), t([1.0, 2.0, 3.0])])
    assert shapes(outs) == [[2, 3], [2, 3]]
    np.testing.assert_array_equal(outs[1].numpy(), np.broadcast_to([1.0, 2.0, 3.0], (2, 3)))


def test_reduce_as_sums_to_target():
    a = RNG.standard_normal((2, 3, 4))
    rtol, atol = sum_tolerance("float64", 8)
    np.testing.assert_allclose(oar.reduce_as(t(a), oar.ones([3, 1])).numpy(), a.sum(axis=(0, 2))[:, None], rtol, atol)
    np.testing.assert_allclose(oar.reduce_as(t(a), oar.ones([1, 3, 4])).numpy(), a.sum(0, keepdims=True), rtol, atol)
    assert oar.reduce_as(oar.ones([2, 3], dtype="int32"), oar.ones([3])).dtype == oar.int64  # Paddle 3.3.1
    with pytest.raises(ShapeError, match="reduce_as"):
        oar.reduce_as(oar.ones([2, 3]), oar.ones([4]))


# -- splits -----------------------------------------------------------------------------------
def test_tensor_split_follows_array_split():
    a = np.arange(7.0)
    for arg in (3, [2, 9, 1], [-2], [0], 7, 10):
        got = [p.numpy() for p in oar.tensor_split(t(a), arg)]
        want = np.array_split(a, arg)
        assert [g.tolist() for g in got] == [w.tolist() for w in want], arg
    m = np.arange(24.0).reshape(2, 3, 4)
    for got, want in zip(oar.tensor_split(t(m), [1, 3], axis=-1), np.array_split(m, [1, 3], axis=-1)):
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(ArgumentError, match="tensor_split"):
        oar.tensor_split(t(a), 0)


def test_hsplit_vsplit_dsplit_match_paddle():
    assert shapes(oar.hsplit(oar.ones([4, 6]), 3)) == [[4, 2]] * 3
    assert shapes(oar.hsplit(oar.ones([4, 6]), [1, 4])) == [[4, 1], [4, 3], [4, 2]]
    assert shapes(oar.hsplit(oar.ones([6]), 3)) == [[2]] * 3
    assert shapes(oar.hsplit(oar.ones([4, 5]), 3)) == [[4, 2], [4, 2], [4, 1]]  # Paddle 3.3.1: no divisibility check
    assert shapes(oar.vsplit(oar.ones([4, 2]), [1])) == [[1, 2], [3, 2]]
    assert shapes(oar.dsplit(oar.ones([1, 2, 4]), 2)) == [[1, 2, 2]] * 2
    with pytest.raises(ShapeError, match="vsplit"):
        oar.vsplit(oar.ones([4]), 2)
    with pytest.raises(ShapeError, match="dsplit"):
        oar.dsplit(oar.ones([4, 4]), 2)


def test_split_with_sizes_method():
    parts = t(X).split_with_sizes([1, 2], 1)
    assert shapes(parts) == [[2, 1], [2, 2]]
    with pytest.raises(ShapeError, match="split_with_sizes"):
        t(X).split_with_sizes([1, 1], 1)


def test_splits_are_views():
    x = oar.zeros([2, 4])
    oar.tensor_split(x, 2, axis=1)[1].add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 1, 1], [0, 0, 1, 1]])


# -- slicing and views by other names ---------------------------------------------------------
def test_narrow_crop_unflatten_ravel_reverse():
    np.testing.assert_array_equal(oar.narrow(t(X), 1, 1, 2).numpy(), X[:, 1:3])
    np.testing.assert_array_equal(oar.narrow(t(X), -1, -2, 2).numpy(), X[:, 1:3])  # Paddle 3.3.1
    with pytest.raises(ArgumentError, match="narrow"):
        oar.narrow(t(X), 1, 2, 2)
    nine = oar.arange(9).reshape([3, 3])
    assert oar.crop(nine, shape=[2, -1], offsets=[1, 1]).tolist() == [[4, 5], [7, 8]]  # Paddle 3.3.1
    assert oar.crop(nine, shape=[2, 2]).tolist() == [[0, 1], [3, 4]]
    with pytest.raises(ShapeError, match="crop"):
        oar.crop(nine, shape=[3, 3], offsets=[1, 0])
    assert oar.unflatten(oar.ones([2, 6]), 1, [2, -1]).shape == [2, 2, 3]
    assert oar.unflatten(oar.ones([2, 6]), -1, (3, 2)).shape == [2, 3, 2]
    with pytest.raises(ShapeError):
        oar.unflatten(oar.ones([2, 6]), 1, [4, -1])
    assert oar.ravel(t(X)).tolist() == X.ravel().tolist()
    np.testing.assert_array_equal(oar.reverse(t(X), [0, 1]).numpy(), X[::-1, ::-1])


def test_view_shape_and_dtype():
    x = t(X)
    assert oar.view(x, [3, 2]).shape == [3, 2]
    assert x.view_as(oar.ones([6])).shape == [6]
    # Paddle 3.3.1: float32 bits read as int32
    assert oar.view(x, "int32").tolist() == [[0, 1065353216, 1073741824], [1077936128, 1082130432, 1084227584]]
    assert oar.view(x, oar.int16).shape == [2, 6]
    with pytest.raises(ShapeError, match="multiple of 8 bytes"):
        oar.view(x, "float64")
    with pytest.raises(ArgumentError, match="view"):
        oar.view(x, "no_such_dtype")


def test_views_write_through():
    x = t(X.copy())
    oar.view(x, "int32").add_(1)  # one more unit in the last place of each float
    np.testing.assert_array_equal(x.numpy().view(np.int32), X.view(np.int32) + 1)
    x = t(X.copy())
    oar.narrow(x, 1, 0, 1).zero_()
    oar.view(x, [6])[5] = -1.0
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 2], [0, 4, -1]])


def test_as_strided_and_unfold():
    x = t(X)
    assert oar.as_strided(x, [3, 2], [1, 3]).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]  # Paddle 3.3.1
    flat = np.arange(6.0)
    want = np.lib.stride_tricks.as_strided(flat[1:], (2, 2), (8, 16))
    np.testing.assert_array_equal(oar.as_strided(oar.arange(6.0), [2, 2], [1, 2], 1).numpy(), want)
    with pytest.raises(ShapeError, match="as_strided"):
        oar.as_strided(x, [3, 3], [1, 3])
    # Paddle 3.3.1
    assert oar.unfold(oar.arange(7.0), 0, 3, 2).tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert oar.unfold(oar.arange(12.0).reshape([2, 6]), 1, 2, 3).shape == [2, 2, 2]
    assert oar.unfold(oar.arange(12.0).reshape([2, 6]), 0, 2, 1).shape == [1, 6, 2]
    a = RNG.standard_normal((3, 7, 2))
    want = np.lib.stride_tricks.sliding_window_view(a, 3, axis=1)[:, ::2]
    np.testing.assert_array_equal(t(a).unfold(1, 3, 2).numpy(), want)
    with pytest.raises(ArgumentError, match="unfold"):
        oar.unfold(oar.arange(3.0), 0, 4, 1)


def test_rot90_matches_numpy():
    a = RNG.standard_normal((2, 3, 4))
    for k in (-3, -1, 0, 1, 2, 3, 5):
        for axes in ([0, 1], [1, 0], [2, 0], [-1, -2]):
            np.testing.assert_array_equal(oar.rot90(t(a), k, axes).numpy(), np.rot90(a, k, axes))
    with pytest.raises(ArgumentError, match="rot90"):
        oar.rot90(t(a), 1, [1, 1])


def test_repeat_is_tile():
    assert oar.to_tensor([1, 2, 3]).repeat(2).tolist() == [1, 2, 3, 1, 2, 3]  # Paddle 3.3.1 docstring
    assert oar.to_tensor([[1, 2], [3, 4]]).repeat(2).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert oar.to_tensor([[[1, 2], [3, 4]]]).repeat([2, 1, 3]).shape == [2, 2, 6]


# -- diff, vander, combinations, index builders -----------------------------------------------
def test_diff_matches_numpy_and_paddle():
    a = RNG.standard_normal((3, 5))
    for n, axis in ((1, -1), (2, 1), (1, 0), (3, -1)):
        rtol, atol = sum_tolerance("float64", 2 ** n)
        np.testing.assert_allclose(oar.diff(t(a), n=n, axis=axis).numpy(), np.diff(a, n=n, axis=axis), rtol, atol)
    pre, app = np.zeros((1, 3), np.float32), np.ones((2, 3), np.float32)
    got = oar.diff(t(X), axis=0, prepend=t(pre), append=t(app))
    assert got.tolist() == [[0.0, 1.0, 2.0], [3.0, 3.0, 3.0], [-2.0, -3.0, -4.0], [0.0, 0.0, 0.0]]  # Paddle 3.3.1
    assert oar.diff(t([True, False, False])).tolist() == [True, False]  # Paddle 3.3.1
    out = oar.zeros([2])
    oar.diff(t([1.0, 4.0, 9.0]), out=out)
    assert out.tolist() == [3.0, 5.0]
    with pytest.raises(ArgumentError, match="diff"):
        oar.diff(t(a), n=0)


def test_vander_matches_paddle():
    assert oar.vander(t([1.0, 2.0, 3.0]), 4, True).tolist() == [[1, 1, 1, 1], [1, 2, 4, 8], [1, 3, 9, 27]]
    got = oar.vander(t([1, 2, 3]))
    assert got.tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]] and got.dtype == oar.int64  # Paddle 3.3.1
    assert oar.vander(t([1.0, 2.0]), 0).shape == [2, 0]
    with pytest.raises(ShapeError, match="vander"):
        oar.vander(oar.ones([2, 2]))


def test_combinations_and_cartesian_prod():
    v = t([1.0, 2.0, 3.0])
    assert oar.combinations(v).tolist() == [[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]]  # Paddle 3.3.1
    assert oar.combinations(v, 2, True).shape == [6, 2]
    assert oar.combinations(v, 4).shape == [0, 4]
    got = oar.cartesian_prod([t([1, 2]), t([3, 4, 5])]).tolist()
    assert got == [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]]  # Paddle 3.3.1
    assert oar.cartesian_prod([t([1, 2])]).shape == [2]


def test_tril_triu_indices_match_paddle():
    assert oar.tril_indices(4, 3, -1).tolist() == [[1, 2, 2, 3, 3, 3], [0, 0, 1, 0, 1, 2]]  # Paddle 3.3.1
    assert oar.tril_indices(3, 3).dtype == oar.int64
    assert oar.triu_indices(3, None, 1).tolist() == [[0, 0, 1], [1, 2, 2]]
    got = oar.triu_indices(3, 4, -1, "int32")
    assert got.dtype == oar.int32
    assert got.tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2], [0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3]]
    with pytest.raises(DTypeError, match="tril_indices"):
        oar.tril_indices(3, 3, dtype="float32")


# -- scatters ---------------------------------------------------------------------------------
def test_diagonal_and_select_and_slice_scatter():
    assert oar.diagonal_scatter(oar.zeros([3, 3]), oar.ones([2]), offset=1).tolist() == [
        [0, 1, 0], [0, 0, 1], [0, 0, 0]]  # Paddle 3.3.1
    a, y = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3))
    want = a.copy()
    for i in range(2):
        for j in range(3):
            want[i, j, j] = y[i, j]
    np.testing.assert_array_equal(oar.diagonal_scatter(t(a), t(y), 0, 1, 2).numpy(), want)
    with pytest.raises(ShapeError, match="diagonal_scatter"):
        oar.diagonal_scatter(oar.zeros([3, 3]), oar.ones([3]), offset=1)
    assert oar.select_scatter(oar.zeros([2, 3]), oar.ones([2]), 1, -1).tolist() == [[0, 0, 1], [0, 0, 1]]
    with pytest.raises(ShapeError, match="select_scatter"):
        oar.select_scatter(oar.zeros([2, 3]), oar.ones([3]), 1, 0)
    got = oar.slice_scatter(oar.zeros([4, 6]), oar.ones([4, 2]), axes=[1], starts=[1], ends=[5], strides=[2])
    assert got.tolist() == [[0, 1, 0, 1, 0, 0]] * 4  # Paddle 3.3.1
    with pytest.raises(ShapeError, match="slice_scatter"):
        oar.slice_scatter(oar.zeros([4, 6]), oar.ones([4, 3]), [1], [1], [5], [2])


def test_masked_scatter_matches_paddle():
    x, value = t(X), t([10.0, 20, 30, 40, 50, 60])
    mask = t([[True, False, True], [False, True, False]])
    assert oar.masked_scatter(x, mask, value).tolist() == [[10, 1, 20], [3, 30, 5]]  # Paddle 3.3.1
    assert oar.masked_scatter(x, t([True, False, True]), value).tolist() == [[10, 1, 20], [30, 4, 40]]
    with pytest.raises(ShapeError, match="masked_scatter"):
        oar.masked_scatter(x, mask, t([1.0]))
    with pytest.raises(DTypeError, match="masked_scatter"):
        oar.masked_scatter(x, t([1, 0, 1]), value)
    y = t(X.copy())
    assert y.masked_scatter_(mask, value) is y and y.tolist() == [[10, 1, 20], [3, 30, 5]]


def test_index_fill_matches_paddle():
    assert oar.index_fill(t(X), t([0, 2]), 1, -1.0).tolist() == [[-1, 1, -1], [-1, 4, -1]]  # Paddle 3.3.1
    assert oar.index_fill(t(X), t([-1]), 1, t(7.0)).tolist() == [[0, 1, 7], [3, 4, 7]]
    ints = oar.arange(6).reshape([2, 3])
    assert ints.index_fill_(t([1]), 0, 9).tolist() == [[0, 1, 2], [9, 9, 9]]


def test_index_put_matches_paddle():
    rows, cols = t([0, 1, 0]), t([1, 2, 1])
    assert oar.index_put(t(X), (rows, cols), t([5.0, 6, 7]), accumulate=True).tolist() == [[0, 13, 2], [3, 4, 11]]
    assert oar.index_put(t(X), (rows, cols), t(5.0)).tolist() == [[0, 5, 2], [3, 4, 5]]  # Paddle 3.3.1
    assert oar.index_put(t(X), (t([True, False]),), t(5.0)).tolist() == [[5, 5, 5], [3, 4, 5]]
    assert oar.index_put(t(X), (t([1]),), t([5.0, 6, 7])).tolist() == [[0, 1, 2], [5, 6, 7]]
    y = t(X.copy())
    assert y.index_put_((rows, cols), t([1.0, 1, 1]), True).tolist() == [[0, 3, 2], [3, 4, 6]]
    with pytest.raises(ArgumentError, match="index_put"):
        oar.index_put(t(X), rows, t(1.0))


def test_index_sample_and_take_along_dim():
    assert oar.index_sample(t(X), t([[2, 0], [1, 1]])).tolist() == [[2, 0], [4, 4]]  # Paddle 3.3.1
    with pytest.raises(ShapeError, match="index_sample"):
        oar.index_sample(t(X), t([[0]]))
    assert oar.take_along_dim(t(X), t([[0], [2]]), 1).tolist() == [[0], [5]]
    assert oar.take_along_dim(t(X), t([5, 0]), None).tolist() == [5, 0]  # numpy's axis=None


def test_scatter_add_and_reduce_match_paddle():
    index = t([[0, 0], [1, 0]])
    assert oar.scatter_add(t(X), 1, index, oar.ones([2, 3])).tolist() == [[2, 1, 2], [4, 5, 5]]  # Paddle 3.3.1
    assert oar.scatter_add(t(X), 1, t([[0], [1]]), oar.ones([2, 3])).tolist() == [[1, 1, 2], [3, 5, 5]]
    src = oar.full([2, 2], 10.0)
    # Paddle 3.3.1: (include_self=True, include_self=False) per reduce
    recorded = {
        "sum": ([[20, 1, 2], [13, 14, 5]], [[20, 1, 2], [10, 10, 5]]),
        "prod": ([[0, 1, 2], [30, 40, 5]], [[100, 1, 2], [10, 10, 5]]),
        "mean": ([[20 / 3, 1, 2], [6.5, 7, 5]], [[10, 1, 2], [10, 10, 5]]),
        "amax": ([[10, 1, 2], [10, 10, 5]], [[10, 1, 2], [10, 10, 5]]),
        "amin": ([[0, 1, 2], [3, 4, 5]], [[10, 1, 2], [10, 10, 5]]),
    }
    for reduce, (with_self, without) in recorded.items():
        rtol, atol = sum_tolerance("float32", 3)
        np.testing.assert_allclose(oar.scatter_reduce(t(X), 1, index, src, reduce).numpy(), with_self, rtol, atol)
        np.testing.assert_allclose(t(X).scatter_reduce(1, index, src, reduce, include_self=False).numpy(), without)
    with pytest.raises(ArgumentError, match="scatter_reduce"):
        oar.scatter_reduce(t(X), 1, index, src, "add")
    y = t(X.copy())
    assert y.scatter_add_(1, index, oar.ones([2, 2])) is y and y.tolist() == [[2, 1, 2], [4, 5, 5]]


def test_take_modes_match_paddle():
    x = t(X)
    assert oar.take(x, t([0, 5, -1])).tolist() == [0, 5, 5]  # Paddle 3.3.1
    assert oar.take(x, t([[0, 7], [-8, 1]]), mode="wrap").tolist() == [[0, 1], [4, 1]]
    assert oar.take(x, t([[0, 7], [-8, 1]]), mode="clip").tolist() == [[0, 5], [0, 1]]
    with pytest.raises(IndexOutOfRangeError, match="take"):
        oar.take(x, t([6]))
    with pytest.raises(ArgumentError, match="take"):
        oar.take(x, t([0]), mode="nearest")


def test_multiplex_and_shard_index_match_paddle():
    x = t(X)
    got = oar.multiplex([x, x * 10], t([[1], [0]], dtype=np.int32))
    assert got.tolist() == [[0, 10, 20], [3, 4, 5]]  # Paddle 3.3.1
    with pytest.raises(ShapeError, match="multiplex"):
        oar.multiplex([x, x], t([1, 0]))
    ids = t([[1], [6], [12], [19]])
    assert oar.shard_index(ids, 20, 2, 0).tolist() == [[1], [6], [-1], [-1]]  # Paddle 3.3.1
    assert oar.shard_index(ids, 20, 3, 1, -5).tolist() == [[-5], [-5], [5], [-5]]
    with pytest.raises(ArgumentError, match="shard_index"):
        oar.shard_index(ids, 20, 2, 2)
    with pytest.raises(DTypeError, match="shard_index"):
        oar.shard_index(t([1.0]), 20, 2, 0)


# -- in place ---------------------------------------------------------------------------------
def test_fill_diagonal_matches_paddle():
    assert oar.zeros([3, 4]).fill_diagonal_(5.0, offset=1).tolist() == [[0, 5, 0, 0], [0, 0, 5, 0], [0, 0, 0, 5]]
    wrapped = oar.zeros([7, 3]).fill_diagonal_(5.0, wrap=True).numpy()
    assert np.argwhere(wrapped).tolist() == [[0, 0], [1, 1], [2, 2], [4, 0], [5, 1], [6, 2]]  # Paddle 3.3.1
    # Paddle 3.3.1: the positions filled for (shape, offset, wrap)
    recorded = {((3, 4), -1, False): [[1, 0], [2, 1]], ((4, 3), 1, False): [[0, 1], [1, 2]],
                ((7, 3), 1, True): [[0, 1], [1, 2], [4, 1], [5, 2]], ((7, 3), -1, True): [[1, 0], [2, 1], [5, 0], [6, 1]],
                ((3, 5), 2, True): [[0, 2], [1, 3], [2, 4]]}
    for (shape, offset, wrap), positions in recorded.items():
        got = oar.zeros(list(shape)).fill_diagonal_(1.0, offset=offset, wrap=wrap).numpy()
        assert np.argwhere(got).tolist() == positions, (shape, offset, wrap)
    assert float(oar.zeros([3, 3, 3]).fill_diagonal_(5.0).sum()) == 15.0
    with pytest.raises(ShapeError, match="fill_diagonal_"):
        oar.zeros([2, 3, 3]).fill_diagonal_(1.0)


def test_fill_diagonal_tensor():
    assert oar.zeros([2, 3]).fill_diagonal_tensor(oar.ones([2]), offset=1).tolist() == [[0, 1, 0], [0, 0, 1]]
    y = oar.zeros([2, 3])
    assert y.fill_diagonal_tensor_(oar.ones([1]), offset=-1) is y and y.tolist() == [[0, 0, 0], [1, 0, 0]]
    assert float(oar.zeros([2, 3, 4]).fill_diagonal_tensor(oar.ones([4, 2]), dim1=0, dim2=1).sum()) == 8.0


def test_tril_triu_in_place():
    a = RNG.standard_normal((3, 4))
    x = t(a)
    assert x.tril_(-1) is x
    np.testing.assert_array_equal(x.numpy(), np.tril(a, -1))
    np.testing.assert_array_equal(oar.triu_(t(a), 1).numpy(), np.triu(a, 1))


def test_in_place_refuses_a_leaf_that_requires_grad():
    leaf = t(X, grad=True)
    with pytest.raises(GradientError):
        leaf.index_fill_(t([0]), 0, 1.0)


# -- gradients ------------------------------------------------------------------------------
COMPOSED = {
    "as_strided": lambda a: oar.as_strided(a, [2, 2], [1, 2], 1),
    "unfold": lambda a: oar.unfold(a, 1, 2, 1),
    "masked_scatter": lambda a: oar.masked_scatter(a, t([True, False, True]), a * 2.0),
    "index_fill": lambda a: oar.index_fill(a, t([1]), 1, 3.0),
    "index_put_accumulate": lambda a: oar.index_put(a, (t([0, 0]),), a[:1] * 3.0, True),
    "index_put": lambda a: oar.index_put(a, (t([1, 0]), t([2, 2])), a[0, :2] * 3.0),
    "vander": lambda a: oar.vander(a[0], 4),
    "diagonal_scatter": lambda a: oar.diagonal_scatter(a, a[0, :2] * 5.0),
    "select_scatter": lambda a: oar.select_scatter(a, a[:, 0] * 2.0, 1, 2),
    "slice_scatter": lambda a: oar.slice_scatter(a, a[:, :1] * 2.0, [1], [0], [3], [3]),
    "diff": lambda a: oar.diff(a, n=2, prepend=a[:, :1]),
    "rot90": lambda a: oar.rot90(a),
    "reduce_as": lambda a: oar.reduce_as(a, oar.ones([3])),
    "block_diag": lambda a: oar.block_diag([a, a[0]]),
    "cartesian_prod": lambda a: oar.cartesian_prod([a[0], a[1, :2]]),
    "combinations": lambda a: oar.combinations(a[0], 2),
    "scatter_add": lambda a: oar.scatter_add(a, 1, t([[0, 0], [1, 0]]), a[:, :2] * 2.0),
    "scatter_reduce_mean": lambda a: oar.scatter_reduce(a, 1, t([[0, 0], [1, 0]]), a[:, 1:] * 2.0, "mean"),
    "take": lambda a: oar.take(a, t([[0, 7], [-8, 1]]), mode="wrap"),
    "multiplex": lambda a: oar.multiplex([a, a * 2.0], t([[1], [0]])),
    "index_sample": lambda a: oar.index_sample(a, t([[2, 0, 2], [1, 1, 0]])),
    "hstack": lambda a: oar.hstack([a, a * 2.0]),
    "tensor_split": lambda a: oar.tensor_split(a, [1], axis=1)[1],
    "meshgrid": lambda a: oar.meshgrid(a[0], a[1, :2], indexing="xy")[0] * oar.meshgrid(a[0], a[1, :2])[1].T,
    "repeat_interleave": lambda a: oar.repeat_interleave(a, t([1, 0, 2]), axis=1),
    "addmm": lambda a: oar.addmm(a[:, :2], a, a.T, beta=0.5, alpha=2.0),
    "baddbmm": lambda a: oar.baddbmm(a[:, :2].unsqueeze(0), a.unsqueeze(0), a.T.unsqueeze(0), alpha=-1.0),
    "ger": lambda a: oar.ger(a[0], a[1]),
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_gradient_by_finite_differences(name):
    check_grad(OpCase(name, COMPOSED[name], lambda a: None, [RNG.uniform(0.5, 1.5, (2, 3))]))


def test_scatter_reduce_prod_has_no_gradient():
    a = t(X, grad=True)
    out = oar.scatter_reduce(a, 1, t([[0, 0], [1, 0]]), a[:, :2], "prod")
    with pytest.raises(GradientError, match="put_along_axis"):
        out.sum().backward()


@pytest.mark.parametrize("name", list(COMPOSED))
def test_static_graph_matches_eager(name):
    """Every composed function is captured whole by to_static (positions are constants, not reads)."""
    a = t(RNG.uniform(0.5, 1.5, (2, 3)))
    static = oar.jit.to_static(COMPOSED[name], full_graph=True)
    np.testing.assert_array_equal(static(a).numpy(), COMPOSED[name](a).numpy())


def test_masked_scatter_takes_its_mask_as_a_graph_input():
    static = oar.jit.to_static(lambda a, m: oar.masked_scatter(a, m, a * 2.0), full_graph=True)
    for mask in ([True, False, True], [False, True, True]):
        np.testing.assert_array_equal(static(t(X), t(mask)).numpy(), oar.masked_scatter(t(X), t(mask), t(X) * 2.0).numpy())


def test_docstring_examples():
    result = doctest.testmod(manipulation, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 30


def test_shape_changing_in_place_variants():
    x = oar.arange(6.0).reshape([2, 3])
    assert x.reshape_([3, 2]) is x and x.shape == [3, 2] and x.inplace_version == 1
    assert x.unsqueeze_(0).shape == [1, 3, 2]
    assert x.squeeze_().shape == [3, 2]
    assert x.t_().tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    assert x.flatten_().tolist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    y = oar.ones([2, 3, 4])
    assert oar.transpose_(y, [2, 0, 1]).shape == [4, 2, 3]
    with pytest.raises(GradientError):
        t(X, grad=True).reshape_([6])


def test_shape_changing_in_place_keeps_the_gradient_path():
    a = t(X.astype(np.float64), grad=True)
    b = a * 2.0
    b.t_()
    w = np.arange(6.0).reshape(3, 2)
    (b * t(w)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), 2 * w.T)
    b = a * 1.0
    c = b * b  # saves b, whose shape then changes: backward refuses to read it
    b.reshape_([6])
    with pytest.raises(GradientError, match="modified in place"):
        c.sum().backward()


def test_shape_changing_a_view_in_place_gives_it_its_own_buffer():
    base = oar.zeros([2, 3])
    row = base[0]
    row.unsqueeze_(0)
    row.add_(1.0)
    assert row.tolist() == [[1.0, 1.0, 1.0]] and base.tolist() == [[0.0] * 3] * 2  # documented difference


def test_shape_changing_in_place_under_to_static():
    static = oar.jit.to_static(lambda a: (a * 1.0).reshape_([3, 2]) + 1.0, full_graph=True)
    assert static(oar.arange(6.0).reshape([2, 3])).tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def test_meshgrid_and_repeat_interleave_as_paddle():
    # Paddle 3.3.1's outputs for these calls
    gx, gy = oar.meshgrid(t([1.0, 2.0, 3.0]), t([4.0, 5.0]))
    assert gx.shape == [3, 2] and gy.tolist() == [[4.0, 5.0]] * 3
    xy = oar.meshgrid([t([1.0, 2.0, 3.0]), t([4.0, 5.0])], indexing="xy")
    np.testing.assert_array_equal(xy[0].numpy(), np.meshgrid([1.0, 2.0, 3.0], [4.0, 5.0])[0])
    x = t([[1, 2], [3, 4]])
    assert oar.repeat_interleave(x, 2).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert oar.repeat_interleave(x, t([1, 2]), axis=0).tolist() == [[1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(2, axis=1).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
    with pytest.raises(ShapeError, match="repeat_interleave: repeats has 3 counts for 2 elements"):
        oar.repeat_interleave(x, t([1, 2, 3]), axis=0)
    with pytest.raises(ShapeError, match="meshgrid: args\\[0\\] must be 0-d or 1-d"):
        oar.meshgrid(x, x)
