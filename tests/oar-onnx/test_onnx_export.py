"""``oar.onnx.export`` as users call it: Paddle's signature and file naming, every kind of model
source, symbolic dims, kept names, the coverage check before anything is written, opsets, the
command line, and a third-party op's own lowering."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import onnx
import pytest
from onnx_test_support import REPO, export_and_compare, session

import oar
import oar.nn as nn
import oar.onnx
from oar.onnx import ExportError
from oar.plugins import hookimpl
from oar.static import InputSpec
from oar.vision.models import LeNet

LENET_SPEC = [InputSpec([None, 1, 28, 28], "float32", "image")]


@pytest.fixture(scope="module")
def lenet():
    oar.seed(0)
    model = LeNet()
    model.eval()
    return model


def _run(path: str, x: np.ndarray) -> np.ndarray:
    sess = session(path)
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def test_export_writes_path_dot_onnx_with_symbolic_batch_and_kept_names(lenet, tmp_path):
    prefix = str(tmp_path / "lenet")
    assert oar.onnx.export(lenet, prefix, input_spec=LENET_SPEC) is None  # Paddle's returns nothing
    assert sorted(os.listdir(tmp_path)) == ["lenet.onnx"]
    model = onnx.load(prefix + ".onnx")
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    (graph_input,) = model.graph.input
    assert graph_input.name == "image"
    dims = graph_input.type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [1, 28, 28]
    assert [o.name for o in model.graph.output] == ["output_0"]
    assert {name for name, _ in lenet.named_parameters()} <= {t.name for t in model.graph.initializer}
    assert model.opset_import[0].version == 17
    for batch in (1, 7):  # one file, any batch
        x = np.random.default_rng(batch).standard_normal([batch, 1, 28, 28]).astype(np.float32)
        np.testing.assert_allclose(_run(prefix + ".onnx", x), lenet(oar.to_tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_a_conv_layer_exports_as_conv_with_its_bias_and_nothing_around_it(lenet, tmp_path):
    oar.onnx.export(lenet, str(tmp_path / "lenet"), input_spec=LENET_SPEC)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "lenet.onnx")).graph.node]
    assert ops == ["Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Gemm", "Gemm"]


def test_every_source_of_a_model_gives_the_same_file_content(lenet, tmp_path):
    x = np.random.default_rng(3).standard_normal([2, 1, 28, 28]).astype(np.float32)
    expected = lenet(oar.to_tensor(x)).numpy()
    saved = str(tmp_path / "saved")
    oar.jit.save(lenet, saved, input_spec=LENET_SPEC)
    static = oar.jit.to_static(lenet.forward, input_spec=LENET_SPEC)
    sources = {"layer": lenet, "saved prefix": saved, "saved program file": saved + ".json",
               "translated layer": oar.jit.load(saved), "to_static function": static}
    for name, source in sources.items():
        path = str(tmp_path / name.replace(" ", "_"))
        oar.onnx.export(source, path, input_spec=LENET_SPEC if name in ("layer",) else None)
        np.testing.assert_allclose(_run(path + ".onnx", x), expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_path_ending_in_onnx_is_kept_and_folders_are_made(lenet, tmp_path):
    path = str(tmp_path / "deep" / "er" / "model.onnx")
    oar.onnx.export(lenet, path, input_spec=LENET_SPEC)
    assert os.listdir(tmp_path / "deep" / "er") == ["model.onnx"]


@pytest.mark.parametrize("opset", [13, 15, 18])
def test_the_opsets_oar_writes_run_in_onnxruntime(lenet, tmp_path, opset):
    path = str(tmp_path / f"lenet{opset}")
    oar.onnx.export(lenet, path, input_spec=LENET_SPEC, opset_version=opset)
    model = onnx.load(path + ".onnx")
    assert model.opset_import[0].version == opset
    x = np.ones([3, 1, 28, 28], np.float32)
    np.testing.assert_allclose(_run(path + ".onnx", x), lenet(oar.to_tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_the_newest_opset_of_the_installed_onnx_passes_the_checker(lenet, tmp_path):
    newest = onnx.defs.onnx_opset_version()
    oar.onnx.export(lenet, str(tmp_path / "m"), input_spec=LENET_SPEC, opset_version=newest)
    model = onnx.load(str(tmp_path / "m.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == newest


@pytest.mark.parametrize("opset", [9, 12, 10_000, "17"])
def test_an_opset_outside_what_oar_writes_is_refused_before_writing(lenet, tmp_path, opset):
    with pytest.raises(ExportError, match="opset_version"):
        oar.onnx.export(lenet, str(tmp_path / "m"), input_spec=LENET_SPEC, opset_version=opset)
    assert not os.listdir(tmp_path)


def test_unknown_configs_are_refused(lenet, tmp_path):
    with pytest.raises(ExportError, match="unsupported arguments"):
        oar.onnx.export(lenet, str(tmp_path / "m"), input_spec=LENET_SPEC, output_spec=["y"], enable_onnx_checker=True)


# -- the coverage check ------------------------------------------------------------------------------
def _register_op_without_lowering():
    """A third party's op with no ONNX lowering, registered as its plugin would."""
    from oar.ops import Op, same_meta

    op = Op("test_onnx_unlowered", reference=lambda x: x * 3, meta=same_meta, traits={"elementwise", "nondiff"})
    plugin = types.ModuleType("unlowered_plugin")

    @hookimpl
    def oar_register_ops(ops):
        ops.add(op)

    plugin.oar_register_ops = oar_register_ops
    oar.plugins.register(plugin, name="unlowered_plugin")
    return op


