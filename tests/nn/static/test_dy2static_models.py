"""Dynamic-to-static on Layers: a model whose forward has a tensor-dependent if and a while loop
(and calls a sublayer whose own forward branches on a tensor) is captured once, gives eager's
results for inputs taking every path, trains through the program, and saves and loads into a
fresh process with the same results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np

import oar
from oar import nn
from oar.jit import to_static
from oar.static import InputSpec


class Gate(nn.Layer):
    """A sublayer that branches on its input: converted when the parent's forward calls it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.mean() > 0:
            return self.fc(x)
        return x * 0.5


class Refiner(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.gate = Gate()
        self.step = nn.Linear(4, 4)

    def forward(self, x):
        h = oar.tanh(self.encoder(x))
        if h.sum() > 0:  # tensor-dependent if
            h = h * 2.0
        else:
            h = h - 1.0
        h = self.gate(h)
        steps = 0
        while h.abs().max() > 0.5 and steps < 6:  # tensor-dependent while, bounded
            h = oar.tanh(self.step(h)) * 0.5
            steps += 1
        return h, steps


def inputs_for_every_path(model):
    """Inputs whose first branch differs, found by the eager model (so both paths are covered)."""
    rng = np.random.default_rng(0)
    positive, negative = None, None
    for _ in range(200):
        x = oar.to_tensor(rng.standard_normal((3, 4)).astype(np.float32) * 2)
        with oar.no_grad():
            s = float(oar.tanh(model.encoder(x)).sum())
        if s > 0 and positive is None:
            positive = x
        if s <= 0 and negative is None:
            negative = x
        if positive is not None and negative is not None:
            return [positive, negative]
    raise AssertionError("no inputs for both branches")


def make_model():
    oar.seed(7)
    model = Refiner()
    model.eval()
    return model


def eager_results(model, xs):
    with oar.no_grad():
        return [[r.numpy() if isinstance(r, oar.Tensor) else np.asarray(r) for r in model(x)] for x in xs]


def test_one_program_gives_eager_results_on_every_path():
    model = make_model()
    xs = inputs_for_every_path(model)
    expected = eager_results(model, xs)
    to_static(model, input_spec=[InputSpec([None, 4], name="x")], full_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with oar.no_grad():
            for x, want in zip(xs, expected):
                h, steps = model(x)
                np.testing.assert_allclose(h.numpy(), want[0], rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(np.asarray(steps.numpy()), want[1])
    assert len(model.forward.program_cache) == 1
    ops = [n.op for n in model.forward.concrete_program.nodes]
    assert ops.count("cond") == 2 and ops.count("while") == 1  # the forward's if, the Gate's if, the loop


def test_training_through_the_converted_program_matches_eager_gradients():
    model = make_model()
    model.train()
    xs = inputs_for_every_path(model)
    eager_grads = []
    for x in xs:
        h, _ = model(x)
        h.sum().backward()
        eager_grads.append([p.grad.numpy().copy() for p in model.parameters()])
        model.clear_gradients()
    to_static(model, full_graph=True)
    for x, want in zip(xs, eager_grads):
        h, _ = model(x)
        h.sum().backward()
        for p, g in zip(model.parameters(), want):
            np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-6)
        model.clear_gradients()
    assert len(model.forward.program_cache) == 1


def test_save_and_load_in_a_fresh_process(tmp_path):
    model = make_model()
    xs = inputs_for_every_path(model)
    expected = eager_results(model, xs)
    to_static(model, input_spec=[InputSpec([None, 4], name="x")])
    prefix = str(tmp_path / "refiner")
    oar.jit.save(model, prefix)
    for i, x in enumerate(xs):
        np.save(f"{prefix}.x{i}.npy", x.numpy())
    script = textwrap.dedent(f"""
        import sys, numpy as np, oar
        loaded = oar.jit.load({prefix!r})
        assert not any(m.startswith("tests") for m in sys.modules)  # no Refiner class here
        with oar.no_grad():
            for i in range({len(xs)}):
                h, steps = loaded(oar.to_tensor(np.load(f"{prefix}.x{{i}}.npy")))
                np.save(f"{prefix}.h{{i}}.npy", h.numpy())
                np.save(f"{prefix}.s{{i}}.npy", steps.numpy())
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, cwd=os.path.dirname(prefix))
    for i, want in enumerate(expected):
        np.testing.assert_allclose(np.load(f"{prefix}.h{i}.npy"), want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.load(f"{prefix}.s{i}.npy"), want[1])
