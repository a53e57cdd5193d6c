"""Property tests (hypothesis): broadcasting, reductions over 0-size dims, indexing and views against numpy.

Each property draws shapes (0-size dims included), axes and index expressions and compares oar's
values and gradients with a numpy reference: the broadcast of a binary op, the reduction, and for
indexing the scatter of the output gradient back to the positions each element was read from, and
for chains of views (slices, ints, transposes, unsqueeze/squeeze, reshapes) where an in-place write
lands -- in the base exactly where numpy's chain is a view -- and the gradients through it.
Every test is bounded (``max_examples``) so that the file runs in well under 30 s.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import oar
from oar.errors import ArgumentError
from oar.testing import TOLERANCES

BOUNDED = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)
RTOL, ATOL = TOLERANCES["float64"]


def _values(shape, seed, low=-3.0, high=3.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def _close(got, expected):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), expected, rtol=RTOL, atol=ATOL)


def _unbroadcast(g: np.ndarray, shape) -> np.ndarray:
    """The numpy reference of a broadcast operand's gradient: sum over the dims it was stretched along."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    return g.sum(axis=tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1), keepdims=True)


# -- broadcasting ----------------------------------------------------------------------------------
BINARY = {
    "add": (oar.add, np.add),
    "subtract": (lambda x, y: x - y, np.subtract),
    "multiply": (oar.multiply, np.multiply),
    "divide": (lambda x, y: x / y, np.divide),
    "maximum": (oar.maximum, np.maximum),
    "minimum": (oar.minimum, np.minimum),
    "less_than": (lambda x, y: x < y, np.less),
}
BROADCASTABLE = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3)


@BOUNDED
@given(shapes=BROADCASTABLE, name=st.sampled_from(sorted(BINARY)), seed=SEEDS)
def test_binary_ops_broadcast_as_numpy(shapes, name, seed):
    (xs, ys), out_shape = shapes
    a, b = _values(xs, seed), _values(ys, seed + 1, 0.5, 3.0)  # b > 0: a divisor
    ours, ref = BINARY[name]
    x, y = oar.to_tensor(a, stop_gradient=False), oar.to_tensor(b, stop_gradient=False)
    out = ours(x, y)
    assert tuple(out.shape) == out_shape
    expected = ref(a, b)
    if expected.dtype == np.bool_:
        np.testing.assert_array_equal(out.numpy(), expected)
    else:
        _close(out.numpy(), expected)
    if name in ("add", "multiply"):
        w = _values(out_shape, seed + 2)
        (out * oar.to_tensor(w)).sum().backward()
        gx, gy = (w, w) if name == "add" else (w * b, w * a)
        _close(x.grad.numpy(), _unbroadcast(np.broadcast_to(gx, out_shape), xs))
        _close(y.grad.numpy(), _unbroadcast(np.broadcast_to(gy, out_shape), ys))


@BOUNDED
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=3), seed=SEEDS)
def test_where_broadcasts_all_three_as_numpy(shapes, seed):
    (cs, xs, ys), out_shape = shapes
    c = _values(cs, seed) > 0
    a, b = _values(xs, seed + 1), _values(ys, seed + 2)
    x, y = oar.to_tensor(a, stop_gradient=False), oar.to_tensor(b, stop_gradient=False)
    out = oar.where(oar.to_tensor(c), x, y)
    _close(out.numpy(), np.where(c, a, b))
    out.sum().backward()
    _close(x.grad.numpy(), _unbroadcast(np.broadcast_to(c, out_shape).astype(float), xs))
    _close(y.grad.numpy(), _unbroadcast((~np.broadcast_to(c, out_shape)).astype(float), ys))


# -- reductions over shapes with 0-size dims ---------------------------------------------------------
SHAPES = st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple)


@st.composite
def _shape_and_axis(draw, allow_tuple=True):
    shape = draw(SHAPES)
    ndim = len(shape)
    choices = [st.none()]
    if ndim:
        choices.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            choices.append(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).flatmap(
                lambda axes: st.tuples(*[st.sampled_from([a, a - ndim]) for a in axes])))
    return shape, draw(st.one_of(*choices))


