"""Models as users write them, on the gpu: the same code gives the cpu's losses, gradients and
updated weights (Triton's interpreter runs the kernels; tiny sizes keep it quick)."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.kernels import elementwise
from triton_test_support import assert_same

import oar
import oar.nn.functional as F


def _same_weights(model_gpu, model_cpu):
    model_gpu.set_state_dict({k: v.cpu() for k, v in model_cpu.state_dict().items()})


def _train(model, optimizer, x, y, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return losses


def _on(device: str, build, x: np.ndarray, y: np.ndarray, steps: int, weights, optimizer_type):
    previous = oar.get_device()
    oar.set_device(device)
    try:
        model = build()
        model.set_state_dict(weights)
        optimizer = optimizer_type(learning_rate=0.01, parameters=model.parameters())
        losses = _train(model, optimizer, oar.to_tensor(x), oar.to_tensor(y), steps)
        return losses, {k: v.numpy() for k, v in model.state_dict().items()}
    finally:
        oar.set_device(previous)


def _compare_training(build, x, y, steps, optimizer_type):
    oar.seed(0)
    weights = {k: v.numpy() for k, v in build().state_dict().items()}
    losses_cpu, after_cpu = _on("cpu", build, x, y, steps, weights, optimizer_type)
    losses_gpu, after_gpu = _on("gpu", build, x, y, steps, weights, optimizer_type)
    np.testing.assert_allclose(losses_gpu, losses_cpu, rtol=1e-4)
    for name in after_cpu:
        assert_same([after_gpu[name]], [after_cpu[name]], "float32", f"{name} after {steps} steps", terms=x.size)


def test_an_mlp_trains_on_the_gpu_as_on_the_cpu():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 20)).astype(np.float32), rng.integers(0, 5, 16)
    _compare_training(lambda: oar.nn.Sequential(oar.nn.Linear(20, 32), oar.nn.ReLU(), oar.nn.Linear(32, 5)), x, y,
                      3, oar.optimizer.Adam)


def test_lenet_trains_on_the_gpu_as_on_the_cpu():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 2)
    # SGD: Adam divides by the root of tiny squared gradients, which turns rounding into visible steps
    _compare_training(lambda: oar.vision.models.LeNet(), x, y, 2, oar.optimizer.SGD)


def test_functions_composed_of_gpu_kernels_run_there():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 4, 2, 8)).astype(np.float32) for _ in range(3))
    x = rng.standard_normal((3, 8)).astype(np.float32)
    cases = {
        "scaled_dot_product_attention": (lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (q, k, v)),
        "rms_norm": (lambda a: F.rms_norm(a, [8]), (x,)),
        "layer_norm": (lambda a: F.layer_norm(a, [8]), (x,)),
        "gelu + mean": (lambda a: F.gelu(a).mean(axis=-1), (x,)),
    }
    for name, (fn, arrays) in cases.items():
        got = fn(*[oar.to_tensor(a, place="gpu") for a in arrays])
        assert got.place.is_gpu_place(), name
        expected = fn(*[oar.to_tensor(a, place="cpu") for a in arrays])
        assert_same([got.numpy()], [expected.numpy()], "float32", name, terms=8)


def test_dropout_on_the_gpu_keeps_the_rate_and_scales(gpu):
    x = oar.ones([64, 64])
    out = F.dropout(x, p=0.25, training=True).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.05  # 4096 draws: 0.05 is more than seven standard errors
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)


def test_amp_bfloat16_runs_the_gpu_kernels_in_bfloat16(gpu):
    amp = pytest.importorskip("oar.amp")
    layer = oar.nn.Linear(16, 8)
    x = oar.randn([4, 16])
    with amp.auto_cast(dtype="bfloat16", level="O1"):
        low = layer(x)
    assert low.dtype == oar.bfloat16 and low.place.is_gpu_place()
    full = layer(x)
    assert_same([low.astype("float32").numpy()], [full.numpy()], "bfloat16", "auto_cast Linear", terms=16)


class _Block(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.linear = oar.nn.Linear(6, 8)

    def forward(self, x):
        return F.relu(self.linear(x) * 2.0 + 1.0).tanh() - 0.5  # elementwise fusion makes one chain of these


def test_a_to_static_program_runs_on_the_gpu_fused_chains_included(gpu):
    model = _Block()
    x = oar.randn([5, 6])
    expected = model(x).numpy()
    static = oar.jit.to_static(model)
    model.eval()
    with oar.no_grad():
        static(x)  # captured
        out = static(x)  # the optimised program: constants uploaded, the chain in one generated kernel
    assert out.place.is_gpu_place()
    assert any(key[0] == "fused" for key in elementwise._generated), "no fused_elementwise kernel ran"
    assert_same([out.numpy()], [expected], "float32", "to_static eval", terms=6)
    model.train()
    loss = static(x).sum()
    loss.backward()
    assert model.linear.weight.grad.place.is_gpu_place()
    eager_model = _Block()
    eager_model.set_state_dict(model.state_dict())
    eager_model(x).sum().backward()
    assert_same([model.linear.weight.grad.numpy()], [eager_model.linear.weight.grad.numpy()], "float32",
                "to_static gradient", terms=5)
