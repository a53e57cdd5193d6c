"""The gpu's shape and indexing kernels beyond the op table: half types, strided and broadcast
inputs, sizes over one block, empty tensors, zero-copy views, scatters with repeated indices and
the errors a user sees, each against the cpu's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels.shape import KERNELS
from triton_test_support import assert_same

import oar
from oar.errors import IndexOutOfRangeError, ShapeError

HALVES = ["float16", "bfloat16"]
rng = np.random.default_rng(7)


def run_both(fn, *arrays, dtype: str = "float32"):
    """``fn`` on the gpu and on the cpu, float inputs cast to ``dtype``: both results as numpy."""
    target = oar.ops.get_dtype(dtype).np
    results = []
    for place in ("gpu", "cpu"):
        oar.set_device(place)  # index lists inside fn become tensors on the same device
        try:
            out = fn(*[oar.to_tensor(a.astype(target) if a.dtype.kind == "f" else a) for a in arrays])
        finally:
            oar.set_device("cpu")
        outs = out if isinstance(out, (list, tuple)) else [out]
        if place == "gpu":
            assert all(o.place.backend == "gpu" for o in outs)
        results.append([o.numpy() for o in outs])
    return results


def check(fn, *arrays, dtype: str = "float32"):
    got, expected = run_both(fn, *arrays, dtype=dtype)
    assert_same(got, expected, dtype, getattr(fn, "__name__", "case"))


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def transposed(a):
    return lambda x: x.transpose(list(range(a.ndim))[::-1])


@pytest.mark.parametrize("dtype", HALVES)
def test_half_types_move_unchanged(dtype):
    a, b = randn(3, 5), randn(3, 2)
    index = np.array([[4, 0, 4], [1, 1, 3], [2, 0, 0]], np.int64)
    check(lambda x, y: oar.concat([x, y], axis=1), a, b, dtype=dtype)
    check(lambda x, y: oar.stack([x, x * 1.0], axis=1), a, b, dtype=dtype)
    check(lambda x: oar.tile(x, [2, 1, 2]), a, dtype=dtype)
    check(lambda x: oar.flip(x, [0, 1]), a, dtype=dtype)
    check(lambda x: oar.roll(x, [1, -2], axis=[0, 1]), a, dtype=dtype)
    check(lambda x: oar.tril(x, 1), a, dtype=dtype)
    check(lambda x: oar.triu(x, -1), a, dtype=dtype)
    check(lambda x: oar.nn.functional.pad(x[None], [1, 2], mode="reflect", data_format="NCL"), a, dtype=dtype)
    check(lambda x: oar.nn.functional.pad(x, [1, 1, 0, 2], value=0.5), a, dtype=dtype)  # every axis
    check(lambda x, i: oar.take_along_axis(x, i, axis=1), a, index, dtype=dtype)
    check(lambda x, i: oar.gather(x, i[0], axis=1), a, index, dtype=dtype)
    check(lambda x: x[[2, 0], 1:4:2], a, dtype=dtype)
    check(lambda x: oar.full_like(x, 2.5), a, dtype=dtype)


def test_strided_and_broadcast_inputs():
    a = randn(4, 6)
    check(lambda x: oar.concat([x.T, x.T[:, ::2]], axis=1), a)
    check(lambda x: oar.reshape(x.T, [3, 8]), a)  # a strided reshape copies
    check(lambda x: oar.nn.functional.pad(x.T[None, None], [2, 1, 1, 0], mode="circular"), a)
    check(lambda x: oar.tril(x.T[::-1]), a)
    check(lambda x: oar.flip(x[:, 1::2], [1]), a)
    check(lambda x: oar.tile(oar.broadcast_to(x[:1], [3, 6]), [2, 1]), a)
    check(lambda x: oar.stack([oar.expand(x[:, :1], [4, 6]), x]), a)
    check(lambda x: oar.gather(x.T, oar.to_tensor([3, 0, 3]), axis=1), a)
    check(lambda x: x.T[1:, [0, 3]][::2], a)


def test_sizes_over_one_block():
    a = randn(50, 70)  # 3500 elements: several programs per launch
    mask = rng.random((50, 70)) < 0.5  # a nonzero pass over several blocks keeps row-major order
    check(lambda x: oar.roll(x, 1234), a)
    check(lambda x: oar.nn.functional.pad(x[None, None], [3, 3, 2, 2], mode="replicate"), a)
    check(lambda x, m: x[m], a, mask)
    check(lambda x: oar.triu(x, 5), a)
    check(lambda x: oar.one_hot(oar.to_tensor(np.arange(700) % 9), 9), a)


def test_empty_tensors():
    e = np.zeros((0, 3), np.float32)
    check(lambda x: oar.tile(x, [2, 2]), e)
    check(lambda x: oar.nn.functional.pad(x, [1, 1, 2, 0], value=3.0), e)  # all of it padding
    check(lambda x: oar.tril(x), e)
    check(lambda x: oar.concat([x, x], axis=0), e)
    check(lambda x: x[x.sum(axis=1) > 0], randn(4, 3) * 0 - 1)  # a mask with no true element
    check(lambda x: oar.gather(x, oar.to_tensor(np.zeros(0, np.int64)), axis=1), randn(2, 3))
    check(lambda x: oar.one_hot(oar.to_tensor(np.zeros((0,), np.int64)), 4), e)


def test_advanced_indexing_layouts():
    a = randn(3, 4, 5)
    check(lambda x: x[:, [0, 2], 1], a)  # separated advanced indices go first
    check(lambda x: x[[1], :, [0, 3]][..., None], a)
    check(lambda x: x[oar.to_tensor(2), ::-1], a)  # a 0-d index tensor drops its axis
    check(lambda x: x[True, 1], a)
    check(lambda x: x[x > 0], a)


def test_views_share_the_block():
    x = BACKEND.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    for op, attrs in [("reshape", {"shape": [4, 6]}), ("transpose", {"perm": [2, 0, 1]}),
                      ("broadcast_to", {"shape": [5, 2, 3, 4]}), ("squeeze", {"axis": None}),
                      ("unsqueeze", {"axis": [0]}), ("getitem", {"items": [{"kind": "int", "value": 1}]}),
                      ("strided_slice", {"axes": [2], "starts": [3], "ends": [0], "strides": [-2]})]:
        assert KERNELS[op](x, **attrs).block is x.block, op
    assert all(part.block is x.block for part in KERNELS["split"](x, sections=[1, 2], axis=1))
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    stepped = KERNELS["strided_slice"](x, axes=[1], starts=[0], ends=[3], strides=[2])  # rows 0 and 2
    split_rows = KERNELS["reshape"](stepped, shape=[2, 2, 2, 2])  # numpy views this too
    assert split_rows.block is x.block
    np.testing.assert_array_equal(BACKEND.to_numpy(split_rows), host[:, ::2].reshape(2, 2, 2, 2))
    copied = KERNELS["reshape"](KERNELS["transpose"](x, perm=[1, 0, 2]), shape=[6, 4])  # no view can
    assert copied.block is not x.block
    np.testing.assert_array_equal(BACKEND.to_numpy(copied), host.transpose(1, 0, 2).reshape(6, 4))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_scatters_add_repeated_indices(dtype):
    np_dtype = oar.ops.get_dtype(dtype).np
    g = BACKEND.from_numpy(np.arange(1, 7).reshape(2, 3).astype(np_dtype))
    index = BACKEND.from_numpy(np.array([[0, 0, 2], [1, 1, 1]], np.int64))
    out = BACKEND.to_numpy(KERNELS["_scatter_add_along_axis"](g, index, axis=1, shape=[2, 3]))
    assert out.dtype == np_dtype
    np.testing.assert_array_equal(out.astype(np.float64), [[3, 0, 3], [0, 15, 0]])
    items = [{"kind": "tensor", "input": 0}]
    rows = BACKEND.from_numpy(np.array([1, 1, -1], np.int64))
    grad = BACKEND.to_numpy(KERNELS["getitem_grad"](g.view((3, 2), (2, 1)), rows, items=items, shape=[2, 2]))
    np.testing.assert_array_equal(grad.astype(np.float64), [[0, 0], [1 + 3 + 5, 2 + 4 + 6]])


@pytest.mark.parametrize("dtype", ["int64", "float64", "bfloat16"])
def test_put_along_axis_reduces_repeated_indices(dtype):
    kind = np.int64 if dtype == "int64" else np.float32  # float inputs are cast to dtype by run_both
    arr, values = (rng.integers(-5, 6, (3, 4)).astype(kind) for _ in range(2))
    indices = np.array([[0, 0, 3, 0], [1, 1, 1, -1], [2, 0, 2, 0]], np.int64)
    for reduce in ("assign", "add", "mul", "mean", "amin", "amax"):
        for include_self in (True, False):
            def put(a, i, v, r=reduce, s=include_self):
                return oar.put_along_axis(a, i, v, 1, r, include_self=s)

            got, expected = run_both(put, arr, indices, values, dtype=dtype)
            assert_same(got, expected, dtype, f"put_along_axis {reduce} include_self={include_self}")


def test_assignments_and_masks():
    a = randn(4, 5)
    mask = a > 0.3

    def assign(x, m):
        y = x * 1.0
        y[[0, 2, 0], 1:3] = oar.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])  # row 0 twice: the last wins
        y[m] = -1.0
        y[1, ::2] = y[3, 1:4]
        return y

    check(assign, a, mask)
    check(lambda x, m: oar.masked_select(x, m[:1]), a, mask)  # the mask broadcast over the rows
    check(lambda x, m: oar.masked_fill(x, m, 9.0), a, mask, dtype="bfloat16")
    check(lambda x, m: oar.scatter(x, oar.to_tensor([3, 1, 3]), x[:3] * 2.0), a, mask, dtype="bfloat16")
    check(lambda x, m: oar.scatter(x, oar.to_tensor([3, 1, 3]), x[:3] * 2.0, overwrite=False), a, mask)
    check(lambda x, m: oar.gather_nd(x.T, oar.to_tensor([[4, 1], [0, 3]])), a, mask)
    check(lambda x, m: oar.scatter_nd_add(x, oar.to_tensor([[1], [1], [3]]), x[:3]), a, mask, dtype="bfloat16")
    signed_zeros = np.array([[0.0, -0.0, 2.0], [-1.5, 0.0, -0.0]], np.float32)  # -0.0 is zero, whatever its bits
    check(lambda x: oar.nonzero(x), signed_zeros, dtype="bfloat16")


def test_gradients_through_indexing():
    a = randn(4, 3)
    index = np.array([1, 1, 3], np.int64)
    for fn in (lambda x, i: x[i] * 2.0, lambda x, i: x[1:, None][::2], lambda x, i: oar.gather(x, i, axis=0)):
        grads = []
        for place in ("gpu", "cpu"):
            x = oar.to_tensor(a, place=place, stop_gradient=False)
            fn(x, oar.to_tensor(index, place=place)).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_large_integer_fill_is_exact():
    x = oar.to_tensor(np.zeros(3, np.int64), place="gpu")
    assert oar.full_like(x, 2**62 + 1).tolist() == [2**62 + 1] * 3


def test_errors_name_the_op_and_index():
    x = oar.to_tensor(randn(3, 4), place="gpu")
    with pytest.raises(IndexOutOfRangeError, match=r"gather: index 5 is out of range for axis 0 with size 3"):
        oar.gather(x, oar.to_tensor([0, 5], place="gpu"))
    with pytest.raises(IndexOutOfRangeError, match=r"index -5 is out of range for axis 1 with size 4"):
        x[:, oar.to_tensor([-5], place="gpu")]
    with pytest.raises(IndexOutOfRangeError, match=r"take_along_axis: indices value 4 is out of range"):
        oar.take_along_axis(x, oar.to_tensor([[4]], place="gpu"), axis=1)
    with pytest.raises(IndexOutOfRangeError, match=r"one_hot: x contains 3, out of range for num_classes=3"):
        oar.nn.functional.one_hot(oar.to_tensor([0, 3], place="gpu"), 3)
    with pytest.raises(ShapeError, match=r"bool mask of shape \[4\] does not match"):
        x[oar.to_tensor([True, False, True, False], place="gpu")]
    deep = oar.to_tensor(np.zeros((2,) * 7, np.float32), place="gpu")  # 7 repeated dims cannot merge
    with pytest.raises(ShapeError, match=r"tile: gpu kernel: .* need 7 dims .* at most 6"):
        oar.tile(deep, [2] * 7)