def _reduced_sizes(shape, axis):
    axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
    return [shape[a] for a in axes]


REDUCTIONS = {
    "sum": (oar.sum, np.sum), "mean": (oar.mean, np.mean), "prod": (oar.prod, np.prod),
    "max": (oar.max, np.max), "min": (oar.min, np.min), "any": (oar.any, np.any), "all": (oar.all, np.all),
}


@BOUNDED
@given(shape_axis=_shape_and_axis(), name=st.sampled_from(sorted(REDUCTIONS)), keepdim=st.booleans(), seed=SEEDS)
def test_reductions_over_zero_size_dims_match_numpy(shape_axis, name, keepdim, seed):
    shape, axis = shape_axis
    ours, ref = REDUCTIONS[name]
    a = _values(shape, seed)
    if name in ("any", "all"):
        a = a > 0
    x = oar.to_tensor(a)
    if name in ("max", "min") and 0 in _reduced_sizes(shape, axis):
        # no identity: numpy raises, and so do Paddle and oar, in the user's terms
        with pytest.raises(ArgumentError, match=f"{name}: cannot reduce a zero-size tensor"):
            ours(x, axis=axis, keepdim=keepdim)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's mean of nothing: nan, with a warning
        expected = np.asarray(ref(a, axis=axis, keepdims=keepdim))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # Paddle's mean of nothing is a quiet nan
        out = ours(x, axis=axis, keepdim=keepdim)
    assert tuple(out.shape) == expected.shape
    if expected.dtype == np.bool_:
        assert out.dtype == oar.bool
        np.testing.assert_array_equal(out.numpy(), expected)
    else:
        _close(out.numpy(), expected)  # sum of nothing 0, prod 1, mean nan (assert_allclose: nan == nan)


@BOUNDED
@given(shape_axis=_shape_and_axis(), mean=st.booleans(), keepdim=st.booleans(), seed=SEEDS)
def test_sum_and_mean_gradients_spread_evenly(shape_axis, mean, keepdim, seed):
    shape, axis = shape_axis
    x = oar.to_tensor(_values(shape, seed), stop_gradient=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = (oar.mean if mean else oar.sum)(x, axis=axis, keepdim=keepdim)
    w = _values(tuple(out.shape), seed + 1)
    (out * oar.to_tensor(w)).sum().backward()
    count = int(np.prod(_reduced_sizes(shape, axis)))
    axes = tuple(range(len(shape))) if axis is None else (axis,) if isinstance(axis, int) else axis
    expanded = w if keepdim else np.expand_dims(w, tuple(a % len(shape) for a in axes)) if shape else w
    expected = np.broadcast_to(expanded, shape) / (count if mean and count else 1)
    assert tuple(x.grad.shape) == shape
    _close(x.grad.numpy(), expected)


@BOUNDED
@given(shape_axis=_shape_and_axis(allow_tuple=False), keepdim=st.booleans(), seed=SEEDS)
def test_argmax_matches_numpy_and_refuses_empty_slices(shape_axis, keepdim, seed):
    shape, axis = shape_axis
    a = np.round(_values(shape, seed))  # ties: the first index wins, as in numpy and Paddle
    x = oar.to_tensor(a)
    if 0 in _reduced_sizes(shape, axis):
        with pytest.raises(ArgumentError, match="argmax: cannot reduce a zero-size tensor"):
            oar.argmax(x, axis=axis, keepdim=keepdim)
        return
    out = oar.argmax(x, axis=axis, keepdim=keepdim)
    expected = np.argmax(a, axis=axis, keepdims=keepdim)
    assert out.dtype == oar.int64 and tuple(out.shape) == np.shape(expected)
    np.testing.assert_array_equal(out.numpy(), expected)


# -- indexing ----------------------------------------------------------------------------------------
@st.composite
def _index(draw):
    """A shape and an index into it: ints, slices (negative steps too), None, Ellipsis, and at most
    one advanced part (a bool mask over the next dims, or int arrays of one length, duplicates allowed).

    No index mixes an int with an advanced part: there Paddle documents "basic first, then
    advanced" (PaddlePaddle/docs, docs/guides/beginner/tensor_index_cn.md, 4.1: an int drops its
    dim before the arrays are placed), where numpy counts the int as advanced, and oar follows
    numpy; the two differ when the int separates the advanced parts (``x[None, [0, 1], None, 0]``).
    """
    shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple))
    items, dim = [], 0
    advanced = draw(st.sampled_from(["none", "mask", "ints"]))
    ellipsis_left = draw(st.booleans())
    int_len = draw(st.integers(0, 3))
    while dim < len(shape):
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "advanced", "stop"]))
        if kind == "stop" and ellipsis_left:  # after an Ellipsis the items must reach the last dim
            break
        unavailable = (
            (kind == "int" and (not size or advanced != "none"))
            or (kind == "ellipsis" and not ellipsis_left)
            or kind == "stop"
            or (kind == "advanced" and (advanced in ("used", "none") or (advanced == "ints" and not size)))
        )
        if unavailable:
            kind = "slice"
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
            items.append(slice(draw(bound), draw(bound), step))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis":
            items.append(Ellipsis)
            ellipsis_left = False
            dim = len(shape) - draw(st.integers(0, len(shape) - dim))  # it stands for some of the rest
        elif advanced == "mask":
            covered = shape[dim:dim + draw(st.integers(1, len(shape) - dim))]
            n = int(np.prod(covered))
            items.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(covered))
            advanced, dim = "used", dim + len(covered)
        else:
            items.append(np.array(draw(st.lists(st.integers(-size, size - 1), min_size=int_len, max_size=int_len)),
                                  dtype=np.int64))
            dim += 1
    return shape, tuple(items)


