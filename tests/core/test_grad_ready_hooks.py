"""``Tensor.register_post_accumulate_grad_hook`` and ``oar.autograd.queue_callback``: what a
data-parallel wrapper relies on to reduce each gradient as soon as it is final, and to wait for
the reductions when the backward ends."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.autograd import queue_callback
from oar.errors import GradientError


def test_hook_sees_the_whole_gradient_before_the_backward_ends():
    w1 = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    w2 = oar.to_tensor([3.0, 4.0], stop_gradient=False)
    events = []
    w1.register_post_accumulate_grad_hook(lambda t: events.append(("w1", t.grad.tolist())))
    w2.register_post_accumulate_grad_hook(lambda t: events.append(("w2", t.grad.tolist())))
    # w2 is used late in the forward, so its gradient is final early in the backward; w1 feeds
    # two branches, and its hook comes only after both have contributed.
    h = w1 * 2.0
    loss = (h * h).sum() + (h.exp() * w2).sum() + w1.sum()
    loss.backward()
    expected_w1 = 8.0 * np.array([1.0, 2.0]) + 2.0 * np.exp(2.0 * np.array([1.0, 2.0])) * np.array([3.0, 4.0]) + 1.0
    assert [name for name, _ in events] == ["w2", "w1"]
    np.testing.assert_allclose(events[1][1], expected_w1, rtol=1e-6)
    np.testing.assert_allclose(events[0][1], np.exp([2.0, 4.0]), rtol=1e-6)


def test_hook_runs_once_per_backward_and_sees_accumulated_grad():
    w = oar.to_tensor([1.0], stop_gradient=False)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * 3.0 + w * 4.0).sum().backward()
    (w * 1.0).sum().backward()
    assert seen == [[7.0], [8.0]]  # the second sees .grad with the first backward's 7 added


def test_hook_not_called_without_a_gradient_and_removable():
    used = oar.to_tensor([1.0], stop_gradient=False)
    unused = oar.to_tensor([1.0], stop_gradient=False)
    calls = []
    handle = used.register_post_accumulate_grad_hook(lambda t: calls.append("used"))
    unused.register_post_accumulate_grad_hook(lambda t: calls.append("unused"))
    (used * 2.0).sum().backward()
    assert calls == ["used"]
    handle.remove()
    (used * 2.0).sum().backward()
    assert calls == ["used"]


def test_hook_only_on_leaves_that_need_a_gradient():
    with pytest.raises(GradientError, match="leaf"):
        oar.to_tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)
    w = oar.to_tensor([1.0], stop_gradient=False)
    with pytest.raises(GradientError, match="leaf"):
        (w * 2.0).register_post_accumulate_grad_hook(lambda t: None)


def test_grad_does_not_call_post_accumulate_hooks():
    w = oar.to_tensor([2.0], stop_gradient=False)
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    (g,) = oar.grad((w * w).sum(), w)
    assert g.tolist() == [4.0] and calls == [] and w.grad is None


def test_queue_callback_runs_after_every_leaf_is_final():
    a = oar.to_tensor([1.0], stop_gradient=False)
    b = oar.to_tensor([1.0], stop_gradient=False)
    order = []

    def first_ready(t):
        order.append("hook")
        queue_callback(lambda: order.append(("end", a.grad.tolist(), b.grad.tolist())))

    b.register_post_accumulate_grad_hook(first_ready)
    (a * 5.0 + b * 2.0).sum().backward()
    assert order == ["hook", ("end", [5.0], [2.0])]


def test_queue_callback_outside_a_backward_is_an_error():
    with pytest.raises(GradientError, match="no backward is running"):
        queue_callback(lambda: None)


def test_an_error_in_a_callback_reaches_the_caller_of_backward():
    w = oar.to_tensor([1.0], stop_gradient=False)

    def fail():
        raise RuntimeError("checked at the end of backward")

    handle = w.register_post_accumulate_grad_hook(lambda t: queue_callback(fail))
    with pytest.raises(RuntimeError, match="end of backward"):
        (w * 2.0).sum().backward()
    handle.remove()
    w.clear_gradient()
    (w * 3.0).sum().backward()  # the engine is usable afterwards, with no callback left over
    assert w.grad.tolist() == [3.0]
    with pytest.raises(GradientError, match="no backward is running"):
        queue_callback(lambda: None)
