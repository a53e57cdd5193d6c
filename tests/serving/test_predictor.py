"""oar.inference: Paddle Inference's Config, Predictor, handles and pool on models saved by oar.jit.save."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import oar
import oar.inference as paddle_infer
from oar.errors import DeviceError, PluginError
from oar.testing import sum_tolerance

from .conftest import lenet_docs, lenet_input


def eager(prefix: str, x: np.ndarray) -> np.ndarray:
    with oar.no_grad():
        return oar.jit.load(prefix)(oar.to_tensor(x)).numpy()


def close(got, expected, terms: int = 400):
    rtol, atol = sum_tolerance("float32", terms, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_paddle_handle_code_runs_unchanged(saved):
    prefix = saved["lenet"]
    config = paddle_infer.Config(prefix + ".json", prefix + ".pdiparams")
    config.disable_gpu()
    config.switch_ir_optim(True)
    config.enable_memory_optim()
    config.set_cpu_math_library_num_threads(1)
    predictor = paddle_infer.create_predictor(config)
    x = lenet_input(4)
    input_names = predictor.get_input_names()
    handle = predictor.get_input_handle(input_names[0])
    handle.reshape(x.shape)
    handle.copy_from_cpu(x)
    assert handle.shape() == [4, 1, 28, 28] and handle.type() is paddle_infer.DataType.FLOAT32
    predictor.run()
    output = predictor.get_output_handle(predictor.get_output_names()[0])
    result = output.copy_to_cpu()
    assert output.shape() == [4, 10] and output.name() == "output_0"
    close(result, eager(prefix, x))


def test_run_takes_a_list_and_returns_tensors(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    x = lenet_input(3)
    [out] = predictor.run([x])
    assert isinstance(out, oar.Tensor) and out.shape == [3, 10]
    close(out.numpy(), eager(saved["lenet"], x))
    [again] = predictor.run([oar.to_tensor(x)])  # oar tensors are inputs too, as paddle.Tensor in Paddle
    np.testing.assert_array_equal(again.numpy(), out.numpy())


def test_config_finds_the_model_from_a_prefix_a_file_or_a_folder(saved, tmp_path):
    prefix = saved["lenet"]
    for config in (paddle_infer.Config(prefix), paddle_infer.Config(prefix + ".json")):
        assert config.prog_file() == prefix + ".json" and config.params_file() == prefix + ".pdiparams"
    folder = tmp_path / "one"
    folder.mkdir()
    for suffix in (".json", ".pdiparams"):
        (folder / ("inference" + suffix)).write_bytes(open(prefix + suffix, "rb").read())
    assert paddle_infer.Config(str(folder)).params_file() == str(folder / "inference.pdiparams")
    with pytest.raises(FileNotFoundError, match=r"does not exist"):
        paddle_infer.create_predictor(paddle_infer.Config(str(tmp_path / "missing")))
    with pytest.raises(FileNotFoundError, match=r"exactly one model"):
        paddle_infer.Config(str(tmp_path)).prog_file()


def test_a_params_file_of_another_name(saved, tmp_path):
    prefix = saved["lenet"]
    (tmp_path / "net.json").write_bytes(open(prefix + ".json", "rb").read())
    (tmp_path / "weights.bin").write_bytes(open(prefix + ".pdiparams", "rb").read())
    predictor = paddle_infer.create_predictor(paddle_infer.Config(str(tmp_path / "net.json"),
                                                                  str(tmp_path / "weights.bin")))
    x = lenet_input(2)
    close(predictor.run([x])[0].numpy(), eager(prefix, x))


@pytest.mark.parametrize("bad, error, message", [
    (np.zeros([2, 28, 28], "float32"), ValueError, r"input 'image'.*float32\[-1, 1, 28, 28\].*got float32\[2, 28, 28\]"
                                                   r".*rank 3"),
    (np.zeros([2, 3, 28, 28], "float32"), ValueError, r"got float32\[2, 3, 28, 28\]: dim 1 is 3, not 1"),
    (np.zeros([2, 1, 28, 28], "float64"), TypeError, r"got float64\[2, 1, 28, 28\].*astype\('float32'\)"),
])
def test_bad_input_names_the_input_and_the_saved_spec_and_the_predictor_keeps_working(saved, bad, error, message):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    with pytest.raises(error, match=message):
        predictor.run([bad])
    handle = predictor.get_input_handle("image")
    with pytest.raises(error, match=message):
        handle.copy_from_cpu(bad)
    x = lenet_input(2)
    close(predictor.run([x])[0].numpy(), eager(saved["lenet"], x))


def test_handles_refuse_what_they_cannot_do(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    with pytest.raises(ValueError, match=r"input 'image' was not fed.*copy_from_cpu"):
        predictor.run()
    handle = predictor.get_input_handle("image")
    handle.reshape([2, 1, 28, 28])
    with pytest.raises(ValueError, match=r"not fed"):
        predictor.run()  # reshaped, never fed
    with pytest.raises(ValueError, match=r"copy_from_cpu got shape \[3, 1, 28, 28\] after reshape\(\[2, 1, 28, 28\]\)"):
        handle.copy_from_cpu(lenet_input(3))
    with pytest.raises(ValueError, match=r"dim 2 is 27"):
        handle.reshape([1, 1, 27, 28])
    with pytest.raises(ValueError, match=r"output 'output_0' holds no data: call predictor.run\(\) first"):
        predictor.get_output_handle("output_0").copy_to_cpu()
    with pytest.raises(ValueError, match=r"no input 'x'; its inputs are \['image'\]"):
        predictor.get_input_handle("x")
    with pytest.raises(ValueError, match=r"takes 1 input\(s\) \['image'\], got 2"):
        predictor.run([lenet_input(), lenet_input()])
    handle.copy_from_cpu(lenet_input(2))
    assert predictor.run() is True


def test_clones_share_weights_and_run_in_threads(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    pool = paddle_infer.PredictorPool(paddle_infer.Config(saved["lenet"]), 3)
    assert len(pool) == 3 and pool.retrive(0) is not pool.retrieve(1)
    clone = predictor.clone()
    weights = dict(predictor._runner.layer.named_parameters())
    for name, p in clone._runner.layer.named_parameters():
        assert p is weights[name]  # shared, not copied
    inputs = [lenet_input(2, seed=s) for s in range(12)]
    expected = [predictor.run([x])[0].numpy() for x in inputs]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(idx: int) -> None:
        mine = pool.retrive(idx)
        try:
            for i in range(idx, len(inputs), 3):
                h = mine.get_input_handle("image")
                h.copy_from_cpu(inputs[i])
                mine.run()
                results[i] = mine.get_output_handle("output_0").copy_to_cpu()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, e in enumerate(expected):
        np.testing.assert_array_equal(results[i], e)
    with pytest.raises(ValueError, match=r"out of range for a pool of 3"):
        pool.retrive(3)


def test_passes_can_be_listed_deleted_and_debugged(saved, tmp_path):
    config = paddle_infer.Config(saved["lenet"])
    passes = config.pass_builder().all_passes()
    assert "fuse_conv2d" in passes and "constant_folding" in passes
    config.delete_pass("fuse_conv2d")
    assert "fuse_conv2d" not in config.pass_builder().all_passes()
    with pytest.raises(ValueError, match=r"no pass 'fuse_everything'; the passes are \["):
        config.delete_pass("fuse_everything")
    config.switch_ir_debug(True)
    config.set_optim_cache_dir(str(tmp_path / "debug"))
    predictor = paddle_infer.create_predictor(config)
    written = sorted(os.listdir(tmp_path / "debug"))
    assert written[0] == "00_input.txt" and written[-1].endswith("_dead_code_elimination.txt")
    assert not any(name.split("_", 1)[1] == "fuse_conv2d.txt" for name in written)
    before = (tmp_path / "debug" / written[0]).read_text()
    after = (tmp_path / "debug" / written[-1]).read_text()
    assert " = conv(" in before and "fused_elementwise" not in before and "fused_elementwise" in after
    assert [op.split("_", 1)[1][:-4] for op in written[1:-1]] == config.pass_builder().all_passes()
    x = lenet_input(2)
    close(predictor.run([x])[0].numpy(), eager(saved["lenet"], x))

    unoptimized = paddle_infer.Config(saved["lenet"])
    unoptimized.switch_ir_optim(False)
    assert unoptimized.pass_builder().all_passes() == [] and unoptimized.optimization_level() == 0
    close(paddle_infer.create_predictor(unoptimized).run([x])[0].numpy(), eager(saved["lenet"], x))
    level1 = paddle_infer.Config(saved["lenet"])
    level1.set_optimization_level(1)
    assert set(level1.pass_builder().all_passes()) < set(passes)
    with pytest.raises(ValueError, match=r"an int from 0 to 3"):
        level1.set_optimization_level(7)


def test_summary_names_the_settings(saved):
    config = paddle_infer.Config(saved["lenet"])
    config.set_cpu_math_library_num_threads(2)
    config.delete_pass("fuse_linear")
    text = config.summary()
    assert saved["lenet"] + ".json" in text and "fuse_linear" in text and "| cpu math threads   | 2" in text
    oar.set_num_threads(1)


def test_gpu_and_other_backends_say_what_to_install(saved):
    config = paddle_infer.Config(saved["lenet"])
    if "gpu" not in oar.plugins.registries().backends:
        with pytest.raises(DeviceError, match=r"oar-triton"):
            config.enable_use_gpu(100, 0)
        assert not config.use_gpu()
    with pytest.raises(PluginError, match=r"no serving backend 'tensorrt'; registered: \[.*'oar'"):
        config.set_serving_backend("tensorrt")
    if "onnxruntime" not in paddle_infer.serving_backends():
        with pytest.raises(PluginError, match=r"install oar-onnx"):
            config.enable_onnxruntime()
    assert "oar" in paddle_infer.serving_backends() and config.serving_backend() == "oar"


def test_a_third_party_serving_backend_plugs_in(saved):
    calls = []

    class EchoRunner:
        input_specs = [{"name": "image", "shape": [-1, 1, 28, 28], "dtype": "float32"}]
        output_specs = [{"name": "mean", "shape": [-1], "dtype": "float32"}]

        def __call__(self, inputs):
            calls.append(sorted(inputs))
            return {"mean": inputs["image"].reshape(len(inputs["image"]), -1).mean(axis=1)}

    class EchoPlugin:  # a third party's package would hold this in the module of its "oar" entry point
        @oar.plugins.hookimpl
        def oar_register_serving_backends(self, serving_backends):
            serving_backends.register("echo", lambda program_file, settings: EchoRunner())

    oar.plugins.register(EchoPlugin(), name="echo-plugin")
    try:
        config = paddle_infer.Config(saved["lenet"])
        config.set_serving_backend("echo")
        predictor = paddle_infer.create_predictor(config)
        [out] = predictor.run([np.full([2, 1, 28, 28], 3.0, "float32")])
        assert out.tolist() == [3.0, 3.0] and calls == [["image"]]
        assert predictor.get_output_names() == ["mean"]
        [again] = predictor.clone().run([np.ones([1, 1, 28, 28], "float32")])  # no clone(): the runner is shared
        assert again.tolist() == [1.0]
        # oar-serve --backend echo: the backend of every model whose config.json names none.
        from oar.serving import load_repository, write_repository

        repository = os.path.join(os.path.dirname(saved["lenet"]), "echo-repository")
        write_repository(saved["lenet"], repository, "lenet", 1)
        write_repository(saved["lenet"], repository, "named", 1, config={"backend": "oar"})
        models = load_repository(repository, default_backend="echo")
        assert models["lenet"].versions["1"].backend == "echo" and models["named"].versions["1"].backend == "oar"
        assert models["lenet"].versions["1"].outputs[0]["name"] == "mean"
    finally:
        oar.plugins.unregister("echo-plugin")
    assert "echo" not in paddle_infer.serving_backends()


def test_an_onnx_file_is_a_model_of_its_own_that_defaults_to_onnxruntime(saved, tmp_path):
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"")  # resolving reads no bytes: the backend does
    for given in (str(onnx_file), str(tmp_path)):  # the file, or a folder holding only it
        config = paddle_infer.Config(given)
        assert config.model_files() == (str(onnx_file), "") and config.serving_backend() == "onnxruntime"
    config = paddle_infer.Config(str(onnx_file))
    config.set_serving_backend("oar")  # an explicit choice wins
    assert config.serving_backend() == "oar" and not config.use_onnxruntime()
    assert paddle_infer.Config(saved["lenet"]).serving_backend() == "oar"
    config = paddle_infer.Config(saved["lenet"])
    assert config.to_dict()["ort_optimization"] is False
    config.enable_ort_optimization()
    assert config.ort_optimization_enabled() and config.to_dict()["ort_optimization"] is True
    with pytest.raises(FileNotFoundError, match="ONNX model file"):
        paddle_infer.Config(str(tmp_path / "missing.onnx")).model_files()


def test_output_hook_sees_every_op(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    seen = []
    predictor.register_output_hook(lambda op, name, tensor: seen.append((op, tensor.shape)))
    predictor.run([lenet_input(2)])
    assert seen and seen[-1][1] == [2, 10] and any("conv2d" in op for op, _ in seen)


def test_try_shrink_memory_and_version(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lenet"]))
    predictor.run([lenet_input(64)])
    assert predictor.try_shrink_memory() >= 0
    with pytest.raises(ValueError, match="holds no data"):
        predictor.get_output_handle("output_0").copy_to_cpu()
    assert paddle_infer.get_version().startswith("oar ")


def test_int64_inputs(saved):
    predictor = paddle_infer.create_predictor(paddle_infer.Config(saved["lookup"]))
    assert predictor.get_input_handle("ids").type() is paddle_infer.DataType.INT64
    ids = np.array([[0, 1, 2], [7, 7, 7]], "int64")
    close(predictor.run([ids])[0].numpy(), eager(saved["lookup"], ids), terms=3)


def test_the_docs_lenet_predicts_like_the_trained_layer(tmp_path):
    layer = lenet_docs()
    layer.eval()
    prefix = str(tmp_path / "lenet")
    oar.jit.save(layer, prefix, input_spec=[oar.static.InputSpec([None, 1, 28, 28], "float32", "x")])
    x = lenet_input(5)
    with oar.no_grad():
        expected = layer(oar.to_tensor(x)).numpy()
    close(paddle_infer.create_predictor(paddle_infer.Config(prefix)).run([x])[0].numpy(), expected)
