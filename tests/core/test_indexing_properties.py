"""Property tests: random index expressions and random broadcastable shapes against numpy.

Each example runs under ``record_ops`` so the ops' meta functions are checked against what the
kernels produced, as in the op table.
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import oar
from oar._ops import indexing
from oar.testing import record_ops

FAST = settings(max_examples=50, deadline=None)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def _as_oar(index):
    def conv(v):
        return oar.to_tensor(v) if isinstance(v, np.ndarray) else v

    return tuple(conv(v) for v in index) if isinstance(index, tuple) else conv(index)


def _check_getitem(x_np, index):
    """``x[index]`` equals numpy's, and its gradient is numpy's scatter-add of the weights."""
    expected = x_np[index]
    x = oar.to_tensor(x_np, stop_gradient=False)
    with record_ops():
        y = x[_as_oar(index)]
        assert y.shape == list(expected.shape)
        np.testing.assert_array_equal(y.numpy(), expected)
        w = np.arange(expected.size, dtype=np.float64).reshape(expected.shape) + 1.0
        (y * oar.to_tensor(w)).sum().backward()
    grad = np.zeros_like(x_np)
    np.add.at(grad, index, w)
    np.testing.assert_array_equal(x.grad.numpy(), grad)


def _check_setitem(x_np, index, value_np):
    expected = x_np.copy()
    expected[index] = value_np
    with record_ops():
        y = oar.to_tensor(x_np)
        y[_as_oar(index)] = oar.to_tensor(value_np)
    np.testing.assert_array_equal(y.numpy(), expected)


@st.composite
def basic_cases(draw):
    shape = draw(SHAPES)
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape), index


@given(basic_cases())
@FAST
def test_basic_indexing_matches_numpy(case):
    x, index = case
    _check_getitem(x, index)


@st.composite
def slices(draw, size):
    bound = st.none() | st.integers(-size - 2, size + 2)
    step = st.none() | st.integers(-3, 3).filter(lambda s: s != 0)
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def advanced_cases(draw):
    """Mixed basic and advanced indices: ints, slices, None, Ellipsis, integer arrays that
    broadcast together (with repeats and negative values), or one boolean mask."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    use_mask = draw(st.booleans())
    adv_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    items, dim, arrays = [], 0, 0
    ellipsis_at = draw(st.none() | st.integers(0, len(shape)))
    mask_at = draw(st.integers(0, len(shape) - 1)) if use_mask else -1
    while dim < len(shape):
        if len(items) == ellipsis_at:
            items.append(Ellipsis)
            break  # the Ellipsis stands for the remaining dims
        if draw(st.integers(0, 5)) == 0:
            items.append(None)
        if dim == mask_at:
            k = draw(st.integers(1, len(shape) - dim))
            items.append(draw(hnp.arrays(np.bool_, shape[dim:dim + k])))
            dim += k
            continue
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "array"] if not use_mask else ["int", "slice"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            items.append(draw(slices(size)))
        else:
            # Each array broadcasts to adv_shape: some of its trailing dims may be 1.
            own = tuple(d if draw(st.booleans()) else 1 for d in adv_shape)
            own = own[draw(st.integers(0, len(own))):]
            items.append(draw(hnp.arrays(np.int64, own, elements=st.integers(-size, size - 1))))
            arrays += 1
        dim += 1
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 7.0
    return x, tuple(items)


@given(advanced_cases())
@FAST
def test_advanced_and_mixed_indexing_matches_numpy(case):
    x, index = case
    _check_getitem(x, index)


@given(advanced_cases(), st.data())
@FAST
def test_setitem_matches_numpy(case, data):
    x, index = case
    target = x[index].shape
    # A value that broadcasts to the target: a suffix of its shape, some dims set to 1.
    suffix = target[data.draw(st.integers(0, len(target))):]
    value_shape = tuple(d if data.draw(st.booleans()) else 1 for d in suffix)
    value = data.draw(hnp.arrays(np.float64, value_shape, elements=st.floats(-5, 5)))
    _check_setitem(x, index, value)


@given(advanced_cases())
@FAST
def test_getitem_meta_matches_numpy_shape(case):
    """The shape rule alone (what tracing uses) equals numpy's, bool masks as a dynamic dim."""
    from oar._engine.op import TensorMeta

    x, index = case
    items, tensors = indexing.parse_index(_as_oar(index))
    metas = [TensorMeta(tuple(t.shape), t.dtype) for t in tensors]
    got = indexing.indexed_shape("getitem", x.shape, items, metas)
    expected = x[index].shape
    assert len(got) == len(expected)
    assert all(g is None or g == e for g, e in zip(got, expected))
    assert (None in got) == any(t.dtype == oar.bool for t in tensors)


# -- broadcasting of binary ops ------------------------------------------------------------------
BINARY = [
    (oar.add, np.add),
    (oar.subtract, np.subtract),
    (oar.multiply, np.multiply),
    (oar.divide, np.divide),
    (oar.less_than, np.less),
    (oar.equal, np.equal),
]


def _sum_to(a, shape):
    """numpy: sum a broadcast result down to an operand's shape."""
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and a.shape[i] != 1)
    return a.sum(axis=axes, keepdims=True) if axes else a


@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4),
    st.sampled_from(BINARY),
    st.data(),
)
@FAST
def test_binary_ops_broadcast_like_numpy(shapes, ops, data):
    (sx, sy), result = shapes.input_shapes, shapes.result_shape
    fn, ref = ops
    xs = data.draw(hnp.arrays(np.float64, sx, elements=st.floats(-4, 4)))
    ys = data.draw(hnp.arrays(np.float64, sy, elements=st.floats(0.5, 4)))  # divide: no zeros
    x = oar.to_tensor(xs, stop_gradient=False)
    y = oar.to_tensor(ys, stop_gradient=False)
    with record_ops():
        out = fn(x, y)
    expected = ref(xs, ys)
    assert out.shape == list(result) == list(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    if fn in (oar.less_than, oar.equal):
        assert out.dtype == oar.bool
        return

    w = data.draw(hnp.arrays(np.float64, result, elements=st.floats(-2, 2)))
    with record_ops():
        (out * oar.to_tensor(w)).sum().backward()
    bx, by = np.broadcast_to(xs, result), np.broadcast_to(ys, result)
    dx, dy = {
        oar.add: (w, w),
        oar.subtract: (w, -w),
        oar.multiply: (w * by, w * bx),
        oar.divide: (w / by, -w * bx / by**2),
    }[fn]
    assert x.grad.shape == list(sx) and y.grad.shape == list(sy)
    np.testing.assert_allclose(x.grad.numpy(), _sum_to(dx, sx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), _sum_to(dy, sy), rtol=1e-10, atol=1e-12)


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3), st.data())
@FAST
def test_scalars_and_arrays_on_either_side_broadcast(shapes, data):
    (sx, sy) = shapes.input_shapes
    xs = data.draw(hnp.arrays(np.float32, sx, elements=st.floats(-4, 4, width=32)))
    ys = data.draw(hnp.arrays(np.float32, sy, elements=st.floats(-4, 4, width=32)))
    x = oar.to_tensor(xs)
    np.testing.assert_array_equal((x + ys).numpy(), xs + ys)  # a numpy array on the right
    np.testing.assert_array_equal((x * 2.0).numpy(), xs * np.float32(2.0))
    np.testing.assert_array_equal((3.0 - x).numpy(), np.float32(3.0) - xs)
