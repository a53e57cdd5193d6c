"""Views share memory with their base, as in Paddle 3: in-place ops through them write into it.

The outputs of reshape, flatten, transpose, squeeze/unsqueeze, slice, strided_slice, split, chunk,
unbind, basic indexing and ``detach()`` are views: an in-place op on one changes the base and
bumps the version counter of both, and with grad enabled autograd follows the write (the base's
history becomes "the old base with the view's elements replaced"), checked here against numpy
and central finite differences. ``expand``/``broadcast_to`` views are read-only; indexing with a
tensor, ``flip`` and the ops that compute new values copy. to_static records the same ops, so a
program gives the eager results. The matrix below runs every view op with every in-place op,
without grad, with grad enabled but nothing requiring it, and with grad through the base and the
in-place operand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, GradientError
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient

RTOL, ATOL = TOLERANCES["float64"]
X = np.arange(1.0, 13.0).reshape(3, 4) / 7.0
RNG = np.random.default_rng(0)


def tensor(values, stop_gradient=True):
    return oar.to_tensor(np.array(values, dtype="float64"), stop_gradient=stop_gradient)


# (id, the view in oar, the same view in numpy) of a [3, 4] base.
VIEWS = [
    ("reshape", lambda b: b.reshape([4, 3]), lambda a: a.reshape(4, 3)),
    ("reshape_copy_dim", lambda b: oar.reshape(b, [0, 2, 2]), lambda a: a.reshape(3, 2, 2)),
    ("flatten", lambda b: b.flatten(), lambda a: a.reshape(-1)),
    ("transpose", lambda b: oar.transpose(b, [1, 0]), lambda a: a.T),
    ("T", lambda b: b.T, lambda a: a.T),
    ("moveaxis", lambda b: oar.moveaxis(b, 0, 1), lambda a: np.moveaxis(a, 0, 1)),
    ("unsqueeze", lambda b: b.unsqueeze(0), lambda a: a[None]),
    ("squeeze", lambda b: b[None].squeeze(0), lambda a: a),
    ("slice", lambda b: oar.slice(b, [0, 1], [1, 1], [3, 3]), lambda a: a[1:3, 1:3]),
    ("strided_slice", lambda b: oar.strided_slice(b, [1], [3], [0], [-2]), lambda a: a[:, 3:0:-2]),
    ("split", lambda b: oar.split(b, [1, 3], axis=1)[1], lambda a: a[:, 1:]),
    ("chunk", lambda b: oar.chunk(b, 3, axis=0)[2], lambda a: a[2:]),
    ("unbind", lambda b: oar.unbind(b, 1)[2], lambda a: a[:, 2]),
    ("getitem_int", lambda b: b[1], lambda a: a[1]),
    ("getitem_0d", lambda b: b[1, 2], lambda a: a[1, 2, ...]),
    ("getitem_slices", lambda b: b[1:, ::2], lambda a: a[1:, ::2]),
    ("getitem_ellipsis_none", lambda b: b[..., None, 1], lambda a: a[..., None, 1]),
    ("getitem_negative_step", lambda b: b[::-1, 2], lambda a: a[::-1, 2]),
    ("view_of_views", lambda b: b.reshape([2, 6])[:, 1:5].T[::2], lambda a: a.reshape(2, 6)[:, 1:5].T[::2]),
    ("split_of_transpose", lambda b: oar.split(b.T, 2, axis=0)[1][1:], lambda a: a.T[2:][1:]),
]
VIEW_IDS = [v[0] for v in VIEWS]

# (id, in-place op on view v with a same-shaped operand w, its numpy version, whether w is read)
INPLACE = [
    ("add_", lambda v, w: v.add_(w), lambda a, w: np.add(a, w, out=a), True),
    ("iadd", lambda v, w: v.__iadd__(w), lambda a, w: np.add(a, w, out=a), True),
    ("subtract_", lambda v, w: v.subtract_(w * 2.0), lambda a, w: np.subtract(a, w * 2.0, out=a), True),
    ("multiply_const", lambda v, w: v.multiply_(tensor(np.full(v.shape, 3.0))),
     lambda a, w: np.multiply(a, 3.0, out=a), False),
    ("exp_", lambda v, w: v.exp_(), lambda a, w: np.exp(a, out=a), False),
    ("setitem_all", lambda v, w: v.__setitem__(Ellipsis, w), lambda a, w: np.copyto(a, w), True),
    ("zero_", lambda v, w: v.zero_(), lambda a, w: a.fill(0.0), False),
    ("fill_", lambda v, w: v.fill_(2.5), lambda a, w: a.fill(2.5), False),
    ("assign_output", lambda v, w: oar.assign(w * 1.0, output=v), lambda a, w: np.copyto(a, w), True),
]
INPLACE_IDS = [i[0] for i in INPLACE]


def _other_view(b):
    """A view of the base made before the in-place op, overlapping most views: it must follow."""
    return b[:, 1:3]


def _loss_numpy(a0, w0, np_view, np_inplace):
    b = a0 * 1.0
    np_inplace(np_view(b), w0)
    o = b[:, 1:3]
    return float((b * C).sum() + (np_view(b) * D_FOR[id(np_view)]).sum() + (o * E).sum())


C = RNG.standard_normal((3, 4))
E = RNG.standard_normal((3, 2))
D_FOR = {id(np_view): RNG.standard_normal(np_view(X.copy()).shape) for _, _, np_view in VIEWS}



def _operand(shape):
    return RNG.standard_normal(shape) if shape else np.asarray(RNG.standard_normal())


@pytest.mark.parametrize("inplace", INPLACE, ids=INPLACE_IDS)
@pytest.mark.parametrize("view", VIEWS, ids=VIEW_IDS)
@pytest.mark.parametrize("grad", ["no_grad", "grad_constants", "grad_through_base"])
def test_inplace_through_a_view_writes_into_the_base(view, inplace, grad):
    _, make_view, np_view = view
    _, op, np_op, reads_w = inplace
    w0 = _operand(np_view(X.copy()).shape)
    expected = X.copy()
    np_op(np_view(expected), w0)

    if grad == "grad_through_base":
        a = tensor(X, stop_gradient=False)
        w = tensor(w0, stop_gradient=False)
        b = a * 1.0
    else:
        b, w = tensor(X), tensor(w0)
    v = make_view(b)
    other = _other_view(b)
    assert np.shares_memory(v.numpy(copy=False), b.numpy(copy=False))
    if grad == "no_grad":
        with oar.no_grad():
            result = op(v, w)
    else:
        result = op(v, w)
    assert result is v or result is None  # __setitem__ returns None
    np.testing.assert_allclose(b.numpy(), expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(v.numpy(), np_view(expected.copy()), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(other.numpy(), expected[:, 1:3], rtol=RTOL, atol=ATOL)
    assert b.inplace_version == v.inplace_version == other.inplace_version == 1
    if grad != "grad_through_base":
        assert b.stop_gradient and v.stop_gradient and other.stop_gradient
        return

    loss = (b * tensor(C)).sum() + (v * tensor(D_FOR[id(np_view)])).sum() + (other * tensor(E)).sum()
    a_grad = numeric_gradient(lambda a0: _loss_numpy(a0, w0, np_view, np_op), X)
    if loss.stop_gradient:  # every element of the base was overwritten with a constant
        assert not reads_w and b.stop_gradient and v.stop_gradient and np.all(a_grad == 0.0)
        return
    assert not (b.stop_gradient or v.stop_gradient or other.stop_gradient)
    loss.backward()
    if a.grad is None:  # every element of the base was overwritten (with w)
        assert np.all(a_grad == 0.0)
    else:
        np.testing.assert_allclose(a.grad.numpy(), a_grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    if reads_w:
        w_grad = numeric_gradient(lambda w1: _loss_numpy(X, w1, np_view, np_op), w0)
        np.testing.assert_allclose(w.grad.numpy(), w_grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)
    else:
        assert w.grad is None


@pytest.mark.parametrize("view", VIEWS, ids=VIEW_IDS)
def test_a_backward_that_saved_the_base_or_a_view_raises(view):
    _, make_view, _ = view
    a = tensor(X, stop_gradient=False)
    b = a * 1.0
    v = make_view(b)
    saved = [t * t for t in (b, v, _other_view(b))]  # multiply saves its inputs
    v.add_(1.0)
    for z in saved:
        with pytest.raises(GradientError, match="multiply.*modified in place"):
            z.sum().backward(retain_graph=True)


def test_views_of_a_leaf_that_requires_grad_are_refused_with_grad_and_written_without():
    w = tensor(X, stop_gradient=False)
    with pytest.raises(GradientError, match="add_: x .* is a view of a leaf tensor that requires grad.*no_grad"):
        w[0].add_(1.0)
    with pytest.raises(GradientError, match="setitem: x .* is a view of a leaf"):
        w.reshape([12])[0] = 5.0
    assert w.inplace_version == 0
    np.testing.assert_array_equal(w.numpy(), X)
    with oar.no_grad():  # as an optimizer or an initializer does
        w[0].zero_()
        w.T[1:, 2] = 7.0
    expected = X.copy()
    expected[0] = 0.0
    expected[2, 1:] = 7.0
    np.testing.assert_array_equal(w.numpy(), expected)
    assert w.inplace_version == 2 and w.is_leaf and not w.stop_gradient


@pytest.mark.parametrize("make_view", [
    lambda x: oar.expand(x[None], [2, 3, 4]),
    lambda x: oar.broadcast_to(x[:, :1], [3, 4]),
    lambda x: x[None].expand_as(oar.zeros([5, 3, 4]))[1:3],  # a view of a broadcast
], ids=["expand", "broadcast_to", "view_of_broadcast"])
def test_broadcast_views_are_read_only(make_view):
    """Writing through a broadcast would write one element many times: refused. Its clone() and
    its detach() -- a value, as the gradients oar.grad hands out (sum's is a broadcast) -- can be
    written, each into a buffer of its own."""
    x = tensor(X)
    e = make_view(x)
    for op in (lambda t: t.add_(1.0), lambda t: t.zero_(), lambda t: t.__setitem__(0, 1.0), lambda t: t.exp_()):
        with pytest.raises(ArgumentError, match="read-only view made by op 'broadcast_to'.*clone"):
            op(e)
    assert x.inplace_version == e.inplace_version == 0
    np.testing.assert_array_equal(x.numpy(), X)
    for c in (e.clone(), e.detach()):
        c.add_(1.0)
        np.testing.assert_allclose(c.numpy(), e.numpy() + 1.0)
    np.testing.assert_array_equal(x.numpy(), X)
    p = tensor(X, stop_gradient=False)
    (g,) = oar.grad(p.sum(), p)
    g.add_(1.0)
    np.testing.assert_array_equal(g.numpy(), np.full_like(X, 2.0))


@pytest.mark.parametrize("make_copy", [
    lambda x: x.T.reshape([12]),  # not contiguous: reshape copies, as Paddle's
    lambda x: x.T.flatten(),
    lambda x: x[:, 1:3].reshape([6]),
    lambda x: x[[0, 2]],
    lambda x: x[x > 0.5],
    lambda x: x[oar.to_tensor(1)],
    lambda x: oar.flip(x, [0]),
    lambda x: oar.tile(x, [1, 1]),
    lambda x: x.clone(),
    lambda x: oar.einsum("ij->ji", x),
], ids=["reshape_of_transposed", "flatten_of_transposed", "reshape_of_strided", "index_list", "mask",
        "index_tensor", "flip", "tile", "clone", "einsum"])
def test_ops_that_copy_in_paddle_leave_the_input(make_copy):
    """A write into a copy leaves its input; a write through a view of the input leaves the copy."""
    x = tensor(X)
    c = make_copy(x)
    before = c.numpy()
    c.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), X)
    assert not np.shares_memory(c.numpy(copy=False), x.numpy(copy=False))
    x.T[1:].fill_(-1.0)
    expected = X.copy()
    expected[:, 1:] = -1.0
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(c.numpy(), before + 1.0)


def test_reshape_of_a_slice_is_a_view_when_the_strides_allow_it():
    """Paddle's rule (and numpy's): a view when the new shape fits the strides, else a copy."""
    x = tensor(np.arange(24.0).reshape(2, 3, 4))
    x[1].reshape([12])[0] = -1.0  # a contiguous block: a view
    x[:, 1].flatten().add_(100.0)  # rows 4 apart in a [2, 4] slice: no strides give [8], a copy
    x[:, 1:].reshape([2, 8])[0, 0] = 50.0  # [2, 2, 4] -> [2, 8]: its last two axes merge, a view
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[1, 0, 0] = -1.0
    expected[0, 1, 0] = 50.0
    np.testing.assert_array_equal(x.numpy(), expected)


def test_an_inplace_op_on_the_base_moves_its_views_history():
    """A view made before an in-place op on its base reads the base's new history."""
    a = tensor(X, stop_gradient=False)
    b = a * 1.0
    row, col = b[0], b.T[1]
    b.multiply_(tensor(np.full([3, 4], 2.0)))
    (row.sum() + (col * col).sum()).backward()
    expected = np.zeros_like(X)
    expected[0] += 2.0
    expected[:, 1] += 2.0 * (2.0 * X[:, 1]) * 2.0
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=RTOL)


