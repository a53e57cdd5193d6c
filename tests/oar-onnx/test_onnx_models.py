"""Whole models as users write them, exported once with a dynamic batch and run by ONNX Runtime at
batch 1 and 7 through the one file: the zoo's LeNet, ResNet18, MobileNetV2 and VGG11, a
Transformer encoder layer and an LSTM, equal to oar eager within float32 tolerance."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx_test_support import export_and_compare, randomize_batch_norm_statistics

import oar
import oar.nn as nn
from oar.static import InputSpec
from oar.vision.models import LeNet, mobilenet_v2, resnet18, vgg11


class LSTMClassifier(nn.Layer):
    """A sentence classifier as Paddle's text tutorials write it: embedding, LSTM, last state."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2)
        self.fc = nn.Linear(24, 3)

    def forward(self, ids):
        out, (h, c) = self.lstm(self.embedding(ids))
        return self.fc(h[-1]), out


def _encoder():
    return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0)


MODELS = {
    # name: (constructor, input shape without the batch, dtype)
    "lenet": (LeNet, [1, 28, 28], "float32"),
    "resnet18": (lambda: resnet18(num_classes=10), [3, 64, 64], "float32"),
    "mobilenet_v2": (lambda: mobilenet_v2(num_classes=10), [3, 64, 64], "float32"),
    "encoder_layer": (_encoder, [10, 32], "float32"),
    "lstm": (LSTMClassifier, [12], "int64"),
}


def _inputs(shape, dtype, batch, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(0, 50, [batch, *shape]).astype(np.int64)
    return rng.standard_normal([batch, *shape]).astype(np.float32)


@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_eager_at_batch_1_and_7_through_one_file(name, tmp_path):
    make, shape, dtype = MODELS[name]
    oar.seed(0)
    model = make()
    randomize_batch_norm_statistics(model)
    model.eval()
    spec = [InputSpec([None, *shape], dtype, "x")]
    first, second = _inputs(shape, dtype, 1, 1), _inputs(shape, dtype, 7, 2)
    exported = export_and_compare(model, [first], tmp_path, specs=spec, feeds_for=[[second]], name=name)
    onnx.shape_inference.infer_shapes(exported, strict_mode=True)
    ops = {n.op_type for n in exported.graph.node}
    assert not ops & {"Cast"} or name == "lstm", f"{name}: a float model needs no Cast, got {sorted(ops)}"


@pytest.mark.slow
def test_vgg11_matches_eager(tmp_path):
    # VGG's classifier holds 120M parameters whatever the input size: one model file of ~0.5 GB.
    oar.seed(0)
    model = vgg11(num_classes=10)
    model.eval()
    spec = [InputSpec([None, 3, 32, 32], "float32", "x")]
    export_and_compare(model, [_inputs([3, 32, 32], "float32", 1, 1)], tmp_path, specs=spec,
                       feeds_for=[[_inputs([3, 32, 32], "float32", 7, 2)]], name="vgg11")


def test_an_int8_model_from_oar_slim_exports_as_qdq_with_int8_weights(tmp_path):
    quantization = pytest.importorskip("oar.quantization", reason="the INT8 model comes from oar-slim")
    import onnxruntime as ort
    from onnx_test_support import tolerance

    from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver

    oar.seed(0)
    model = LeNet()
    model.eval()
    ptq = quantization.PTQ(quantization.QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model)
    with oar.no_grad():
        observed(oar.to_tensor(_inputs([1, 28, 28], "float32", 32, 0)))  # calibration
    converted = ptq.convert(observed)
    path = str(tmp_path / "lenet_int8")
    oar.onnx.export(converted, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "x")])
    exported = onnx.load(path + ".onnx")
    onnx.checker.check_model(exported, full_check=True)
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in exported.graph.node}
    assert sum(t.data_type == onnx.TensorProto.INT8 and t.name.endswith(".weight") for t in exported.graph.initializer) == 5
    # Unoptimized, ONNX Runtime computes the QDQ math as oar does (its optimizer would fuse the
    # pairs into int8 kernels that requantize in between: tests/slim checks those).
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path + ".onnx", options, providers=["CPUExecutionProvider"])
    for batch in (1, 7):  # one dynamic-batch file
        x = _inputs([1, 28, 28], "float32", batch, batch)
        with oar.no_grad():
            expected = converted(oar.to_tensor(x)).numpy()
        got = session.run(None, {"x": x})[0]
        rtol, atol = tolerance([expected], [x])
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
