"""The ``"onnxruntime"`` serving backend: a model run by ONNX Runtime, for the Predictor and the server.

``load(program_file, settings)`` takes what ``oar.inference.Config`` resolved: an ``.onnx`` file is
run as it is; a model saved by ``oar.jit.save`` is exported in memory first (``oar.onnx``'s
exporter, the file is not written) -- Paddle's ``config.enable_onnxruntime()`` does the same with
paddle2onnx. Settings read: ``threads`` (ONNX Runtime's intra-op threads; 1 where unset, as
Paddle's CPU math threads), ``ort_optimization`` (Paddle's ``enable_ort_optimization()``: ONNX
Runtime's graph optimisations, all levels; without it only the basic, exact ones run), ``ir_debug`` /
``debug_dir`` (the exported model as text and the model ONNX Runtime optimised, in that folder).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import onnxruntime as ort

import onnx
from oar.onnx._export import DEFAULT_OPSET, program_of, to_model

PROGRAM_SUFFIX = ".json"
# ONNX Runtime's type strings -> oar's dtype names.
ORT_DTYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(bfloat16)": "bfloat16", "tensor(int8)": "int8", "tensor(int16)": "int16", "tensor(int32)": "int32",
    "tensor(int64)": "int64", "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}


def _spec(arg) -> dict:
    shape = [d if isinstance(d, int) else -1 for d in (arg.shape or [])]
    return {"name": arg.name, "shape": shape, "dtype": ORT_DTYPES.get(arg.type, arg.type)}


class OrtRunner:
    """A model in an ONNX Runtime session (``oar.hookspecs.Runner``). ONNX Runtime's ``run`` is
    safe from several threads at once, so every thread of a server shares the one session."""

    def __init__(self, session: ort.InferenceSession):
        self.session = session
        self.input_specs = [_spec(a) for a in session.get_inputs()]
        self.output_specs = [_spec(a) for a in session.get_outputs()]
        self.input_names = [s["name"] for s in self.input_specs]
        self.output_names = [s["name"] for s in self.output_specs]

    def run_list(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        return self.session.run(self.output_names, dict(zip(self.input_names, arrays)))

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.run_list([inputs[n] for n in self.input_names])))


def onnx_model_of(program_file: str, settings: Mapping) -> onnx.ModelProto:
    """The model to run: the ``.onnx`` file itself, or a saved oar model exported in memory."""
    if program_file.endswith(".onnx"):
        return onnx.load(program_file)
    import oar  # only for a saved oar model

    prefix = program_file[: -len(PROGRAM_SUFFIX)] if program_file.endswith(PROGRAM_SUFFIX) else program_file
    params = settings.get("params_file")
    layer = oar.jit.load(prefix, **({"params_filename": os.path.abspath(params)} if params else {}))
    return to_model(program_of(layer), DEFAULT_OPSET)


def session_options(settings: Mapping, debug_dir: str | None) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(settings.get("threads") or 1)
    options.inter_op_num_threads = 1
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if settings.get("ort_optimization")
                                        else ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    if debug_dir:
        options.optimized_model_filepath = os.path.join(debug_dir, "onnxruntime_optimized.onnx")
    return options


def load(program_file: str, settings: Mapping) -> OrtRunner:
    """The ``"onnxruntime"`` serving backend (``oar.hookspecs.ServingBackend``)."""
    place = settings.get("place") or "cpu"
    if not str(place).startswith("cpu"):
        from oar.errors import DeviceError

        raise DeviceError(f"the onnxruntime serving backend runs on the CPU here, not {place!r}: call "
                          f"config.disable_gpu()")
    model = onnx_model_of(os.fspath(program_file), settings)
    debug_dir = (settings.get("debug_dir") or "oar_ir_debug") if settings.get("ir_debug") else None
    if debug_dir:
        os.makedirs(debug_dir, exist_ok=True)
        with open(os.path.join(debug_dir, "onnx_model.txt"), "w", encoding="utf-8") as f:
            f.write(onnx.printer.to_text(model.graph) + "\n")
    session = ort.InferenceSession(model.SerializeToString(), session_options(settings, debug_dir),
                                   providers=["CPUExecutionProvider"])
    return OrtRunner(session)