def test_a_constant_base_written_with_a_gradient_makes_its_views_require_grad():
    p = tensor([1.0, 2.0, 3.0], stop_gradient=False)
    base = oar.zeros([2, 3], dtype="float64")
    row = base[1]
    assert row.stop_gradient
    base[1] = p * 2.0
    assert not row.stop_gradient and not base.stop_gradient
    (row * row).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 8.0 * p.numpy())


def test_zeroing_a_view_cuts_the_gradient_of_its_elements_only():
    a = tensor(X, stop_gradient=False)
    b = a * 3.0
    b[:, 0].zero_()
    b.sum().backward()
    expected = np.full_like(X, 3.0)
    expected[:, 0] = 0.0
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_views_of_views_write_through_every_level():
    x = tensor(np.arange(24.0).reshape(2, 3, 4))
    a = x[1]  # [3, 4]
    b = a.T  # [4, 3]
    c = b[1:3]  # [2, 3]
    d = c.T  # [3, 2]
    d[::2] = -5.0
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[1].T[1:3].T[::2] = -5.0
    for t, e in [(x, expected), (a, expected[1]), (b, expected[1].T), (c, expected[1].T[1:3]),
                 (d, expected[1].T[1:3].T)]:
        np.testing.assert_array_equal(t.numpy(), e)
        assert t.inplace_version == 1


