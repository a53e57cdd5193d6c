"""PTQ on the digits LeNet, and the INT8 artefact convert makes: int8 weight buffers, QDQ math
equal to numpy's, jit.save writing int8 (and a 3.5x smaller file), jit.load, the Predictor and
ONNX Runtime running it without oar-slim."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import oar
from oar import nn
from oar.quantization import PTQ, QuantConfig, QuantConfigError
from oar.quantization.observers import (
    AbsMaxChannelWiseWeightObserver,
    AbsmaxObserver,
    HistObserver,
    KLObserver,
    MovingAverageAbsmaxObserver,
    MSEObserver,
)
from oar.static import InputSpec

from .conftest import LENET_SPEC, accuracy


def calibrate(model, x: np.ndarray, batches: int = 4, size: int = 64) -> None:
    with oar.no_grad():
        for b in range(batches):
            model(oar.to_tensor(x[b * size:(b + 1) * size]))


def ptq_lenet(float_lenet, digits, activation=None, weight=None):
    ptq = PTQ(QuantConfig(activation=activation or AbsmaxObserver(), weight=weight or AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(float_lenet)
    calibrate(observed, digits["x_train"])
    return ptq, observed, ptq.convert(observed)


@pytest.mark.parametrize("activation", [AbsmaxObserver(), MovingAverageAbsmaxObserver(), HistObserver(),
                                        KLObserver(), MSEObserver()], ids=str)
def test_ptq_lenet_keeps_test_accuracy_within_a_point(float_lenet, digits, activation):
    reference = accuracy(float_lenet, digits["x_test"], digits["y_test"])
    assert reference >= 0.93
    _, observed, converted = ptq_lenet(float_lenet, digits, activation=activation)
    assert accuracy(observed, digits["x_test"], digits["y_test"]) == reference  # observers only watch
    assert accuracy(converted, digits["x_test"], digits["y_test"]) >= reference - 0.01


def test_ptq_leaves_the_float_model_alone_and_works_in_eval_mode(float_lenet, digits):
    before = {k: v.numpy().copy() for k, v in float_lenet.state_dict().items()}
    _, observed, converted = ptq_lenet(float_lenet, digits)
    assert not observed.training
    assert {type(layer).__name__ for layer in float_lenet.sublayers()} >= {"Conv2D", "Linear"}
    for k, v in float_lenet.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_converted_layers_hold_int8_weights_and_no_float_weight(float_lenet, digits):
    _, _, converted = ptq_lenet(float_lenet, digits)
    quanted = [layer for layer in converted.sublayers() if type(layer).__name__ in ("QuantedConv2D", "QuantedLinear")]
    assert len(quanted) == 5
    for layer in quanted:
        assert layer.weight.dtype is oar.int8
        assert "weight" not in layer._parameters and "weight" in layer.state_dict()
        steps = layer.weight_quanter._dequanter._scales
        assert steps.shape == [layer.weight.shape[0 if type(layer).__name__ == "QuantedConv2D" else 1]]
        assert int(np.abs(layer.weight.numpy()).max()) == 127  # each channel's abs-max maps to 127
    assert sorted(n.rsplit(".", 1)[1] for n, _ in converted.named_parameters()) == ["bias"] * 5


def np_qdq(x, absmax, axis=None):
    """The converted math, from the definitions: step = absmax / 127, q = clip(rint(x / step))."""
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        absmax = absmax.reshape(shape)
    step = (absmax / 127.0).astype(np.float32)
    return np.clip(np.rint(x / step), -128, 127) * step


def test_converted_mlp_equals_the_numpy_qdq_reimplementation():
    oar.seed(1)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    calibration = np.random.default_rng(0).normal(0, 1, (64, 12)).astype(np.float32)
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model)
    observed(oar.to_tensor(calibration))
    converted = ptq.convert(observed)

    w1, b1 = model[0].weight.numpy(), model[0].bias.numpy()
    w2, b2 = model[2].weight.numpy(), model[2].bias.numpy()
    a1 = np.abs(calibration).max()
    a2 = np.abs(np.maximum(calibration @ w1 + b1, 0)).max()  # the second Linear's input
    x = np.random.default_rng(1).normal(0, 1.5, (8, 12)).astype(np.float32)  # beyond the calibrated range too
    h = np.maximum(np_qdq(x, a1) @ np_qdq(w1, np.abs(w1).max(0), axis=1) + b1, 0)
    expected = np_qdq(h, a2) @ np_qdq(w2, np.abs(w2).max(0), axis=1) + b2
    with oar.no_grad():
        got = converted(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    q1 = np.clip(np.rint(w1 / (np.abs(w1).max(0) / 127.0).astype(np.float32)), -128, 127)
    np.testing.assert_array_equal(converted[0].weight.numpy(), q1.astype(np.int8))


def np_conv2d(x, w, b, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))  # N C H W kh kw
    return np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]


def test_converted_conv2d_equals_the_numpy_qdq_reimplementation():
    oar.seed(2)
    conv = nn.Conv2D(3, 4, 3, padding=1)
    calibration = np.random.default_rng(2).normal(0, 1, (4, 3, 6, 6)).astype(np.float32)
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(nn.Sequential(conv))
    observed(oar.to_tensor(calibration))
    converted = ptq.convert(observed)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    x = calibration[:2]
    expected = np_conv2d(np_qdq(x, np.abs(calibration).max()), np_qdq(w, np.abs(w).max(axis=(1, 2, 3)), axis=0), b, 1)
    with oar.no_grad():
        np.testing.assert_allclose(converted(oar.to_tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_convert_refuses_an_uncalibrated_model_naming_the_layer(float_lenet):
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
    with pytest.raises(QuantConfigError, match="'features.0'.*seen no data.*calibration"):
        ptq.convert(ptq.quantize(float_lenet))


def test_ptq_inplace_needs_eval_mode():
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(QuantConfigError, match="eval mode.*model.eval"):
        PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())).quantize(model, inplace=True)


def test_weight_only_config_needs_no_calibration():
    model = nn.Sequential(nn.Linear(6, 3)).eval()
    ptq = PTQ(QuantConfig(activation=None, weight=AbsMaxChannelWiseWeightObserver()))
    converted = ptq.convert(ptq.quantize(model))
    assert converted[0].weight.dtype is oar.int8 and converted[0].activation_quanter is None
    x = oar.randn([4, 6])
    np.testing.assert_allclose(converted(x).numpy(), model(x).numpy(), atol=0.02)


@pytest.fixture(scope="module")
def saved(float_lenet, digits, tmp_path_factory):
    """The PTQ'd LeNet saved, and its converted eager model."""
    _, _, converted = ptq_lenet(float_lenet, digits)
    converted.eval()
    prefix = str(tmp_path_factory.mktemp("int8") / "lenet_int8")
    oar.jit.save(converted, prefix, input_spec=LENET_SPEC)
    return prefix, converted


