"""``auto_cast`` under ``oar.jit.to_static``: the casts are nodes of the captured program (printed,
saved by ``jit.save``, run by the executor of ``jit.load`` and of the Predictor), whether the block
is inside the captured function or around its call; a call outside the block does not reuse the
program captured inside one."""

from __future__ import annotations

import os

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.static import InputSpec

SPEC = [InputSpec([None, 4], "float32", "x")]


class AmpInside(nn.Layer):
    """A model whose forward runs in an auto_cast block (how an AMP model is exported)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        with oar.amp.auto_cast(dtype="bfloat16"):
            return F.softmax(self.fc2(F.relu(self.fc1(x))))


class Plain(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))))


def ops_of(program) -> list[str]:
    return [node.op for node in program.nodes]


@pytest.fixture
def x():
    return oar.to_tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))


def test_a_block_inside_the_function_is_captured_as_cast_nodes(x):
    oar.seed(0)
    model = AmpInside()
    model.eval()
    eager = model(x)
    static = oar.jit.to_static(model, input_spec=SPEC)
    out = static(x)
    program = static.forward.concrete_program
    assert ops_of(program) == ["cast", "cast", "cast", "linear", "relu", "cast", "cast", "linear", "cast", "softmax"]
    text = str(program)
    assert "bfloat16[?, 8] = linear(" in text and "cast(%x) {dtype: 'bfloat16'}" in text
    np.testing.assert_array_equal(out.numpy(), eager.numpy())
    np.testing.assert_array_equal(static(x).numpy(), eager.numpy())  # the executor's run of the capture


def test_a_call_inside_a_block_is_captured_with_the_casts_and_apart_from_plain_calls(x):
    oar.seed(0)
    model = Plain()
    model.eval()
    with oar.amp.auto_cast(dtype="float16"):
        eager_amp = model(x)
    eager = model(x)
    static = oar.jit.to_static(model, input_spec=SPEC)
    assert static(x).dtype == oar.float32 and "cast" not in ops_of(static.forward.concrete_program)
    with oar.amp.auto_cast(dtype="float16"):
        out = static(x)
        assert ops_of(static.forward.concrete_program).count("cast") == 6
        np.testing.assert_array_equal(static(x).numpy(), eager_amp.numpy())
    np.testing.assert_array_equal(out.numpy(), eager_amp.numpy())
    np.testing.assert_array_equal(static(x).numpy(), eager.numpy())
    assert not np.array_equal(eager.numpy(), eager_amp.numpy())  # so the checks above tell them apart


def test_training_through_a_captured_amp_forward(x):
    oar.seed(0)
    model = AmpInside()
    static = oar.jit.to_static(model, input_spec=SPEC)
    label = oar.to_tensor(np.arange(5).reshape(-1, 1) % 3)
    losses = []
    optimizer = oar.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    for _ in range(5):
        loss = F.nll_loss(oar.log(static(x)), label.reshape([-1]))
        loss.backward()
        assert model.fc1.weight.grad.dtype == oar.float32
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def saved_amp_model(tmp_path, x):
    """An eval-mode ``AmpInside`` saved by jit.save: (its eager output on ``x``, the prefix)."""
    oar.seed(0)
    model = AmpInside()
    model.eval()
    eager = model(x)
    prefix = os.path.join(tmp_path, "amp")
    oar.jit.save(model, prefix, input_spec=SPEC)
    return eager, prefix


def test_jit_save_and_load_run_the_amp_program(tmp_path, x):
    eager, prefix = saved_amp_model(tmp_path, x)
    loaded = oar.jit.load(prefix)
    assert "cast" in ops_of(loaded.program())
    np.testing.assert_array_equal(loaded(x).numpy(), eager.numpy())


def test_the_predictor_runs_the_saved_amp_program(tmp_path, x):
    inference = pytest.importorskip("oar.inference")  # oar-serving, where installed
    eager, prefix = saved_amp_model(tmp_path, x)
    predictor = inference.create_predictor(inference.Config(prefix + ".json", prefix + ".pdiparams"))
    [probabilities] = predictor.run([x.numpy()])
    np.testing.assert_allclose(probabilities, eager.numpy(), rtol=1e-6, atol=1e-7)