def test_second_order_gradient_through_a_view_write():
    a = tensor(X, stop_gradient=False)
    w = tensor(X[0] + 1.0, stop_gradient=False)
    b = a * a
    b[0].add_(w * w * w)
    (ga, gw) = oar.grad(b.sum() ** 2, [a, w], create_graph=True)
    (gga,) = oar.grad(ga.sum() + gw.sum(), a)

    def first(a0, w0):
        bb = a0 * a0
        bb[0] += w0 ** 3
        s = bb.sum()
        return 2 * s * 2 * a0, 2 * s * 3 * w0 ** 2

    def outer(a0):
        g1, g2 = first(a0, X[0] + 1.0)
        return float(g1.sum() + g2.sum())

    expected_ga, expected_gw = first(X, X[0] + 1.0)
    np.testing.assert_allclose(ga.numpy(), expected_ga, rtol=RTOL)
    np.testing.assert_allclose(gw.numpy(), expected_gw, rtol=RTOL)
    np.testing.assert_allclose(gga.numpy(), numeric_gradient(outer, X), rtol=GRAD_RTOL, atol=1e-5)


def test_in_place_multiply_by_a_tensor_that_needs_grad_says_to_clone():
    """multiply_'s gradient for its operand reads x's old values, which the write replaced: the
    backward refuses, as for a tensor that is no view."""
    a = tensor(X, stop_gradient=False)
    w = tensor(X[0], stop_gradient=False)
    b = a * 1.0
    b[0].multiply_(w)
    with pytest.raises(GradientError, match="multiply.*modified in place.*clone"):
        b.sum().backward()


