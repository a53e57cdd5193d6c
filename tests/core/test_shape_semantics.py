"""Paddle-specific behaviour of the shape ops that the numpy op table cannot show: Paddle's
argument rules, error messages in the user's terms, gradients through multi-output ops, and
metas with dynamic dims."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar._engine.op import TensorMeta
from oar._ops import shape as S
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import pad_axes


def arange(*shape, stop_gradient=True, dtype="float64"):
    n = int(np.prod(shape)) if shape else 1
    return oar.to_tensor(np.arange(n, dtype=dtype).reshape(shape), stop_gradient=stop_gradient)


# -- Paddle's argument rules ------------------------------------------------------------------
def test_squeeze_ignores_named_axes_whose_size_is_not_1():
    x = oar.zeros([2, 1, 3])
    assert oar.squeeze(x, axis=0).shape == [2, 1, 3]
    assert oar.squeeze(x, axis=[0, 1]).shape == [2, 3]
    assert x.squeeze().shape == [2, 3]
    assert oar.squeeze(oar.zeros([]), axis=0).shape == []
    with pytest.raises(ArgumentError, match=r"squeeze: axis=3 is out of range for a 3-d tensor"):
        oar.squeeze(x, axis=3)


def test_unsqueeze_inserts_axes_one_after_another():
    x = oar.zeros([5, 10])
    assert oar.unsqueeze(x, [0, 2]).shape == [1, 5, 1, 10]
    assert oar.unsqueeze(x, [2, 0]).shape == [1, 5, 10, 1]  # the axis inserted first moves right
    assert oar.unsqueeze(x, [-1, -1]).shape == [5, 10, 1, 1]
    assert oar.unsqueeze(oar.zeros([]), -1).shape == [1]
    with pytest.raises(ArgumentError, match=r"unsqueeze: axis 4 is out of range when inserting into a 3-d shape"):
        oar.unsqueeze(x, [0, 4])


def test_reshape_zero_copies_the_input_dim_and_minus_one_is_inferred():
    x = oar.zeros([2, 3, 4])
    assert oar.reshape(x, [0, -1]).shape == [2, 12]
    assert oar.reshape(x, [-1, 0, 2]).shape == [4, 3, 2]
    assert x.reshape([0, 0, 0]).shape == [2, 3, 4]
    # the op's attribute is the resolved shape, where 0 is a zero-size dim: it round-trips
    assert oar.reshape(oar.zeros([2, 0, 3]), [-1, 2]).shape == [0, 2]


def test_reshape_errors_name_the_op_the_shapes_and_the_sizes():
    x = oar.zeros([2, 3])
    with pytest.raises(ShapeError, match=r"reshape: cannot reshape a tensor of shape \[2, 3\] \(6 elements\) to \[4, 2\]"):
        oar.reshape(x, [4, 2])
    with pytest.raises(ShapeError, match=r"reshape: cannot reshape a tensor of shape \[2, 3\] \(6 elements\) to \[4, -1\]"):
        oar.reshape(x, [4, -1])
    with pytest.raises(ShapeError, match=r"reshape: at most one dimension of shape may be -1, got \[-1, -1\]"):
        oar.reshape(x, [-1, -1])
    with pytest.raises(ShapeError, match=r"reshape: shape \[2, 3, 0\] has a 0 .* the 2-d input \[2, 3\] does not have"):
        oar.reshape(x, [2, 3, 0])


def test_split_with_an_inferred_section_and_its_errors():
    x = oar.zeros([3, 9, 5])
    parts = oar.split(x, [2, 3, -1], axis=1)
    assert isinstance(parts, list)
    assert [p.shape for p in parts] == [[3, 2, 5], [3, 3, 5], [3, 4, 5]]
    assert [p.shape for p in oar.split(x, 3, axis=-2)] == [[3, 3, 5]] * 3
    with pytest.raises(ArgumentError, match=r"split: num_or_sections \[2, 3, 5\] does not add up to 9, the size of axis 1"):
        oar.split(x, [2, 3, 5], axis=1)
    with pytest.raises(ArgumentError, match=r"split: num_or_sections \[-1, -1\] may hold one -1"):
        oar.split(x, [-1, -1], axis=1)
    with pytest.raises(ArgumentError, match=r"split: axis 1 of x \(shape \[3, 9, 5\]\) has size 9, which cannot be split into 4"):
        oar.split(x, 4, axis=1)
    with pytest.raises(ArgumentError, match=r"chunk: axis 0 .* has size 3, which cannot be split into 2"):
        oar.chunk(x, 2)


def test_concat_shape_errors_name_the_input_and_the_expected_shape():
    a, b = oar.zeros([2, 3]), oar.zeros([2, 4])
    with pytest.raises(ShapeError, match=r"concat: input 1 has shape \[2, 4\], expected \[\?, 3\]"):
        oar.concat([a, b], axis=0)
    assert oar.concat([a, b], axis=1).shape == [2, 7]
    with pytest.raises(ShapeError, match=r"concat: input 1 has shape \[2, 3, 1\], expected \[\?, 3\]"):
        oar.concat([a, oar.zeros([2, 3, 1])])
    with pytest.raises(ArgumentError, match=r"concat: x must be a list or tuple of tensors, got Tensor"):
        oar.concat(a)
    with pytest.raises(ArgumentError, match=r"concat: the inputs are 0-d tensors"):
        oar.concat([oar.zeros([]), oar.zeros([])])
    with pytest.raises(ShapeError, match=r"stack: input 1 has shape \[2, 4\], expected \[2, 3\]"):
        oar.stack([a, b])


def test_concat_skips_zero_size_inputs_and_refuses_mixed_dtypes():
    out = oar.concat([oar.zeros([0]), oar.ones([2, 3])])  # Paddle's dygraph drops empty inputs
    assert out.shape == [2, 3]
    # Paddle: "All the Tensors in the input must have the same data type"
    with pytest.raises(DTypeError, match=r"concat: x\[0\] is int64, x\[1\] is float32; concat does no type promotion"):
        oar.concat([oar.to_tensor([1, 2]), oar.to_tensor([0.5])])


def test_flatten_t_and_T_follow_paddle():
    assert oar.flatten(oar.zeros([])).shape == [1]
    with pytest.raises(ArgumentError, match=r"flatten: start_axis=2 comes after stop_axis=1"):
        oar.flatten(oar.zeros([2, 3, 4]), start_axis=2, stop_axis=1)
    v = oar.to_tensor([1.0, 2.0])
    assert oar.t(v) is v and v.T is v  # 0-d and 1-d tensors are returned as they are
    assert oar.zeros([2, 3, 4]).T.shape == [4, 3, 2]
    with pytest.raises(ArgumentError, match=r"t: input must have at most 2 dimensions, got shape \[2, 3, 4\]"):
        oar.t(oar.zeros([2, 3, 4]))


def test_transpose_and_moveaxis_argument_errors():
    x = oar.zeros([2, 3, 4])
    with pytest.raises(ArgumentError, match=r"transpose: perm \[0, 1\] has 2 entries, but x has 3 dimensions"):
        oar.transpose(x, [0, 1])
    with pytest.raises(ArgumentError, match=r"transpose: perm \[0, 0, 1\] is not a permutation"):
        oar.transpose(x, [0, 0, 1])
    assert oar.moveaxis(x, [0, 1], [-1, 0]).shape == [3, 4, 2]
    with pytest.raises(ArgumentError, match=r"moveaxis: source .* and destination .* must have the same length"):
        oar.moveaxis(x, [0, 1], [2])


def test_expand_tile_roll_and_flip_rules():
    x = oar.zeros([3, 1])
    assert oar.expand(x, [2, -1, 4]).shape == [2, 3, 4]
    assert oar.expand_as(x, oar.zeros([5, 3, 2])).shape == [5, 3, 2]
    with pytest.raises(ShapeError, match=r"expand: shape \[-1, 3, 1\] has -1 at new leading axis 0"):
        oar.expand(x, [-1, 3, 1])
    with pytest.raises(ShapeError, match=r"broadcast_to: cannot broadcast x \[3, 1\] to \[2, 4\] \(axis 0 of x has size 3"):
        oar.broadcast_to(x, [2, 4])
    with pytest.raises(ShapeError, match=r"expand: shape \[3\] has fewer dimensions than x \[3, 1\]"):
        oar.expand(x, [3])
    with pytest.raises(ArgumentError, match=r"tile: repeat_times \[2, -1\] must not be negative"):
        oar.tile(x, [2, -1])
    with pytest.raises(ArgumentError, match=r"roll: with axis=None .* shifts must be one int, got \[1, 2\]"):
        oar.roll(x, [1, 2])
    y = oar.to_tensor([1, 2, 3])
    assert oar.flip(y, [0, 0]).tolist() == [3, 2, 1]  # an axis named twice flips once, as in Paddle


def test_slices_clamp_like_python_and_reject_bad_arguments():
    x = oar.to_tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert oar.slice(x, axes=[0, 1], starts=[0, 1], ends=[-1, 1000]).tolist() == [[2, 3, 4]]
    assert oar.slice(x, axes=[1], starts=[3], ends=[1]).shape == [2, 0]
    assert oar.strided_slice(x, axes=[0, 1], starts=[1, 3], ends=[2, 0], strides=[1, -1]).tolist() == [[8, 7, 6]]
    assert oar.strided_slice(x, [1], [-1], [-100], [-2]).tolist() == [[4, 2], [8, 6]]
    with pytest.raises(ArgumentError, match=r"strided_slice: strides \[0\] must not contain 0"):
        oar.strided_slice(x, [0], [0], [1], [0])
    with pytest.raises(ArgumentError, match=r"slice: ends has 1 entries but axes \[0, 1\] has 2"):
        oar.slice(x, [0, 1], [0, 0], [1])
    with pytest.raises(ArgumentError, match=r"slice: axes \[1, -1\] names an axis twice"):
        oar.slice(x, [1, -1], [0, 0], [1, 1])


def test_pad_modes_and_their_limits():
    x = oar.to_tensor([1, 2, 3])
    assert pad_axes(x, [2, 1], mode="reflect").tolist() == [3, 2, 1, 2, 3, 2]
    assert pad_axes(x, [2, 1], mode="replicate").tolist() == [1, 1, 1, 2, 3, 3]
    assert pad_axes(x, [2, 1], mode="circular").tolist() == [2, 3, 1, 2, 3, 1]
    assert pad_axes(x, [1, 0], value=9).tolist() == [9, 1, 2, 3]
    assert not hasattr(oar, "pad")  # Paddle's pad lives in paddle.nn.functional
    with pytest.raises(ArgumentError, match=r"pad: reflect padding of \(3, 0\) on axis 0 of x \[3\] needs at most 2"):
        pad_axes(x, [3, 0], mode="reflect")
    with pytest.raises(ArgumentError, match=r"pad: mode 'edge' is not one of"):
        pad_axes(x, [1, 1], mode="edge")
    with pytest.raises(ArgumentError, match=r"pad: pads has 2 entries, expected 2 \* 2"):
        pad_axes(oar.zeros([2, 2]), [1, 1])


def test_tril_triu_need_a_matrix():
    with pytest.raises(ArgumentError, match=r"tril: x must have at least 2 dimensions, got shape \[3\]"):
        oar.tril(oar.zeros([3]))
    with pytest.raises(ArgumentError, match=r"triu: diagonal must be an int, got float"):
        oar.triu(oar.zeros([3, 3]), 0.5)


# -- gradients --------------------------------------------------------------------------------
def test_gradient_flows_from_only_some_split_outputs():
    x = arange(2, 6, stop_gradient=False)
    _, b, _ = oar.split(x, 3, axis=1)
    (b * 2).sum().backward()
    expected = np.zeros([2, 6])
    expected[:, 2:4] = 2
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_gradient_flows_from_only_some_unbind_outputs():
    x = arange(3, 2, stop_gradient=False)
    rows = oar.unbind(x)
    (rows[0] * rows[2]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[4, 5], [0, 0], [0, 1]])


def test_concat_gradient_skips_inputs_that_need_none():
    a = arange(2, 2, stop_gradient=False)
    b = arange(2, 1)
    oar.concat([a, b], axis=1).sum().backward()
    assert b.grad is None
    np.testing.assert_array_equal(a.grad.numpy(), np.ones([2, 2]))


@pytest.mark.parametrize("make", [
    lambda x: oar.strided_slice(x, [0, 1], [3, 0], [-100, 5], [-2, 2]),
    lambda x: pad_axes(x, [1, 2, 2, 1], mode="reflect"),
    lambda x: pad_axes(x, [2, 0, 1, 3], mode="circular"),
    lambda x: pad_axes(x, [1, 1, 0, 2], mode="replicate"),
    lambda x: oar.tile(oar.roll(x, 1, 0), [2, 1]),
], ids=["strided_slice", "pad_reflect", "pad_circular", "pad_replicate", "tile_roll"])
def test_gradient_rules_differentiate_again(make):
    # y = A x for a linear A; L = sum(y * y) has dL/dx = 2 A^T A x and, with create_graph,
    # M = sum(dL/dx * v) has dM/dx = 2 A^T A v.
    x_np = np.random.default_rng(0).standard_normal([4, 5])
    v_np = np.random.default_rng(1).standard_normal([4, 5])
    x = oar.to_tensor(x_np, stop_gradient=False)
    y = make(x)
    (dx,) = oar.grad((y * y).sum(), x, create_graph=True)
    (ddx,) = oar.grad((dx * oar.to_tensor(v_np)).sum(), x)

    def gram(u):  # A^T A u, through a fresh forward and backward
        t = oar.to_tensor(u, stop_gradient=False)
        out = make(t)
        (g,) = oar.grad((out * make(oar.to_tensor(u))).sum(), t)
        return g.numpy()

    np.testing.assert_allclose(dx.numpy(), 2 * gram(x_np), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ddx.numpy(), 2 * gram(v_np), rtol=1e-12, atol=1e-12)


# -- metas: dynamic dims and the outputs they promise -----------------------------------------
def f32(*shape):
    return TensorMeta(tuple(shape), oar.float32)


def test_metas_keep_dynamic_dims():
    assert S.concat_op.meta(f32(None, 3), f32(2, 3), axis=0).shape == (None, 3)
    assert S.concat_op.meta(f32(None, 3), f32(2, None), axis=1).shape == (2, None)  # input 1 knows dim 0
    assert S.concat_op.meta(f32(None, 3), f32(None, 1), axis=1).shape == (None, 4)
    assert [m.shape for m in S.split_op.meta(f32(None, 6), sections=[2, 4], axis=1)] == [(None, 2), (None, 4)]
    assert S.reshape_op.meta(f32(None, 3, 4), shape=[-1, 12]).shape == (None, 12)  # inferred when it runs
    assert S.flatten_op.meta(f32(None, 3, 4), start_axis=1, stop_axis=2).shape == (None, 12)
    assert S.flatten_op.meta(f32(2, None, 4), start_axis=0, stop_axis=1).shape == (None, 4)
    assert S.transpose_op.meta(f32(None, 3), perm=[1, 0]).shape == (3, None)
    assert S.tile_op.meta(f32(None, 3), repeat_times=[2, 2]).shape == (None, 6)
    assert S.slice_op.meta(f32(None, 5), axes=[1], starts=[1], ends=[100]).shape == (None, 4)
    assert S.pad_op.meta(f32(None, 3), pads=[0, 0, 1, 1], mode="reflect", value=0.0).shape == (None, 5)
    assert S.unsqueeze_op.meta(f32(None), axis=[0]).shape == (1, None)
    with pytest.raises(ShapeError, match=r"concat: input 1 has shape \[\?, 4\], expected \[\?, 3\]"):
        S.concat_op.meta(f32(None, 3), f32(None, 4), axis=0)
    with pytest.raises(ShapeError, match=r"concat: input 2 has shape \[4, 3\], expected \[2, \?\]"):
        S.concat_op.meta(f32(None, 3), f32(2, 1), f32(4, 3), axis=1)
    with pytest.raises(ShapeError, match=r"unbind: axis 0 of x \[\?, 3\] has a dynamic size"):
        S.unbind_op.meta(f32(None, 3), axis=0)


def test_outputs_are_writable_except_broadcast_views():
    x = oar.to_tensor(np.arange(6.0).reshape(2, 3))
    outputs = [
        oar.flatten(x), oar.squeeze(x), oar.unsqueeze(x, 0), oar.transpose(x, [1, 0]), *oar.split(x, 3, 1),
        *oar.unbind(x), oar.flip(x, 0), oar.slice(x, [1], [0], [2]), oar.strided_slice(x, [1], [2], [0], [-1]),
        oar.concat([x, x]), oar.stack([x, x]), oar.tile(x, [2]), oar.roll(x, 1), pad_axes(x, [1, 1, 0, 0]),
        oar.tril(x), oar.triu(x),
    ]
    assert all(o._data.flags.writeable for o in outputs)
