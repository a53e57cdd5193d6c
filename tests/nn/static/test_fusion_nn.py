"""oar-nn's fusion passes on real layers: linear/conv + bias + activation, max pooling without its
mask; outputs before and after each pass, and the pipeline that runs them at inference."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.jit import to_static
from oar.nn._passes import fuse_conv2d, fuse_conv2d_max_pool, fuse_linear, max_pool_drop_mask
from oar.plugins import registries
from oar.static import InputSpec
from oar.static.passes import Executor, optimize, select_passes
from oar.vision.models import LeNet


def capture(layer, x):
    layer.eval()
    static = to_static(layer.forward)
    with oar.no_grad():
        static(x)
    return static.concrete_program


def run(program, *args):
    with oar.no_grad():
        out = Executor(program.clone()).run(list(args))
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]


def assert_same(before, after, *args):
    for a, b in zip(run(before, *args), run(after, *args)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def ops(program):
    return [n.op for n in program.nodes]


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("act, layer", [("relu", nn.ReLU()), ("gelu", nn.GELU()), ("sigmoid", nn.Sigmoid()),
                                        ("tanh", nn.Tanh())])
def test_linear_bias_activation_becomes_fused_linear(act, layer):
    oar.seed(0)
    model = nn.Sequential(nn.Linear(6, 5), layer, nn.Linear(5, 3))
    x = rand(4, 6)
    program = capture(model, x)
    after = fuse_linear(program.clone())
    assert ops(after).count("fused_linear") == 1
    node = next(n for n in after.nodes if n.op == "fused_linear")
    assert node.attrs["act"] == act
    assert_same(program, after, x)


def test_matmul_plus_bias_without_activation_fuses_too():
    def f(x, w, b):
        return oar.matmul(x, w) + b

    x, w, b = rand(3, 4), rand(4, 2, seed=1), rand(2, seed=2)
    static = to_static(f)
    with oar.no_grad():
        static(x, w, b)
    program = static.concrete_program
    after = fuse_linear(program.clone())
    assert ops(after) == ["fused_linear"]
    assert_same(program, after, x, w, b)


def test_a_bias_that_is_not_per_feature_is_not_fused():
    def f(x, w, b):
        return F.relu(oar.matmul(x, w) + b)  # b is [3, 2]: a full matrix, not a bias

    x, w, b = rand(3, 4), rand(4, 2, seed=1), rand(3, 2, seed=2)
    static = to_static(f)
    with oar.no_grad():
        static(x, w, b)
    program = static.concrete_program
    after = fuse_linear(program.clone())
    assert "add" in ops(after)
    assert_same(program, after, x, w, b)


def test_a_value_read_elsewhere_keeps_its_node():
    class Model(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(2, 3, 3, padding=1)

        def forward(self, x):
            y = self.conv(x)  # conv + bias, read twice: by relu and by the output
            return F.relu(y), y

    oar.seed(0)
    x = rand(2, 2, 5, 5)
    program = capture(Model(), x)
    after = fuse_conv2d(program.clone())
    assert "relu" in ops(after)  # the activation cannot join: y must still exist
    assert "fused_conv2d" in ops(after)  # conv + bias still fuse, their output is y itself
    assert_same(program, after, x)


def test_conv_bias_relu_and_max_pool_on_lenet():
    oar.seed(0)
    model = LeNet()
    x = rand(3, 1, 28, 28)
    program = capture(model, x)
    after = registries().passes.get("dead_code_elimination")(max_pool_drop_mask(fuse_conv2d(program.clone())))  # the bias reshapes go
    assert ops(after)[:4] == ["fused_conv2d", "max_pool_infer", "fused_conv2d", "max_pool_infer"]
    assert all(n.attrs["act"] == "relu" for n in after.nodes if n.op == "fused_conv2d")
    assert_same(program, after, x)
    text = str(after)
    assert "fused_conv2d(%x, %features.0.weight, %features.0.bias) {" in text.replace("%inputs", "%x")
    assert "act: 'relu'" in text


def test_conv_batch_norm_relu_folds_then_fuses():
    oar.seed(0)
    model = nn.Sequential(nn.Conv2D(3, 4, 3, padding=1), nn.BatchNorm2D(4), nn.ReLU(), nn.MaxPool2D(2))
    model.train()
    with oar.no_grad():
        for _ in range(3):  # running statistics away from their initial values
            model(rand(4, 3, 8, 8, seed=5) * 2.0 + 1.0)
    x = rand(2, 3, 8, 8)
    program = capture(model, x)
    after = optimize(program)
    assert "batch_norm_infer" not in ops(after)
    (conv,) = [n for n in after.nodes if n.op == "fused_conv2d"]  # folded, fused, the 2x2 pool taken in
    assert "max_pool_infer" not in ops(after) and conv.attrs["max_pool"] == 2 and conv.attrs["act"] == "relu"
    assert_same(program, after, x)


def test_max_pool_after_fused_conv_folds_in_on_lenet():
    oar.seed(0)
    program = capture(LeNet(), rand(3, 1, 28, 28))
    after = registries().passes.get("dead_code_elimination")(fuse_conv2d_max_pool(max_pool_drop_mask(fuse_conv2d(program.clone()))))
    assert ops(after)[:3] == ["fused_conv2d", "fused_conv2d", "flatten"]
    assert [n.attrs["max_pool"] for n in after.nodes[:2]] == [2, 2]
    for x in (rand(3, 1, 28, 28), rand(1, 1, 28, 28, seed=4)):
        assert_same(program, after, x)


@pytest.mark.parametrize("pool", [dict(kernel_size=3, stride=2), dict(kernel_size=2, stride=2, padding=1),
                                  dict(kernel_size=2, stride=2, ceil_mode=True)])
def test_max_pool_that_is_not_a_plain_window_stays(pool):
    layer = nn.Sequential(nn.Conv2D(2, 3, 3), nn.ReLU(), nn.MaxPool2D(**pool))
    x = rand(2, 2, 9, 9)
    program = capture(layer, x)
    after = fuse_conv2d_max_pool(max_pool_drop_mask(fuse_conv2d(program.clone())))
    assert "max_pool_infer" in ops(after)
    assert_same(program, after, x)


def test_a_fused_conv_read_elsewhere_keeps_its_pool_apart():
    def f(x, w, b):
        y = F.relu(F.conv2d(x, w, b))
        return F.max_pool2d(y, 2), y

    args = (rand(2, 2, 8, 8), rand(3, 2, 3, 3, seed=1), rand(3, seed=2))
    static = to_static(f)
    with oar.no_grad():
        static(*args)
    program = static.concrete_program
    after = fuse_conv2d_max_pool(max_pool_drop_mask(fuse_conv2d(program.clone())))
    assert "max_pool_infer" in ops(after)
    assert all("max_pool" not in n.attrs for n in after.nodes if n.op == "fused_conv2d")
    assert_same(program, after, *args)


def test_max_pool_keeps_its_mask_when_it_is_returned():
    def f(x):
        return F.max_pool2d(x, 2, return_mask=True)

    x = rand(1, 2, 4, 4)
    static = to_static(f)
    with oar.no_grad():
        static(x)
    after = max_pool_drop_mask(static.concrete_program.clone())
    assert ops(after) == ["max_pool"]


def test_the_passes_run_at_level_2_for_inference_before_elementwise_fusion():
    names = [p.name for p in select_passes(2, inference=True)]
    assert names.index("fold_batch_norm") < names.index("fuse_conv2d")  # the fold phase, then the fuse phase
    for name in ("fold_batch_norm", "fuse_conv2d", "fuse_linear", "max_pool_drop_mask", "fuse_conv2d_max_pool"):
        assert names.index(name) < names.index("fuse_elementwise")
        assert name not in [p.name for p in select_passes(2, inference=False)]
        assert name not in [p.name for p in select_passes(1, inference=True)]


def test_to_static_lenet_matches_eager_at_every_level():
    oar.seed(0)
    model = LeNet()
    model.eval()
    x = rand(5, 1, 28, 28)
    with oar.no_grad():
        expected = model(x).numpy()
    for level in (0, 1, 2):
        static = to_static(LeNet(), input_spec=[InputSpec([None, 1, 28, 28], "float32")], build_strategy=level)
        static.set_state_dict(model.state_dict())
        static.eval()
        with oar.no_grad():
            np.testing.assert_allclose(static(x).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_training_through_to_static_is_not_fused():
    oar.seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    static = to_static(model)
    x = rand(2, 4)
    static(x).sum().backward()  # gradients flow: the training program keeps its ops
    assert model[0].weight.grad is not None
    with oar.no_grad():
        static(x)
    assert "fused_linear" in ops(static.forward._last.inference_executor.program)


def test_eval_dropout_and_identity_leave_no_node_and_a_no_op_flatten_goes():
    oar.seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ReLU(), nn.Flatten(), nn.Identity())
    model.eval()
    x = rand(3, 4)
    program = capture(model, x)
    assert ops(program) == ["linear", "relu", "flatten"]  # Dropout (eval) and Identity trace to nothing
    after = optimize(program)
    assert ops(after) == ["fused_linear"]
    assert_same(program, after, x)
