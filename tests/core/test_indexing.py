"""``x[index]`` and ``x[index] = value`` against numpy, with gradients, and the indexing errors."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar._ops import indexing
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError
from oar.testing import record_ops

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3, 5))


def I(*values):  # noqa: E743 - reads like numpy's index arrays in the table below
    return np.array(values, dtype=np.int64)


# Index expressions on X (shape [4, 3, 5]); numpy arrays are passed to oar as tensors.
INDEXES = [
    2,
    -1,
    (1, -2, 4),
    slice(None, None, -1),
    (slice(1, None, 2), slice(None, None, -2)),
    (slice(-3, -1), 0, slice(4, 0, -3)),
    (None, 1, None),
    (Ellipsis, 1),
    (0, Ellipsis, None, slice(1, 3)),
    (),
    Ellipsis,
    slice(3, 1),
    I(0, -1, 0),
    (I(0, 3), I(2, 1)),
    (slice(None), I(2, 0, 2)),
    (I(1, 2), slice(None), I(0, 4)),  # separated: advanced dims first
    (1, slice(None), I(0, 4)),  # an int with an array counts as advanced (numpy)
    (slice(None), I([0], [2]), I(1, 3)),  # broadcast advanced indices
    (Ellipsis, I(-5, 0)),
    (I(1), None, I(1)),
    [0, 2],
    [[0, 1], [3, 3]],
    X[:, :, 0] > 0,
    (X[:, 0, 0] > 0, slice(1, None)),
    (slice(None), np.array([True, False, True])),
    (slice(None), X[0] > 0.5),
    True,
    (Ellipsis, False),
    np.array(-2),
]


def _to_oar_index(index):
    def conv(v):
        return oar.to_tensor(v) if isinstance(v, np.ndarray) else v

    return tuple(conv(v) for v in index) if isinstance(index, tuple) else conv(index)


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i)[:40] for i in INDEXES])
def test_getitem_matches_numpy_with_gradient(index):
    x = oar.to_tensor(X, stop_gradient=False)
    with record_ops() as rec:  # also checks getitem's meta against the kernel
        y = x[_to_oar_index(index)]
    expected = X[index]
    assert y.shape == list(expected.shape)
    np.testing.assert_array_equal(y.numpy(), expected)
    assert "getitem" in rec.ops

    w = RNG.standard_normal(expected.shape)
    (y * oar.to_tensor(w)).sum().backward()
    grad = np.zeros_like(X)
    np.add.at(grad, index, w)
    np.testing.assert_allclose(x.grad.numpy(), grad)


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i)[:40] for i in INDEXES])
def test_setitem_matches_numpy_with_gradients(index):
    target_shape = X[index].shape
    value_np = RNG.standard_normal(target_shape[1:] if target_shape else ())  # broadcast over the first dim
    x = oar.to_tensor(X, stop_gradient=False)
    v = oar.to_tensor(value_np, stop_gradient=False)
    y = x * 1.0  # a non-leaf: leaves that need a gradient cannot change in place
    y[_to_oar_index(index)] = v
    expected = X.copy()
    expected[index] = value_np
    np.testing.assert_array_equal(y.numpy(), expected)

    w = RNG.standard_normal(X.shape)
    (y * oar.to_tensor(w)).sum().backward()
    written = np.zeros(X.shape, bool)
    written[index] = True
    np.testing.assert_allclose(x.grad.numpy(), np.where(written, 0.0, w))
    gv = w[index].sum(axis=0) if target_shape else w[index]
    np.testing.assert_allclose(v.grad.numpy(), gv)


def test_second_order_gradient_through_getitem():
    x = oar.to_tensor(np.array([1.0, 2.0, 3.0]), stop_gradient=False)
    y = x[oar.to_tensor([0, 2, 2])]
    (dx,) = oar.grad((y * y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(dx.numpy(), [3.0, 0.0, 54.0])  # 3 x^2, index 2 counted twice
    (ddx,) = oar.grad(dx.sum(), x)
    np.testing.assert_allclose(ddx.numpy(), [6.0, 0.0, 36.0])


def test_second_order_gradient_through_gather_and_setitem():
    x = oar.to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), stop_gradient=False)
    g = oar.gather(x, oar.to_tensor([1, 1]))
    (dx,) = oar.grad((g * g).sum(), x, create_graph=True)
    np.testing.assert_allclose(dx.numpy(), [[0.0, 0.0], [12.0, 16.0]])
    (ddx,) = oar.grad(dx.sum(), x)
    np.testing.assert_allclose(ddx.numpy(), [[0.0, 0.0], [4.0, 4.0]])

    v = oar.to_tensor(np.array(2.0), stop_gradient=False)
    y = indexing.setitem(x, (0, 1), v * v)
    (dv,) = oar.grad(y.sum(), v, create_graph=True)
    (ddv,) = oar.grad(dv, v)
    assert float(dv) == 4.0 and float(ddv) == 2.0


# -- __setitem__ semantics -----------------------------------------------------------------------
def test_setitem_values_of_every_kind():
    x = oar.zeros([2, 3])
    x[0] = 1.5
    x[1, 1:] = np.array([2.0, 3.0])
    x[:, 0] = oar.to_tensor([7, 8])  # an int64 value is cast to x's dtype
    x[x > 2.5] = oar.to_tensor(9.0, dtype="float64")
    assert x.dtype == oar.float32
    np.testing.assert_array_equal(x.numpy(), [[9.0, 1.5, 1.5], [9.0, 2.0, 9.0]])
    assert x.inplace_version == 4


def test_setitem_int_tensor_and_python_scalar_float_truncates():
    x = oar.to_tensor([1, 2, 3])
    x[1] = 5.7
    assert x.tolist() == [1, 5, 3] and x.dtype == oar.int64


def test_setitem_on_leaf_that_requires_grad_raises_but_works_without_grad():
    w = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    with pytest.raises(GradientError, match="leaf tensor that requires grad"):
        w[0] = 0.0
    with oar.no_grad():
        w[0] = 0.0  # initialising a parameter
    assert w.tolist() == [0.0, 2.0] and not w.stop_gradient and w.is_leaf


def test_setitem_with_value_that_requires_grad_makes_the_target_part_of_the_graph():
    x = oar.zeros([3])
    v = oar.to_tensor(2.0, stop_gradient=False)
    x[1] = v
    assert not x.stop_gradient and not x.is_leaf
    (x * 3.0).sum().backward()
    assert float(v.grad) == 3.0


def test_in_place_write_after_use_keeps_earlier_gradients_and_catches_stale_values():
    x = oar.to_tensor(np.ones((2, 2)), stop_gradient=False)
    a = x * 1.0
    before = a + 1.0  # a's old value: its gradient must not see the later write
    a[0] = 5.0
    (before.sum() + (a * 3.0).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 1.0], [4.0, 4.0]])

    b = x * 2.0
    c = b * b  # multiply saves b for its gradient
    b[0] = 1.0
    with pytest.raises(GradientError, match="modified in place"):
        c.sum().backward()


def test_basic_getitem_is_a_view_and_an_index_tensor_copies():
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    row, picked = x[0], x[[0]]
    x[0, 0] = 10.0
    assert row.tolist() == [10.0, 2.0]  # a view, as in Paddle
    assert picked.tolist() == [[1.0, 2.0]]  # advanced indexing copies


def test_iteration_and_indexing_with_tensors_as_slice_bounds():
    x = oar.arange(6).reshape([3, 2])
    assert [r.tolist() for r in x] == [[0, 1], [2, 3], [4, 5]]
    assert x[oar.to_tensor(1):].tolist() == [[2, 3], [4, 5]]
    assert x[oar.to_tensor(-1)].tolist() == [4, 5]
    assert x[[]].shape == [0, 2]


# -- errors ----------------------------------------------------------------------------------------
def test_out_of_range_int_names_axis_and_size():
    x = oar.zeros([3, 4])
    with pytest.raises(ArgumentError, match=r"getitem: index 4 is out of range for axis 1 with size 4 \(expected -4..3\)"):
        x[0, 4]
    with pytest.raises(IndexError):  # also an IndexError, as numpy's and Python's
        x[-4]
    with pytest.raises(ArgumentError, match="setitem: index -5 is out of range for axis 1 with size 4"):
        x[:, -5] = 1.0


def test_out_of_range_tensor_index_names_the_bad_value():
    x = oar.zeros([3, 4])
    with pytest.raises(ArgumentError, match="getitem: index 7 is out of range for axis 1 with size 4"):
        x[:, oar.to_tensor([0, 7])]
    with pytest.raises(ArgumentError, match="getitem: index -9 is out of range for axis 0 with size 3"):
        x[[-9]]


def test_bad_index_types_and_shapes():
    x = oar.zeros([3, 4])
    with pytest.raises(DTypeError, match="getitem: index must be an integer or bool tensor, got float32"):
        x[oar.to_tensor([0.0, 1.0])]
    with pytest.raises(ArgumentError, match="unsupported index 1.5"):
        x[1.5]
    with pytest.raises(ArgumentError, match="too many indices for a 2-d tensor of shape \\[3, 4\\]: 3 were indexed"):
        x[0, 0, 0]
    with pytest.raises(ArgumentError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(ArgumentError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(ShapeError, match=r"bool mask of shape \[4\] does not match the indexed dims \[3\]"):
        x[oar.to_tensor([True, False, True, False])]
    with pytest.raises(ShapeError, match="getitem: cannot broadcast index 0 \\[2\\] with index 1 \\[3\\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(ShapeError, match=r"setitem: cannot assign a value of shape \[3\] to the indexed part of shape \[4\]"):
        x[0] = oar.ones([3])


def test_op_errors_name_op_argument_and_sizes():
    x = oar.zeros([3, 4])
    with pytest.raises(ArgumentError, match="gather: index 3 is out of range for axis 0 with size 3"):
        oar.gather(x, oar.to_tensor([0, 3]))
    with pytest.raises(DTypeError, match="gather: index must be an integer tensor"):
        oar.gather(x, oar.to_tensor([0.0]))
    with pytest.raises(ShapeError, match="gather: index must be 0-D or 1-D"):
        oar.gather(x, oar.to_tensor([[0, 1], [1, 0]]))
    with pytest.raises(ArgumentError, match="index_select: axis=2 is out of range"):
        oar.index_select(x, oar.to_tensor([0]), axis=2)
    with pytest.raises(ShapeError, match=r"index_add: value has shape \[2, 4\], expected \[3, 4\]"):
        oar.index_add(x, oar.to_tensor([0, 1, 2]), 0, oar.ones([2, 4]))
    with pytest.raises(ShapeError, match=r"scatter_nd_add: updates has shape \[3\], expected .* = \[2\]"):
        oar.scatter_nd_add(x, oar.to_tensor([[0, 0], [1, 1]]), oar.ones([3]))
    with pytest.raises(ShapeError, match="gather_nd: the last dimension of index \\(3\\) must not exceed the rank of x"):
        oar.gather_nd(x, oar.to_tensor([[0, 0, 0]]))
    with pytest.raises(ArgumentError, match="gather_nd: index 5 is out of range for axis 1 with size 4"):
        oar.gather_nd(x, oar.to_tensor([[0, 5]]))
    with pytest.raises(ShapeError, match=r"scatter: updates has shape \[1, 4\], expected \[2, 4\]"):
        oar.scatter(x, oar.to_tensor([0, 1]), oar.ones([1, 4]))
    with pytest.raises(ShapeError, match="take_along_axis: indices must have as many dimensions as arr"):
        oar.take_along_axis(x, oar.to_tensor([0]), 0)
    with pytest.raises(ArgumentError, match="take_along_axis: indices value 9 is out of range for axis 1 with size 4"):
        oar.take_along_axis(x, oar.to_tensor([[9]]), 1)
    with pytest.raises(ArgumentError, match="put_along_axis: reduce must be one of"):
        oar.put_along_axis(x, oar.to_tensor([[0]]), 1.0, 0, reduce="sum")
    with pytest.raises(DTypeError, match="masked_fill: mask must be a bool tensor, got int64"):
        oar.masked_fill(x, oar.to_tensor([1, 0, 1, 0]), 0.0)
    with pytest.raises(ShapeError, match="masked_select: cannot broadcast x \\[3, 4\\] with mask \\[3\\]"):
        oar.masked_select(x, oar.to_tensor([True, False, True]))
    with pytest.raises(ArgumentError, match="one_hot: x contains 5, out of range for num_classes=4"):
        oar.one_hot(oar.to_tensor([1, 5]), 4)
    with pytest.raises(DTypeError, match="one_hot: x must be an integer tensor"):
        oar.one_hot(oar.to_tensor([1.0]), 4)


def test_put_along_axis_gradient_is_refused_for_reductions_without_one():
    x = oar.to_tensor([[1.0, 2.0]], stop_gradient=False)
    y = oar.put_along_axis(x, oar.to_tensor([[0]]), 3.0, 1, reduce="amax")
    assert y.tolist() == [[3.0, 2.0]]
    with pytest.raises(GradientError, match="put_along_axis: the gradient is defined for reduce='assign', 'add' and 'mean', not 'amax'"):
        y.sum().backward()


# -- Paddle's documented examples and Tensor methods -----------------------------------------------
def test_paddle_examples():
    x = oar.to_tensor([[1, 1], [2, 2], [3, 3]], dtype="float32")
    index = oar.to_tensor([2, 1, 0, 1], dtype="int64")
    updates = oar.to_tensor([[1, 1], [2, 2], [3, 3], [4, 4]], dtype="float32")
    assert oar.scatter(x, index, updates, overwrite=False).tolist() == [[3, 3], [6, 6], [1, 1]]
    assert oar.scatter(x, index, updates).tolist() == [[3, 3], [4, 4], [1, 1]]
    assert oar.gather(oar.to_tensor([[1, 2], [3, 4], [5, 6]]), oar.to_tensor([0, 1]), axis=0).tolist() == [[1, 2], [3, 4]]
    assert oar.gather(oar.to_tensor([[1, 2], [3, 4]]), oar.to_tensor(1)).tolist() == [3, 4]  # 0-D index drops the axis
    ones = oar.ones([3, 3])
    out = oar.index_add(ones, oar.to_tensor([0, 2], dtype="int32"), 1, oar.ones([3, 2]))
    assert out.tolist() == [[2, 1, 2]] * 3
    out = oar.masked_fill(ones, oar.to_tensor([[True, True, False]]), 2)
    assert out.tolist() == [[2, 2, 1]] * 3
    x1 = oar.to_tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    assert oar.nonzero(x1).tolist() == [[0, 0], [1, 1], [2, 2]]
    rows, cols = oar.nonzero(x1, as_tuple=True)
    assert rows.shape == [3, 1] and cols.tolist() == [[0], [1], [2]]
    x = oar.to_tensor([[10, 30, 20], [60, 40, 50]])
    index = oar.zeros([2, 2]).astype("int32")
    value = oar.to_tensor([[1, 2], [3, 4]]).astype(x.dtype)
    assert oar.put_along_axis(x, index, value, 0, "add", True, False).tolist() == [[14, 36, 20], [60, 40, 50]]
    assert oar.take_along_axis(oar.to_tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), oar.to_tensor([[0]]), 0).tolist() == [[1, 2, 3]]
    label = oar.one_hot(oar.to_tensor([1, 1, 3, 0]), num_classes=4)
    assert label.dtype == oar.float32 and label.tolist()[2] == [0.0, 0.0, 0.0, 1.0]


def test_tensor_methods_bind_the_same_ops():
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    i = oar.to_tensor([1])
    assert x.gather(i).tolist() == [[3.0, 4.0]]
    assert x.index_select(i, axis=1).tolist() == [[2.0], [4.0]]
    assert x.gather_nd(oar.to_tensor([[1, 0]])).tolist() == [3.0]
    assert x.masked_select(x > 2.0).tolist() == [3.0, 4.0]
    assert x.masked_fill(x > 2.0, 0.0).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert x.nonzero().shape == [4, 2]
    assert x.take_along_axis(oar.to_tensor([[1], [0]]), 1).tolist() == [[2.0], [3.0]]
    assert x.put_along_axis(oar.to_tensor([[1], [0]]), 0.0, 1).tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert x.scatter(i, oar.zeros([1, 2])).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert x.scatter_nd_add(oar.to_tensor([[0, 0]]), oar.ones([1])).tolist() == [[2.0, 2.0], [3.0, 4.0]]
    assert x.index_add(i, 0, oar.ones([1, 2])).tolist() == [[1.0, 2.0], [4.0, 5.0]]


def test_meta_of_data_dependent_shapes_uses_none():
    from oar._engine.op import TensorMeta

    x = TensorMeta((3, 4), oar.float32)
    mask = TensorMeta((3,), oar.bool)
    items, _ = indexing.parse_index((slice(None), None))
    items = [{"kind": "tensor", "input": 0}] + items
    assert indexing.getitem_op.meta(x, mask, items=items).shape == (None, 4, 1)
    assert indexing.nonzero_op.meta(x).shape == (None, 2)
    assert indexing.masked_select_op.meta(x, TensorMeta((3, 4), oar.bool)).shape == (None,)
    assert indexing.one_hot_op.meta(TensorMeta((2,), oar.int64), num_classes=-1).shape == (2, None)


def test_in_place_variants_write_into_x_and_keep_gradients():
    x = oar.zeros([3, 2])
    assert x.scatter_(oar.to_tensor([2]), oar.ones([1, 2])) is x
    assert oar.index_add_(x, oar.to_tensor([0, 0]), 0, oar.ones([2, 2])) is x
    x.masked_fill_(oar.to_tensor([[False, True]]), -1.0)
    x.put_along_axis_(oar.to_tensor([[0], [0], [0]]), 5.0, 1)
    np.testing.assert_array_equal(x.numpy(), [[5.0, -1.0], [5.0, -1.0], [5.0, -1.0]])
    assert x.inplace_version == 4

    w = oar.to_tensor(np.arange(4.0).reshape(2, 2), stop_gradient=False)
    y = w * 1.0
    y.masked_fill_(oar.to_tensor([[True, False], [False, True]]), 0.0)
    y.index_add_(oar.to_tensor([1]), 1, w[:, :1] * 2.0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[2.0, 1.0], [3.0, 0.0]])
    with pytest.raises(GradientError, match="scatter_: a leaf tensor that requires grad"):
        w.scatter_(oar.to_tensor([0]), oar.zeros([1, 2]))
    assert w.tolist() == [[0.0, 1.0], [2.0, 3.0]]
