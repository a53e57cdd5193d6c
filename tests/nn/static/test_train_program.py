"""Training nn models through to_static with the backward derived into the program: the same
losses, parameters and running statistics as eager training, dropout masks shared by forward
and backward, jit.load'ed models fine-tuned, and the replay fallback."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn
from oar.jit import to_static
from oar.static import InputSpec
from oar.vision.models import LeNet


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class NormDropNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(self.drop(oar.flatten(x, 1)))


def _batches(shape, classes, steps, seed=1):
    rng = np.random.default_rng(seed)
    return [(oar.to_tensor(rng.standard_normal(shape).astype("float32")),
             oar.to_tensor(rng.integers(0, classes, (shape[0],)))) for _ in range(steps)]


def _train(model, batches, optimizer=oar.optimizer.Adam, lr=1e-2):
    opt = optimizer(parameters=model.parameters(), learning_rate=lr)
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return np.array(losses)


def _pair(make, spec, seed=0):
    """An eager model and a to_static copy with the same weights."""
    oar.seed(seed)
    eager = make()
    static = make()
    static.set_state_dict(eager.state_dict())
    return eager, to_static(static, input_spec=spec, full_graph=True)


def _used_derived_backward(static) -> bool:
    training = static.forward._last.training_programs
    return training.last_plan is not None


@pytest.mark.parametrize("make,shape,spec", [
    (MLP, (8, 12), [InputSpec([None, 12], name="x")]),
    (LeNet, (4, 1, 28, 28), [InputSpec([None, 1, 28, 28], name="x")]),
], ids=["mlp", "lenet"])
def test_adam_training_matches_eager(make, shape, spec):
    eager, static = _pair(make, spec)
    batches = _batches(shape, 3, 1) * 6  # one batch again and again: the loss must fall
    expected = _train(eager, batches)
    got = _train(static, batches)
    assert _used_derived_backward(static)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert got[-1] < got[0]  # it learns
    for (name, p), q in zip(static.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_batch_norm_and_dropout_train_as_in_eager():
    eager, static = _pair(NormDropNet, [InputSpec([None, 1, 6, 6], name="x")])
    batches = _batches((5, 1, 6, 6), 3, 5)
    oar.seed(7)
    expected = _train(eager, batches, oar.optimizer.SGD, lr=0.1)
    oar.seed(7)  # the same dropout masks, drawn in the same order
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout's mask has the batch size: captured per size
        got = _train(static, batches, oar.optimizer.SGD, lr=0.1)
    assert _used_derived_backward(static)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # The running statistics were written back by the forward section, as eager writes them.
    np.testing.assert_allclose(static.bn._mean.numpy(), eager.bn._mean.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(static.bn._variance.numpy(), eager.bn._variance.numpy(), rtol=1e-5)
    plan = static.forward._last.training_programs.last_plan
    ops = [n.op for n in plan.derived.program.nodes]
    assert {"bernoulli", "batch_norm"} <= set(ops[:plan.derived.forward_count])
    assert "bernoulli" not in ops[plan.derived.forward_count:]  # the backward reads the forward's mask


def test_dropout_gradient_uses_the_forward_mask():
    layer = to_static(nn.Dropout(0.5), full_graph=True)
    layer.train()
    x = oar.to_tensor(np.ones((8, 8), "float32"))
    layer(x)
    for _ in range(2):
        x = oar.to_tensor(np.ones((8, 8), "float32"), stop_gradient=False)
        y = layer(x)
        y.sum().backward()
        assert _used_derived_backward(layer)
        np.testing.assert_array_equal(x.grad.numpy(), y.numpy())  # d(x * mask / 0.5)/dx = mask / 0.5 = y


def test_a_loaded_model_fine_tunes_as_the_original_would(tmp_path):
    oar.seed(0)
    model = MLP()
    spec = [InputSpec([None, 12], name="x")]
    oar.jit.save(to_static(model, input_spec=spec), str(tmp_path / "mlp"))
    loaded = oar.jit.load(str(tmp_path / "mlp"))
    loaded.train()
    eager = MLP()
    eager.set_state_dict(model.state_dict())
    batches = _batches((8, 12), 3, 5, seed=3)
    got = _train(loaded, batches)
    assert loaded._capture.training_programs.last_plan is not None
    expected = _train(eager, batches)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_the_replay_fallback_still_trains_as_eager():
    eager, static = _pair(MLP, [InputSpec([None, 12], name="x")])
    batches = _batches((8, 12), 3, 4)
    expected = _train(eager, batches)
    static(batches[0][0])  # capture, then mark the program as not derivable: the fallback runs
    for entry in static.forward.program_cache.values():
        entry.training_programs.not_derivable = "forced by the test"
    got = _train(static, batches)
    assert static.forward._last.training_programs.last_plan is None
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_printing_the_training_program_shows_the_backward_section():
    _, static = _pair(MLP, [InputSpec([None, 12], name="x")])
    x, y = _batches((8, 12), 3, 1)[0]
    static(x)
    F.cross_entropy(static(x), y).backward()
    text = str(static.forward._last.training_programs.last_plan.derived)
    head, _, tail = text.partition("\n  // backward\n")
    assert tail, text
    assert "= linear(" in head and "@GRAD" not in head.split("{", 1)[1]
    assert "%fc1.weight@GRAD" not in head
    assert "@GRAD" in tail.split("\n")[0]  # the first gradient op reads the loss's incoming gradient
    assert "'fc1.weight@GRAD'" in text and "'fc2.bias@GRAD'" in text


def test_one_derived_program_serves_every_batch_size():
    eager, static = _pair(LeNet, [InputSpec([None, 1, 28, 28], name="x")])
    batches = _batches((4, 1, 28, 28), 10, 2) + _batches((7, 1, 28, 28), 10, 2, seed=2)
    np.testing.assert_allclose(_train(static, batches), _train(eager, batches), rtol=1e-5)
    training = static.forward._last.training_programs
    assert len(static.forward.program_cache) == 1 and len(training._plans) == 1
    plan = training.last_plan
    x_value = plan.derived.program.values[plan.derived.program.feeds[0]]
    assert x_value.shape[0] is None  # the batch dim stays dynamic in the derived program


# -- eval mode without no_grad: the inference program, the training forward only for a backward --

def _eval_pair(make, spec, shape, seed=0):
    """As ``_pair``, both in eval mode, the static one called once already (the capture's own call
    runs through the tracer, not the program)."""
    eager, static = _pair(make, spec, seed)
    eager.eval()
    static.eval()
    static(oar.zeros(shape))
    return eager, static


def test_an_eval_call_without_no_grad_runs_the_inference_program_until_a_backward_comes():
    eager, static = _eval_pair(NormDropNet, [InputSpec([None, 1, 6, 6], name="x")], [5, 1, 6, 6])
    data = np.random.default_rng(4).standard_normal((5, 1, 6, 6)).astype("float32")
    x_static = oar.to_tensor(data, stop_gradient=False)
    x_eager = oar.to_tensor(data, stop_gradient=False)
    mean_before = static.bn._mean.numpy().copy()
    out = static(x_static)
    capture = static.forward._last
    assert capture._training is None and capture._train is None  # nothing of the training path was built
    assert not out.stop_gradient
    expected = eager(x_eager)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(x_static.grad.numpy(), x_eager.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (name, p), q in zip(static.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(static.bn._mean.numpy(), mean_before)  # eval: no running statistics written


def test_an_eval_call_refuses_a_backward_after_its_input_changed_in_place():
    _, static = _eval_pair(MLP, [InputSpec([None, 12], name="x")], [2, 12])
    x = oar.to_tensor(np.ones((2, 12), "float32"))  # needs no gradient, but the recomputation reads it
    out = static(x)
    x.add_(oar.ones_like(x))
    with pytest.raises(oar.errors.GradientError, match="modified in place after the forward"):
        out.sum().backward()


def test_an_eval_call_gives_second_order_gradients_as_eager():
    eager, static = _eval_pair(MLP, [InputSpec([None, 12], name="x")], [2, 12])
    data = np.random.default_rng(5).standard_normal((3, 12)).astype("float32")
    got, expected = [], []
    for model, results in ((static, got), (eager, expected)):
        x = oar.to_tensor(data, stop_gradient=False)
        (gx,) = oar.grad(model(x).sum(), [x], create_graph=True)
        (ggx,) = oar.grad((gx * gx).sum(), [x])
        results += [gx.numpy(), ggx.numpy()]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_an_eval_model_that_draws_random_numbers_trains_through_the_recorded_forward():
    class Noisy(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x + oar.rand(x.shape))

    _, static = _eval_pair(Noisy, [InputSpec([2, 4], name="x")], [2, 4])
    out = static(oar.ones([2, 4]))
    out.sum().backward()  # a recomputation would draw other numbers: this call recorded its forward
    assert static.forward._last._training is not None or static.forward._last._train is not None
    np.testing.assert_allclose(static.fc.bias.grad.numpy(), [2.0, 2.0])
