"""oar-onnx's plugin: the ONNX lowerings of oar's ops, the ``"onnxruntime"`` serving backend and
the ``export/onnx`` config group of ``oar-run``, all through core's hooks."""

from __future__ import annotations

from oar.plugins import Lazy, hookimpl


@hookimpl
def oar_register_op_lowerings(lowerings):
    from oar.onnx.lowerings import all_lowerings  # import cost: pure Python, no onnx

    for op_name, fn in all_lowerings().items():
        lowerings.add("onnx", op_name, fn)


@hookimpl
def oar_register_serving_backends(serving_backends):
    serving_backends.register("onnxruntime", Lazy("oar.onnx._backend:load"))


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run export=onnx: the trained model as <run>/inference/<model>.onnx (checked against the
    # trained model's outputs through ONNX Runtime, as export=jit is through oar.jit.load).
    config_groups.register("export/onnx", {"_target_": "oar.onnx.export", "_partial_": True, "opset_version": 17})
