"""Optimizers update parameters in place: views of a parameter share its version counter
(``tests/core/test_view_versions.py``), which must neither break the next step's backward nor let
a backward after a step use the changed values silently."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import GradientError
from oar.nn import Parameter
from oar.optimizer import SGD

X = np.arange(1.0, 13.0).reshape(3, 4) / 7.0


def tensor(values):
    return oar.to_tensor(np.array(values, dtype="float64"))


def test_optimizer_step_on_a_parameter_with_views():
    """Optimizers update parameters in place; views taken in a step's forward must not make the
    next step's backward raise, and a view kept across steps sees the updated values."""
    w = Parameter(X.copy())
    opt = SGD(learning_rate=0.1, parameters=[w])
    wt = w.detach().T  # a view of the parameter's buffer kept across steps
    target = tensor(np.ones([4, 3]))
    expected = X.copy()
    for _ in range(3):
        v = w.reshape([4, 3])
        loss = ((v - target) ** 2).sum() + (oar.transpose(w, [1, 0]) * wt).sum()
        loss.backward()
        grad = 2.0 * (expected.reshape(4, 3) - 1.0).reshape(3, 4) + expected
        np.testing.assert_allclose(w.grad.numpy(), grad)
        opt.step()
        opt.clear_grad()
        expected = expected - 0.1 * grad
        np.testing.assert_allclose(w.numpy(), expected)
        np.testing.assert_allclose(wt.numpy(), expected.T)  # the view follows the update
    assert w.inplace_version == wt.inplace_version == 3


def test_optimizer_step_between_forward_and_backward_raises():
    w = Parameter(X.copy())
    opt = SGD(learning_rate=0.1, parameters=[w])
    loss = (w.reshape([12]) ** 2).sum()
    (w.sum()).backward()
    opt.step()  # changes w, and so its view saved by pow
    with pytest.raises(GradientError, match="modified in place"):
        loss.backward()


def _read_only_parameter():
    data = X.copy()
    data.setflags(write=False)  # as a parameter loaded from a memory-mapped file can be
    w = Parameter(X.copy())
    w._data = data
    return w


@pytest.mark.parametrize("change", ["optimizer step", "set_state_dict", "initializer"])
def test_a_parameter_given_a_new_buffer_leaves_its_views_versions_alone(change):
    """A read-only parameter buffer cannot be written in place: the update gives the parameter a
    buffer of its own. A view of the old buffer keeps its values, so a backward that saved it is
    still right and must not raise (it did: the parameter kept the views' counter)."""
    w = _read_only_parameter()
    v = w.reshape([12])  # a view of the read-only buffer
    x = oar.to_tensor(np.linspace(0.0, 1.0, 12), stop_gradient=False)
    y = (v * x).sum()  # saves v
    if change == "optimizer step":
        w.grad = oar.ones([3, 4], dtype="float64")
        SGD(learning_rate=0.5, parameters=[w]).step()
        np.testing.assert_allclose(w.numpy(), X - 0.5)
    elif change == "set_state_dict":
        layer = oar.nn.Layer()
        layer.w = w
        layer.set_state_dict({"w": np.zeros([3, 4])})
        np.testing.assert_allclose(w.numpy(), 0.0)
    else:
        oar.nn.initializer.Constant(2.0)(w)
        np.testing.assert_allclose(w.numpy(), 2.0)
    np.testing.assert_allclose(v.numpy(), X.reshape(12))  # the view kept the old values
    y.backward()  # no GradientError: nothing v's saved values came from changed
    np.testing.assert_allclose(x.grad.numpy(), X.reshape(12))