def test_export_lists_every_op_without_a_lowering_with_counts_and_lines_and_writes_nothing(tmp_path):
    op = _register_op_without_lowering()
    try:
        class Model(nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                y = op(self.fc(x))
                return op(y) + oar.cumprod(y, dim=1)

        model = Model()
        model.eval()
        spec = [InputSpec([None, 4], "float32", "x")]
        missing = oar.onnx.check_exportable(model, spec)
        by_op = {m.op: m for m in missing}
        assert by_op["test_onnx_unlowered"].count == 2
        lines = by_op["test_onnx_unlowered"].where
        assert all(w.startswith("test_onnx_export.py:") for w in lines) and len(lines) == 2
        with pytest.raises(ExportError) as raised:
            oar.onnx.export(model, str(tmp_path / "m"), input_spec=spec)
        message = str(raised.value)
        assert "test_onnx_unlowered (x2) at test_onnx_export.py:" in message and "nothing was written" in message
        assert not os.listdir(tmp_path)
    finally:
        oar.plugins.unregister("unlowered_plugin")


def test_check_exportable_is_empty_for_an_exportable_model(lenet):
    assert oar.onnx.check_exportable(lenet, LENET_SPEC) == []


def test_supported_ops_lists_the_lowered_ops_of_core_and_nn():
    ops = oar.onnx.supported_ops()
    assert {"conv", "linear", "add", "reshape", "relu"} <= set(ops)
    assert oar.onnx.lowering_of("conv") is not None and oar.onnx.lowering_of("no_such_op") is None


def test_a_plugin_op_exports_through_its_own_lowering(tmp_path):
    # The example plugin declares its op's ONNX lowering next to the op (docs/plugins.md).
    sys.path.insert(0, str(REPO / "examples" / "oar-plugin-example" / "src"))
    try:
        import oar_plugin_example.plugin as example_plugin
        from oar_plugin_example import logcosh
    finally:
        sys.path.pop(0)
    registered = "logcosh" not in oar.plugins.registries().ops  # unless the example is installed here
    if registered:
        oar.plugins.register(example_plugin, name="example_for_onnx")
    try:
        x = np.array([[-30.0, -1.0, 0.0, 0.5, 40.0]], np.float32)
        export_and_compare(lambda t: logcosh(t) * 2.0, [x], tmp_path)
    finally:
        if registered:
            oar.plugins.unregister("example_for_onnx")


# -- the command line -------------------------------------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "oar.onnx", *args], capture_output=True, text=True, timeout=300)


def test_the_command_line_exports_a_saved_model_and_checks_one(lenet, tmp_path):
    saved = str(tmp_path / "lenet")
    oar.jit.save(lenet, saved, input_spec=LENET_SPEC)
    result = _cli("check", saved)
    assert result.returncode == 0 and "every op has an ONNX lowering" in result.stdout, result.stderr
    result = _cli("export", saved, str(tmp_path / "out.onnx"), "--opset", "13")
    assert result.returncode == 0, result.stderr
    x = np.ones([2, 1, 28, 28], np.float32)
    np.testing.assert_allclose(_run(str(tmp_path / "out.onnx"), x), lenet(oar.to_tensor(x)).numpy(), rtol=1e-4,
                               atol=1e-5)


def test_the_command_line_names_a_missing_model(tmp_path):
    result = _cli("export", str(tmp_path / "nothing"), str(tmp_path / "out.onnx"))
    assert result.returncode == 2 and "no such file" in result.stderr
    assert not os.path.exists(tmp_path / "out.onnx")


def test_batch_norm_after_a_conv_is_folded_into_the_conv_weights_under_their_names(tmp_path):
    oar.seed(0)
    model = nn.Sequential(nn.Conv2D(3, 4, 3), nn.BatchNorm2D(4), nn.ReLU())
    bn = model[1]
    bn._mean.set_value(np.linspace(-1, 1, 4).astype(np.float32))  # statistics that change the result
    bn._variance.set_value(np.linspace(0.5, 2, 4).astype(np.float32))
    model.eval()
    x = np.random.default_rng(0).standard_normal([2, 3, 8, 8]).astype(np.float32)
    exported = export_and_compare(model, [x], tmp_path, specs=[InputSpec([None, 3, 8, 8], "float32", "x")])
    assert [n.op_type for n in exported.graph.node] == ["Conv", "Relu"]
    assert sorted(t.name for t in exported.graph.initializer) == ["0.bias", "0.weight"]


def test_a_weight_used_twice_keeps_its_name_and_the_folded_copy_gets_its_own(tmp_path):
    class Tied(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return oar.matmul(x, self.fc.weight * 2.0) + self.fc(x)  # a folded and a plain read of one weight

    model = Tied()
    model.eval()
    exported = export_and_compare(model, [np.ones([2, 4], np.float32)], tmp_path,
                                  specs=[InputSpec([None, 4], "float32", "x")])
    names = {t.name for t in exported.graph.initializer}
    assert {"fc.weight", "fc.weight.folded", "fc.bias"} <= names
    assert "Mul" not in [n.op_type for n in exported.graph.node]


@pytest.mark.parametrize("module", ["oar.onnx", "oar.onnx._api", "oar.onnx.__main__"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and (result.attempted > 0 or module.endswith("__main__"))
