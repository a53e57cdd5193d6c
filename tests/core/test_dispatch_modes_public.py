"""The public dispatch-mode entry points a plugin builds on (oar-amp's autocast): a mode that
rewrites op calls (``Mode.outermost``) stays above the modes pushed after it, so that a to_static
capture records the rewritten calls; ``Mode.capture_key`` keeps the captures made under the mode
apart from the others."""

from __future__ import annotations

import numpy as np

import oar
from oar.ops import Mode, current_mode
from oar.plugins import registries


class ExpIn(Mode):
    """Runs ``exp`` in ``dtype``: its input is cast first, below this mode (as autocast does).

    Rewriting what it produced changes nothing (the input already has the dtype), which a mode
    with a ``capture_key`` must guarantee: a captured program may be replayed through it.
    """

    outermost = True

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.capture_key = ("exp-in", dtype)

    def apply(self, op, inputs, attrs):
        if op.name == "exp" and inputs[0].dtype.name != self.dtype:
            inputs = (self.apply_below(registries().ops.get("cast"), inputs, {"dtype": self.dtype}),)
        return self.apply_below(op, inputs, attrs)


class CountCalls(Mode):
    def __init__(self):
        self.ops: list[str] = []

    def apply(self, op, inputs, attrs):
        self.ops.append(op.name)
        return self.apply_below(op, inputs, attrs)


X = np.array([0.5, -1.0, 2.0], np.float32)


def test_a_mode_pushed_later_goes_under_an_outermost_one():
    rewrite, counter = ExpIn("float64"), CountCalls()
    with rewrite:
        with counter:
            assert current_mode() is rewrite
            out = oar.exp(oar.to_tensor(X))
    assert out.dtype == oar.float64
    assert counter.ops == ["cast", "exp"]  # the counter sees what the rewriting mode made of the call


def test_to_static_records_the_rewritten_calls():
    fn = oar.jit.to_static(lambda x: oar.exp(x))
    with ExpIn("float64"):
        out = fn(oar.to_tensor(X))
    assert [node.op for node in fn.concrete_program.nodes] == ["cast", "exp"]
    assert out.dtype == oar.float64
    np.testing.assert_allclose(out.numpy(), np.exp(X.astype(np.float64)))


def test_to_static_keeps_one_capture_per_capture_key():
    fn = oar.jit.to_static(lambda x: oar.exp(x))
    x = oar.to_tensor(X)
    assert fn(x).dtype == oar.float32 and [n.op for n in fn.concrete_program.nodes] == ["exp"]
    with ExpIn("float64"):  # another key than the plain call's: captured again
        assert fn(x).dtype == oar.float64
        assert [n.op for n in fn.concrete_program.nodes] == ["cast", "exp"]
    with ExpIn("float16"):
        assert fn(x).dtype == oar.float16
    assert fn(x).dtype == oar.float32  # the plain capture again
    with ExpIn("float64"):
        assert fn(x).dtype == oar.float64
    assert fn(x).dtype == oar.float32  # and to_static's hot path, for calls outside every mode, too
