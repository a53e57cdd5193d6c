"""A Layer whose forward uses oar.static.nn.cond and while_loop: to_static, training through the
program, jit.save and jit.load in a fresh process give eager's results for every path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

import oar
import oar.nn as nn
from oar.jit import to_static
from oar.static import InputSpec
from oar.static.nn import cond, while_loop

SPEC = [InputSpec([None, 4], name="x"), InputSpec([], "int64", name="steps")]


class Refiner(nn.Layer):
    """Applies ``fc`` ``steps`` times (a tensor-dependent while), then one of two heads picked by
    the sign of the mean activation (a tensor-dependent if)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.pos = nn.Linear(4, 2)
        self.neg = nn.Linear(4, 2)

    def forward(self, x, steps):
        i = oar.zeros([], "int64")
        _, h = while_loop(lambda i, h: i < steps, lambda i, h: [i + 1, oar.tanh(self.fc(h))], [i, x])
        return cond(h.mean() > 0, lambda: self.pos(h), lambda: self.neg(h) * 2.0)


def make_model():
    oar.seed(3)
    return Refiner()


def inputs():
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(4)]
    # some positive, some negative means after the loop: both heads are exercised
    return [(xs[0], 0), (xs[1], 3), (-np.abs(xs[2]) * 3, 1), (np.abs(xs[3]) * 3, 2)]


def eager_outputs(model):
    with oar.no_grad():
        return [model(oar.to_tensor(x), oar.to_tensor(n)).numpy() for x, n in inputs()]


def test_layer_program_matches_eager_for_every_path():
    model = make_model()
    expected = eager_outputs(model)
    to_static(model, input_spec=SPEC)
    got = eager_outputs(model)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert len(model.forward.program_cache) == 1
    ops = [n.op for n in model.forward.concrete_program.walk()]
    assert "while" in ops and "cond" in ops
    assert {"fc.weight", "pos.weight", "neg.weight"} <= set(model.forward.concrete_program.params)


def test_training_through_the_program_matches_eager_gradients():
    eager, static = make_model(), make_model()
    to_static(static, input_spec=SPEC)
    for x, n in inputs():
        grads = []
        for model in (eager, static):
            model.clear_gradients()
            loss = (model(oar.to_tensor(x), oar.to_tensor(n)) ** 2).sum()
            loss.backward()
            grads.append({name: (p.grad.numpy() if p.grad is not None else None)
                          for name, p in model.named_parameters()})
        for name, g in grads[0].items():
            if g is None:
                assert grads[1][name] is None or not np.any(grads[1][name]), name
            else:
                np.testing.assert_allclose(grads[1][name], g, rtol=1e-5, atol=1e-6, err_msg=name)


def test_saved_layer_runs_in_a_fresh_process_and_matches_eager(tmp_path):
    model = make_model()
    model.eval()
    expected = [e.tolist() for e in eager_outputs(model)]
    prefix = str(tmp_path / "refiner")
    oar.jit.save(model, prefix, input_spec=SPEC)
    cases = [(x.tolist(), n) for x, n in inputs()]
    script = textwrap.dedent(f"""
        import json, numpy as np, oar
        layer = oar.jit.load({prefix!r})
        out = [layer(oar.to_tensor(np.array(x, np.float32)), oar.to_tensor(n)).numpy().tolist()
               for x, n in {cases!r}]
        print(json.dumps(out))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_loaded_layer_can_be_fine_tuned(tmp_path):
    model = make_model()
    prefix = str(tmp_path / "refiner")
    oar.jit.save(model, prefix, input_spec=SPEC)
    loaded = oar.jit.load(prefix)
    x, n = inputs()[1]
    loss = (loaded(oar.to_tensor(x), oar.to_tensor(n)) ** 2).sum()
    loss.backward()
    want = (model(oar.to_tensor(x), oar.to_tensor(n)) ** 2).sum()
    want.backward()
    params = dict(loaded.named_parameters())
    np.testing.assert_allclose(params["fc.weight"].grad.numpy(), model.fc.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
