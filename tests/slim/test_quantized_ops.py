"""oar-slim's ``quantized_ops`` pass: a converted model's QDQ chains become int8 layers
(``quantized_conv2d`` / ``quantized_linear``) that compute what the QDQ program computes."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.quantization import PTQ, QuantConfig
from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver
from oar.slim import passes
from oar.static import InputSpec
from oar.static.passes import optimize
from oar.testing import sum_tolerance

from .conftest import LENET_SPEC
from .test_ptq import ptq_lenet


@pytest.fixture
def int8_kernels_assumed(monkeypatch):
    """Make the pipeline rewrite as it does where oar-numba's int8 kernels are installed (the
    reference kernels then run the int8 ops), so the rewrite is tested in every environment."""
    monkeypatch.setattr(passes, "compiled_int8_kernels", lambda backend="cpu": True)


def converted(model, calibration: np.ndarray, weight=None):
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=weight or AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model.eval())
    with oar.no_grad():
        observed(oar.to_tensor(calibration))
    return ptq.convert(observed)


def program_of(model, spec):
    static = oar.jit.to_static(model, input_spec=spec)
    with oar.no_grad():
        static(oar.zeros([1 if d in (None, -1) else d for d in spec[0].shape], spec[0].dtype))
    return static.forward.concrete_program


def saved_and_loaded(model, spec, tmp_path):
    prefix = str(tmp_path / "model")
    oar.jit.save(model, prefix, input_spec=spec)
    return oar.jit.load(prefix)


def randomize_batch_norms(model, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.sublayers():
        if isinstance(layer, nn.BatchNorm2D):
            c = layer.weight.shape[0]
            layer.weight.set_value((rng.uniform(0.5, 1.5, c) * rng.choice([-1, 1], c)).astype(np.float32))
            layer.bias.set_value(rng.normal(0, 0.3, c).astype(np.float32))
            layer._mean.set_value(rng.normal(0, 0.3, c).astype(np.float32))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype(np.float32))


def test_lenet_runs_as_int8_convolutions_and_linears(float_lenet, digits, int8_kernels_assumed):
    _, _, int8_lenet = ptq_lenet(float_lenet, digits)
    nodes = optimize(program_of(int8_lenet, LENET_SPEC)).nodes
    assert [n.op for n in nodes] == ["quantize_linear", "quantized_conv2d", "quantize_linear", "quantized_conv2d",
                                     "flatten", "quantize_linear", "quantized_linear", "quantize_linear",
                                     "quantized_linear", "quantize_linear", "quantized_linear"]
    convs = [n for n in nodes if n.op == "quantized_conv2d"]
    assert all(n.attrs["act"] == "relu" and n.attrs["max_pool"] == 2 and len(n.inputs) == 7 for n in convs)


def test_the_int8_model_computes_what_the_qdq_model_does(float_lenet, digits, int8_kernels_assumed, tmp_path):
    _, _, int8_lenet = ptq_lenet(float_lenet, digits)
    x = oar.to_tensor(digits["x_test"])
    with oar.no_grad():
        qdq = int8_lenet(x).numpy()
        integer = saved_and_loaded(int8_lenet, LENET_SPEC, tmp_path)(x).numpy()
    # Each layer sums the same integer products, exactly instead of in float32; a value that lands
    # on a rounding tie of the next quantization may move by one step, so no bitwise equality.
    rtol, atol = sum_tolerance("float32", terms=400, scale=np.abs(qdq).max())
    close = np.isclose(integer, qdq, rtol=rtol, atol=atol)
    assert close.mean() > 0.99, (close.mean(), np.abs(integer - qdq).max())
    np.testing.assert_allclose(integer, qdq, atol=0.05 * np.abs(qdq).max())
    assert (integer.argmax(-1) == qdq.argmax(-1)).mean() > 0.99


def test_one_int8_linear_equals_the_qdq_linear_within_float32_rounding(int8_kernels_assumed, tmp_path):
    oar.seed(1)
    model = nn.Sequential(nn.Linear(300, 40), nn.ReLU())
    x = np.random.default_rng(1).normal(size=(16, 300)).astype(np.float32)
    model = converted(model, x)
    spec = [InputSpec([None, 300], "float32", "x")]
    assert [n.op for n in optimize(program_of(model, spec)).nodes] == ["quantize_linear", "quantized_linear"]
    with oar.no_grad():
        expected = model(oar.to_tensor(x)).numpy()
        got = saved_and_loaded(model, spec, tmp_path)(oar.to_tensor(x)).numpy()
    rtol, atol = sum_tolerance("float32", terms=300, scale=np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


class ConvBlock(nn.Layer):
    """conv + batch norm + relu twice, a residual add, and a classifier: the ResNet pattern."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU())
        self.branch = nn.Sequential(nn.Conv2D(8, 8, 3, padding=1, bias_attr=False), nn.BatchNorm2D(8))
        self.down = nn.Sequential(nn.Conv2D(8, 16, 3, stride=2, padding=1), nn.BatchNorm2D(16), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = self.stem(x)
        y = nn.functional.relu(y + self.branch(y))
        return self.fc(oar.flatten(self.pool(self.down(y)), 1))


@pytest.mark.parametrize("weight", [AbsMaxChannelWiseWeightObserver(), AbsmaxObserver()],
                         ids=["per_channel", "per_tensor"])
def test_folded_batch_norm_joins_the_int8_convolutions_steps(weight, int8_kernels_assumed, tmp_path):
    oar.seed(2)
    model = ConvBlock()
    randomize_batch_norms(model)
    x = np.random.default_rng(2).normal(size=(8, 3, 16, 16)).astype(np.float32)
    model = converted(model, x, weight)
    spec = [InputSpec([None, 3, 16, 16], "float32", "x")]
    ops = [n.op for n in optimize(program_of(model, spec)).nodes]
    assert ops.count("quantized_conv2d") == 3 and ops.count("quantized_linear") == 1
    assert not {"conv", "fused_conv2d", "dequantize_linear", "batch_norm_infer"} & set(ops), ops
    with oar.no_grad():
        expected = model(oar.to_tensor(x)).numpy()
        got = saved_and_loaded(model, spec, tmp_path)(oar.to_tensor(x)).numpy()
    # Batch norm's factor multiplies each channel's step instead of its float weights: float32
    # rounding of the same sums, and (rarely) one quantization step where a value sits on a tie.
    rtol, atol = sum_tolerance("float32", terms=72, scale=np.abs(expected).max())
    assert np.isclose(got, expected, rtol=rtol, atol=atol).mean() > 0.97
    np.testing.assert_allclose(got, expected, atol=0.05 * np.abs(expected).max())


def test_layers_left_in_float_keep_their_float_kernels(int8_kernels_assumed):
    oar.seed(3)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver())
    config.add_name_config("2", activation=None, weight=None)  # the last Linear stays float
    ptq = PTQ(config)
    observed = ptq.quantize(model.eval())
    with oar.no_grad():
        observed(oar.randn([4, 8]))
    ops = [n.op for n in optimize(program_of(ptq.convert(observed), [InputSpec([None, 8], "float32", "x")])).nodes]
    assert ops == ["quantize_linear", "quantized_linear", "linear"], ops