def test_detach_shares_memory_but_not_history():
    a = tensor(X, stop_gradient=False)
    b = a * 2.0
    d = b.detach()
    d[0] = 0.0
    assert b.numpy()[0].tolist() == [0.0] * 4 and b.inplace_version == 1
    r = b[1].detach()  # of a view: the base's memory too
    p = tensor(np.ones(4), stop_gradient=False)
    r.add_(p)
    np.testing.assert_allclose(b.numpy()[1], 2.0 * X[1] + 1.0)
    b.sum().backward()  # b's history is the one it had: the detached writes are invisible to it
    np.testing.assert_array_equal(a.grad.numpy(), np.full_like(X, 2.0))
    assert p.grad is None
    r.sum().backward()  # r's own history goes to p
    np.testing.assert_array_equal(p.grad.numpy(), np.ones(4))


def test_set_value_and_assign_on_a_view_write_into_the_base():
    x = tensor(X)
    x[1].set_value(np.zeros(4))
    oar.assign(tensor([9.0, 9.0, 9.0]), output=x[:, 3])
    expected = X.copy()
    expected[1] = 0.0
    expected[:, 3] = 9.0
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x.inplace_version == 2
    v = x[0]
    oar.assign(tensor(np.ones(5)), output=v)  # another shape: a new buffer, v is no view of x any more
    assert v.shape == [5] and v._view is None
    v.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(v.numpy(), np.full(5, 2.0))


