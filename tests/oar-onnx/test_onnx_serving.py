"""The ``"onnxruntime"`` serving backend: Paddle's ``config.enable_onnxruntime()`` on a saved model,
an ``.onnx`` file given to ``Config``, and a real server process serving an ONNX model over the Open
Inference Protocol. These need oar-serving (the Predictor), which oar-onnx does not depend on."""

from __future__ import annotations

import os

import numpy as np
import pytest

import oar
import oar.onnx
from oar.static import InputSpec
from oar.vision.models import LeNet

inference = pytest.importorskip("oar.inference", reason="the serving backend needs oar-serving's Predictor")

SPEC = [InputSpec([None, 1, 28, 28], "float32", "image")]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    oar.seed(0)
    model = LeNet()
    model.eval()
    folder = tmp_path_factory.mktemp("models")
    prefix = str(folder / "lenet")
    oar.jit.save(model, prefix, input_spec=SPEC)
    oar.onnx.export(model, prefix, input_spec=SPEC)
    x = np.random.default_rng(0).standard_normal([5, 1, 28, 28]).astype(np.float32)
    return prefix, x, model(oar.to_tensor(x)).numpy()


def test_enable_onnxruntime_runs_a_saved_model_in_onnxruntime(saved):
    prefix, x, expected = saved
    config = inference.Config(prefix + ".json", prefix + ".pdiparams")
    config.enable_onnxruntime()
    config.enable_ort_optimization()
    config.set_cpu_math_library_num_threads(1)
    assert config.use_onnxruntime() and config.ort_optimization_enabled()
    predictor = inference.create_predictor(config)
    assert predictor.get_input_names() == ["image"] and predictor.get_output_names() == ["output_0"]
    handle = predictor.get_input_handle("image")
    handle.copy_from_cpu(x)
    predictor.run()
    got = predictor.get_output_handle("output_0").copy_to_cpu()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # The backend's answers equal oar's own executor's.
    oar_predictor = inference.create_predictor(inference.Config(prefix))
    np.testing.assert_allclose(got, oar_predictor.infer([x])[0], rtol=1e-4, atol=1e-5)


def test_an_onnx_file_runs_on_onnxruntime_by_default_and_bad_input_is_refused(saved):
    prefix, x, expected = saved
    config = inference.Config(prefix + ".onnx")
    assert config.serving_backend() == "onnxruntime"
    predictor = inference.create_predictor(config)
    np.testing.assert_allclose(predictor.infer([x])[0], expected, rtol=1e-4, atol=1e-5)
    with pytest.raises((ValueError, TypeError), match="image"):
        predictor.infer([x[:, :, :20]])
    np.testing.assert_allclose(predictor.infer([x[:1]])[0], expected[:1], rtol=1e-4, atol=1e-5)  # still serving


def test_ir_debug_writes_the_exported_model_and_what_onnxruntime_made_of_it(saved, tmp_path):
    prefix, x, _ = saved
    config = inference.Config(prefix)
    config.enable_onnxruntime()
    config.switch_ir_debug(True)
    config.set_optim_cache_dir(str(tmp_path / "debug"))
    inference.create_predictor(config).infer([x])
    written = sorted(os.listdir(tmp_path / "debug"))
    assert written == ["onnx_model.txt", "onnxruntime_optimized.onnx"]
    assert "Conv" in (tmp_path / "debug" / "onnx_model.txt").read_text()


def test_a_server_serves_an_onnx_model_version_beside_an_oar_one(saved, tmp_path):
    httpclient = pytest.importorskip("tritonclient.http", reason="the Open Inference Protocol client")
    from oar.serving import ServerProcess, write_repository

    prefix, x, expected = saved
    write_repository(prefix, str(tmp_path / "models"), "lenet", 1)
    write_repository(prefix + ".onnx", str(tmp_path / "models"), "lenet", 2)
    assert os.listdir(tmp_path / "models" / "lenet" / "2") == ["model.onnx"]
    with ServerProcess(str(tmp_path / "models")) as server:
        client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
        assert client.get_model_metadata("lenet", "2")["platform"] == "onnxruntime"
        assert client.get_model_metadata("lenet", "1")["platform"] == "oar"
        for version in ("1", "2"):
            request = httpclient.InferInput("image", list(x.shape), "FP32")
            request.set_data_from_numpy(x)
            answer = client.infer("lenet", [request], model_version=version)
            np.testing.assert_allclose(answer.as_numpy("output_0"), expected, rtol=1e-4, atol=1e-5)


def test_oar_serve_backend_flag_runs_saved_oar_models_on_onnxruntime(saved, tmp_path):
    httpclient = pytest.importorskip("tritonclient.http", reason="the Open Inference Protocol client")
    from oar.serving import ServerProcess, write_repository

    prefix, x, expected = saved
    write_repository(prefix, str(tmp_path / "models"), "lenet", 1)
    with ServerProcess(str(tmp_path / "models"), "--backend", "onnxruntime") as server:
        client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
        assert client.get_model_metadata("lenet")["platform"] == "onnxruntime"
        request = httpclient.InferInput("image", list(x.shape), "FP32")
        request.set_data_from_numpy(x)
        answer = client.infer("lenet", [request])
        np.testing.assert_allclose(answer.as_numpy("output_0"), expected, rtol=1e-4, atol=1e-5)