def test_without_compiled_int8_kernels_the_pipeline_keeps_the_qdq_program(float_lenet, digits, monkeypatch):
    monkeypatch.setattr(passes, "compiled_int8_kernels", lambda backend="cpu": False)
    _, _, int8_lenet = ptq_lenet(float_lenet, digits)
    ops = [n.op for n in optimize(program_of(int8_lenet, LENET_SPEC)).nodes]
    assert "quantized_conv2d" not in ops and ops.count("dequantize_linear") == 10


def test_the_predictor_runs_int8_layers_and_delete_pass_returns_to_qdq(float_lenet, digits, int8_kernels_assumed,
                                                                      tmp_path):
    inference = pytest.importorskip("oar.inference")
    _, _, int8_lenet = ptq_lenet(float_lenet, digits)
    prefix = str(tmp_path / "lenet")
    oar.jit.save(int8_lenet, prefix, input_spec=LENET_SPEC)
    config = inference.Config(prefix)
    assert "quantized_ops" in config.pass_builder().all_passes()
    x = digits["x_test"][:64]
    with oar.no_grad():
        qdq = int8_lenet(oar.to_tensor(x)).numpy()
    integer = inference.create_predictor(config).run([x])[0]
    assert (integer.argmax(-1) == qdq.argmax(-1)).all()
    config = inference.Config(prefix)
    config.delete_pass("quantized_ops")
    np.testing.assert_array_equal(inference.create_predictor(config).run([x])[0], qdq)