def test_a_new_buffer_for_the_base_unties_its_views():
    """An optimizer step on a read-only parameter gives it a new buffer: its old views keep the
    old memory and are no longer its views."""
    data = X.copy()
    data.setflags(write=False)
    w = oar.to_tensor(X, stop_gradient=False)
    w._data = data  # as a parameter memory-mapped from a file holds it
    v = w[0]
    with oar.no_grad():
        with pytest.raises(ArgumentError, match="view of a tensor whose memory is read-only"):
            v.add_(1.0)
        w.add_(1.0)  # the parameter gets a buffer of its own
        v2 = w[0]
        v2.add_(1.0)
    np.testing.assert_array_equal(v.numpy(), X[0])
    np.testing.assert_allclose(w.numpy()[0], X[0] + 1.0 + 1.0)
    assert v._view is None


def test_a_view_made_under_no_grad_is_refused_an_inplace_op_with_grad():
    """Its history is not its base's, so the base's gradient through it would be lost (PyTorch
    refuses it too); under no_grad, or made again with grad, it is fine."""
    a = tensor(X, stop_gradient=False)
    b = a * 1.0
    with oar.no_grad():
        v = b[2]
    with pytest.raises(GradientError, match="add_: x .* is a view made under oar.no_grad"):
        v.add_(tensor(np.ones(4), stop_gradient=False))
    with oar.no_grad():
        v.add_(1.0)
    b[2].add_(tensor(np.ones(4), stop_gradient=False))
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones_like(X))
    np.testing.assert_allclose(b.numpy()[2], X[2] + 2.0)


