"""to_static on Layers: capture, conv + batch-norm folding, training through the program with
losses equal to eager, train/eval guards, decorated forwards, hooks and rollback."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn
from oar.jit import to_static
from oar.nn._passes import fold_batch_norm
from oar.static import InputSpec
from oar.static.passes import Executor


class SimpleCNN(nn.Layer):
    def __init__(self, bias=True):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 4, 3, padding=1, bias_attr=None if bias else False)
        self.bn1 = nn.BatchNorm2D(4)
        self.conv2 = nn.Conv2D(4, 8, 3)
        self.bn2 = nn.BatchNorm2D(8)
        self.pool = nn.MaxPool2D(2, 2)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        return self.fc(self.drop(oar.flatten(x, 1)))


SPEC = [InputSpec([None, 1, 16, 16], name="image")]


def trained_cnn(seed=0, bias=True):
    """A SimpleCNN whose batch-norm statistics moved away from 0 and 1."""
    oar.seed(seed)
    model = SimpleCNN(bias)
    with oar.no_grad():
        for _ in range(3):
            model(oar.randn([8, 1, 16, 16]) * 2.0 + 0.5)
    model.eval()
    return model


def test_capture_of_a_cnn():
    model = trained_cnn()
    static = to_static(model, input_spec=SPEC)
    assert static is model
    x = oar.randn([3, 1, 16, 16])
    with oar.no_grad():
        expected = model.forward.dygraph_function(model, x).numpy()
        for n in (3, 1, 6):
            batch = oar.randn([n, 1, 16, 16])
            np.testing.assert_allclose(model(batch).numpy(),
                                       model.forward.dygraph_function(model, batch).numpy(), rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(model(x).numpy(), expected, rtol=2e-5, atol=2e-6)
    program = model.forward.concrete_program
    text = str(program)
    assert text.splitlines()[0] == "program(%image: float32[?, 1, 16, 16]) {"
    assert "%conv1.weight: float32[4, 1, 3, 3]" in text and "%bn1._mean: float32[4]" in text
    assert [n.op for n in program.nodes].count("batch_norm_infer") == 2
    assert len(model.forward.program_cache) == 1
    runs = [n.op for n in model.forward._last.inference_executor.program.nodes]
    # folded into the convolutions (which then fuse with their bias add and relu)
    assert "batch_norm_infer" not in runs and runs.count("conv") + runs.count("fused_conv2d") == 2


@pytest.mark.parametrize("bias", [True, False], ids=["conv-bias", "no-bias"])
def test_fold_batch_norm_keeps_the_outputs(bias):
    model = trained_cnn(1, bias)
    static = to_static(model, input_spec=SPEC)
    x = oar.randn([4, 1, 16, 16])
    with oar.no_grad():
        static(x)
    program = model.forward.concrete_program
    folded = fold_batch_norm(program.clone())
    assert "batch_norm_infer" in {n.op for n in program.nodes}
    assert "batch_norm_infer" not in {n.op for n in folded.nodes}
    folded.validate()
    with oar.no_grad():
        a = Executor(program).run([x]).numpy()
        b = Executor(folded).run([x]).numpy()
    np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6)


def test_fold_batch_norm_leaves_a_shared_conv_output():
    class Shared(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(1, 2, 3)
            self.bn = nn.BatchNorm2D(2)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y  # y is read twice: folding would lose it

    model = Shared()
    model.eval()
    to_static(model)
    x = oar.randn([1, 1, 5, 5])
    with oar.no_grad():
        model(x)
        program = model.forward.concrete_program
        assert [n.op for n in fold_batch_norm(program.clone()).nodes] == [n.op for n in program.nodes]
        np.testing.assert_allclose(model(x).numpy(), model.forward.dygraph_function(model, x).numpy(), rtol=1e-6)


def test_folded_weights_follow_parameter_updates():
    model = trained_cnn(2)
    to_static(model, input_spec=SPEC)
    x = oar.randn([2, 1, 16, 16])
    with oar.no_grad():
        model(x)
        model.set_state_dict(trained_cnn(3).state_dict())
        np.testing.assert_allclose(model(x).numpy(), model.forward.dygraph_function(model, x).numpy(),
                                   rtol=2e-5, atol=2e-6)


def train(static: bool, optimizer, steps=10):
    oar.seed(0)
    model = SimpleCNN()
    if static:
        model = to_static(model, input_spec=SPEC)
    opt = optimizer(parameters=model.parameters(), learning_rate=0.05)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = oar.to_tensor(rng.standard_normal((6, 1, 16, 16)).astype("float32"))
        y = oar.to_tensor(rng.integers(0, 5, (6,)))
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    model.eval()
    with oar.no_grad():
        out = model(x).numpy()
    return np.array(losses), out, model


@pytest.mark.parametrize("optimizer", [oar.optimizer.SGD, oar.optimizer.Adam], ids=["sgd", "adam"])
def test_training_through_to_static_matches_eager(optimizer):
    eager_losses, eager_out, _ = train(False, optimizer)
    with pytest.warns(UserWarning, match="captured again for each size"):  # dropout's mask has the batch size
        static_losses, static_out, model = train(True, optimizer)
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-6)  # dropout and batch norm included
    np.testing.assert_allclose(static_out, eager_out, rtol=2e-5, atol=2e-6)
    keys = list(model.forward.program_cache)
    assert len(keys) == 2 and {k[3][0] for k in keys} == {True, False}  # one program per mode (and batch size)
    train_program = next(c.program for k, c in model.forward.program_cache.items() if k[3][0])
    assert {kind for kind, _, _ in train_program.updates} == {"param"}  # running statistics written back
    assert {"batch_norm", "bernoulli"} <= {n.op for n in train_program.nodes}


def test_decorated_forward_binds_each_instance():
    class Scale(nn.Layer):
        def __init__(self, k):
            super().__init__()
            self.w = self.create_parameter([2], default_initializer=nn.initializer.Constant(k))

        @to_static
        def forward(self, x):
            return x * self.w

    a, b = Scale(2.0), Scale(3.0)
    x = oar.ones([2])
    assert a(x).tolist() == [2.0, 2.0] and b(x).tolist() == [3.0, 3.0]
    assert a(x).tolist() == [2.0, 2.0] and b(x).tolist() == [3.0, 3.0]
    assert a.forward is not b.forward and len(a.forward.program_cache) == 1
    assert list(a.forward.concrete_program.params) == ["w"]


def test_hooks_run_around_the_static_forward_and_rollback():
    model = nn.Linear(3, 2)
    calls = []
    model.register_forward_pre_hook(lambda layer, inputs: calls.append("pre"))
    model.register_forward_post_hook(lambda layer, inputs, out: calls.append("post"))
    to_static(model)
    x = oar.ones([1, 3])
    model(x)
    model(x)
    assert calls == ["pre", "post"] * 2
    forward = model.forward.rollback()
    assert "forward" not in model.__dict__ and forward.__func__ is nn.Linear.forward


def test_jit_save_in_training_mode_moves_no_statistics(tmp_path):
    model = SimpleCNN()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.warns(UserWarning, match="captured again for each size"):
        oar.jit.save(model, str(tmp_path / "m"), input_spec=SPEC)
    after = model.state_dict()
    for k, v in before.items():
        np.testing.assert_array_equal(after[k].numpy(), v)


def test_a_deep_copy_of_a_static_layer_is_independent():
    import copy

    model = trained_cnn(5)
    to_static(model, input_spec=SPEC)
    x = oar.randn([2, 1, 16, 16])
    with oar.no_grad():
        model(x)
        twin = copy.deepcopy(model)
        assert twin.forward is not model.forward and twin.forward._instance is twin
        assert not twin.forward.program_cache
        np.testing.assert_allclose(twin(x).numpy(), model(x).numpy(), rtol=2e-5, atol=2e-6)
        twin.set_state_dict(trained_cnn(6).state_dict())
        np.testing.assert_allclose(model(x).numpy(), model.forward.dygraph_function(model, x).numpy(),
                                   rtol=2e-5, atol=2e-6)


def test_the_hot_path_sees_a_change_of_layer_mode_and_enable_to_static():
    layer = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    static = to_static(layer)
    x = oar.ones([2, 3])
    layer.eval()
    with oar.no_grad():
        expected = static(x).numpy()
        static(x)
        layer[1].train()  # a sublayer's mode alone: dropout zeroes some of the outputs now
        trained = [static(x).numpy() for _ in range(8)]
        assert any((t == 0).any() for t in trained)
        layer[1].eval()
        np.testing.assert_allclose(static(x).numpy(), expected)
        oar.jit.enable_to_static(False)
        try:
            np.testing.assert_allclose(static(x).numpy(), expected)
        finally:
            oar.jit.enable_to_static(True)