def test_saved_program_names_only_nn_and_core_ops(saved):
    prefix, _ = saved
    with open(prefix + ".json") as f:
        requires = json.load(f)["requires"]
    assert {p["package"] for p in requires["plugins"].values()} <= {"oar-core", "oar-nn"}
    assert {"quantize_linear", "dequantize_linear"} <= set(requires["ops"])
    assert "fake_quantize_dequantize" not in requires["ops"]


def test_saved_weights_are_int8(saved):
    prefix, _ = saved
    state = oar.load(prefix + ".pdiparams", return_numpy=True)["params"]
    weights = {k: v for k, v in state.items() if k.endswith(".weight")}
    assert len(weights) == 5 and all(v.dtype == np.int8 for v in weights.values())


def test_jit_load_runs_the_int8_model_as_the_eager_one(saved, digits):
    prefix, converted = saved
    loaded = oar.jit.load(prefix)
    x = oar.to_tensor(digits["x_test"][:32])
    with oar.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), converted(x).numpy(), rtol=1e-5, atol=1e-5)


def test_predictor_runs_the_int8_model(saved, digits):
    inference = pytest.importorskip("oar.inference")
    prefix, converted = saved
    predictor = inference.create_predictor(inference.Config(prefix))
    x = digits["x_test"][:32]
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.copy_from_cpu(x)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    with oar.no_grad():
        np.testing.assert_allclose(out, converted(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_saved_int8_layers_hold_their_weight_bias_and_two_steps_only(saved):
    prefix, converted = saved
    for layer in converted.sublayers():
        if type(layer).__name__ in ("QuantedConv2D", "QuantedLinear"):
            qdq = layer.activation_quanter
            assert qdq._quanter._scales is qdq._dequanter._scales  # one step, stored once
            assert qdq._quanter._zero_point is None and layer.weight_quanter._dequanter._zero_point is None
    state = oar.load(prefix + ".pdiparams", return_numpy=True)
    kinds = sorted({name.split(".", 2)[2] for name in state["params"]})  # less the layer path (fc.0)
    assert len(state["params"]) == 20 and kinds == ["activation_quanter._quanter._scales", "bias", "weight",
                                                     "weight_quanter._dequanter._scales"], kinds
    # The zero points are constants of the program, one per shape: () and each layer's channels.
    assert sorted(a.shape for a in state["constants"].values()) == [(), (6,), (10,), (16,), (84,), (120,)]
    assert all(a.dtype == np.int8 and not a.any() for a in state["constants"].values())


def test_int8_lenet_file_is_at_least_3_5x_smaller(float_lenet, saved, tmp_path):
    prefix, _ = saved
    oar.jit.save(float_lenet, str(tmp_path / "float"), input_spec=LENET_SPEC)
    ratio = os.path.getsize(tmp_path / "float.pdiparams") / os.path.getsize(prefix + ".pdiparams")
    assert ratio >= 3.5, ratio


def test_a_nonzero_zero_point_is_kept_and_used():
    from oar.quantization.format import LinearDequanter, LinearQuanter

    x = np.array([0.5, -2.0, 1.0], np.float32)
    quanter = LinearQuanter(1.27, zero_point=3)
    assert "_zero_point" in quanter.state_dict()
    q = quanter(oar.to_tensor(x))
    np.testing.assert_array_equal(q.numpy(), np.clip(np.rint(x / np.float32(0.01)) + 3, -128, 127))
    np.testing.assert_allclose(LinearDequanter(1.27, zero_point=3)(q).numpy(), (q.numpy() - 3.0) * 0.01, rtol=1e-6)
    assert LinearQuanter(1.27, zero_point=0)._zero_point is None


def test_int8_file_is_at_least_3_5x_smaller_for_a_weight_dominated_model(tmp_path):
    oar.seed(3)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).eval()
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model)
    observed(oar.randn([32, 256]))
    spec = [InputSpec([None, 256], "float32", "x")]
    oar.jit.save(model, str(tmp_path / "float"), input_spec=spec)
    oar.jit.save(ptq.convert(observed), str(tmp_path / "int8"), input_spec=spec)
    ratio = os.path.getsize(tmp_path / "float.pdiparams") / os.path.getsize(tmp_path / "int8.pdiparams")
    assert ratio >= 3.5, ratio


def test_onnx_export_holds_qdq_nodes_and_int8_weights(saved, digits, tmp_path):
    pytest.importorskip("oar.onnx")
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import oar.onnx

    _, converted = saved
    path = str(tmp_path / "lenet_int8")
    oar.onnx.export(converted, path, input_spec=LENET_SPEC)
    model = onnx.load(path + ".onnx")
    ops = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    int8 = {i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8}
    assert sum(name.endswith(".weight") for name in int8) == 5
    x = digits["x_test"][:32]
    with oar.no_grad():
        expected = converted(oar.to_tensor(x)).numpy()
    # Unoptimized, ONNX Runtime runs the same QDQ float math; its optimizer fuses QDQ into int8
    # kernels (QLinearConv, ...), which requantize in between: close, not equal.
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for options, atol in ((plain, 1e-4), (ort.SessionOptions(), 0.5)):
        session = ort.InferenceSession(path + ".onnx", options, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, expected, atol=atol)
        assert (got.argmax(-1) == expected.argmax(-1)).mean() >= 0.95