def test_dead_views_are_forgotten():
    x = tensor(X)
    for _ in range(1000):
        x[0].add_(0.0)
    assert len(x._view.views) < 130
    assert x.inplace_version == 1000


def test_every_view_op_can_write_back_or_makes_read_only_views():
    """A view op without a view_inverse makes read-only views: only broadcast_to may lack one."""
    from oar.plugins import registries

    view_ops = {name: op for name, op in registries().ops.items() if op.view}
    assert set(view_ops) == {"reshape", "flatten", "squeeze", "unsqueeze", "transpose", "slice",
                             "strided_slice", "split", "unbind", "getitem", "broadcast_to", "view_dtype"}
    assert [name for name, op in view_ops.items() if op.view_inverse is None] == ["broadcast_to"]


# -- to_static ------------------------------------------------------------------------------------
def _writes_through_views(x, w):
    b = x * 2.0
    row = b[0]
    col = b[:, 1]
    row.add_(w)
    b.reshape([-1])[4:6].multiply_(3.0)
    b.T[2][1:] = w[:2] * w[:2]
    col.zero_()
    return (b * b).sum() + row.sum(), col * 1.0, b * 1.0


def _writes_through_views_numpy(x, w):
    b = x * 2.0
    b[0] += w
    b.reshape(-1)[4:6] *= 3.0
    b.T[2][1:] = w[:2] * w[:2]
    b[:, 1] = 0.0
    return (b * b).sum() + b[0].sum(), b[:, 1].copy(), b


def _feed_written(x):
    x[1].add_(1.0)
    x.T[0].multiply_(2.0)
    return x.sum()


def _feed_written_numpy(x):
    x = x.copy()
    x[1] += 1.0
    x.T[0] *= 2.0
    return x


def _static(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns: none may happen
        return oar.jit.to_static(fn, full_graph=True)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_to_static_writes_through_views_as_eager(requires_grad):
    x0, w0 = X.copy(), X[0] + 0.5
    xe, we = tensor(x0, not requires_grad), tensor(w0, not requires_grad)
    eager = _writes_through_views(xe, we)
    for e, n in zip(eager, _writes_through_views_numpy(x0, w0)):
        np.testing.assert_allclose(e.numpy(), n, rtol=RTOL, atol=ATOL)
    static = _static(_writes_through_views)
    for _ in range(2):  # the capture, then the program
        xs, ws = tensor(x0, not requires_grad), tensor(w0, not requires_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = static(xs, ws)
        for g, e in zip(got, eager):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=RTOL, atol=ATOL)
        if requires_grad:
            got[0].backward()
    if requires_grad:
        eager[0].backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(ws.grad.numpy(), we.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_to_static_writes_an_input_changed_through_a_view_back():
    eager_x = tensor(X)
    expected = _feed_written(eager_x)
    np.testing.assert_allclose(eager_x.numpy(), _feed_written_numpy(X), rtol=RTOL)
    static = _static(_feed_written)
    for _ in range(2):
        x = tensor(X)
        got = static(x)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=RTOL)
        np.testing.assert_allclose(x.numpy(), eager_x.numpy(), rtol=RTOL)
    big = tensor(np.stack([X, X]))
    static(big[1])  # the input is itself a view: the write-back reaches its base
    np.testing.assert_allclose(big.numpy()[1], eager_x.numpy(), rtol=RTOL)
    np.testing.assert_array_equal(big.numpy()[0], X)


def test_to_static_follows_a_detach_of_a_view_written_in_place():
    def f(x):
        b = x * 1.0
        b[0].detach().fill_(5.0)
        return b * 2.0

    expected = f(tensor(X))
    written = X.copy()
    written[0] = 5.0
    np.testing.assert_allclose(expected.numpy(), written * 2.0)
    static = _static(f)
    for _ in range(2):
        np.testing.assert_allclose(static(tensor(X)).numpy(), expected.numpy())