def _explicit(index: tuple, ndim: int) -> tuple:
    """The index with its Ellipsis written out as full slices. numpy takes even an Ellipsis of no
    dims as a separator of advanced indices (``x[:, [0, 1], ..., [0, 1]]`` on a 3-d x moves the
    result dims first); Paddle and oar decide adjacency on the axes, as the explicit index does."""
    at = next((k for k, item in enumerate(index) if item is Ellipsis), None)  # not `in`: arrays compare elementwise
    if at is None:
        return index
    used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1
               for i in index if i is not None and i is not Ellipsis)
    return index[:at] + (slice(None),) * (ndim - used) + index[at + 1:]


def _gather_grad_reference(shape, index, w) -> np.ndarray:
    """Where each output element was read from, and so where its gradient lands (summed over repeats)."""
    positions = np.arange(int(np.prod(shape))).reshape(shape)[_explicit(index, len(shape))]
    return np.bincount(positions.ravel(), weights=w.ravel(), minlength=int(np.prod(shape))).reshape(shape)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(shape_index=_index(), seed=SEEDS)
def test_getitem_values_and_gradients_match_numpy(shape_index, seed):
    shape, index = shape_index
    a = _values(shape, seed)
    expected = a[_explicit(index, len(shape))]
    x = oar.to_tensor(a, stop_gradient=False)
    index_of_tensors = tuple(oar.to_tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    for key in (index, index_of_tensors):
        x.clear_grad()
        out = x[key]
        assert tuple(out.shape) == expected.shape, key
        np.testing.assert_array_equal(out.numpy(), expected)
        w = _values(expected.shape, seed + 1)
        (out * oar.to_tensor(w)).sum().backward()
        _close(x.grad.numpy(), _gather_grad_reference(shape, index, w))


# -- views -----------------------------------------------------------------------------------------
@st.composite
def _view_chain(draw):
    """A base shape and a chain of up to three view steps on it: basic slices (positive or negative
    steps), ints, transposes, unsqueeze/squeeze and reshapes, each applicable to numpy as well."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    steps, current = [], shape
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["slice", "int", "transpose", "unsqueeze", "squeeze", "reshape"]))
        if kind == "slice":
            axis = draw(st.integers(0, len(current) - 1))
            step = draw(st.sampled_from([1, 2, -1]))
            start = draw(st.integers(0, current[axis] - 1))
            index = tuple([slice(None)] * axis + [slice(start, None, step)])
            steps.append(("index", index))
        elif kind == "int" and len(current) > 1:
            axis = draw(st.integers(0, len(current) - 1))
            steps.append(("index", tuple([slice(None)] * axis + [draw(st.integers(0, current[axis] - 1))])))
        elif kind == "transpose" and len(current) > 1:
            steps.append(("transpose", tuple(draw(st.permutations(range(len(current)))))))
        elif kind == "unsqueeze":
            steps.append(("unsqueeze", draw(st.integers(0, len(current)))))
        elif kind == "squeeze" and 1 in current and len(current) > 1:
            steps.append(("squeeze", current.index(1)))
        elif kind == "reshape":
            steps.append(("reshape", (-1,)))
        else:
            continue
        current = _apply_numpy(np.zeros(shape), steps).shape
    return shape, steps


def _apply_numpy(a: np.ndarray, steps) -> np.ndarray:
    for kind, arg in steps:
        if kind == "index":
            a = a[arg]
        elif kind == "transpose":
            a = a.transpose(arg)
        elif kind == "unsqueeze":
            a = np.expand_dims(a, arg)
        elif kind == "squeeze":
            a = a.squeeze(arg)
        else:
            a = a.reshape(arg)  # a view where the strides allow it, a copy otherwise: Paddle's rule too
    return a


def _apply_oar(t, steps):
    for kind, arg in steps:
        if kind == "index":
            t = t[arg]
        elif kind == "transpose":
            t = t.transpose(list(arg))
        elif kind == "unsqueeze":
            t = t.unsqueeze(arg)
        elif kind == "squeeze":
            t = t.squeeze(arg)
        else:
            t = t.reshape(list(arg))
    return t


@BOUNDED
@given(chain=_view_chain(), seed=SEEDS)
def test_an_inplace_write_through_a_chain_of_views_reaches_the_base_as_in_numpy(chain, seed):
    shape, steps = chain
    values = _values(shape, seed)
    expected = values.copy()
    view = _apply_numpy(expected, steps)
    shares = np.shares_memory(view, expected)
    view += 1.5  # numpy writes into the base exactly where the chain is a view
    base = oar.to_tensor(values)
    ours = _apply_oar(base, steps)
    before = base.inplace_version
    ours.add_(oar.to_tensor(1.5, dtype="float64"))
    _close(ours.numpy(), view)
    _close(base.numpy(), expected if shares else values)
    assert (base.inplace_version > before) == shares


@BOUNDED
@given(chain=_view_chain(), seed=SEEDS)
def test_gradients_through_a_view_written_in_place_match_numpys_scatter(chain, seed):
    """``b = a * 2; v = view(b); v.multiply_(k); v.add_(u); loss = sum(b * c)``: each element of
    the base that the view reads is scaled by k there and gets u added, as numpy's scatter says."""
    shape, steps = chain
    a0, c0 = _values(shape, seed), _values(shape, seed + 1)
    original = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    probe = _apply_numpy(original, steps)
    if probe.size == 0 or not np.shares_memory(probe, original):
        return  # a copy: nothing is written through (the test above)
    k0, u0 = _values(probe.shape, seed + 2, 0.5, 2.0), _values(probe.shape, seed + 3)
    a = oar.to_tensor(a0, stop_gradient=False)
    u = oar.to_tensor(u0, stop_gradient=False)
    b = a * 2.0
    view = _apply_oar(b, steps)
    view.multiply_(oar.to_tensor(k0))
    view.add_(u)
    (b * oar.to_tensor(c0)).sum().backward()
    positions = probe.astype(np.int64).reshape(-1)  # the base element each view element is
    factor = np.ones(a0.size)
    factor[positions] = k0.reshape(-1)
    _close(a.grad.numpy(), (2.0 * factor * c0.reshape(-1)).reshape(shape))
    _close(u.grad.numpy(), c0.reshape(-1)[positions].reshape(u0.shape))
