"""Tensors that alias another tensor's memory (the outputs of view ops) share its version counter.

oar's view ops (reshape, transpose, slice, split, basic indexing, broadcast_to, ...) return numpy
views of their input, and ops with the ``alias`` trait (flip, a one-operand einsum) may. An
in-place op on a tensor writes into its memory, so every view of it changes too: a backward that
saved a view must then raise oar's in-place error, as it does for the tensor itself. An in-place
op on a view writes into the base as well (Paddle's views; tests/core/test_views.py has the rest).
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import GradientError
from oar.testing import numeric_gradient

X = np.arange(1.0, 13.0).reshape(3, 4) / 7.0

# (id, view of a [3, 4] tensor): each dispatches an op with the "view" trait.
VIEWS = [
    ("reshape", lambda x: x.reshape([4, 3])),
    ("transpose", lambda x: oar.transpose(x, [1, 0])),
    ("T", lambda x: x.T),
    ("unsqueeze", lambda x: oar.unsqueeze(x, 0)),
    ("squeeze", lambda x: oar.squeeze(x.reshape([1, 3, 4]), 0)),
    ("flatten", lambda x: oar.flatten(x)),
    ("getitem", lambda x: x[0]),
    ("getitem_slice", lambda x: x[1:, ::2]),
    ("slice", lambda x: oar.slice(x, [0], [1], [3])),
    ("strided_slice", lambda x: oar.strided_slice(x, [1], [0], [4], [2])),
    ("split", lambda x: oar.split(x, 2, axis=1)[1]),
    ("chunk", lambda x: oar.chunk(x, 3, axis=0)[2]),
    ("unbind", lambda x: oar.unbind(x, 0)[1]),
    ("broadcast_to", lambda x: oar.broadcast_to(x, [2, 3, 4])),
    ("expand", lambda x: oar.expand(x.unsqueeze(0), [2, 3, 4])),
    ("flip", lambda x: oar.flip(x, [0])),
]
VIEW_IDS = [v[0] for v in VIEWS]


def tensor(values=X):
    return oar.to_tensor(np.array(values, dtype="float64"))


def param(values=X):
    return oar.to_tensor(np.array(values, dtype="float64"), stop_gradient=False)


@pytest.mark.parametrize("make_view", [v[1] for v in VIEWS], ids=VIEW_IDS)
def test_view_shares_the_base_version(make_view):
    x = tensor()
    v = make_view(x)
    assert np.shares_memory(v.numpy(copy=False), x.numpy(copy=False))
    assert v.inplace_version == x.inplace_version == 0
    x.add_(1.0)
    assert x.inplace_version == v.inplace_version == 1
    np.testing.assert_allclose(v.numpy(), make_view(tensor(X + 1.0)).numpy())


@pytest.mark.parametrize("make_view", [v[1] for v in VIEWS], ids=VIEW_IDS)
def test_inplace_on_base_after_a_view_was_saved_raises(make_view):
    w = param(np.ones_like(X))
    x = tensor()
    z = make_view(x) * make_view(w)  # multiply saves the view of x for w's gradient
    x.add_(1.0)  # changes the view's values too
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


def test_inplace_on_nonleaf_base_after_a_view_was_saved_raises():
    a = param()
    x = a * 1.0
    v = x.reshape([12])
    z = v * v
    x.zero_()
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


def test_setitem_on_base_after_a_slice_was_saved_raises():
    w = param(np.ones([2, 4]))
    x = tensor()
    first = x[[0, 1]] * w  # an index list copies: not affected
    s = oar.slice(x, [0], [1], [3])
    y = s * w  # saves s, a view of x
    x[1] = 10.0
    first.sum().backward(retain_graph=True)
    np.testing.assert_allclose(w.grad.numpy(), X[:2])
    with pytest.raises(GradientError, match="modified in place"):
        y.sum().backward()


def test_assign_into_base_after_a_view_was_saved_raises():
    a = param()
    x = a * 1.0
    x_np = x._data
    z = oar.transpose(x, [1, 0]) ** 2
    oar.assign(tensor(X * 3.0), output=x)
    assert x._data is not x_np  # assign gives x a new buffer; the saved view still sees the old one
    z.sum().backward()  # so the saved view is unchanged and its gradient right
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * X)


def test_view_of_a_view():
    w = param(np.ones([2, 2]))
    x = tensor()
    vv = oar.slice(x.reshape([2, 6]), [1], [1], [3])  # a view of a view of x
    assert vv.inplace_version == 0
    z = vv * w
    x.multiply_(tensor(np.full_like(X, 2.0)))
    assert vv.inplace_version == x.inplace_version == 1
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


def test_inplace_on_a_view_writes_into_the_base():
    """In-place on a view writes into the base's memory, as in Paddle: both see the values and the
    version; a backward that saved either raises, one that saved neither stays right."""
    a = param()
    x = a * 1.0
    z = x * x  # saves x
    v = x.reshape([12])
    y = v * 3.0
    s = v * v  # saves v
    v.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), X + 1.0)
    assert np.shares_memory(v.numpy(copy=False), x.numpy(copy=False))
    assert x.inplace_version == v.inplace_version == 1
    x.add_(1.0)  # moves v too
    assert x.inplace_version == v.inplace_version == 2
    np.testing.assert_allclose(v.numpy(), X.reshape(12) + 1.0 + 1.0)
    (y.sum() * 1.0).backward(retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), np.full_like(X, 3.0))
    with pytest.raises(GradientError, match="modified in place"):
        s.sum().backward()
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


def test_output_that_is_its_input_buffer_shares_the_counter():
    """A while op that runs no iteration hands back its input's own buffer (no copy): an in-place
    op on that output writes into the input, so both directions raise."""
    from oar._graph.control_flow import while_op

    from .op_cases.control_flow import BODY_BLOCK, COND_BLOCK

    def loop(x):
        i, n = oar.to_tensor(np.array(5)), oar.to_tensor(np.array(3))
        return while_op(i, x, n, cond_block=COND_BLOCK, body_block=BODY_BLOCK, num_loop_vars=2)[1]

    w = param(np.ones(3))
    x = tensor([0.5, 1.0, 1.5])
    z = x * w
    out = loop(x)
    assert out._data is x._data
    out.add_(1.0)  # writes into x
    np.testing.assert_array_equal(x.numpy(), [1.5, 2.0, 2.5])
    assert x.inplace_version == 1
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()

    x = tensor([0.5, 1.0, 1.5])
    z = loop(x) * w
    x.add_(1.0)
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


def test_single_operand_einsum_view():
    w = param(np.ones([4, 3]))
    x = tensor()
    t = oar.einsum("ij->ji", x)
    z = t * w
    x.add_(1.0)
    assert t.inplace_version == 1
    with pytest.raises(GradientError, match="modified in place"):
        z.sum().backward()


# (id, op that copies its input)
COPIES = [
    ("getitem_list", lambda x: x[[0, 2]]),
    ("getitem_mask", lambda x: x[x > 0.5]),
    ("clone", lambda x: x.clone()),
    ("tile", lambda x: oar.tile(x, [1, 2])),
    ("concat", lambda x: oar.concat([x, x])),
    ("reshape_of_transposed", lambda x: oar.transpose(x, [1, 0]).reshape([12])),  # numpy copies
    ("einsum_matmul", lambda x: oar.einsum("ij,jk->ik", x, x.T)),
]


@pytest.mark.parametrize("make_copy", [c[1] for c in COPIES], ids=[c[0] for c in COPIES])
def test_ops_that_copy_keep_their_own_counter(make_copy):
    x = tensor()
    w = param(np.ones_like(make_copy(tensor()).numpy()))
    c = make_copy(x)
    assert not np.shares_memory(c.numpy(copy=False), x.numpy(copy=False))
    z = c * w
    x.add_(1.0)
    assert c.inplace_version == 0
    z.sum().backward()  # c did not change: no error
    np.testing.assert_allclose(w.grad.numpy(), make_copy(tensor()).numpy())
    c.add_(1.0)
    assert x.inplace_version == 1



def _loss_with_views(x):
    """Views everywhere, no in-place on a saved tensor."""
    h = x.reshape([4, 3]).T  # [3, 4]
    a, b = oar.split(h, 2, axis=1)
    m = oar.matmul(a.T, oar.tanh(b))  # [2, 2]
    s = oar.broadcast_to(oar.unsqueeze(m.flatten(), 0), [3, 4]) * oar.slice(h, [1], [0], [4])
    return (s * s).sum() + oar.flip(h, [0])[0].sum()


def test_training_with_views_matches_finite_differences():
    x0 = X.copy()
    x = param(x0)
    loss = _loss_with_views(x)
    loss.backward()
    expected = numeric_gradient(lambda v: float(_loss_with_views(tensor(v)).numpy()), x0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_inplace_on_unsaved_view_keeps_gradients_right():
    """In-place ops on tensors no backward saved are fine, views or not."""
    a = param()
    x = a * 2.0
    v = x.reshape([12])
    v.add_(1.0)  # writes into x; add's gradient is the identity
    u = oar.unsqueeze(x, 0)  # 2a + 1
    y = oar.exp(u)  # exp saves its output, not u
    x2 = a + 0.0
    x2.reshape([2, 6]).multiply_(tensor(np.full([2, 6], 3.0)))  # x2 is 3a now
    loss = (v * 2.0).sum() + y.sum() + x2.sum()
    loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), 4.0 + 2.0 * np.exp(2.0 * X + 1.0) + 3.0)


def test_every_op_whose_output_aliases_an_input_has_the_view_trait(monkeypatch):
    """Run the op table (contiguous and strided inputs): an output that shares memory with an
    input must come from an op with the ``view`` or ``alias`` trait, or in-place changes would go
    unseen."""
    from oar._engine import eager as _eager
    from oar.testing import check_output

    from .op_cases import all_cases

    aliasing = set()
    apply = _eager.EagerMode.apply

    def checked_apply(self, op, inputs, attrs):
        result = apply(self, op, inputs, attrs)
        for o in result if type(result) is tuple else (result,):
            if any(np.shares_memory(o._data, t._data) for t in inputs if o._data.size):
                aliasing.add((op.name, op.aliases))
        return result

    monkeypatch.setattr(_eager.EagerMode, "apply", checked_apply)
    for case in all_cases():
        for contiguous in (True, False):
            try:
                check_output(case, case.dtypes[0], contiguous=contiguous)
            except AssertionError:
                pass  # the op table's own tests report wrong values
    assert {"reshape", "transpose", "slice", "split", "broadcast_to"} <= {name for name, _ in aliasing}
    assert not sorted(name for name, view in aliasing if not view)
