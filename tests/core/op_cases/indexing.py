"""Op cases of the indexing family: gather/scatter, along-axis, masks, one_hot, getitem/setitem."""

from __future__ import annotations

import numpy as np

import oar
from oar._ops import indexing
from oar.testing import OpCase

from ._data import ints, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")
WITH_INT = ("float32", "float64", "float16", "bfloat16", "int64")


def idx(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def bools(*shape) -> np.ndarray:
    return ints(*shape, high=2).astype(bool)


def scaled(*shape) -> np.ndarray:
    """Values that stay distinct when the case casts them to int64."""
    return rand(*shape) * 10


# -- numpy references --------------------------------------------------------------------------
def _index_add_ref(x, index, value, axis):
    out = x.copy()
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return out


def _gather_nd_ref(x, index):
    return x[tuple(index[..., i] for i in range(index.shape[-1]))]


def _scatter_nd_add_ref(x, index, updates):
    out = x.copy()
    np.add.at(out, tuple(index[..., i] for i in range(index.shape[-1])), updates)
    return out


def _scatter_ref(x, index, updates, overwrite):
    out = x.copy()  # Paddle's sequential definition
    if not overwrite:
        for i in index:
            out[i] = 0
    for row, i in enumerate(index):
        out[i] = updates[row] if overwrite else out[i] + updates[row]
    return out


def _put_ref(arr, indices, values, axis, reduce="assign", include_self=True):
    """put_along_axis element by element (indices and values already of one shape)."""
    out = arr.astype(np.float64).copy()
    groups: dict = {}
    for pos in np.ndindex(*indices.shape):
        target = list(pos)
        target[axis] = indices[pos] % arr.shape[axis]
        groups.setdefault(tuple(target), []).append(float(values[pos]))
    for target, vals in groups.items():
        base = [float(arr[target])] if include_self else []
        if reduce == "assign":
            out[target] = vals[-1]
        elif reduce == "add":
            out[target] = sum(base + vals)
        elif reduce in ("mul", "multiply"):
            out[target] = np.prod(base + vals)
        elif reduce == "amin":
            out[target] = min(base + vals)
        elif reduce == "amax":
            out[target] = max(base + vals)
        else:
            out[target] = np.mean(base + vals)
    return out.astype(arr.dtype)


def _getitem_grad_ref(g, *indices, key, shape):
    out = np.zeros(shape, g.dtype)
    np.add.at(out, key(*indices), g)
    return out


def _setitem_ref(x, v, *indices, key):
    out = x.copy()
    out[key(*indices)] = v
    return out


def _setitem_case(key):
    def fn(x, v, *indices):
        return indexing.setitem(x, key(*indices), v)

    return fn


CASES = [
    # gather / index_select
    OpCase("gather", lambda x, i: oar.gather(x, i), lambda x, i: np.take(x, i, axis=0),
           [rand(4, 3), idx(3, 0, -1, 0)], grad_inputs=[0], dtypes=WITH_INT, id="gather_rows_negative_repeat"),
    OpCase("gather", lambda x, i: oar.gather(x, i, axis=-1), lambda x, i: np.take(x, i, axis=-1),
           [rand(2, 3, 4), idx(1, 3).astype(np.int32)], grad_inputs=[0], id="gather_last_axis_int32_index"),
    OpCase("gather", lambda x, i: oar.gather(x, i, axis=1), lambda x, i: np.take(x, i, axis=1),
           [rand(3, 4), np.array(-2, np.int64)], grad_inputs=[0], dtypes=ALL_FLOATS, id="gather_0d_index"),
    OpCase("gather", lambda x, i: oar.gather(x, i), lambda x, i: np.take(x, i, axis=0),
           [rand(3, 2), idx()], grad_inputs=[0], id="gather_empty_index"),
    OpCase("gather", lambda x, i: oar.gather(x, i), lambda x, i: np.take(x, i.reshape(-1), axis=0),
           [rand(3, 2), idx(2, 1).reshape(2, 1)], grad_inputs=[0], id="gather_legacy_n1_index"),
    OpCase("gather", lambda x, i: oar.index_select(x, i, axis=1), lambda x, i: np.take(x, i, axis=1),
           [rand(2, 5), idx(4, -5, 2)], grad_inputs=[0], dtypes=WITH_INT, id="index_select_axis1"),
    OpCase("gather", lambda x, i: oar.index_select(x, i), lambda x, i: np.take(x, i, axis=0),
           [rand(0, 3), idx()], grad_inputs=[0], id="index_select_zero_size"),
    # index_add
    OpCase("index_add", lambda x, i, v: oar.index_add(x, i, 0, v), lambda x, i, v: _index_add_ref(x, i, v, 0),
           [rand(4, 3), idx(0, 2, 0, -1), rand(4, 3)], grad_inputs=[0, 2], dtypes=WITH_INT, id="index_add_repeat"),
    OpCase("index_add", lambda x, i, v: oar.index_add(x, i, -1, v), lambda x, i, v: _index_add_ref(x, i, v, 2),
           [rand(2, 2, 3), idx(2, 1), rand(2, 2, 2)], grad_inputs=[0, 2], dtypes=ALL_FLOATS, id="index_add_last_axis"),
    OpCase("index_add", lambda x, i, v: oar.index_add(x, i, 0, v), lambda x, i, v: _index_add_ref(x, i, v, 0),
           [rand(3, 2), idx(), rand(0, 2)], grad_inputs=[0], id="index_add_empty_index"),
    # gather_nd / scatter_nd_add / scatter_nd
    OpCase("gather_nd", oar.gather_nd, _gather_nd_ref, [rand(3, 4, 2), idx([0, -1], [2, 1], [0, -1])],
           grad_inputs=[0], dtypes=WITH_INT, id="gather_nd_slices_repeat"),
    OpCase("gather_nd", oar.gather_nd, _gather_nd_ref, [rand(3, 4), idx([[1, 2]], [[2, 3]]).reshape(2, 1, 2)],
           grad_inputs=[0], dtypes=ALL_FLOATS, id="gather_nd_full_coords_batched"),
    OpCase("gather_nd", oar.gather_nd, lambda x, i: np.broadcast_to(x, i.shape[:-1] + x.shape),
           [rand(2, 3), np.zeros((2, 0), np.int64)], grad_inputs=[0], id="gather_nd_empty_coords"),
    OpCase("gather_nd", oar.gather_nd, lambda x, i: np.zeros((0, 3), x.dtype),
           [rand(2, 3), np.zeros((0, 1), np.int64)], grad_inputs=[0], id="gather_nd_zero_size"),
    OpCase("scatter_nd_add", oar.scatter_nd_add, _scatter_nd_add_ref,
           [rand(3, 4), idx([1, 2], [1, 2], [-1, 0]), rand(3)], grad_inputs=[0, 2], dtypes=WITH_INT,
           id="scatter_nd_add_points_repeat"),
    OpCase("scatter_nd_add", oar.scatter_nd_add, _scatter_nd_add_ref,
           [rand(3, 2, 2), idx([0], [2]), rand(2, 2, 2)], grad_inputs=[0, 2], dtypes=ALL_FLOATS,
           id="scatter_nd_add_slices"),
    OpCase("scatter_nd_add", lambda i, u: oar.scatter_nd(i, u, [4, 2]),
           lambda i, u: _scatter_nd_add_ref(np.zeros((4, 2), u.dtype), i, u),
           [idx([3], [0], [3]), rand(3, 2)], grad_inputs=[1], dtypes=WITH_INT, id="scatter_nd"),
    # scatter
    OpCase("scatter", lambda x, i, u: oar.scatter(x, i, u), lambda x, i, u: _scatter_ref(x, i, u, True),
           [rand(4, 3), idx(2, 0, -1), rand(3, 3)], grad_inputs=[0, 2], dtypes=WITH_INT, id="scatter_overwrite"),
    OpCase("scatter", lambda x, i, u: oar.scatter(x, i, u, overwrite=False),
           lambda x, i, u: _scatter_ref(x, i, u, False),
           [rand(3, 2), idx(2, 1, 0, 1), rand(4, 2)], grad_inputs=[0, 2], dtypes=ALL_FLOATS,
           id="scatter_accumulate_repeat"),
    # Repeated indices with overwrite: the last update wins (Paddle's CPU order); Paddle's gradient
    # gives every repeated row the gradient, which finite differences do not, so forward only.
    OpCase("scatter", lambda x, i, u: oar.scatter(x, i, u), lambda x, i, u: _scatter_ref(x, i, u, True),
           [rand(3, 2), idx(1, 1, 0, 1), rand(4, 2)], grad=False, dtypes=WITH_INT, id="scatter_overwrite_repeat_last_wins"),
    OpCase("scatter", lambda x, i, u: oar.scatter(x, i, u), lambda x, i, u: _scatter_ref(x, i.reshape(1), u[None], True),
           [rand(3, 2), np.array(-1, np.int64), rand(2)], grad_inputs=[0, 2], id="scatter_0d_index"),
    # take_along_axis / put_along_axis
    OpCase("take_along_axis", lambda a, i: oar.take_along_axis(a, i, 1),
           lambda a, i: np.take_along_axis(a, i, 1), [rand(3, 4), idx([0, -1], [2, 2], [3, 1])],
           grad_inputs=[0], dtypes=WITH_INT, id="take_along_axis_repeat_negative"),
    OpCase("take_along_axis", lambda a, i: oar.take_along_axis(a, i, 0),
           lambda a, i: np.take_along_axis(a, i, 0), [rand(3, 4), idx([2, 0, 1, 1])],
           grad_inputs=[0], dtypes=ALL_FLOATS, id="take_along_axis_broadcast_indices"),
    OpCase("take_along_axis", lambda a, i: oar.take_along_axis(a, i, 1),
           lambda a, i: np.take_along_axis(a, i, 1), [rand(1, 4), idx([0, 3], [1, 1], [2, 0])],
           grad_inputs=[0], id="take_along_axis_broadcast_arr"),
    OpCase("take_along_axis", lambda a, i: oar.take_along_axis(a, i, 1, broadcast=False),
           lambda a, i: np.take_along_axis(a[:2], i, 1), [rand(3, 4), idx([3, 0], [1, 1])],
           grad_inputs=[0], id="take_along_axis_no_broadcast"),
    OpCase("take_along_axis", lambda a, i: oar.take_along_axis(a, i, 0),
           lambda a, i: np.take_along_axis(a, i, 0), [rand(2, 3), np.zeros((0, 3), np.int64)],
           grad_inputs=[0], id="take_along_axis_zero_size"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 1),
           lambda a, i, v: _put_ref(a, i, v, 1), [rand(3, 4), idx([0, -1], [2, 1], [3, 0]), rand(3, 2)],
           grad_inputs=[0, 2], dtypes=WITH_INT, id="put_along_axis_assign"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 0, "add"),
           lambda a, i, v: _put_ref(a, np.broadcast_to(i, (2, 3)), np.broadcast_to(v, (2, 3)), 0, "add"),
           [rand(3, 3), idx([1], [1]), rand(2, 1)], grad_inputs=[0, 2], dtypes=ALL_FLOATS,
           id="put_along_axis_add_broadcast_repeat"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 1, "add", include_self=False),
           lambda a, i, v: _put_ref(a, i, v, 1, "add", False), [rand(2, 3), idx([0, 0], [2, 1]), rand(2, 2)],
           grad_inputs=[0, 2], id="put_along_axis_add_exclude_self"),
    OpCase("put_along_axis", lambda a, i: oar.put_along_axis(a, i, 7.0, 1),
           lambda a, i: _put_ref(a, i, np.full(i.shape, 7.0), 1), [rand(2, 3), idx([1], [2])],
           grad_inputs=[0], dtypes=WITH_INT, id="put_along_axis_scalar_value"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 1, broadcast=False),
           lambda a, i, v: _put_ref(a, i, v[:, :1], 1), [rand(3, 3), idx([2], [0], [1]), rand(3, 2)],
           grad_inputs=[0, 2], id="put_along_axis_no_broadcast_larger_values"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 1, "mean"),
           lambda a, i, v: _put_ref(a, i, v, 1, "mean"), [rand(2, 3), idx([0, 0, 2], [1, 1, 1]), rand(2, 3)],
           grad_inputs=[0, 2], dtypes=ALL_FLOATS, id="put_along_axis_mean_grad"),
    OpCase("put_along_axis", lambda a, i, v: oar.put_along_axis(a, i, v, 0, "mean", include_self=False),
           lambda a, i, v: _put_ref(a, i, v, 0, "mean", False), [rand(3, 2), idx([2, 0], [2, 2]), rand(2, 2)],
           grad_inputs=[0, 2], id="put_along_axis_mean_exclude_self_grad"),
] + [
    OpCase("put_along_axis", lambda a, i, v, r=reduce, s=include_self: oar.put_along_axis(a, i, v, 1, r, include_self=s),
           lambda a, i, v, r=reduce, s=include_self: _put_ref(a, i, v, 1, r, s),
           [scaled(2, 3), idx([0, 0, 2], [1, 1, 1]), scaled(2, 3)], grad=False, dtypes=("float64", "float32", "int64"),
           id=f"put_along_axis_{reduce}_{'self' if include_self else 'no_self'}")
    for reduce in ("mul", "multiply", "mean", "amin", "amax") for include_self in (True, False)
] + [
    # masks
    OpCase("masked_select", oar.masked_select, lambda x, m: x[m], [rand(3, 4), bools(3, 4)],
           grad_inputs=[0], dtypes=WITH_INT + ("bool",), id="masked_select"),
    OpCase("masked_select", oar.masked_select, lambda x, m: np.broadcast_to(x, (2, 3))[np.broadcast_to(m, (2, 3))],
           [rand(3), np.array([[True], [False]])], grad_inputs=[0], dtypes=ALL_FLOATS, id="masked_select_broadcast"),
    OpCase("masked_select", oar.masked_select, lambda x, m: x[m], [rand(), np.array(True)],
           grad_inputs=[0], id="masked_select_0d"),
    OpCase("masked_select", oar.masked_select, lambda x, m: x[m], [rand(0, 2), np.zeros((0, 2), bool)],
           grad_inputs=[0], id="masked_select_zero_size"),
    OpCase("masked_fill", oar.masked_fill, lambda x, m, v: np.where(m, v, x),
           [rand(3, 3), np.array([[True, False, True]]), rand()], grad_inputs=[0, 2], dtypes=WITH_INT,
           id="masked_fill_broadcast_tensor_value"),
    OpCase("masked_fill", lambda x, m: oar.masked_fill(x, m, -2.5), lambda x, m: np.where(m, -2.5, x),
           [rand(2, 3), bools(2, 3)], grad_inputs=[0], dtypes=ALL_FLOATS, id="masked_fill_scalar"),
    OpCase("masked_fill", oar.masked_fill, lambda x, m, v: np.where(m, v, x),
           [rand(2), bools(3, 1), rand()], grad_inputs=[0, 2], id="masked_fill_mask_broadcasts_x"),
    OpCase("masked_fill", lambda x, m: oar.masked_fill(x, m, 1.0), lambda x, m: np.where(m, 1.0, x),
           [rand(0, 3), np.zeros((0, 3), bool)], grad_inputs=[0], id="masked_fill_zero_size"),
    # nonzero / one_hot (no gradient)
    OpCase("nonzero", oar.nonzero, np.argwhere, [rand(3, 4) * (rand(3, 4) > 0)], grad=False,
           dtypes=WITH_INT + ("bool",), id="nonzero"),
    OpCase("nonzero", lambda x: oar.nonzero(x, as_tuple=True),
           lambda x: tuple(c[:, None] for c in np.nonzero(x)), [np.array([0.0, 1.5, 0.0, -2.0])],
           grad=False, dtypes=ALL_FLOATS, id="nonzero_as_tuple"),
    OpCase("nonzero", oar.nonzero, np.argwhere, [np.zeros((2, 0, 3))], grad=False, id="nonzero_zero_size"),
    OpCase("one_hot", lambda x: oar.one_hot(x, 5), lambda x: np.eye(5, dtype=np.float32)[x],
           [idx([0, 4, 2], [1, 1, 3])], grad=False, dtypes=("float32",), id="one_hot"),
    OpCase("one_hot", oar.one_hot, lambda x: np.eye(4, dtype=np.float32)[x],
           [idx(3, 0, 1).astype(np.int32)], grad=False, dtypes=("float32",), id="one_hot_infer_classes"),
    OpCase("one_hot", lambda x: oar.one_hot(x, 3), lambda x: np.eye(3, dtype=np.float32)[x],
           [np.array(2, np.int64)], grad=False, dtypes=("float32",), id="one_hot_0d"),
    OpCase("one_hot", lambda x: oar.one_hot(x, 3), lambda x: np.zeros((0, 3), np.float32),
           [idx()], grad=False, dtypes=("float32",), id="one_hot_empty"),
    # getitem: basic, advanced, boolean, mixed
    OpCase("getitem", lambda x: x[1, -1], lambda x: x[1, -1], [rand(3, 4)], dtypes=WITH_INT + ("bool",),
           id="getitem_ints_negative_0d_result"),
    OpCase("getitem", lambda x: x[::-2, 1:3, None], lambda x: x[::-2, 1:3, None], [rand(3, 4, 2)],
           dtypes=ALL_FLOATS, id="getitem_negative_step_newaxis"),
    OpCase("getitem", lambda x: x[..., -3::2], lambda x: x[..., -3::2], [rand(2, 2, 5)], id="getitem_ellipsis"),
    OpCase("getitem", lambda x: x[...], lambda x: x[...], [rand()], id="getitem_0d"),
    OpCase("getitem", lambda x: x[None], lambda x: x[None], [rand()], id="getitem_0d_newaxis"),
    OpCase("getitem", lambda x: x[3:1], lambda x: x[3:1], [rand(4, 2)], id="getitem_empty_slice"),
    OpCase("getitem", lambda x: x[:, 1:], lambda x: x[:, 1:], [rand(0, 3)], id="getitem_zero_size"),
    OpCase("getitem", lambda x, i: x[i], lambda x, i: x[i], [rand(4, 2), idx(3, -4, 3, 0)],
           grad_inputs=[0], dtypes=WITH_INT, id="getitem_int_array_repeat"),
    OpCase("getitem", lambda x, i, j: x[i, :, j], lambda x, i, j: x[i, :, j],
           [rand(3, 2, 4), idx([0], [2]), idx(1, -1)], grad_inputs=[0], id="getitem_separated_advanced"),
    OpCase("getitem", lambda x, i: x[1:, i, None], lambda x, i: x[1:, i, None],
           [rand(3, 4), idx([0, 3], [3, 3])], grad_inputs=[0], dtypes=ALL_FLOATS, id="getitem_mixed_adjacent"),
    OpCase("getitem", lambda x, i: x[0, :, i], lambda x, i: x[0, :, i], [rand(2, 3, 4), idx(1, 2)],
           grad_inputs=[0], id="getitem_int_with_array_goes_first"),
    OpCase("getitem", lambda x, i: x[i], lambda x, i: x[i], [rand(2, 3), np.array(-1, np.int64)],
           grad_inputs=[0], id="getitem_0d_tensor_index"),
    OpCase("getitem", lambda x: x[[0, 2], [1, 1]], lambda x: x[[0, 2], [1, 1]], [rand(3, 2)],
           id="getitem_lists"),
    OpCase("getitem", lambda x, m: x[m], lambda x, m: x[m], [rand(3, 4), bools(3, 4)],
           grad_inputs=[0], dtypes=WITH_INT + ("bool",), id="getitem_bool_mask"),
    OpCase("getitem", lambda x, m: x[m, 1:], lambda x, m: x[m, 1:],
           [rand(4, 3), np.array([True, False, True, True])], grad_inputs=[0], id="getitem_bool_rows_and_slice"),
    OpCase("getitem", lambda x: x[True], lambda x: x[True], [rand(2)], id="getitem_python_bool"),
    OpCase("getitem_grad", lambda g, i: indexing.getitem_backward(g, [i], [{"kind": "tensor", "input": 0}], [3, 2]),
           lambda g, i: _getitem_grad_ref(g, i, key=lambda i: (i,), shape=(3, 2)),
           [rand(4, 2), idx(2, 0, 2, -1)], grad_inputs=[0], dtypes=ALL_FLOATS, id="getitem_grad_repeat"),
    OpCase("getitem_grad", lambda g: indexing.getitem_backward(
               g, [], [{"kind": "slice", "start": None, "stop": None, "step": -2}, {"kind": "int", "value": 1}], [3, 2]),
           lambda g: _getitem_grad_ref(g, key=lambda: (slice(None, None, -2), 1), shape=(3, 2)),
           [rand(2)], id="getitem_grad_basic"),
    # setitem (the out-of-place op behind x[index] = value)
    OpCase("setitem", _setitem_case(lambda: (1, slice(None, None, -1))),
           lambda x, v: _setitem_ref(x, v, key=lambda: (1, slice(None, None, -1))),
           [rand(3, 4), rand(4)], grad_inputs=[0, 1], dtypes=WITH_INT, id="setitem_row_reversed"),
    OpCase("setitem", _setitem_case(lambda i: (i, Ellipsis)),
           lambda x, v, i: _setitem_ref(x, v, i, key=lambda i: (i, Ellipsis)),
           [rand(4, 3), rand(2, 1), idx(-1, 1)], grad_inputs=[0, 1], dtypes=ALL_FLOATS, id="setitem_array_broadcast_value"),
    OpCase("setitem", _setitem_case(lambda m: m), lambda x, v, m: _setitem_ref(x, v, m, key=lambda m: m),
           [rand(3, 3), rand(), bools(3, 3)], grad_inputs=[0, 1], id="setitem_bool_mask_scalar_tensor"),
    OpCase("setitem", _setitem_case(lambda: (slice(None), None, 0)),
           lambda x, v: _setitem_ref(x, v, key=lambda: (slice(None), None, 0)),
           [rand(2, 3), rand(1, 2, 1)], grad_inputs=[0, 1], id="setitem_value_leading_ones"),
    OpCase("setitem", _setitem_case(lambda: ()), lambda x, v: _setitem_ref(x, v, key=lambda: ()),
           [rand(), rand()], grad_inputs=[0, 1], id="setitem_0d"),
]
