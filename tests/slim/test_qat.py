"""QAT: fake quanters train with straight-through gradients in eager mode and under to_static,
and convert gives the INT8 model whose outputs are the QAT model's in eval mode (where Paddle
3.3.1's convert fails on FakeQuanterWithAbsMaxObserver's None zero point)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import oar
from oar import nn
from oar.quantization import QAT, QuantConfig, QuantConfigError
from oar.quantization.quanters import FakeQuanterChannelWiseAbsMaxObserver, FakeQuanterWithAbsMaxObserver
from oar.vision.models import LeNet

from .conftest import LENET_SPEC, accuracy, train


def qat_config(channel_wise: bool = True) -> QuantConfig:
    weight = FakeQuanterChannelWiseAbsMaxObserver() if channel_wise else FakeQuanterWithAbsMaxObserver()
    return QuantConfig(activation=FakeQuanterWithAbsMaxObserver(moving_rate=0.9), weight=weight)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "to_static"])
def test_qat_lenet_learns_the_digits_from_scratch(digits, static):
    oar.seed(0)
    qat = QAT(qat_config())
    model = qat.quantize(LeNet())
    assert model.training
    forward = oar.jit.to_static(model) if static else model
    losses = train(model, forward, digits["x_train"], digits["y_train"], epochs=2, lr=2e-3)
    assert np.mean(losses[-5:]) * 5 <= losses[0], (losses[0], losses[-5:])
    # the moving-average scales moved in training (to_static wrote the buffers back too)
    scale = float(model.features[0].activation_quanter.scales())
    assert scale == pytest.approx(float(np.abs(digits["x_train"]).max()), rel=0.05)
    assert accuracy(model, digits["x_test"], digits["y_test"]) >= 0.85
    converted = qat.convert(model)
    assert converted.features[0].weight.dtype is oar.int8
    assert accuracy(converted, digits["x_test"], digits["y_test"]) >= 0.85


def test_gradients_flow_through_the_fake_quanters():
    oar.seed(0)
    model = QAT(qat_config()).quantize(nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3)))
    x = oar.randn([16, 8])
    x.stop_gradient = False
    model(x).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and np.abs(p.grad.numpy()).max() > 0, name
    assert np.abs(x.grad.numpy()).max() > 0


def test_the_gradient_is_straight_through_at_the_fake_quantized_values():
    """d/dW sum(linear(fq(x), fq(W))) = fq(x).T @ 1 and d/dx = (1 @ fq(W).T) where x is inside the
    activation's range, 0 where it clipped."""
    oar.seed(0)
    model = QAT(qat_config()).quantize(nn.Sequential(nn.Linear(8, 3)))
    model(oar.randn([16, 8]))  # one training step sets the moving-average scale
    model.eval()
    fc = model[0]
    x = oar.randn([16, 8]) * 1.5
    x.stop_gradient = False
    fc.clear_gradients()
    model(x).sum().backward()
    with oar.no_grad():
        xq, wq = fc.activation_quanter(x).numpy(), fc.weight_quanter(fc.weight).numpy()
    level = x.numpy() / (float(fc.activation_quanter.scales()) / 127)
    inside = (level >= -128.5) & (level <= 127.5)  # within half a step of the int8 range
    assert not inside.all()  # some inputs clipped
    np.testing.assert_allclose(fc.weight.grad.numpy(), xq.T @ np.ones((16, 3), np.float32), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), np.where(inside, np.ones((16, 3)) @ wq.T, 0.0), rtol=1e-5, atol=1e-6)


def test_qat_convert_with_fake_quanter_weights_works_and_matches_eval(float_lenet, digits):
    """Paddle 3.3.1 crashes here: FakeQuanterWithAbsMaxObserver's zero point is None and its
    LinearQuanter cannot take it. Here a None zero point is 0 (symmetric)."""
    qat = QAT(qat_config(channel_wise=False))
    model = qat.quantize(copy.deepcopy(float_lenet).train())
    train(model, model, digits["x_train"][:640], digits["y_train"][:640], epochs=1, lr=5e-4)
    model.eval()
    converted = qat.convert(model)
    x = oar.to_tensor(digits["x_test"][:64])
    with oar.no_grad():
        np.testing.assert_allclose(converted(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-4)
    assert accuracy(converted, digits["x_test"], digits["y_test"]) >= accuracy(float_lenet, digits["x_test"],
                                                                                  digits["y_test"]) - 0.02


def test_channel_wise_convert_uses_the_final_weights(digits):
    """The channel-wise scale is recomputed from the weights after the last optimizer step, so no
    weight is clipped by a stale scale."""
    oar.seed(0)
    qat = QAT(qat_config())
    model = qat.quantize(LeNet())
    train(model, model, digits["x_train"][:256], digits["y_train"][:256], epochs=1, lr=1e-2)
    converted = qat.convert(model)
    w = model.fc[0].weight.numpy()
    steps = converted.fc[0].weight_quanter._dequanter._scales.numpy()
    np.testing.assert_allclose(steps, np.abs(w).max(0) / 127, rtol=1e-6)


def test_qat_needs_train_mode():
    with pytest.raises(QuantConfigError, match="train mode.*model.train"):
        QAT(qat_config()).quantize(nn.Sequential(nn.Linear(2, 2)).eval())


def test_qat_converted_model_saves_and_loads(digits, tmp_path):
    oar.seed(0)
    qat = QAT(qat_config())
    model = qat.quantize(LeNet())
    train(model, model, digits["x_train"][:256], digits["y_train"][:256], epochs=1, lr=2e-3)
    converted = qat.convert(model).eval()
    oar.jit.save(converted, str(tmp_path / "qat"), input_spec=LENET_SPEC)
    loaded = oar.jit.load(str(tmp_path / "qat"))
    x = oar.to_tensor(digits["x_test"][:16])
    with oar.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), converted(x).numpy(), rtol=1e-5, atol=1e-5)
