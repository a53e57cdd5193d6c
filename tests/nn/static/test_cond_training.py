"""Training a Layer with a tensor-dependent if through to_static: the backward of the ``cond`` is
derived into the program (no eager replay), and Adam steps give eager's parameters step by step
-- including the head the batch did not take, whose gradient is None in eager (Adam skips it)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.jit import to_static
from oar.static import InputSpec
from oar.static.nn import cond


class TwoHeads(nn.Layer):
    """One of two heads, picked by the sign of the mean hidden activation."""

    def __init__(self, dy2static: bool):
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.pos = nn.Linear(6, 3)
        self.neg = nn.Linear(6, 3)
        self.dy2static = dy2static

    def forward(self, x):
        h = oar.tanh(self.fc(x))
        if not self.dy2static:
            return cond(h.mean() > 0, lambda: self.pos(h), lambda: oar.exp(self.neg(h) * 0.5))
        if h.mean() > 0:  # converted to a cond by dy2static
            out = self.pos(h)
        else:
            out = oar.exp(self.neg(h) * 0.5)
        return out


def batches():
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(6)]
    # Large positive / negative inputs push the mean activation's sign: both heads are taken.
    return [np.abs(xs[0]) * 3, -np.abs(xs[1]) * 3, xs[2], np.abs(xs[3]) * 3, -np.abs(xs[4]) * 3, xs[5]]


def _params(model):
    return {name: p.numpy().copy() for name, p in model.named_parameters()}


@pytest.mark.parametrize("dy2static", [False, True], ids=["static.nn.cond", "python-if"])
def test_adam_steps_through_the_derived_cond_backward_equal_eager(dy2static):
    oar.seed(11)
    eager = TwoHeads(dy2static)
    static = TwoHeads(dy2static)
    static.set_state_dict(eager.state_dict())
    to_static(static, input_spec=[InputSpec([None, 4], "float32", name="x")], full_graph=True)
    optimizers = [oar.optimizer.Adam(parameters=m.parameters(), learning_rate=0.05) for m in (eager, static)]
    heads_taken = set()
    for step, x in enumerate(batches()):
        results = []
        for model, opt in zip((eager, static), optimizers):
            opt.clear_grad(set_to_zero=False)  # None between steps: a head not taken gets no update
            loss = (model(oar.to_tensor(x)) ** 2).mean()
            loss.backward()
            grads = {name: p.grad is not None for name, p in model.named_parameters()}
            opt.step()
            results.append((grads, _params(model)))
        training = static.forward._last.training_programs
        if step > 0:  # the first call captures the program (and runs eagerly)
            assert training.last_plan is not None, training.not_derivable
            assert "cond" in [n.op for n in training.last_plan.derived.backward_nodes]
        (eager_has, eager_params), (static_has, static_params) = results
        assert static_has == eager_has
        heads_taken.add("pos" if eager_has["pos.weight"] else "neg")
        assert not (eager_has["pos.weight"] and eager_has["neg.weight"])
        for name, value in eager_params.items():
            np.testing.assert_allclose(static_params[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    assert heads_taken == {"pos", "neg"}
    assert len(static.forward.program_cache) == 1


class LoopThenHeads(nn.Layer):
    """``fc`` applied ``steps`` times (a tensor-dependent while), then a head picked by a cond."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.pos = nn.Linear(4, 2)
        self.neg = nn.Linear(4, 2)

    def forward(self, x, steps):
        from oar.static.nn import while_loop

        i = oar.zeros([], "int64")
        _, h = while_loop(lambda i, h: i < steps, lambda i, h: [i + 1, oar.tanh(self.fc(h))], [i, x])
        return cond(h.mean() > 0, lambda: self.pos(h), lambda: self.neg(h) * 2.0)


def test_adam_steps_through_the_derived_while_and_cond_backward_equal_eager():
    oar.seed(3)
    eager = LoopThenHeads()
    static = LoopThenHeads()
    static.set_state_dict(eager.state_dict())
    to_static(static, input_spec=[InputSpec([None, 4], "float32", name="x"), InputSpec([], "int64", name="steps")],
              full_graph=True)
    optimizers = [oar.optimizer.Adam(parameters=m.parameters(), learning_rate=0.05) for m in (eager, static)]
    fc_skipped = False
    for step, (x, n) in enumerate(zip(batches(), (2, 0, 3, 1, 0, 4))):
        results = []
        for model, opt in zip((eager, static), optimizers):
            opt.clear_grad(set_to_zero=False)
            loss = (model(oar.to_tensor(x[:, :4]), oar.to_tensor(n)) ** 2).mean()
            loss.backward()
            grads = {name: p.grad is not None for name, p in model.named_parameters()}
            opt.step()
            results.append((grads, _params(model)))
        training = static.forward._last.training_programs
        if step > 0:
            assert training.last_plan is not None, training.not_derivable
            assert "while" in [n.op for n in training.last_plan.derived.backward_nodes]
        (eager_has, eager_params), (static_has, static_params) = results
        assert static_has == eager_has
        fc_skipped |= not eager_has["fc.weight"]  # zero iterations: fc is never read
        for name, value in eager_params.items():
            np.testing.assert_allclose(static_params[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    assert fc_skipped
